"""What every backbone offers the training code: a tokenizer, a processor (for images), a model, an id,
a description.

A backbone is cheap to construct (configs instantiate it without touching weights); ``prepare`` and
the ``load_*`` methods do the work. ``load_model`` runs inside the LightningModule's ``configure_model``
so that sharded strategies (DeepSpeed ZeRO-3) can build it under their own context.
"""

from __future__ import annotations

import inspect
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """Where built artefacts (the tiny backbones) are cached: ``$EGOHORIZON_CACHE`` or ~/.cache/egohorizon."""
    return Path(os.environ.get("EGOHORIZON_CACHE") or Path.home() / ".cache" / "egohorizon")


class Backbone(ABC):
    # The toy random-weight backbone (tiny) generates in float32 whatever the CPU: its tests' and the toy
    # demo's figures were made so (egohorizon.precision.generation_dtype).
    toy: bool = False

    @property
    @abstractmethod
    def model_id(self) -> str:
        """The id written beside every prediction (hub id, local path, or tiny-<arch>@<hash>)."""

    @property
    @abstractmethod
    def base_path(self) -> str:
        """What a saved adapter names as its base model (``base_model_name_or_path``)."""

    def prepare(self, corpus: Callable[[], Iterable[str]] | None = None) -> None:
        """Makes the tokenizer and weights available; ``corpus`` yields the training text if needed."""

    @abstractmethod
    def load_tokenizer(self): ...

    @abstractmethod
    def load_model(self, dtype=None): ...

    def load_processor(self):
        """The transformers processor that turns images (and text) into model inputs, or ``None`` for
        a text-only backbone. The backbone owns it because its patch sizes and image token must match
        the model's config."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """A JSON-able description, saved beside adapters and predictions."""


def is_toy_folder(path) -> bool:
    """Whether ``path`` is a folder the tiny backbone built (it writes ``egohorizon_tiny.json`` there), so
    a backend loading it by path keeps float32 as the tiny backbone does."""
    return (Path(str(path)) / TOY_MARKER).is_file()


TOY_MARKER = "egohorizon_tiny.json"


def needs_mm_token_type_ids(model) -> bool:
    """True for models (Qwen2-VL family in transformers 5) whose forward takes ``mm_token_type_ids``.

    transformers 5 Qwen-VL models use it to tell text (0) from image (1) and video (2) tokens when
    building their 3D rotary positions; a text-only batch passes zeros.
    """
    base = model
    while hasattr(base, "get_base_model") and base.get_base_model() is not base:
        base = base.get_base_model()
    return "mm_token_type_ids" in inspect.signature(base.forward).parameters
