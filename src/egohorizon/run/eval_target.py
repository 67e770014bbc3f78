"""What ``eval.py`` evaluates, resolved once and handed down: the ``ckpt`` target's adapter (with its
recorded metadata) and the runs whose training days no scored item may come from.

- the adapter: ``ckpt`` (an ``*.adapter`` folder, a ``*.ckpt`` with its adapter beside it, or a run
  folder) resolved on first use, so a run evaluated only by its baselines needs no adapter at all;
- the runs: the run ``ckpt`` belongs to (its ``split.json``, or for an older run its split rebuilt, with
  a warning; ``egohorizon.run.split_record``) and, from ``egohorizon compare``, every compared run
  (``held_out_guard``: ``{run, split_file}`` entries).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from egohorizon.checkpoints import read_adapter_meta, resolve_adapter

# eval.py's log lines keep the name they always had (the lines came from evaluation.py before issue 39)
log = logging.getLogger("egohorizon.run.evaluation")


@dataclass
class EvalTarget:
    """The evaluated checkpoint (``ckpt``; None: the config's backbone, untrained) and the held-out runs."""

    ckpt: str | None
    runs: list = field(default_factory=list)  # split_record.RunSplit, the evaluated run's first

    @property
    def own(self):
        """The evaluated checkpoint's run (its day split), or None."""
        return next((run for run in self.runs if run.evaluated), None)

    @cached_property
    def adapter(self) -> Path:
        return resolve_adapter(self.ckpt)

    @cached_property
    def meta(self) -> dict[str, Any]:
        """The adapter's ``egohorizon_adapter.json``: its base model, prompt, data and decoding."""
        return read_adapter_meta(self.adapter)

    def save_own_split(self, cfg: DictConfig) -> Path:
        """The evaluated run's day split, saved into this evaluation's folder (``evaluated_split.json``) for
        the datamodule's ``split_file``: the items come from the run's own held-out days, not from a split
        drawn with this config's seed."""
        run = self.own
        path = run.split.save(Path(cfg.paths.run_dir) / "evaluated_split.json")
        log.info("ckpt=%s: evaluating on the run's own day split (%s; run seed %s, this config's seed %s)",
                 cfg.ckpt, run.source, run.seed, cfg.get("seed"))
        return path

    def trained_on(self) -> str:
        """The evaluated run's data inputs as its split record names them, or where to find its data settings."""
        run = self.own
        recorded = [f"{key}={value.get('path')}" for key, value in (run.inputs or {}).items()]
        return ", ".join(recorded) or f"see its {run.run_dir / 'config.yaml'}"


def resolve_eval_target(cfg: DictConfig) -> EvalTarget:
    """``ckpt`` and the held-out runs of the config, read once per evaluation."""
    from egohorizon.data.splits import DaySplit
    from egohorizon.run.split_record import RunSplit, run_split_of

    runs = []
    if cfg.get("ckpt"):
        own = run_split_of(cfg.ckpt)
        if own is not None:
            own.evaluated = True
            runs.append(own)
        else:
            log.warning("ckpt=%s: no run folder with a day split beside it (split.json, points/splits.json or "
                        "config.yaml); the evaluated items cannot be checked against its training days", cfg.ckpt)
    for entry in cfg.get("held_out_guard") or []:
        if any(Path(entry.run).resolve() == run.run_dir.resolve() for run in runs):
            continue  # the evaluated run itself: checked once
        runs.append(RunSplit(Path(entry.run), DaySplit.load(entry.split_file), str(entry.split_file)))
    return EvalTarget(ckpt=cfg.get("ckpt"), runs=runs)
