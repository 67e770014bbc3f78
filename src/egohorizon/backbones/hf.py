"""Any causal LM or VLM from transformers, by hub id or local path (``backbone.path=/models/...``).

VLM checkpoints (a config with a ``vision_config``, e.g. Qwen2.5-VL, Qwen3-VL) load through
``AutoModelForImageTextToText``; text-only checkpoints (Qwen3-8B) through ``AutoModelForCausalLM``.
Forecasting from text uses the VLM's language path: the same model, fed text tokens only.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from egohorizon.backbones.base import Backbone, is_toy_folder
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

KINDS = ("auto", "causal_lm", "vlm")


class HFBackbone(Backbone):
    def __init__(
        self,
        path: str,
        kind: str = "auto",
        dtype: str | None = None,
        attn_implementation: str | None = None,
        trust_remote_code: bool = False,
        revision: str | None = None,
    ):
        if kind not in KINDS:
            raise ConfigError(f"backbone.kind: expected one of {KINDS}, got {kind!r}")
        if not path:
            raise ConfigError("backbone.path: expected a hub id or a local folder, got nothing")
        self.path = str(path)
        self.kind = kind
        self.dtype = dtype
        self.attn_implementation = attn_implementation
        self.trust_remote_code = trust_remote_code
        self.revision = revision

    @property
    def model_id(self) -> str:
        return self.path

    @property
    def base_path(self) -> str:
        local = Path(self.path).expanduser()
        return str(local.resolve()) if local.exists() else self.path  # a hub id stays as it is

    @property
    def toy(self) -> bool:  # backbone=hf backbone.path=<a tiny backbone's folder>
        return is_toy_folder(Path(self.path).expanduser())

    def load_tokenizer(self):
        from transformers import AutoTokenizer

        with _friendly_load_errors(self.path):
            tokenizer = AutoTokenizer.from_pretrained(
                self.path, revision=self.revision, trust_remote_code=self.trust_remote_code
            )
        if tokenizer.pad_token_id is None:  # many causal LMs ship without one; padding is masked anyway
            tokenizer.pad_token = tokenizer.eos_token
        return tokenizer

    def load_processor(self):
        """``AutoProcessor`` for a VLM checkpoint (its image processor's min/max pixels included);
        ``None`` for a text-only one."""
        from transformers import AutoProcessor

        if getattr(self.load_config(), "vision_config", None) is None and self.kind != "vlm":
            return None
        with _friendly_load_errors(self.path):
            return AutoProcessor.from_pretrained(
                self.path, revision=self.revision, trust_remote_code=self.trust_remote_code
            )

    def load_model(self, dtype=None):
        return load_pretrained_model(
            self.path,
            kind=self.kind,
            dtype=dtype or self.dtype,
            attn_implementation=self.attn_implementation,
            trust_remote_code=self.trust_remote_code,
            revision=self.revision,
        )

    def load_config(self):
        from transformers import AutoConfig

        with _friendly_load_errors(self.path):
            return AutoConfig.from_pretrained(
                self.path, revision=self.revision, trust_remote_code=self.trust_remote_code
            )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "hf",
            "path": self.path,
            "model_kind": self.kind,
            "dtype": self.dtype,
            "revision": self.revision,
        }


def model_class_for(config, kind: str = "auto"):
    """The transformers auto class for ``config``: image-text-to-text for VLMs, else causal LM."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    if kind == "auto":
        kind = "vlm" if getattr(config, "vision_config", None) is not None else "causal_lm"
    return AutoModelForImageTextToText if kind == "vlm" else AutoModelForCausalLM


def resolve_dtype(dtype):
    """``None`` -> torch's current default dtype (Lightning's ``bf16-true`` sets it to bfloat16 while
    ``configure_model`` runs), a name such as ``"bfloat16"`` -> that dtype, ``"auto"`` -> the checkpoint's."""
    import torch

    if dtype is None:
        return torch.get_default_dtype()
    if dtype == "auto" or isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, str(dtype), None)
    if not isinstance(value, torch.dtype):
        raise ConfigError(f"backbone.dtype: expected a torch dtype name such as 'bfloat16', got {dtype!r}")
    return value


def load_pretrained_model(
    path: str,
    kind: str = "auto",
    dtype=None,
    attn_implementation: str | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
):
    from transformers import AutoConfig

    with _friendly_load_errors(path):
        config = AutoConfig.from_pretrained(path, revision=revision, trust_remote_code=trust_remote_code)
        model_class = model_class_for(config, kind)
        kwargs: dict[str, Any] = {
            "dtype": resolve_dtype(dtype),
            "revision": revision,
            "trust_remote_code": trust_remote_code,
        }
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        model = model_class.from_pretrained(path, config=config, **kwargs)
    log.info("loaded %s (%s, %s)", path, type(model).__name__, kwargs["dtype"])
    return model


class _friendly_load_errors:
    """Turns 'not found / offline' failures into a ConfigError that says what to do."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or not isinstance(exc, (OSError, ValueError)):
            return False
        if Path(self.path).exists():
            return False  # a real problem with a local folder: let its own message through
        offline = os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("TRANSFORMERS_OFFLINE") == "1"
        hint = "the Hugging Face hub is offline here (HF_HUB_OFFLINE=1); " if offline else ""
        raise ConfigError(
            f"backbone {self.path!r} could not be loaded: {hint}no local folder by that name. Download it where "
            f"the hub is reachable (`hf download {self.path} --local-dir /models/<name>`) and pass "
            f"backbone.path=/models/<name>. ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        ) from exc
