"""The project's OmegaConf resolvers, registered before Hydra composes (train.py, eval.py, the middle):

- ``${precision_for:${trainer.accelerator}}``: the training precision of a machine (egohorizon.precision);
- ``${task_objective:}``: the run's validation objective, named by its task (``Task.default_objective``
  of ``eval_task``, given the ``data`` settings: ``val/forecast_S_norm_L3_K1`` for experiment=forecast_l3).
  conf/train.yaml and conf/eval.yaml set ``objective`` to it once, so the task is the one source of its
  objective; an experiment that ranks checkpoints on another metric sets ``objective`` itself.
"""

from __future__ import annotations

from typing import Any

from egohorizon.precision import precision_for

PRECISION = "precision_for"
OBJECTIVE = "task_objective"


def task_objective(*, _root_: Any) -> str:
    """The objective ``eval_task``'s task names for the config's ``data`` (OmegaConf passes the root)."""
    from egohorizon.tasks import get_task

    return get_task(str(_root_.eval_task)).default_objective(_root_.get("data") or {})


def register_resolvers() -> None:
    """Make the resolvers above known to OmegaConf (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(PRECISION):
        OmegaConf.register_new_resolver(PRECISION, precision_for)
    if not OmegaConf.has_resolver(OBJECTIVE):
        OmegaConf.register_new_resolver(OBJECTIVE, task_objective)
