"""The demo check (slow): `python train.py experiment=forecast_l3` (the toy demo world, which `make demo` ran before issue 37), trains
the tiny forecaster on the demo world and beats repeat-last at K = 1 on held-out test days."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_model_beats_repeat_last_at_k1(repo_root, tmp_path):
    run_dir = tmp_path / "demo"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}
    done = subprocess.run(
        [
            sys.executable,
            "train.py",
            "experiment=forecast_l3",
            f"paths.run_dir={run_dir}",
            f"paths.cache_dir={tmp_path}/cache",
            "trainer.enable_progress_bar=false",
        ],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "trained model" in done.stdout and "repeat-last" in done.stdout  # the summary table
    summary = {row["k"]: row for row in json.loads((run_dir / "metrics.json").read_text())["summary"]}
    assert set(summary) == {1, 10}
    k1 = summary[1]
    assert k1["n"] >= 50 and k1["model_invalid_rate"] < 0.1
    assert k1["model_S_norm"] > k1["repeat_last_S_norm"], summary
