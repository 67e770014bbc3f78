"""Composed Hydra configs of the forecasting runs the tests make: the toy-world, toy-backbone overrides
and ``conf/`` composed as train.py and eval.py compose it."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from toy_backbone import TOY_BACKBONE

from egohorizon.run.resolvers import register_resolvers

REPO_ROOT = Path(__file__).resolve().parents[2]
register_resolvers()  # as train.py and eval.py do before Hydra composes


def toy_overrides(events, tmp_path, run_name: str) -> list[str]:
    """A forecast run on the toy world's ``events`` with the toy backbone, small enough for a CPU in seconds."""
    return [
        "data=forecast_events",
        f"data.events={events}",
        "data.n_context=4",
        "data.max_train_points=12",
        "data.max_eval_points=3",
        "data.batch_size=4",
        "data.eval_batch_size=4",
        "data.max_length=2048",
        "data.num_workers=0",
        *TOY_BACKBONE,
        f"backbone.cache_dir={tmp_path}/cache",
        "model.generation.max_new_tokens=6",
        "model.generation.max_new_tokens_per_action=2",
        f"paths.run_dir={tmp_path}/{run_name}",
        f"paths.cache_dir={tmp_path}/cache",
        "trainer.enable_progress_bar=false",
    ]


def compose_config(name: str, overrides: list[str]):
    """``conf/<name>.yaml`` composed with ``overrides``, as train.py and eval.py compose it."""
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose(name, overrides=overrides)
