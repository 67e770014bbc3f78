"""What torch-free code needs to know of the effnet_smollm2 composite (``backbones.composite``): its
``model_type``, and why it cannot be merged or served by vLLM (``export-adapter --merge`` and the vLLM
serving plan refuse it by name, pointing at what does take it)."""

from __future__ import annotations

import json
from pathlib import Path

MODEL_TYPE = "effnet_smollm2"  # config.json's model_type of the built folder


def is_composite(base: str) -> bool:
    """Whether ``base`` is a local folder of the composite (its config.json says so)."""
    config = Path(base) / "config.json"
    try:
        return config.is_file() and json.loads(config.read_text()).get("model_type") == MODEL_TYPE
    except (OSError, ValueError):
        return False  # not ours to judge: the loader reports a damaged folder itself


def not_servable(base: str, what: str) -> str | None:
    """Why ``what`` (merged, served by vLLM) cannot be done with an adapter on ``base``; None when it can."""
    if not is_composite(base):
        return None
    return (f"{base} is the effnet_smollm2 composite (EfficientNet-Lite0 + projector + SmolLM2), no transformers "
            f"or vLLM architecture, so an adapter on it cannot be {what}: use the adapter folder as it is "
            "(eval.py, egohorizon serve --model ADAPTER, hands detect --model)")
