"""The grounding study (issue 15, item 4): S_norm and its bootstrap by hand, rows per subset, and the
study from run folders through eval.py's sweep entry."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from egohorizon.errors import ConfigError
from egohorizon.schema import ForecastPoint, write_jsonl
from egohorizon.studies.grounding import bootstrap, run_grounding_study, s_norm, study_rows

CONF = Path(__file__).resolve().parents[3] / "conf"


def test_s_norm_by_hand():
    # mean S 0.6, mean S_rand 0.2: (0.6 - 0.2) / 0.8 = 0.5
    assert s_norm(np.array([0.4, 0.8]), np.array([0.1, 0.3])) == pytest.approx(0.5)
    assert s_norm(np.array([0.2]), np.array([0.2])) == pytest.approx(0.0)
    assert np.isnan(s_norm(np.array([1.0]), np.array([1.0])))


def test_bootstrap_interval_and_paired_difference():
    s_rand = np.full(40, 0.5)
    text = np.full(40, 0.5)  # S_norm 0 on every resample
    better = np.full(40, 0.75)  # S_norm 0.5 on every resample
    stats = bootstrap({"text": text, "frames": better}, s_rand, n_boot=200, seed=0)
    assert stats["text"] == {"S_norm": 0.0, "lo": 0.0, "hi": 0.0}
    assert stats["frames"]["diff"] == pytest.approx(0.5)
    assert stats["frames"]["diff_lo"] == pytest.approx(0.5) and stats["frames"]["diff_hi"] == pytest.approx(0.5)
    noisy = np.tile([0.0, 1.0], 20)  # mean 0.5: S_norm 0, but resamples vary
    stats = bootstrap({"text": text, "frames": noisy}, s_rand, n_boot=500, seed=1)
    assert stats["frames"]["diff_lo"] < 0 < stats["frames"]["diff_hi"]


def _points(n: int, cue_every: int) -> list[ForecastPoint]:
    return [ForecastPoint(id=f"demo/p01/L{1 + i % 2}/K1/{1_741_000_000 + i}", source="demo", participant="p01",
                          level=1 + i % 2, k=1, t0=1_741_000_000 + i, context=[], targets=["x"],
                          windows=[[1_741_000_000 + i, 1_741_000_001 + i]], meta={"cue_driven": i % cue_every == 0})
            for i in range(n)]


def test_rows_per_level_and_subset():
    points = {p.id: p for p in _points(12, 3)}
    text = {pid: {"S": 0.5, "S_rand": 0.5} for pid in points}
    frames = {pid: {"S": 1.0 if p.meta["cue_driven"] else 0.5, "S_rand": 0.5} for pid, p in points.items()}
    cue = {pid: p.meta["cue_driven"] for pid, p in points.items()}
    rows = study_rows({"text": text, "frames": frames}, points, cue, n_boot=100)
    by = {(r["level"], r["subset"]): r for r in rows}
    assert set(by) == {(1, "all"), (1, "cue_driven"), (2, "all"), (2, "cue_driven")}
    # L1 holds points 0, 2, ..., 10; cue-driven among them: 0, 6 -> S 1.0 -> S_norm 1.0
    assert by[(1, "cue_driven")]["n"] == 2 and by[(1, "cue_driven")]["frames_S_norm"] == 1.0
    assert by[(1, "all")]["n"] == 6 and by[(1, "all")]["frames_diff"] == pytest.approx(1 / 3, abs=1e-4)  # mean S 4/6, (4/6 - 0.5) / 0.5
    assert by[(2, "cue_driven")]["text_S_norm"] == 0.0


def _run(folder: Path, points: list[ForecastPoint], scores: dict[str, float]) -> Path:
    write_jsonl(folder / "points" / "points_test.jsonl", points)
    (folder / "reports").mkdir(parents=True)
    report = {"per_point": [{"id": p.id, "S": scores[p.id], "S_rand": 0.4} for p in points]}
    (folder / "reports" / "test.json").write_text(json.dumps(report))
    return folder


def test_study_from_run_folders_through_the_sweep_entry(tmp_path):
    from egohorizon.run.studies import run_sweep

    points = _points(30, 2)
    text = _run(tmp_path / "text", points, {p.id: 0.4 for p in points})
    frames = _run(tmp_path / "frames", points, {p.id: 1.0 if p.meta["cue_driven"] else 0.4 for p in points})
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("eval", overrides=["+sweep=grounding", f"sweep.runs.text={text}", f"sweep.runs.frames={frames}",
                                         "sweep.n_boot=200"])
    result = run_sweep(cfg, tmp_path / "out")
    cue_l1 = next(r for r in result["rows"] if r["level"] == 1 and r["subset"] == "cue_driven")
    assert cue_l1["frames_S_norm"] == 1.0 and cue_l1["text_S_norm"] == 0.0 and cue_l1["frames_diff_lo"] == 1.0
    assert Path(result["plot"]).stat().st_size > 1000
    assert "| L1 | 1 | cue_driven | 15 |" in (tmp_path / "out" / "sweep_grounding.md").read_text()
    with pytest.raises(ConfigError, match="different points"):
        run_grounding_study({"text": str(text), "frames": str(_run(tmp_path / "other", points[:5],
                                                                       {p.id: 0.4 for p in points}))}, tmp_path / "x")
    with pytest.raises(ConfigError, match="text-only run folder"):
        run_grounding_study({"frames": str(frames)}, tmp_path / "y")


def test_repeat_last_column_on_the_same_points(tmp_path):
    """sweep.repeat_last scores the last context event as the one candidate with the runs' embedder."""
    points = _points(8, 2)
    for p in points:  # the last context event repeats the target on cue-driven points only
        text = "x" if p.meta["cue_driven"] else "something else entirely"
        p.context = [{"id": f"e{p.t0}", "start": p.t0 - 10, "end": p.t0 - 5, "text": text}]
    text_run = _run(tmp_path / "text", points, {p.id: 0.4 for p in points})
    configs = {"now": "score_options:\n  embedder: exact\n  n_random_draws: 5\n  seed: 0\n",
               "before the callbacks were unified": "callbacks:\n  forecast_eval:\n    score_options:\n"
               "      embedder: exact\n      n_random_draws: 5\n      seed: 0\n"}
    for config in configs.values():  # with minilm the cue-driven repeat would not score exactly 1
        (text_run / "config.yaml").write_text(config)
        result = run_grounding_study({"text": str(text_run)}, tmp_path / "out" / "sweep_grounding", n_boot=100,
                                     repeat_last=True)
        cue_l1 = next(r for r in result["rows"] if r["level"] == 1 and r["subset"] == "cue_driven")
        assert cue_l1["repeat_last_S_norm"] == 1.0 and cue_l1["repeat_last_diff"] == 1.0
    assert "repeat_last - text" in (tmp_path / "out" / "sweep_grounding.md").read_text()
