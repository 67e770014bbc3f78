"""A run told not to test (``test_after_fit=false``) says so in its summary, with the command that tests
it, instead of suggesting its test split was empty."""

from __future__ import annotations

from omegaconf import OmegaConf

from egohorizon.run.training import summarise


def test_a_run_not_tested_says_so_and_names_the_command():
    cfg = OmegaConf.create({"test_after_fit": False, "eval_task": "forecast"})
    outputs = {"run_dir": "/runs/r1", "objective": {"name": "val/forecast_S_norm", "value": 0.1974}}
    rows, text = summarise(cfg, None, None, outputs)
    assert rows == []
    assert text.splitlines() == [
        "Not tested (test_after_fit=false): `python eval.py ckpt=/runs/r1` scores the run's held-out test days.",
        "Checkpoint chosen on validation: val/forecast_S_norm = 0.1974",
    ]
