"""SlurmRequeue without a cluster: a real Lightning fit that gets SIGUSR1 mid-epoch (the multi-process,
requeue-and-resume case runs against a real cluster in test_slurm.py)."""

from __future__ import annotations

import os
import signal

import pytest

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning")

from egohorizon.callbacks.slurm_requeue import SlurmRequeue, next_hpc_checkpoint, slurm_job_id

SIGNAL_AT_BATCH = 3


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        if batch_idx == SIGNAL_AT_BATCH:  # Slurm's warning arrives in the middle of a step
            os.kill(os.getpid(), signal.SIGUSR1)
        return self.layer(batch[0]).pow(2).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def fit(tmp_path, callback):
    trainer = L.Trainer(accelerator="cpu", max_steps=20, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                        callbacks=[callback])
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(40, 2)), batch_size=2)
    trainer.fit(Tiny(), data)
    return trainer


def test_signal_checkpoints_at_the_step_boundary_and_stops(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "123")
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    previous = signal.getsignal(signal.SIGUSR1)
    trainer = fit(tmp_path, SlurmRequeue(requeue=False))
    # The step in flight finished; the checkpoint was taken after it and training stopped there.
    assert trainer.global_step == SIGNAL_AT_BATCH + 1
    checkpoint = torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=False)
    assert checkpoint["global_step"] == SIGNAL_AT_BATCH + 1
    assert signal.getsignal(signal.SIGUSR1) == previous  # the handler is gone after fit


def test_outside_slurm_it_does_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    callback = SlurmRequeue()
    trainer = L.Trainer(accelerator="cpu", max_steps=2, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                        callbacks=[callback])
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 2)), batch_size=2)

    class Quiet(Tiny):
        def training_step(self, batch, batch_idx):
            return self.layer(batch[0]).pow(2).sum()

    trainer.fit(Quiet(), data)
    assert not callback._installed and not list(tmp_path.glob("hpc_ckpt_*"))


def test_job_ids_and_checkpoint_numbering(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    assert slurm_job_id() == "77"
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "70")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    assert slurm_job_id() == "70_3"  # scontrol requeue wants the array task, not the raw job id
    assert next_hpc_checkpoint(tmp_path).name == "hpc_ckpt_1.ckpt"
    (tmp_path / "hpc_ckpt_1.ckpt").touch()
    (tmp_path / "hpc_ckpt_4.ckpt").mkdir()  # DeepSpeed writes folders
    assert next_hpc_checkpoint(tmp_path).name == "hpc_ckpt_5.ckpt"
