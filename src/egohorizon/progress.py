"""Progress of a long step, as the caption job shows it (``pipelines.caption.job._Progress``): on a terminal a
rich bar on stderr (done/total, %, rate, elapsed, ETA; a spinner and the elapsed time when the total is
unknown), elsewhere (a log file, a pipe, a Slurm job) one log line every ``log_every_s`` seconds. stdout
is left alone, so a command's JSON result stays parseable."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


class StepProgress:
    """``with progress.step("drafting questions", total) as advance: ... advance()`` per unit of work."""

    def __init__(self, live: bool | None = None, log_every_s: float = 30.0):
        self.live = sys.stderr.isatty() if live is None else live
        self.log_every_s = log_every_s

    @contextmanager
    def step(self, label: str, total: int | None = None, unit: str = "items") -> Iterator[Callable[[int], None]]:
        if self.live:
            with self._bar(label, total, unit) as advance:
                yield advance
        else:
            yield self._logger(label, total, unit)

    @contextmanager
    def _bar(self, label: str, total: int | None, unit: str) -> Iterator[Callable[[int], None]]:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if total is None:  # the end is unknown: a spinner and the time so far
            columns = [SpinnerColumn(), TextColumn(label), TimeElapsedColumn()]
        else:
            columns = [TextColumn(label), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                       TextColumn(f"{{task.fields[rate]}} {unit}/s"), TimeElapsedColumn(), TextColumn("ETA"),
                       TimeRemainingColumn()]
        start = time.perf_counter()
        with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task(label, total=total, rate="-")

            def advance(n: int = 1) -> None:
                done = bar.tasks[0].completed + n
                bar.update(task, advance=n, rate=f"{done / max(time.perf_counter() - start, 1e-9):.1f}")

            yield advance

    def _logger(self, label: str, total: int | None, unit: str) -> Callable[[int], None]:
        state = {"done": 0, "start": time.perf_counter(), "last": time.perf_counter()}

        def advance(n: int = 1) -> None:
            state["done"] += n
            now = time.perf_counter()
            if now - state["last"] < self.log_every_s:
                return
            state["last"] = now
            rate = state["done"] / max(now - state["start"], 1e-9)
            if total is None:
                log.info("%s: %d %s, %.1f %s/s", label, state["done"], unit, rate, unit)
            else:
                eta = (total - state["done"]) / rate if rate else float("nan")
                log.info("%s: %d/%d %s, %.1f %s/s, ETA %.0f s", label, state["done"], total, unit, rate, unit, eta)

        return advance


QUIET = StepProgress(live=False, log_every_s=float("inf"))  # library callers that asked for no progress
