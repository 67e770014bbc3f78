"""``tiny``: a toy-size Qwen2-VL / Qwen2.5-VL with seeded random weights and a tokenizer trained in code.

It lets the whole training path (LoRA, generation, checkpoints, scoring) run on a laptop CPU without a
download. The model is a real transformers Qwen2(.5)-VL architecture, only small; its vocabulary is a
byte-level BPE trained on the training text (prompts and answers of the training points). Both are
built offline and saved with ``save_pretrained`` into a cache folder keyed by a hash of everything
that determines them (architecture, seed, vocabulary size, the corpus, transformers' major version),
so a second run reuses the folder and the folder loads like any local checkpoint
(``backbone=hf backbone.path=<folder>``).
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

from egohorizon.backbones.base import Backbone, default_cache_dir
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

ARCHITECTURES = ("qwen2_vl", "qwen2_5_vl")
# Bump when the way the folder is built changes, so stale caches are not reused.
TINY_BUILD_VERSION = 1
META_FILE = "egohorizon_tiny.json"


class TinyBackbone(Backbone):
    """A toy Qwen2(.5)-VL built on first use from the training corpus (see the module docstring).

    ``prepare(corpus)`` must run before ``load_tokenizer``/``load_model``; it trains the tokenizer,
    initialises the weights with ``seed`` and caches both. Sizes default to a model of ~1 M parameters
    that trains for a few minutes on two CPU cores.
    """

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
        self.architecture = architecture
        self.sizes = {
            "hidden_size": hidden_size,
            "intermediate_size": intermediate_size,
            "num_layers": num_layers,
            "num_heads": num_heads,
            "num_kv_heads": num_kv_heads,
            "vocab_size": vocab_size,
            "max_position_embeddings": max_position_embeddings,
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

        from egohorizon.backbones.tokenizer import train_bpe_tokenizer

        log.info(
            "tiny backbone: training a tokenizer on %d texts and initialising weights (seed %d)",
            len(texts),
            self.seed,
        )
        tokenizer = train_bpe_tokenizer(texts, vocab_size=self.sizes["vocab_size"])
        config = self._model_config(tokenizer)
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
            tokenizer.save_pretrained(staging)
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

    def _model_config(self, tokenizer):
        s = self.sizes
        head_dim = s["hidden_size"] // s["num_heads"]
        # mrope splits each head's rotary half-dimension into temporal/height/width sections;
        # text-only positions use the same index on all three, so any split summing to head_dim/2 works.
        half = head_dim // 2
        mrope = [half - 2 * (half // 3), half // 3, half // 3]
        ids = {
            name: tokenizer.convert_tokens_to_ids(name)
            for name in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
        }
        text = {
            "vocab_size": len(tokenizer),
            "hidden_size": s["hidden_size"],
            "intermediate_size": s["intermediate_size"],
            "num_hidden_layers": s["num_layers"],
            "num_attention_heads": s["num_heads"],
            "num_key_value_heads": s["num_kv_heads"],
            "max_position_embeddings": s["max_position_embeddings"],
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope},
            "bos_token_id": tokenizer.eos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        }
        common = {
            "image_token_id": ids["<|image_pad|>"],
            "video_token_id": ids["<|video_pad|>"],
            "vision_start_token_id": ids["<|vision_start|>"],
            "vision_end_token_id": ids["<|vision_end|>"],
        }
        if self.architecture == "qwen2_5_vl":
            from transformers import Qwen2_5_VLConfig

            vision = {
                "depth": 1,
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_heads": 2,
                "out_hidden_size": s["hidden_size"],
                "fullatt_block_indexes": [0],
            }
            config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, **common)
        else:
            from transformers import Qwen2VLConfig

            vision = {
                "depth": 1,
                "embed_dim": 32,
                "hidden_size": s["hidden_size"],
                "mlp_ratio": 2,
                "num_heads": 2,
            }
            config = Qwen2VLConfig(text_config=text, vision_config=vision, **common)
        # generate() reads these from the top-level config of a VLM.
        config.pad_token_id = tokenizer.pad_token_id
        config.eos_token_id = tokenizer.eos_token_id
        return config


def _model_class(architecture: str):
    if architecture == "qwen2_5_vl":
        from transformers import Qwen2_5_VLForConditionalGeneration

        return Qwen2_5_VLForConditionalGeneration
    from transformers import Qwen2VLForConditionalGeneration

    return Qwen2VLForConditionalGeneration
