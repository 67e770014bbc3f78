"""The dtype a local backend (``TransformersBackend``, ``LocalVLMBackend``: serve, bench, qa answer, the
offline jobs) loads its weights in, and what it records about its decoding.

Unless a dtype is typed (``--dtype``), the generation rule of ``egohorizon.precision``: bfloat16 where the
device computes it natively, float32 elsewhere and for a folder the tiny backbone built. A LoRA adapter is
merged into such low-precision weights once at load (``merge_adapter``), so no step re-casts it.
"""

from __future__ import annotations

from typing import Any

STOP_RULE = "max_new_tokens"  # a backend's replies end at EOS or the token budget; no K-action stop


def local_generation_dtype(dtype: str | None, device: str | None, path: str) -> str:
    """``dtype`` when given, else the generation rule for ``device`` (None: cuda when there is one)."""
    if dtype:
        return str(dtype)
    import torch

    from egohorizon.backbones.base import is_toy_folder
    from egohorizon.precision import generation_dtype

    device_type = str(device or ("cuda" if torch.cuda.is_available() else "cpu")).split(":")[0]
    return generation_dtype("auto", device_type, toy=is_toy_folder(path))


def generation_record(dtype: str) -> dict[str, Any]:
    """What a local backend's predictions and cache keys carry about how they were generated."""
    return {"dtype": dtype, "stop": STOP_RULE}


def merge_adapter(model, dtype: str):
    """``model`` (a PeftModel) with its adapter merged when it generates in low precision: the adapter's own
    matmuls would otherwise run beside every merged-able weight at each step."""
    return model.merge_and_unload() if dtype not in ("float32", "auto") else model
