"""SlurmRequeue: on Slurm's warning signal, checkpoint at the next step boundary, requeue, stop.

Slurm warns a job before its time limit or a preemption (``--signal=B:USR1@300`` in
slurm/train.sbatch, or ``scancel --batch --signal=USR1 <job>``). Lightning's own SLURM handler
(``SLURMEnvironment(auto_requeue=True)``) saves the checkpoint *inside* the signal handler, i.e.
wherever the main thread happens to be: in the middle of the optimizer's update (a checkpoint with
half-updated weights), or inside a collective of a checkpoint save that is already under way (a
nested barrier); on our local cluster its checkpoints came back with the loop counters one step
apart. This callback only notes the signal in the handler, and acts at the end of the next training
batch, where every rank agrees (one all-reduce of a flag per step) and the state is consistent:
all ranks save ``hpc_ckpt_<n>.ckpt`` into the run folder (Lightning's name, so ``ckpt_path=auto``
and Lightning's own SLURM resume both find it), rank zero calls ``scontrol requeue``, and training
stops. The requeued job keeps its id, hence its run folder, and resumes from that checkpoint.

Active only inside a Slurm job (``SLURM_JOB_ID``); elsewhere it does nothing. Lightning installs
its own handler for the requeue signal only where none is installed yet, and it does so after the
callbacks' ``setup``: the handler installed here keeps Lightning's off. Lightning's SLURM environment
still provides the ranks, and its SIGTERM handling still ends the processes when Slurm requeues.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
from pathlib import Path

from lightning.pytorch.callbacks import Callback

log = logging.getLogger(__name__)

HPC_CHECKPOINT = re.compile(r"hpc_ckpt_(\d+)\.ckpt$")


def slurm_job_id() -> str | None:
    """The id ``scontrol requeue`` needs: ``<array job>_<task>`` for an array task, else the job id."""
    array_job, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array_job and task:
        return f"{array_job}_{task}"
    return os.environ.get("SLURM_JOB_ID")


def next_hpc_checkpoint(folder: str | Path) -> Path:
    """``hpc_ckpt_<n+1>.ckpt`` after the highest ``n`` in ``folder`` (Lightning's numbering)."""
    folder = Path(folder)
    numbers = [int(m.group(1)) for p in folder.glob("hpc_ckpt_*.ckpt") if (m := HPC_CHECKPOINT.search(p.name))]
    return folder / f"hpc_ckpt_{max(numbers, default=0) + 1}.ckpt"


class SlurmRequeue(Callback):
    def __init__(self, signal_name: str = "SIGUSR1", requeue: bool = True):
        self.signum = signal.Signals[signal_name]
        self.requeue = requeue
        self.requested = False
        self._previous_handler = None
        self._installed = False

    # -- the signal ----------------------------------------------------------------------------

    def setup(self, trainer, pl_module, stage: str) -> None:
        if stage != "fit" or slurm_job_id() is None or self._installed:
            return
        self.requested = False
        self._previous_handler = signal.signal(self.signum, self._note_signal)
        self._installed = True
        log.info("Slurm job %s: %s -> checkpoint at the next step, requeue, stop", slurm_job_id(), self.signum.name)

    def _note_signal(self, signum, frame) -> None:
        # Nothing else here: the main thread may be anywhere (inside a collective, mid-update).
        self.requested = True

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if self._installed:
            signal.signal(self.signum, self._previous_handler or signal.SIG_DFL)
            self._installed = False

    # -- acting on it --------------------------------------------------------------------------

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not self._installed:
            return
        # Every rank takes part in this reduction each step, so all of them stop at the same batch
        # even when the signal reached them a few instructions apart.
        if not trainer.strategy.reduce_boolean_decision(self.requested, all=False):
            return
        path = next_hpc_checkpoint(trainer.default_root_dir)
        path = Path(trainer.strategy.broadcast(str(path), src=0))  # one name for all ranks
        log.info("Slurm signal: saving %s at step %d", path, trainer.global_step)
        trainer.save_checkpoint(path)
        if trainer.is_global_zero and self.requeue:
            self._requeue()
        trainer.should_stop = True
        self.requested = False

    def _requeue(self) -> None:
        job = slurm_job_id()
        result = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            log.info("requeued Slurm job %s", job)
        else:
            log.error("scontrol requeue %s failed (%d): %s", job, result.returncode, result.stderr.strip())
