"""Several forecasters on the same points (``metrics.forecast_table``, ``score forecast-table``):
hand-checked S_norm, one shared chance level, paired intervals, invalid counts and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from egohorizon.backbones.embedders import ExactEmbedder
from egohorizon.cli import main
from egohorizon.metrics.forecast_table import compare_forecasters, format_table
from egohorizon.schema import ForecastPoint

ACTIONS = ["open fridge", "take milk", "close fridge", "pour milk", "wash cup", "dry cup"]


def points(n: int = 12) -> list[ForecastPoint]:
    out = []
    for i in range(n):
        target = ACTIONS[(i + 1) % len(ACTIONS)]
        context = [{"start": 10.0 * i, "end": 10.0 * i + 5, "text": ACTIONS[i % len(ACTIONS)]}]
        out.append(ForecastPoint(id=f"p{i}", source="demo", participant="P1", level=1, k=1, t0=10.0 * i + 6,
                                 context=context, targets=[target], windows=[[10.0 * i + 6, 10.0 * i + 9]]))
    return out


def test_rows_are_hand_checked_and_share_one_chance_level():
    pts = points()
    right = {p.id: [list(p.targets)] for p in pts}
    wrong = {p.id: [["juggle"]] for p in pts}
    half = {p.id: ([list(p.targets)] if i % 2 == 0 else None) for i, p in enumerate(pts)}
    rows = compare_forecasters(pts, {"right": right, "wrong": wrong, "half": half, "again": dict(right)},
                               ExactEmbedder(), baseline="wrong", n_boot=1000)
    by = {r["predictor"]: r for r in rows}
    r = by["right"]["S_rand"]
    assert all(row["S_rand"] == r for row in rows) and 0 < r < 1
    # Exact embedder, K = 1: a point scores 1 when its candidate is the target, else 0.
    assert by["right"]["S"] == 1.0 and by["right"]["S_norm"] == pytest.approx(1.0)
    assert (by["right"]["lo"], by["right"]["hi"]) == pytest.approx((1.0, 1.0))
    assert by["wrong"]["S"] == 0.0 and by["wrong"]["S_norm"] == pytest.approx(-r / (1 - r))
    assert by["half"]["S"] == 0.5 and by["half"]["invalid"] == 6
    assert by["half"]["S_norm"] == pytest.approx((0.5 - r) / (1 - r))
    assert by["right"]["diff"] == pytest.approx(1 + r / (1 - r))
    assert by["right"]["diff_lo"] > 0  # beats the baseline on every resample
    assert "diff" not in by["wrong"]  # the baseline itself
    assert by["again"]["S_norm"] == by["right"]["S_norm"]
    table = format_table(rows, "wrong")
    assert "| demo L1 K=1 | half | 12 | 6 | 0.500 |" in table and "(baseline)" in table


def test_paired_interval_is_narrower_than_the_unpaired_spread():
    pts = points()
    right = {p.id: [list(p.targets)] for p in pts}
    most = {p.id: ([list(p.targets)] if i != 0 else [["juggle"]]) for i, p in enumerate(pts)}
    rows = compare_forecasters(pts, {"most": most, "right": right}, ExactEmbedder(), baseline="right", n_boot=1000)
    most_row = next(row for row in rows if row["predictor"] == "most")
    # Same resamples: the difference is -1/(1 - S_rand) times point 0's share of a draw, never > 0.
    assert most_row["diff_hi"] <= 0 and most_row["diff"] == pytest.approx(-(1 / 12) / (1 - most_row["S_rand"]))


def test_unknown_baseline_is_refused():
    with pytest.raises(ValueError, match="baseline 'nope'"):
        compare_forecasters(points(), {"a": {}}, ExactEmbedder(), baseline="nope")


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_cli_prints_the_table_with_repeat_last(capsys, tmp_path):
    pts = points()
    gold = tmp_path / "points.jsonl"
    _write(gold, [p.to_dict() for p in pts])
    pred = tmp_path / "model.jsonl"
    _write(pred, [{"id": p.id, "candidates": [list(p.targets)]} for p in pts[:10]])
    out = tmp_path / "table.json"
    code = main(["score", "forecast-table", "--gold", str(gold), "--pred", f"model={pred}",
                 "--embedder", "exact", "--boot", "1000", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    assert "| demo L1 K=1 | model | 12 | 2 | 0.833 |" in captured.out
    assert "| demo L1 K=1 | repeat_last | 12 | 0 | 0.000 |" in captured.out  # the context's last action is never next
    assert "2 of 12 points have no prediction" in captured.err
    rows = json.loads(out.read_text())["rows"]
    assert [r["predictor"] for r in rows] == ["model", "repeat_last"]
    assert np.isclose(rows[0]["diff"], rows[0]["S_norm"] - rows[1]["S_norm"])


def test_cli_bad_input_is_named(capsys, tmp_path):
    gold = tmp_path / "points.jsonl"
    _write(gold, [p.to_dict() for p in points()])
    other = tmp_path / "other.jsonl"
    _write(other, [{"id": "x1", "candidates": [["a"]]}])
    assert main(["score", "forecast-table", "--gold", str(gold), "--pred", "model"]) != 0
    assert "expected NAME=FILE" in capsys.readouterr().err
    assert main(["score", "forecast-table", "--gold", str(gold), "--pred", f"m={other}"]) != 0
    assert "none of its 1 prediction ids" in capsys.readouterr().err
    assert main(["score", "forecast-table", "--gold", str(gold)]) == 2
    assert "or --history and --split" in capsys.readouterr().err


def test_fewer_than_1000_resamples_are_refused(capsys, tmp_path):
    # issue 36, item 8: --boot 1 printed a "95% CI" that excluded its own estimate
    from egohorizon.metrics.bootstrap import MIN_BOOT

    assert MIN_BOOT == 1000  # the CLI's bound, written out there so that --help loads no numpy
    with pytest.raises(ValueError, match="at least 1000 resamples"):
        compare_forecasters(points(), {"a": {}}, ExactEmbedder(), n_boot=999)
    gold = tmp_path / "points.jsonl"
    _write(gold, [p.to_dict() for p in points()])
    pred = tmp_path / "model.jsonl"
    _write(pred, [{"id": p.id, "candidates": [list(p.targets)]} for p in points()])
    with pytest.raises(SystemExit) as exit_info:
        main(["score", "forecast-table", "--gold", str(gold), "--pred", f"model={pred}", "--boot", "1"])
    assert exit_info.value.code == 2
    assert "--boot: expected a whole number >= 1000, got '1'" in capsys.readouterr().err


def test_a_bar_in_a_predictor_name_is_escaped_in_the_markdown_table():
    rows = compare_forecasters(points(), {"a|b": {}, "base": {}}, ExactEmbedder(), baseline="base")
    table = format_table(rows, baseline="base")
    assert "| demo L1 K=1 | a\\|b | 12 | 12 |" in table
    # every line has as many unescaped bars as the header
    bars = [len(line.replace("\\|", "")) - len(line.replace("\\|", "").replace("|", "")) for line in table.splitlines()]
    assert len(set(bars)) == 1


def test_strongest_baseline_is_chosen_per_group_ties_to_the_earlier_name():
    pts = points()
    right = {p.id: [list(p.targets)] for p in pts}
    half = {p.id: ([list(p.targets)] if i % 2 == 0 else None) for i, p in enumerate(pts)}
    rows = compare_forecasters(pts, {"model": half, "weak": {}, "good": right, "twin": dict(right)},
                               ExactEmbedder(), n_boot=1000, strongest_among=("weak", "good", "twin"))
    by = {r["predictor"]: r for r in rows}
    assert {r["baseline"] for r in rows} == {"good"} and "diff" not in by["good"]
    assert by["model"]["diff"] == pytest.approx(by["model"]["S_norm"] - by["good"]["S_norm"])
    assert "(strongest: good)" in format_table(rows, "strongest")


JAN1 = 1_704_067_200


def _habit_files(tmp_path, train_day="2024-01-01"):
    """Events: P1 on 1 January opens the fridge, then takes milk, three times; the points are on 2 January."""
    events = []
    for i in range(6):
        text = ACTIONS[i % 2]
        events.append({"id": f"e{i}", "participant": "P1", "day": "2024-01-01", "session": "s", "level": 1,
                       "start": JAN1 + 3600 + 60 * i, "end": JAN1 + 3630 + 60 * i, "text": text, "source": "demo"})
    _write(tmp_path / "events.jsonl", events)
    held_out = "2024-01-02" if train_day != "2024-01-02" else "2024-01-03"
    split = {"participants": {"P1": {"train": [train_day], "test": [held_out]}}}
    (tmp_path / "split.json").write_text(json.dumps(split))
    t0 = JAN1 + 86_400 + 3600
    pts = [ForecastPoint(id=f"q{i}", source="demo", participant="P1", level=1, k=1, t0=t0 + 60 * i,
                         context=[{"start": t0 + 60 * i - 30, "end": t0 + 60 * i - 10, "text": ACTIONS[i % 2]}],
                         targets=[ACTIONS[(i + 1) % 2] if i < 4 else ACTIONS[2 + i % 3]],
                         windows=[[t0 + 60 * i, t0 + 60 * i + 20]], day="2024-01-02") for i in range(6)]
    _write(tmp_path / "points.jsonl", [p.to_dict() for p in pts])
    return pts


def test_cli_habit_baselines_from_history_and_split(capsys, tmp_path):
    pts = _habit_files(tmp_path)
    pred = tmp_path / "model.jsonl"
    _write(pred, [{"id": p.id, "candidates": [list(p.targets)]} for p in pts])
    common = ["score", "forecast-table", "--gold", str(tmp_path / "points.jsonl"), "--pred", f"model={pred}",
              "--embedder", "exact", "--boot", "1000"]
    assert main(common) == 0
    assert "habit baselines: not computed (no --history)" in capsys.readouterr().out
    out = tmp_path / "table.json"
    assert main([*common, "--history", str(tmp_path / "events.jsonl"), "--split", str(tmp_path / "split.json"),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # markov: after "open fridge" comes "take milk" and after that "open fridge": right on q0-q3 (S 4/6);
    # repeat-last never is; frequency says "take milk" (the later of two equal counts): right on q0, q2
    report = json.loads(out.read_text())
    by = {r["predictor"]: r for r in report["rows"]}
    assert by["markov"]["S"] == pytest.approx(4 / 6) and by["frequency"]["S"] == pytest.approx(2 / 6)
    assert by["model"]["baseline"] == "markov" and "these same points" in report["baseline_rule"]
    assert report["habit_counts"]["time_of_day"] == {"no_history": 0, "no_clock": 0}
    assert "| demo L1 K=1 | markov_all |" in printed and "strongest: of repeat_last" in printed
    # the baselines alone, without any --pred
    assert main([*common[:4], "--embedder", "exact", "--boot", "1000", "--history", str(tmp_path / "events.jsonl"),
                 "--split", str(tmp_path / "split.json")]) == 0
    assert "| demo L1 K=1 | markov | 6 | 0 | 0.667 |" in capsys.readouterr().out


def test_cli_refuses_a_split_that_trained_on_the_points_days(capsys, tmp_path):
    pts = _habit_files(tmp_path, train_day="2024-01-02")
    _write(tmp_path / "m.jsonl", [{"id": p.id, "candidates": [["x"]]} for p in pts])
    code = main(["score", "forecast-table", "--gold", str(tmp_path / "points.jsonl"), "--pred",
                 f"m={tmp_path / 'm.jsonl'}", "--embedder", "exact", "--history", str(tmp_path / "events.jsonl"),
                 "--split", str(tmp_path / "split.json")])
    assert code == 2 and "training days of this split" in capsys.readouterr().err
