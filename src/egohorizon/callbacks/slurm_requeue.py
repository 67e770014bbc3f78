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

Under submitit (Hydra's ``hydra/launcher=slurm``, ``SUBMITIT_EXECUTOR`` set) the warning is submitit's
preemption signal (``SUBMITIT_PREEMPT_SIGNAL``, USR2), whose handler requeues and exits at once
without a model checkpoint (the requeued point resumed from an older ``last.ckpt``). It is caught
here too: the checkpoint is saved at the next step, then submitit's own handler requeues the job.
After either, ``requeued`` is true and train.py stops without testing (the requeued job will).

A warning that comes after the last training step (in the final validation or checkpoint, between fit
and test, in the test pass, while the outputs are written or the loggers close) has nothing left to
checkpoint: the run finishes what is left, on time or not, and says so (issue 36, item 17). Before, the
handler was removed when fit ended and the signal's default action killed the tasks ("srun: error:
tasks 0-1: User defined signal 1"), failing a job whose training was done. So after fit the requeue
signal keeps a handler that only notes it, for the rest of the process (Lightning's test-time SLURM
handler, which would checkpoint and requeue in the middle of the test pass, stays off too); should
the time limit come first, rerunning the job resumes from the final ``last.ckpt`` and only tests.
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
        self.requeued = False  # a checkpoint was saved for a requeue and training stopped
        self._noted: int | None = None
        self.late_signals = 0  # requeue signals noted after training ended (nothing to checkpoint)
        self._previous: dict[int, object] = {}
        self._installed = False

    # -- the signal ----------------------------------------------------------------------------

    def setup(self, trainer, pl_module, stage: str) -> None:
        if stage != "fit" or slurm_job_id() is None or self._installed:
            return
        self.requested = self.requeued = False
        for signum in self.signals():
            previous = signal.signal(signum, self._note_signal)
            self._previous.setdefault(signum, previous)  # a second fit finds this callback's own
        self._installed = True
        names = "/".join(signal.Signals(s).name for s in self._previous)
        log.info("Slurm job %s: %s -> checkpoint at the next step, requeue, stop", slurm_job_id(), names)

    def signals(self) -> list[int]:
        """The requeue signal, and submitit's preemption signal when submitit started this job."""
        out = [self.signum]
        if os.environ.get("SUBMITIT_EXECUTOR") == "slurm":
            name = os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2")
            submitit = signal.Signals[name if name.startswith("SIG") else f"SIG{name}"]
            out += [submitit] if submitit != self.signum else []
        return out

    def _note_signal(self, signum, frame) -> None:
        # Nothing else here: the main thread may be anywhere (inside a collective, mid-update).
        self.requested, self._noted = True, signum

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if stage != "fit" or not self._installed:
            return
        previous = self._previous.get(self._noted) if self._noted != self.signum else None
        if self.requested and not self.requeued and callable(previous):
            # submitit's preemption after the last step: its handler requeues; the point resumes at
            # the final step and only tests.
            log.warning("submitit's preemption signal after the last training step: requeuing to test")
            previous(self._noted, None)
        elif self.requested and not self.requeued:  # it came after the last step's check
            self.late_signals += 1
            log.warning("Slurm signal after the last training step (step %d): finishing what is left (test, "
                        "outputs) instead of requeuing", trainer.global_step)
        # submitit's handler comes back (a preemption requeues; the requeued point resumes at the
        # final step and only tests); the requeue signal keeps a handler that only notes it.
        for signum, previous in self._previous.items():
            signal.signal(signum, self._note_late if signum == self.signum else (previous or signal.SIG_DFL))
        self._installed = False

    def _note_late(self, signum, frame) -> None:
        self.late_signals += 1
        # os.write, not logging: a handler may run while the main thread is inside a write to stderr.
        what = "already requeued: nothing to do" if self.requeued else \
            "finishing what is left (test, outputs) instead of requeuing"
        os.write(2, f"[SlurmRequeue] {signal.Signals(signum).name} after training ended: {what}\n".encode())

    def release(self) -> None:
        """Puts back the handlers found before fit (for a process that goes on to other work)."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous or signal.SIG_DFL)
        self._previous, self._installed = {}, False

    # -- acting on it --------------------------------------------------------------------------

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not self._installed:
            return
        if 0 < trainer.max_steps <= trainer.global_step:  # the last step: nothing left to resume
            return
        # Every rank takes part in this reduction each step, so all of them stop at the same batch
        # even when the signal reached them a few instructions apart.
        if not trainer.strategy.reduce_boolean_decision(self.requested, all=False):
            return
        path = next_hpc_checkpoint(trainer.default_root_dir)
        path = Path(trainer.strategy.broadcast(str(path), src=0))  # one name for all ranks
        log.info("Slurm signal: saving %s at step %d", path, trainer.global_step)
        trainer.save_checkpoint(path)
        self.requested, self.requeued = False, True
        trainer.should_stop = True
        previous = self._previous.get(self._noted) if self._noted != self.signum else None
        if callable(previous):
            # submitit's handler: it requeues the job (rank zero) and exits; the checkpoint is on disk.
            previous(self._noted, None)
        elif trainer.is_global_zero and self.requeue:
            self._requeue()

    def _requeue(self) -> None:
        job = slurm_job_id()
        result = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            log.info("requeued Slurm job %s", job)
        else:
            log.error("scontrol requeue %s failed (%d): %s", job, result.returncode, result.stderr.strip())
