"""The training precision a CPU run gets by default: ``${precision_for:${trainer.accelerator}}`` in a config.

Measured on the real SmolLM2-135M through train.py (scripts/bench_train_cpu.py, docs/real-model.md): on a
CPU that computes bfloat16 natively (avx512_bf16 or AMX), bf16 autocast (``bf16-mixed``) trains about 1.6-2.2x
faster than float32 and reaches the same validation loss. Where bfloat16 is emulated it is slower, so such
a CPU keeps ``32-true``. Other accelerators get ``bf16-true``, as trainer/gpu.yaml does. The toy backbone's
runs (the toy demo world, the tests) keep trainer/cpu.yaml's ``32-true``: only the real-model experiments use this.
The resolver is registered by the middle (run/resolvers.py), the one reader of configs.
"""

from __future__ import annotations


def native_bf16_cpu() -> bool:
    """Whether this CPU has bfloat16 arithmetic in hardware (torch's own probes; False where they are
    missing from the installed torch)."""
    try:
        import torch

        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except (AttributeError, RuntimeError):
        return False


def precision_for(accelerator: str) -> str:
    """Lightning's ``precision`` for ``accelerator`` (``trainer.accelerator``)."""
    if str(accelerator) == "cpu":
        return "bf16-mixed" if native_bf16_cpu() else "32-true"
    return "bf16-true"


# The weights' dtype for generation (evaluation passes, serve, bench, the offline jobs). Decoding is
# memory-bound: bfloat16 weights halve what each step reads. Measured on the real SmolLM2-135M, 2 cores
# (issue 37): a bare batched ``generate`` runs at 89 new tokens/s in float32 and 194 in bfloat16.
GENERATION_DTYPES = ("auto", "float32", "bfloat16")


def generation_dtype(setting: str | None = "auto", device_type: str = "cpu", toy: bool = False) -> str:
    """``setting`` (``auto``, ``float32``, ``bfloat16``; None is ``auto``) resolved for a model on
    ``device_type``. ``auto``: bfloat16 where the device computes it natively (a CPU with avx512_bf16 or
    AMX, a CUDA GPU with bf16), else float32; the toy backbone (``toy``) keeps float32, the dtype the
    tests' and the toy demo's figures were made in."""
    setting = "auto" if setting is None else str(setting)
    if setting not in GENERATION_DTYPES:
        raise ValueError(f"generation dtype: expected one of {GENERATION_DTYPES}, got {setting!r}")
    if setting != "auto":
        return setting
    if toy:
        return "float32"
    if device_type == "cuda":
        import torch

        return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if device_type == "cpu" and native_bf16_cpu() else "float32"
