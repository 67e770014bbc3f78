"""``backbone=effnet_smollm2``: a small vision-language model assembled from two real pretrained halves that
install from PyPI, EfficientNet-Lite0 (ImageNet; ``effnet_encoder``) and SmolLM2-135M-Instruct (the GGUF
backbone's converted folder), joined LLaVA-style by a fresh 2-layer MLP projector (``composite``).

On first use the parts are put together once into a cached transformers folder,
``<cache_dir>/effnet_smollm2-<key>`` (key: the GGUF's and the encoder file's sha256, the image size, the
projector's seed and the build version): the composite's weights (encoder, seeded projector, SmolLM2 with
three added tokens for the image marker), its config and the tokenizer. From then on the backbone *is*
that folder, loaded through ``HFBackbone`` like any local VLM checkpoint: adapters name it as their base,
and eval.py, ``serve``, ``export-adapter`` and the offline jobs load it as they load any base.

What trains is chosen in conf/finetune/effnet_smollm2.yaml: LoRA on SmolLM2 and the whole projector
(peft ``modules_to_save``), optionally the encoder's last block too; all of it lands in the adapter folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from egohorizon.backbones.base import default_cache_dir
from egohorizon.backbones.hf import HFBackbone
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

MARKER_FILE = "egohorizon_composite.json"
# Bump when the way the folder is built changes, so older folders are rebuilt rather than reused.
BUILD_VERSION = 1


class EffnetSmolLM2Backbone(HFBackbone):
    """``image_size``: the square side images are letterboxed to (a multiple of 32; 224 gives a 7 x 7 grid,
    49 image tokens); ``seed``: the projector's initialisation; ``encoder_file``: the EfficientNet-Lite0
    ``.pth`` (None: the one in the installed wheel); ``smollm2``: the GGUF backbone's settings
    (conf/backbone/smollm2_135m.yaml's keys); ``cache_dir``: where built folders live."""

    def __init__(self, image_size: int = 224, seed: int = 0, encoder_file: str | None = None,
                 smollm2: dict[str, Any] | None = None, cache_dir: str | None = None, dtype: str | None = None,
                 attn_implementation: str | None = None):
        from egohorizon.backbones.effnet_encoder import STRIDE

        if int(image_size) <= 0 or int(image_size) % STRIDE:
            raise ConfigError(f"backbone.image_size: expected a positive multiple of {STRIDE} pixels, got {image_size}")
        self.image_size, self.seed = int(image_size), int(seed)
        self.encoder_file = Path(encoder_file).expanduser() if encoder_file else None
        folder = Path(cache_dir) if cache_dir else default_cache_dir() / "backbones"
        self.cache_dir = folder.expanduser().resolve()
        self.smollm2_settings = {"cache_dir": str(self.cache_dir), **dict(smollm2 or {})}
        self.kind, self.dtype, self.attn_implementation = "vlm", dtype, attn_implementation
        self.trust_remote_code, self.revision = False, None
        self._folder: Path | None = None

    @property
    def path(self) -> str:
        return str(self.folder())

    @property
    def model_id(self) -> str:
        return f"EfficientNet-Lite0+SmolLM2-135M-Instruct@{self._folder.name}" if self._folder else "effnet_smollm2"

    def prepare(self, corpus=None) -> None:
        self.folder()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kind": "effnet_smollm2", "image_size": self.image_size, "seed": self.seed}

    def folder(self) -> Path:
        """The built folder (built now when it is missing or incomplete)."""
        if self._folder is not None:
            return self._folder
        from egohorizon.backbones.effnet_encoder import check_weights_file, wheel_weights_path
        from egohorizon.backbones.gguf import GGUFBackbone

        encoder = self.encoder_file or wheel_weights_path()
        encoder_sha = check_weights_file(encoder)
        smollm2 = GGUFBackbone(**self.smollm2_settings)
        lm_folder = smollm2.folder()
        spec = {"smollm2": lm_folder.name, "encoder": encoder_sha, "image_size": self.image_size,
                "seed": self.seed, "build": BUILD_VERSION}
        key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
        folder = self.cache_dir / f"effnet_smollm2-{key}"
        if not (folder / MARKER_FILE).is_file():
            build_folder(folder, lm_folder, encoder, spec)
        else:
            log.info("effnet_smollm2: reusing %s", folder)
        self._folder = folder
        return folder


def build_folder(folder: Path, lm_folder: Path, encoder: Path, spec: dict[str, Any]) -> None:
    """Assembles the composite into ``folder`` atomically (a temporary sibling, marker last, renamed)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        model, tokenizer = assemble(lm_folder, encoder, spec["image_size"], spec["seed"])
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / MARKER_FILE).write_text(json.dumps({**spec, "lm_folder": str(lm_folder),
                                                       "encoder_file": str(encoder)}, indent=2))
        try:
            os.rename(staging, folder)
        except OSError:
            if not (folder / MARKER_FILE).is_file():  # another process's complete folder is fine
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("effnet_smollm2: assembled %s", folder)


def assemble(lm_folder: Path, encoder: Path, image_size: int, seed: int):
    """(model, tokenizer): SmolLM2 with the image marker's tokens, the pretrained encoder, a seeded projector."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from egohorizon.backbones import effnet_encoder as effnet
    from egohorizon.backbones.composite import EffnetSmolLM2Config, EffnetSmolLM2ForConditionalGeneration
    from egohorizon.backbones.composite_processor import IMAGE_TOKEN, VISION_END, VISION_START

    encoder_model = effnet.load_encoder(encoder)
    tokenizer = AutoTokenizer.from_pretrained(lm_folder)
    tokenizer.add_special_tokens({"additional_special_tokens": [VISION_START, IMAGE_TOKEN, VISION_END]})
    lm = AutoModelForCausalLM.from_pretrained(lm_folder, dtype=torch.float32)
    vision = {"architecture": effnet.ARCHITECTURE, "image_size": image_size, "stride": effnet.STRIDE,
              "features": effnet.FEATURES, "mean": list(effnet.MEAN), "std": list(effnet.STD)}
    # Seeded and isolated from the caller's RNG: the same key gives the same folder.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        # New rows drawn around the mean embedding (transformers' default): the marker's ends read as an
        # average token.
        lm.resize_token_embeddings(len(tokenizer))
        config = EffnetSmolLM2Config(text_config=lm.config, vision_config=vision,
                                     image_token_id=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN))
        model = EffnetSmolLM2ForConditionalGeneration(config)
    model.language_model.load_state_dict(lm.state_dict())
    model.vision_tower.load_state_dict(encoder_model.state_dict())
    return model, tokenizer

