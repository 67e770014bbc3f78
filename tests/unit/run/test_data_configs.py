"""Issue 39 §3: the forecast data files are diffs of conf/data/forecast_base.yaml; composed, each is what it
was when every file restated all its keys (values and key order, so `--cfg job` prints the same)."""

from __future__ import annotations

import pytest
from conftest import REPO_ROOT
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from egohorizon.run.resolvers import register_resolvers

register_resolvers()

# forecast_demo as it read before the split into a base and diffs (issue 39), key for key and in order.
DEMO = {
    "_target_": "datamodules.forecast.ForecastDataModule", "events": None, "points_dir": None, "demo_dir": None,
    "source": None, "levels": [3], "ks": [1, 10], "n_context": 10, "val_frac": 0.15, "test_frac": 0.15,
    "split_strategy": "random", "min_history_days": 3, "max_train_points": 1000, "max_eval_points": 100,
    "prompt": None, "eval_prompt_candidates": 1, "use_chat_template": None, "max_length": 1024, "batch_size": 16,
    "eval_batch_size": 32, "bucket_factor": 50, "num_workers": 0, "seed": "${seed}",
    "save_points_to": "${paths.run_dir}/points", "backtest_day": None, "backtest_min_days": None,
}
PAPER = {"n_context": 50, "max_train_points": None, "max_length": 4096, "batch_size": 4, "eval_batch_size": 8,
         "num_workers": 2}
EVENTS = {**DEMO, **PAPER, "events": "???", "max_eval_points": 500}
POINTS = {key: value for key, value in {**EVENTS, "events": None, "points_dir": "???", "levels": [1, 2, 3, 4, 5],
                                         "max_eval_points": None}.items() if not key.startswith("backtest_")}


def _data(name: str) -> dict:
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"data={name}"])
    return OmegaConf.to_container(cfg.data, resolve=False)


@pytest.mark.parametrize("name, expected", [("forecast_demo", DEMO), ("forecast_events", EVENTS),
                                            ("forecast_points", POINTS)])
def test_each_forecast_data_file_composes_to_what_it_said_in_full(name, expected):
    data = _data(name)
    assert data == expected
    assert list(data) == list(expected)  # the same order: `python train.py --cfg job` prints the same


def test_the_visual_data_is_the_demo_with_its_own_keys():
    data = _data("forecast_visual")
    assert list(data)[:len(DEMO)] == list(DEMO)
    assert data["_target_"] == "datamodules.forecast_visual.VisualForecastDataModule"
    assert (data["levels"], data["ks"], data["max_train_points"], data["batch_size"]) == ([1, 2, 3], [1], 300, 8)
