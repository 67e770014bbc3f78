"""A CPU run's freed heap memory goes back to the system (egohorizon.callbacks.free_memory): malloc_trim
really shrinks a heap full of freed blocks, and the callback trims every n steps and after each pass."""

from __future__ import annotations

import platform

import lightning as L
import pytest
import torch

from egohorizon.callbacks import free_memory
from egohorizon.callbacks.free_memory import ReturnFreedMemory, trim_heap


def _resident_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(platform.system() != "Linux", reason="glibc's malloc_trim")
def test_trimming_gives_freed_heap_blocks_back():
    # 64 KB blocks sit in the heap (under glibc's 128 KB mmap threshold); the last one kept pins its top,
    # so only a trim can return the 190 MB freed below it.
    blocks = [bytearray(64 * 1024) for _ in range(3000)]
    keep = blocks[-1]
    del blocks
    before = _resident_mb()
    assert trim_heap()
    assert before - _resident_mb() > 100
    assert len(keep) == 64 * 1024


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def validation_step(self, batch, batch_idx):
        return None

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_the_callback_trims_every_n_steps_and_after_each_pass(monkeypatch):
    calls = []
    monkeypatch.setattr(free_memory, "trim_heap", lambda: calls.append("trim") or True)
    data = torch.utils.data.DataLoader(torch.ones(8, 2), batch_size=1)
    trainer = L.Trainer(accelerator="cpu", max_steps=6, val_check_interval=3, limit_val_batches=1,
                        num_sanity_val_steps=0, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[ReturnFreedMemory(every_n_steps=2)])
    trainer.fit(Tiny(), train_dataloaders=data, val_dataloaders=data)
    assert len(calls) == 3 + 2  # after steps 2, 4 and 6, and after the two validation passes
    with pytest.raises(ValueError, match="every_n_steps"):
        ReturnFreedMemory(every_n_steps=0)
