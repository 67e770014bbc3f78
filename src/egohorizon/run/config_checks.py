"""Checks of a composed train.py / eval.py config that run before anything is built or written.

A wrong number (``data.batch_size=0``, ``trainer.max_steps=abc``) otherwise surfaces deep inside
Lightning or a DataLoader, after the run folder and the W&B run exist, as a traceback that names
``trainer`` or nothing at all. Here every problem names its key, the value given and what was expected,
and all of them are reported at once. Only keys the config has are checked. The ``data.*`` bounds are the
configured datamodule's own (its ``SETTING_BOUNDS``), so a new task declares them in its datamodule and
needs no change here.
"""

from __future__ import annotations

from dataclasses import replace

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from egohorizon.errors import ConfigError
from egohorizon.schema.forecast_groups import KS_BOUND
from egohorizon.setting_bounds import NO_LIMIT, UNSET, Bound, kind_of

_ABSENT = object()

SEED = Bound("seed", low=0)
# The settings every run has; the data.* ones come from the datamodule (datamodule_bounds), after the seed.
BOUNDS = (
    # optimisation
    Bound("model.optimizer.lr", integer=False, low=0, above=True),
    Bound("model.optimizer.weight_decay", integer=False, low=0),
    Bound("model.scheduler.num_warmup_steps", low=0),
    Bound("model.generation.num_candidates", low=1),
    Bound("model.generation.num_beams", low=1, also=UNSET),  # null: one beam per candidate (models.lora_lm)
    Bound("model.generation.max_new_tokens", low=1),
    Bound("model.generation.temperature", integer=False, low=0),
    # Lightning's Trainer (-1: no limit, as Lightning reads it)
    Bound("trainer.max_epochs", low=1, also=NO_LIMIT + UNSET),
    Bound("trainer.max_steps", low=1, also=NO_LIMIT),
    Bound("trainer.accumulate_grad_batches", low=1),
    Bound("trainer.log_every_n_steps", low=1),
    Bound("trainer.check_val_every_n_epoch", low=1, also=UNSET),
    Bound("trainer.num_sanity_val_steps", low=0, also=NO_LIMIT),
    Bound("trainer.gradient_clip_val", integer=False, low=0, also=UNSET),
    Bound("trainer.num_nodes", low=1),
    # eval.py
    Bound("n_random_draws", low=1),
    Bound("n_examples", low=0),
    Bound("llm.num_candidates", low=1),
    Bound("llm.max_new_tokens", low=1),
    Bound("llm.temperature", integer=False, low=0),
    Bound("sweep.n_context", low=1, each=True),
    Bound("sweep.levels", low=1, high=5, each=True),
    replace(KS_BOUND, key="sweep.ks"),  # the one K rule (schema/forecast_groups)
    Bound("sweep.n_boot", low=1),
)


def validate_config(cfg: DictConfig) -> None:
    """Raises ConfigError listing every bounded key (the seed, the datamodule's, ``BOUNDS``) whose value is
    of the wrong type or out of range (one line each); a config without problems passes silently."""
    bounds = (SEED, *datamodule_bounds(cfg), *BOUNDS)
    problems = [problem for bound in bounds for problem in _problems(cfg, bound)]
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} settings are wrong:\n  " + "\n  ".join(problems))


def datamodule_bounds(cfg: DictConfig) -> tuple[Bound, ...]:
    """The configured datamodule class's ``SETTING_BOUNDS`` under ``data.``; none where ``data._target_``
    does not name an importable class (building the datamodule then says what is wrong)."""
    from hydra.utils import get_class

    try:
        klass = get_class(str(OmegaConf.select(cfg, "data._target_", default=None)))
    except Exception:  # noqa: BLE001  (hydra wraps any import failure in its own error types)
        return ()
    return tuple(replace(bound, key=f"data.{bound.key}") for bound in getattr(klass, "SETTING_BOUNDS", ()))


def _problems(cfg: DictConfig, bound: Bound) -> list[str]:
    try:
        value = OmegaConf.select(cfg, bound.key, default=_ABSENT, throw_on_missing=False)
    except OmegaConfBaseException as error:  # an interpolation that does not resolve
        return [f"{bound.key}: {error}".splitlines()[0]]
    if value is _ABSENT:
        return []
    if not bound.each:
        problem = bound.problem(value)
        return [f"{bound.key} {problem}"] if problem else []
    if not isinstance(value, (list, tuple, ListConfig)):
        return [f"{bound.key} must be a list ([1, 2]), got {value!r} ({kind_of(value)})"]
    return [f"{bound.key}[{i}] {problem}" for i, item in enumerate(value) if (problem := bound.problem(item))]

