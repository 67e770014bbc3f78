"""``tiny``: a toy-size Qwen2-VL / Qwen2.5-VL / Qwen3-VL with seeded random weights and a tokenizer
trained in code.

It lets the whole training path (LoRA, generation, checkpoints, scoring, image inputs) run on a laptop
CPU without a download. The model is a real transformers Qwen-VL architecture, only small, vision tower
included (``tiny_config``); its vocabulary is a byte-level BPE trained on the training text (prompts and
answers of the training points) plus the vision marker tokens. Model, tokenizer and processor are built
offline and saved with ``save_pretrained`` into a cache folder keyed by a hash of everything that
determines them (architecture, sizes, seed, the corpus, transformers' major version), so a second run
reuses the folder and the folder loads like any local checkpoint (``backbone=hf backbone.path=<folder>``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from egohorizon.backbones.base import TOY_MARKER, Backbone, default_cache_dir
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

ARCHITECTURES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
# Bump when the way the folder is built changes, so stale caches are not reused.
# 2: a working toy vision tower (patch_size, vision sizes) and the processor saved in the folder.
TINY_BUILD_VERSION = 2
META_FILE = TOY_MARKER


class TinyBackbone(Backbone):
    """A toy Qwen-VL built on first use from the training corpus (see the module docstring).

    ``prepare(corpus)`` must run before the ``load_*`` methods; it trains the tokenizer, initialises
    the weights with ``seed`` and caches both with the processor. Sizes default to a model of ~1 M
    parameters that trains for a few minutes on two CPU cores; an image of at most ``max_pixels``
    (resized by the processor) becomes at most ``max_pixels / (2 * patch_size) ** 2`` tokens.
    """

    toy = True

    def __init__(
        self,
        architecture: str = "qwen2_5_vl",
        hidden_size: int = 128,
        intermediate_size: int = 256,
        num_layers: int = 2,
        num_heads: int = 4,
        num_kv_heads: int = 2,
        vocab_size: int = 2048,
        max_position_embeddings: int = 8192,
        vision_depth: int = 2,
        vision_hidden_size: int = 32,
        patch_size: int = 8,
        min_pixels: int = 32 * 32,
        max_pixels: int = 128 * 128,
        seed: int = 0,
        cache_dir: str | None = None,
    ):
        if architecture not in ARCHITECTURES:
            raise ConfigError(f"backbone.architecture: expected one of {ARCHITECTURES}, got {architecture!r}")
        head_dim = hidden_size // num_heads
        if hidden_size % num_heads or head_dim % 2 or num_heads % num_kv_heads:
            raise ConfigError(
                f"tiny backbone: hidden_size ({hidden_size}) must split into num_heads ({num_heads}) heads of "
                f"even size, and num_heads must be a multiple of num_kv_heads ({num_kv_heads})"
            )
        if vision_hidden_size % 2 or not 0 < min_pixels <= max_pixels:
            raise ConfigError(
                f"tiny backbone: vision_hidden_size ({vision_hidden_size}) must be even (two vision heads) "
                f"and 0 < min_pixels ({min_pixels}) <= max_pixels ({max_pixels})"
            )
        self.architecture = architecture
        self.sizes = {
            "hidden_size": hidden_size,
            "intermediate_size": intermediate_size,
            "num_layers": num_layers,
            "num_heads": num_heads,
            "num_kv_heads": num_kv_heads,
            "vocab_size": vocab_size,
            "max_position_embeddings": max_position_embeddings,
            "vision_depth": vision_depth,
            "vision_hidden_size": vision_hidden_size,
            "patch_size": patch_size,
            "min_pixels": min_pixels,
            "max_pixels": max_pixels,
        }
        self.seed = seed
        # Absolute: adapters record this folder as their base model, and eval may run from elsewhere.
        folder = Path(cache_dir) if cache_dir else default_cache_dir() / "tiny_backbones"
        self.cache_dir = folder.expanduser().resolve()
        self.path: Path | None = None

    # -- Backbone interface -------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return f"tiny-{self.architecture}@{self.path.name}" if self.path else f"tiny-{self.architecture}"

    @property
    def base_path(self) -> str:
        self._require_prepared()
        return str(self.path)

    def prepare(self, corpus: Callable[[], Iterable[str]] | None = None) -> None:
        """Builds (or finds in the cache) the tokenizer and weights for this corpus."""
        if corpus is None:
            raise ConfigError(
                "the tiny backbone trains its tokenizer on the training text: "
                "prepare() needs the training corpus"
            )
        texts = list(corpus())
        if not texts:
            raise ConfigError("the tiny backbone got an empty training corpus (no training points?)")
        key = self._cache_key(texts)
        path = self.cache_dir / key
        if not (path / META_FILE).is_file():
            self._build(texts, path)
        else:
            log.info("tiny backbone: reusing %s", path)
        self.path = path

    def load_tokenizer(self):
        from transformers import AutoTokenizer

        self._require_prepared()
        return AutoTokenizer.from_pretrained(self.path)

    def load_processor(self):
        from transformers import AutoProcessor

        self._require_prepared()
        return AutoProcessor.from_pretrained(self.path)

    def load_model(self, dtype=None):
        from egohorizon.backbones.hf import load_pretrained_model

        self._require_prepared()
        return load_pretrained_model(str(self.path), kind="vlm", dtype=dtype)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "tiny",
            "architecture": self.architecture,
            **self.sizes,
            "seed": self.seed,
            "path": str(self.path) if self.path else None,
        }

    # -- building -----------------------------------------------------------------------------

    def _require_prepared(self) -> None:
        if self.path is None:
            raise ConfigError("tiny backbone: call prepare(corpus) before loading it")

    def _cache_key(self, texts: list[str]) -> str:
        import transformers

        digest = hashlib.sha256()
        spec = {
            "architecture": self.architecture,
            **self.sizes,
            "seed": self.seed,
            "build": TINY_BUILD_VERSION,
            "transformers": transformers.__version__.split(".")[0],
        }
        digest.update(json.dumps(spec, sort_keys=True).encode())
        for text in texts:
            digest.update(hashlib.sha256(text.encode()).digest())
        return f"{self.architecture}-{digest.hexdigest()[:16]}"

    def _build(self, texts: list[str], path: Path) -> None:
        import torch

        from egohorizon.backbones.tiny_config import build_processor, model_config
        from egohorizon.backbones.tokenizer import train_bpe_tokenizer

        log.info(
            "tiny backbone: training a tokenizer on %d texts and initialising weights (seed %d)",
            len(texts),
            self.seed,
        )
        tokenizer = train_bpe_tokenizer(texts, vocab_size=self.sizes["vocab_size"])
        config = model_config(self.architecture, self.sizes, tokenizer)
        processor = build_processor(self.architecture, self.sizes, tokenizer)
        model_class = _model_class(self.architecture)
        # Seeded on CPU, independent of any global RNG state the caller left behind.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = model_class(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Build in a temporary sibling and rename: several ranks may build the same folder at once.
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            model.save_pretrained(staging)
            processor.save_pretrained(staging)  # with the tokenizer
            (staging / META_FILE).write_text(json.dumps(self.describe() | {"n_texts": len(texts)}, indent=2))
            try:
                os.rename(staging, path)
            except OSError:
                if not (path / META_FILE).is_file():  # someone else's complete copy is fine; else fail
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        log.info(
            "tiny backbone: %d parameters, vocabulary %d, saved to %s",
            sum(p.numel() for p in model.parameters()),
            len(tokenizer),
            path,
        )


def _model_class(architecture: str):
    if architecture == "qwen3_vl":
        from transformers import Qwen3VLForConditionalGeneration

        return Qwen3VLForConditionalGeneration
    if architecture == "qwen2_5_vl":
        from transformers import Qwen2_5_VLForConditionalGeneration

        return Qwen2_5_VLForConditionalGeneration
    from transformers import Qwen2VLForConditionalGeneration

    return Qwen2VLForConditionalGeneration
