"""``python eval.py``: a study (``+sweep=...``) or the predictors on a held-out split; the top floor of
``egohorizon.run``, above ``studies`` and ``evaluation``."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from egohorizon.run.config_checks import validate_config
from egohorizon.run.setup import setup_run


def evaluate(cfg: DictConfig) -> dict[str, Any]:
    """``python eval.py``: the predictors on a held-out split, or a study (``+sweep=context|levels``).
    The highest floor: it imports both, and neither imports it."""
    validate_config(cfg)
    run_dir = setup_run(cfg)
    if cfg.get("sweep"):
        from egohorizon.run.studies import run_sweep

        return run_sweep(cfg, run_dir)
    from egohorizon.run.evaluation import evaluate_run

    return evaluate_run(cfg, run_dir)
