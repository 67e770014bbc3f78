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
    callback = SlurmRequeue(requeue=False)
    trainer = fit(tmp_path, callback)
    # The step in flight finished; the checkpoint was taken after it and training stopped there.
    assert trainer.global_step == SIGNAL_AT_BATCH + 1
    checkpoint = torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=False)
    assert checkpoint["global_step"] == SIGNAL_AT_BATCH + 1
    assert signal.getsignal(signal.SIGUSR1) == callback._note_late  # after fit: one that only notes
    callback.release()
    assert signal.getsignal(signal.SIGUSR1) == previous


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


class SendSignal(L.Callback):
    """Sends ``signal_name`` to this process in the middle of training batch ``at`` (Slurm's warning)."""

    def __init__(self, signal_name: str = "SIGUSR1", at: int = 1):
        self.signum, self.at = signal.Signals[signal_name], at

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == self.at:
            os.kill(os.getpid(), self.signum)


def test_under_submitit_usr2_saves_a_checkpoint_then_hands_over_to_submitit(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "123")
    monkeypatch.setenv("SUBMITIT_EXECUTOR", "slurm")
    monkeypatch.delenv("SUBMITIT_PREEMPT_SIGNAL", raising=False)
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    handed_over = []

    def submitit_handler(signum, frame):  # submitit's checkpoint_and_try_requeue would requeue and exit
        handed_over.append((signum, sorted(p.name for p in tmp_path.glob("hpc_ckpt_*"))))

    previous = signal.signal(signal.SIGUSR2, submitit_handler)
    try:
        callback = SlurmRequeue(requeue=False)
        trainer = L.Trainer(accelerator="cpu", max_steps=20, logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                            callbacks=[SendSignal("SIGUSR2", at=2), callback])
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(40, 2)), batch_size=2)

        class Quiet(Tiny):
            def training_step(self, batch, batch_idx):
                return self.layer(batch[0]).pow(2).sum()

        trainer.fit(Quiet(), data)
        # submitit's handler ran once, after the checkpoint of the step in flight was on disk
        assert handed_over == [(signal.SIGUSR2, ["hpc_ckpt_1.ckpt"])]
        assert trainer.global_step == 3 and callback.requeued
        assert torch.load(tmp_path / "hpc_ckpt_1.ckpt", weights_only=False)["global_step"] == 3
        assert signal.getsignal(signal.SIGUSR2) is submitit_handler  # submitit's handler is back
    finally:
        signal.signal(signal.SIGUSR2, previous)


@pytest.mark.slow
def test_train_py_stops_after_a_requeue_without_testing(tmp_path, monkeypatch):
    from forecast_toy_world import write_toy_events
    from run_configs import compose_config, toy_overrides

    from egohorizon.run import train

    monkeypatch.setenv("SLURM_JOB_ID", "123")
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    monkeypatch.delenv("SUBMITIT_EXECUTOR", raising=False)
    events = write_toy_events(tmp_path)
    cfg = compose_config("train", ["experiment=forecast_l3", *toy_overrides(events, tmp_path, "run"), "logger=csv",
                                   "trainer.max_epochs=2", "callbacks.slurm_requeue.requeue=false",
                                   "+callbacks.signal._target_=test_slurm_requeue.SendSignal"])
    result = train(cfg)
    run = tmp_path / "run"
    assert result["requeued"] and result["global_step"] == 2
    assert (run / "hpc_ckpt_1.ckpt").is_file()
    assert not (run / "metrics.json").exists()  # no test, no outputs: the requeued job writes them


# A job whose warning comes in its last training step, between fit and test, in the test pass and after
# it (issue 36, item 17): nothing to checkpoint, so the run finishes and says so; before, the default
# action of SIGUSR1 killed the process once fit was over (the job ended FAILED).
LATE_SIGNALS = """
import os, signal, sys
import torch, lightning as L
from egohorizon.callbacks.slurm_requeue import SlurmRequeue

class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
    def training_step(self, batch, batch_idx):
        if self.trainer.global_step == 3:  # the last of max_steps=4
            os.kill(os.getpid(), signal.SIGUSR1)
        return self.layer(batch[0]).pow(2).sum()
    def test_step(self, batch, batch_idx):
        if batch_idx == 1:
            os.kill(os.getpid(), signal.SIGUSR1)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

callback = SlurmRequeue()  # requeue=True: scontrol would be called if it wrongly requeued
trainer = L.Trainer(accelerator="cpu", max_steps=4, logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False, default_root_dir=sys.argv[1],
                    callbacks=[callback])
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 2)), batch_size=2)
model = Tiny()
trainer.fit(model, data)
os.kill(os.getpid(), signal.SIGUSR1)  # between fit and test
trainer.test(model, data, verbose=False)
os.kill(os.getpid(), signal.SIGUSR1)  # after the test pass
print("finished", trainer.global_step, callback.late_signals, callback.requeued)
"""


def test_a_signal_after_the_last_step_lets_the_run_finish_and_says_so(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "SLURM_JOB_ID": "123", "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    env.pop("SLURM_ARRAY_JOB_ID", None)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2] / "src"), env.get("PYTHONPATH", "")])
    scontrol = tmp_path / "scontrol"  # a requeue would call it: it leaves a trace instead of a cluster
    scontrol.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/scontrol.calls\n")
    scontrol.chmod(0o755)
    result = subprocess.run([sys.executable, "-c", LATE_SIGNALS, str(tmp_path)], env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "finished 4 4 False" in result.stdout
    assert "Slurm signal after the last training step (step 4): finishing what is left" in result.stderr
    assert result.stderr.count("[SlurmRequeue] SIGUSR1 after training ended: finishing what is left (test, "
                               "outputs) instead of requeuing") == 3
    assert not list(tmp_path.glob("hpc_ckpt_*")) and not (tmp_path / "scontrol.calls").exists()
