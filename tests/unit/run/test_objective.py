"""Issue 39 §3: a run's objective has one source, its task (Task.default_objective through
${task_objective:} in conf/train.yaml and conf/eval.yaml); an experiment may still name another."""

from __future__ import annotations

import pytest
from conftest import REPO_ROOT
from hydra import compose, initialize_config_dir

from egohorizon.run.resolvers import register_resolvers
from egohorizon.tasks import TASKS, get_task

register_resolvers()


def _objective(name: str, overrides: list[str]) -> tuple[str, str]:
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose(name, overrides=[*overrides, "paths.run_dir=/unused"])
    return cfg.objective, cfg.callbacks.model_checkpoint.monitor


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_task_names_its_runs_objective(task):
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"task={task}", "paths.run_dir=/unused"])
    assert cfg.objective == get_task(task).default_objective(cfg.data) == cfg.callbacks.model_checkpoint.monitor


@pytest.mark.parametrize("name, overrides, expected", [
    ("train", ["experiment=forecast_l3"], "val/forecast_S_norm_L3_K1"),
    ("train", ["experiment=forecast_l2", "data.ks=[10]"], "val/forecast_S_norm_L2_K10"),
    ("eval", ["data.levels=[4]"], "val/forecast_S_norm_L4_K1"),
    ("train", ["experiment=forecast_epic_smollm2"], "val/forecast_S_norm"),  # the experiment's own
    ("train", ["experiment=qa_demo"], "val/qa_avg"),
])
def test_the_objective_follows_the_data_and_an_experiment_may_set_another(name, overrides, expected):
    assert _objective(name, overrides) == (expected, expected)
