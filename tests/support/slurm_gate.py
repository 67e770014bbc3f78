"""A callback for the Slurm tests (issue 36, item 17): it holds training before step ``at_step`` on a
job's first attempt, and the test pass before its first batch on attempt ``test_restart``, until Slurm's
warning signal has reached this process, so the test signals a job that cannot have finished first (or
one that is in its test pass), whatever the machine's load."""

from __future__ import annotations

import os
import time

from lightning.pytorch.callbacks import Callback

from egohorizon.callbacks.slurm_requeue import SlurmRequeue

HOLDING = "[slurm_gate] holding"  # the job's log line the test waits for, once per rank


class HoldForSignal(Callback):
    def __init__(self, at_step: int | None = None, in_test: bool = False, test_restart: int = 0,
                 timeout_s: float = 600.0):
        self.at_step, self.in_test, self.test_restart, self.timeout_s = at_step, in_test, test_restart, timeout_s

    def _hold(self, trainer, where: str, restart: int) -> None:
        if os.environ.get("SLURM_RESTART_COUNT", "0") != str(restart):  # another attempt runs freely
            return
        requeue = next(c for c in trainer.callbacks if isinstance(c, SlurmRequeue))
        print(f"{HOLDING} {where} until Slurm's signal", flush=True)
        deadline = time.monotonic() + self.timeout_s
        while not (requeue.requested or requeue.late_signals) and time.monotonic() < deadline:
            time.sleep(0.05)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.at_step:
            self._hold(trainer, f"at step {self.at_step}", 0)

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        if self.in_test and batch_idx == 0:
            self.in_test = False
            self._hold(trainer, "in the test pass", self.test_restart)
