"""Freed memory goes back to the operating system on a CPU run (glibc's ``malloc_trim``).

A LoRA step on a CPU allocates and frees gigabytes of activations whose sizes change with every batch's
length. glibc keeps what is freed in its heaps for reuse, and with shapes that keep changing the heaps
only grow: the demo's resident memory rose from 5.8 GB after its first steps to 8.1 GB at step 30 and
10.1 GB at its end, while the tensors alive at any time stayed under 5 GB (measured with the mmap
threshold fixed, docs/real-model.md). Making every large tensor an mmap (``MALLOC_MMAP_THRESHOLD_``)
kept memory down but made steps ~40 % slower (each step faults its pages in again); trimming the heaps
every few steps and after each evaluation pass bounds the growth for a small part of that.

Hand-written: neither torch nor Lightning returns host memory. Nothing happens off Linux/glibc or on an
accelerator other than the CPU.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import platform

import lightning as L

log = logging.getLogger(__name__)


def trim_heap() -> bool:
    """``malloc_trim(0)``: glibc gives its heaps' free pages back to the system. False where there is no
    glibc (another libc, macOS, Windows): nothing done."""
    if platform.system() != "Linux":
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim(0)
    return True


class ReturnFreedMemory(L.Callback):
    """Trims the heaps every ``every_n_steps`` training steps and at the end of every validation and test
    pass (the merged generation copy and its caches are dropped then), on CPU runs only."""

    def __init__(self, every_n_steps: int = 5):
        if every_n_steps < 1:
            raise ValueError(f"every_n_steps must be >= 1, got {every_n_steps}")
        self.every_n_steps = every_n_steps

    @staticmethod
    def _on_cpu(trainer: L.Trainer) -> bool:
        return isinstance(trainer.accelerator, L.pytorch.accelerators.CPUAccelerator)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self._on_cpu(trainer) and trainer.global_step % self.every_n_steps == 0:
            trim_heap()

    def on_validation_end(self, trainer, pl_module) -> None:
        if self._on_cpu(trainer):
            trim_heap()

    def on_test_end(self, trainer, pl_module) -> None:
        if self._on_cpu(trainer):
            trim_heap()
