"""How many frames fit a local model's context (issue 40): ``bench run`` caps ``max_frames`` for a model
whose config declares a fixed number of tokens per image (``image_tokens``: the effnet_smollm2 composite,
49 at 224 px) and whose language model has a short context (SmolLM2: 8,192 positions), and says so.

Qwen-VL-style models declare no fixed count (their processors resize within a pixel budget) and have
long contexts: they are left as they are.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

log = logging.getLogger(__name__)

# Room a frame needs besides its image tokens (its time label and the image marker's two ends), and the
# question, options and instructions of a prompt: generous for EgoSchema's and EgoMonth's prompts.
PER_FRAME_TEXT = 16
PROMPT_TEXT = 512


def frame_cap(config: Any, max_new_tokens: int) -> tuple[int, int] | None:
    """(frames that fit, context length) for a model config that declares ``image_tokens``; None otherwise."""
    per_image = getattr(config, "image_tokens", None)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    context = getattr(text, "max_position_embeddings", None)
    if not per_image or not context:
        return None
    return max(0, (int(context) - max_new_tokens - PROMPT_TEXT) // (int(per_image) + PER_FRAME_TEXT)), int(context)


def capped(settings, config: Any, model_id: str):
    """``settings`` with ``max_frames`` lowered to what the model's context holds (logged), or as they are."""
    cap = frame_cap(config, settings.max_new_tokens)
    if cap is None or cap[0] >= settings.max_frames:
        return settings
    frames, context = cap
    log.warning("%s: %d frames of %d tokens each fill its %d-token context; max_frames capped from %d to %d",
                model_id, frames, config.image_tokens, context, settings.max_frames, frames)
    return dataclasses.replace(settings, max_frames=frames)


def local_config(backend) -> Any:
    """The config of a local transformers model (None for a server, or one whose config cannot be read)."""
    path = getattr(backend, "path", None)
    if not path:
        return None
    try:
        from transformers import AutoConfig

        from egohorizon.backbones.hf import register_local_architectures

        register_local_architectures()
        return AutoConfig.from_pretrained(path, trust_remote_code=getattr(backend, "trust_remote_code", False))
    except Exception:  # noqa: BLE001 - the backend's own load names the problem
        return None
