"""The rolling backtest end to end at toy size (issue 38, item 5): ``python train.py -m +sweep=backtest`` on
the demo world with the tiny backbone trains one run per d, and ``python eval.py +sweep=backtest_table``
gathers them into a table with one row per (d, predictor) per K and a PNG (~40 s on 2 cores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from toy_backbone import TOY_BACKBONE

from egohorizon.studies.backtest import PREDICTORS

SMALL = ["data.n_context=4", "data.max_train_points=12", "data.max_eval_points=3", "data.batch_size=4",
         "data.eval_batch_size=4", "model.generation.max_new_tokens=6", "model.generation.max_new_tokens_per_action=2",
         "trainer.max_steps=-1", "trainer.max_epochs=1", "trainer.check_val_every_n_epoch=1", "trainer.enable_progress_bar=false",
         "score_options.embedder=exact", "logger=csv"]


def _run(repo_root, args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}
    return subprocess.run([sys.executable, *args], cwd=repo_root, env=env, capture_output=True, text=True,
                          timeout=900, check=False)


@pytest.mark.slow
def test_backtest_sweep_trains_one_run_per_d_and_the_table_plots_every_predictor(repo_root, tmp_path):
    runs = tmp_path / "runs"
    trained = _run(repo_root, ["train.py", "-m", "+sweep=backtest", "experiment=forecast_l3",
                               f"data.demo_dir={tmp_path}/demo", "data.backtest_day=2,3",
                               f"hydra.sweep.dir={runs}", *TOY_BACKBONE, f"backbone.cache_dir={tmp_path}/cache",
                               f"paths.cache_dir={tmp_path}/cache", *SMALL])
    assert trained.returncode == 0, trained.stderr[-3000:]
    for d in (2, 3):  # one ordinary run folder per d, with the day split it trained and was tested on
        split = json.loads((runs / f"d{d}" / "split.json").read_text())
        assert split["settings"]["backtest_day"] == d
        metrics = json.loads((runs / f"d{d}" / "metrics.json").read_text())
        assert metrics["objective"]["value"] is not None and metrics["best_checkpoint"]  # chosen on day d
    table = _run(repo_root, ["eval.py", "+sweep=backtest_table", f"sweep.runs={runs}",
                             f"paths.run_dir={tmp_path}/table"])
    assert table.returncode == 0, table.stderr[-3000:]
    rows = json.loads((tmp_path / "table" / "sweep_backtest.json").read_text())
    for k in (1, 10):
        got = sorted((r["d"], r["predictor"]) for r in rows if r["k"] == k)
        assert got == sorted((d, p) for d in (2, 3) for p in PREDICTORS), k
    assert (tmp_path / "table" / "sweep_backtest.md").read_text().count("\n") == len(rows) + 2
    assert (tmp_path / "table" / "sweep_backtest.png").stat().st_size > 10_000
