"""CaptionDataModule: held-out days pick whole shards; batches carry padded frames, gaze and text."""

from __future__ import annotations

import json
import math

import lightning as L
import pytest
import torch
from omegaconf import OmegaConf
from shard_helpers import build_toy_shards

from datamodules.caption import CaptionDataModule, CaptionInputs
from egohorizon.errors import ConfigError


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap") / "shards"
    build_toy_shards(out, days=3, sessions=1, seconds=70)  # 3 windows a day (30, 30, 10 frames)
    return out


def write_split(path, train, val, test):
    path.write_text(json.dumps({"version": 1, "participants": {"p1": {"train": train, "val": val, "test": test}}}))
    return str(path)


def test_split_selects_whole_days(shard_dir, tmp_path):
    split = write_split(tmp_path / "split.json", ["2023-11-14"], ["2023-11-15"], ["2023-11-16"])
    data = CaptionDataModule(shards=str(shard_dir), split_file=split, batch_size=2, num_workers=0)
    data.setup()
    for name, day in (("train", "2023-11-14"), ("val", "2023-11-15"), ("test", "2023-11-16")):
        assert {e["day"] for e in data.selected[name]} == {day}
    keys = [k for batch in data.val_dataloader() for k in batch["key"]]
    assert sorted(keys) == [f"p1_2023-11-15_s0_w{i:05d}" for i in range(3)]


def test_batch_layout(shard_dir, tmp_path):
    split = write_split(tmp_path / "split.json", ["2023-11-14", "2023-11-15"], [], ["2023-11-16"])
    data = CaptionDataModule(shards=str(shard_dir), split_file=split, batch_size=3, num_workers=0, shuffle_buffer=0)
    batch = next(iter(data.test_dataloader()))  # the test day, in order: 30, 30 and 10 frames
    assert batch["frames"].shape == (3, 30, 3, 24, 32) and batch["frames"].dtype == torch.uint8
    assert batch["frame_mask"].sum(1).tolist() == [30, 30, 10]
    assert batch["crops"].shape == (3, 30, 3, 16, 16)
    # Gaze: frame 9 of each window has none; the point lies inside the frame; times from the window start.
    assert not batch["gaze_valid"][0, 9] and math.isnan(batch["gaze"][0, 9, 0])
    assert batch["gaze_valid"][0, 0] and 0 <= batch["gaze"][0, 0, 0] < 32
    assert batch["gaze_norm"][0, 0, 0] == pytest.approx((batch["gaze"][0, 0, 0] + 0.5) / 32)
    assert batch["times"][1, :3].tolist() == [0.0, 1.0, 2.0]
    assert not batch["crop_valid"][0, 9] and batch["crop_valid"][0, 0]
    assert not batch["frame_mask"][2, 10:].any() and (batch["frames"][2, 10:] == 0).all()
    assert batch["key"][0] == "p1_2023-11-16_s0_w00000" and batch["transcript"] == ["", "", ""]


def test_frames_per_window_subsamples_evenly():
    assert CaptionInputs(frames_per_window=4).pick(30) == [0, 10, 19, 29]
    assert CaptionInputs(frames_per_window=8).pick(5) == [0, 1, 2, 3, 4]


def test_split_from_fractions_and_empty_split(shard_dir):
    data = CaptionDataModule(shards=str(shard_dir), val_frac=0.0, test_frac=0.3, min_history_days=1,
                             split_strategy="last", num_workers=0)
    data.setup()
    assert {e["day"] for e in data.selected["test"]} == {"2023-11-16"}
    assert len(data.selected["train"]) > 0
    with pytest.raises(ConfigError, match="no shards for the 'val' split"):
        data.val_dataloader()


def test_config_instantiates(shard_dir, repo_root):
    from hydra.utils import instantiate

    config = OmegaConf.load(repo_root / "conf/data/caption.yaml")
    config = OmegaConf.merge({"paths": {"root_dir": "."}, "seed": 3}, {"data": config})
    config.data.shards = str(shard_dir)
    data = instantiate(config.data)
    assert isinstance(data, CaptionDataModule) and data.seed == 3 and data.num_workers == 2
    with pytest.raises(ConfigError, match="epoch_samples"):
        CaptionDataModule(shards=str(shard_dir), resampled=True)


class FrameMean(L.LightningModule):
    """A one-parameter module: enough for Lightning to run the loaders through fit and validate."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.seen: list[str] = []

    def training_step(self, batch, batch_idx):
        self.seen.extend(batch["key"])
        return (self.weight * batch["frames"].float().mean()).sum()

    def validation_step(self, batch, batch_idx):
        self.log("val/loss", batch["frames"].float().mean(), batch_size=len(batch["key"]))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_lightning_fit_streams_every_train_window(shard_dir, tmp_path):
    from lightning.pytorch.loggers import CSVLogger

    split = write_split(tmp_path / "split.json", ["2023-11-14", "2023-11-15"], ["2023-11-16"], [])
    data = CaptionDataModule(shards=str(shard_dir), split_file=split, batch_size=2, num_workers=0, log_every=1)
    model = FrameMean()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, logger=CSVLogger(tmp_path),
                        enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False,
                        num_sanity_val_steps=0)
    trainer.fit(model, datamodule=data)
    assert sorted(model.seen) == sorted(f"p1_2023-11-1{d}_s0_w{i:05d}" for d in (4, 5) for i in range(3))
    metrics = (tmp_path / "lightning_logs/version_0/metrics.csv").read_text()
    assert "train/data_samples_ok" in metrics and "val/data_bad_fraction" in metrics
