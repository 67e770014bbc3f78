"""The backtest table (egohorizon.studies.backtest) from hand-written run folders: one row per (d,
predictor, group) from each run's own summary, unfinished runs listed, bad folders named by file and field."""

from __future__ import annotations

import json

import pytest

from egohorizon.errors import ConfigError, DataError
from egohorizon.studies.backtest import gather_backtest, plot_backtest


def _run(folder, d, model=0.1, strategy="backtest", finished=True):
    run = folder / f"d{d}"
    run.mkdir(parents=True)
    settings = {"strategy": strategy, "backtest_day": d}
    (run / "split.json").write_text(json.dumps({"version": 1, "settings": settings, "participants": {}}))
    if finished:
        row = {"source": "demo", "level": 3, "k": 1, "n": 4, "model_S": 0.5, "model_S_norm": model,
               "model_invalid_rate": 0.25, "repeat_last_S": 0.3, "repeat_last_S_norm": 0.05, "random_S": 0.2,
               "random_S_norm": 0.0, "markov_S": 0.4, "markov_S_norm": 0.2, "markov_no_history": 1,
               "markov_no_clock": 0}
        (run / "metrics.json").write_text(json.dumps({"summary": [row]}))


def test_rows_come_from_each_runs_summary_and_unfinished_runs_are_listed(tmp_path):
    _run(tmp_path, 3, model=0.3)
    _run(tmp_path, 2, model=0.1)
    _run(tmp_path, 4, finished=False)
    rows, unfinished = gather_backtest(tmp_path)
    assert unfinished == ["d4"]
    assert [(r["d"], r["predictor"]) for r in rows] == [(d, p) for d in (2, 3)
                                                        for p in ("model", "repeat_last", "random", "markov")]
    model = {r["d"]: r for r in rows if r["predictor"] == "model"}
    assert model[3]["S_norm"] == 0.3 and model[2]["invalid_rate"] == 0.25 and model[2]["n"] == 4
    assert next(r for r in rows if r["predictor"] == "markov")["no_history"] == 1
    assert plot_backtest(rows, tmp_path / "plot.png").stat().st_size > 5_000


def test_bad_folders_are_refused_naming_file_and_field(tmp_path):
    with pytest.raises(ConfigError, match="sweep.runs"):
        gather_backtest(tmp_path / "missing")
    _run(tmp_path / "other", 2, strategy="random")
    with pytest.raises(DataError, match=r"d2/split.json: field 'settings.strategy'"):
        gather_backtest(tmp_path / "other")
    _run(tmp_path / "broken", 2)
    (tmp_path / "broken" / "d2" / "metrics.json").write_text("{}")
    with pytest.raises(DataError, match=r"d2/metrics.json: field 'summary'"):
        gather_backtest(tmp_path / "broken")
    _run(tmp_path / "none", 2, finished=False)
    with pytest.raises(DataError, match="no finished backtest run"):
        gather_backtest(tmp_path / "none")


def test_the_backtest_sweep_file_sweeps_d_through_the_one_training_config_and_the_table_needs_its_runs(tmp_path):
    from hydra import compose, initialize_config_dir
    from run_configs import REPO_ROOT

    from egohorizon.run.config_checks import validate_config
    from egohorizon.run.studies import run_sweep

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", ["+sweep=backtest", "experiment=forecast_l3"], return_hydra_config=True)
        table = compose("eval", ["+sweep=backtest_table", f"paths.run_dir={tmp_path}"])
    assert cfg.task_name == "backtest" and cfg.data.backtest_day is None  # set per job by the sweeper
    assert cfg.hydra.sweeper.params["data.backtest_day"] == "range(2,7)"
    assert cfg.data._target_ == "datamodules.forecast.ForecastDataModule"  # train.py's own forecast run
    validate_config(table)
    with pytest.raises(ConfigError, match="sweep.runs: not set"):
        run_sweep(table, tmp_path)
