"""Two DDP processes over gloo, each with two DataLoader workers, stream the caption shards:
every sample is seen exactly once per epoch across ranks and workers."""

from __future__ import annotations

import json
from pathlib import Path

import lightning as L
import pytest
import torch
from shard_helpers import all_keys, build_toy_shards

pytestmark = pytest.mark.slow



class KeyRecorder(L.LightningModule):
    """Records the window keys each rank trains on, per epoch, into files."""

    def __init__(self, out_dir: str):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.keys: list[str] = []
        self.out_dir = out_dir

    def training_step(self, batch, batch_idx):
        self.keys.extend(batch["key"])
        assert batch["frames"].dtype == torch.uint8 and batch["frames"].shape[:2] == batch["gaze"].shape[:2]
        return (self.weight * batch["frames"].float().mean()).sum()

    def on_train_epoch_end(self):
        path = Path(self.out_dir) / f"rank{self.global_rank}_epoch{self.current_epoch}.json"
        path.write_text(json.dumps(self.keys))
        self.keys = []

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_ddp_two_ranks_two_workers_every_sample_once(tmp_path):
    from datamodules.caption import CaptionDataModule

    # 4 shards of 2 windows on 2 days: each of the 4 (rank, worker) pairs reads one shard.
    index = build_toy_shards(tmp_path / "shards", days=2, sessions=2, seconds=60, samples_per_shard=2)
    assert len(index.shards) == 4
    split = {"version": 1, "participants": {"p1": {"train": ["2023-11-14", "2023-11-15"], "val": [], "test": []}}}
    (tmp_path / "split.json").write_text(json.dumps(split))
    data = CaptionDataModule(shards=str(tmp_path / "shards"), split_file=str(tmp_path / "split.json"),
                             batch_size=2, num_workers=2, shuffle_buffer=4, seed=5)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", max_epochs=2, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, limit_val_batches=0,
                        num_sanity_val_steps=0, enable_model_summary=False)
    trainer.fit(KeyRecorder(str(tmp_path)), datamodule=data)
    expected = sorted(all_keys(index))
    assert len(expected) == 8
    for epoch in range(2):
        per_rank = [json.loads((tmp_path / f"rank{r}_epoch{epoch}.json").read_text()) for r in range(2)]
        assert per_rank[0] and per_rank[1], "both ranks got samples"
        assert sorted(per_rank[0] + per_rank[1]) == expected  # each sample exactly once per epoch
