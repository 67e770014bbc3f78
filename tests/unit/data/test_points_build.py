"""Forecast points on a hand-built timeline, sampling, and the `egohorizon points` command."""

import json

import pytest
from event_days import BASE, DAY_S
from event_days import event as _ev
from event_days import many_days as _many_days

from egohorizon.cli import main
from egohorizon.data.points.build import build_points, count_points, format_t0
from egohorizon.data.splits import make_day_split
from egohorizon.errors import DataError
from egohorizon.schema import ForecastPoint, load_jsonl, write_jsonl


def _timeline():
    # e is zero-length and starts with f; g starts while f is still running; h is on the next day.
    return [_ev("a", 0, 10), _ev("b", 10, 20), _ev("c", 100, 150), _ev("e", 200, 200), _ev("f", 200, 210),
            _ev("g", 205, 300), _ev("h", DAY_S, DAY_S + 50, day="d1")]


def _split(events):
    return make_day_split(events, val_frac=0, test_frac=0, min_history_days=0, val_days={"p": ["d1"]})


def _summary(points):
    return [(p.split, p.t0 - BASE, [c["id"] for c in p.context], p.meta["target_ids"]) for p in points]


def test_points_of_a_hand_built_timeline():
    events = _timeline()
    points = build_points(events, _split(events), levels=(1,), ks=(1, 2), n_context=2)
    k1 = [p for s in ("train", "val") for p in points[s] if p.k == 1]
    assert _summary(k1) == [
        ("train", 10, ["a"], ["b"]),
        ("train", 100, ["a", "b"], ["c"]),
        ("train", 200, ["b", "c"], ["e"]),  # f also starts at 200: no second point there
        ("train", 205, ["c", "e"], ["g"]),  # f ends after 205: not context, not target
        ("val", DAY_S, ["f", "g"], ["h"]),  # context reaches back into a train day
    ]
    k2 = [p for s in ("train", "val") for p in points[s] if p.k == 2]
    # t0=205 would have targets g (train day) and h (val day): not made; t0=h has one event left.
    assert _summary(k2) == [("train", 10, ["a"], ["b", "c"]), ("train", 100, ["a", "b"], ["c", "e"]),
                            ("train", 200, ["b", "c"], ["e", "f"])]
    point = k2[1]
    assert point.id == f"demo/p/L1/K2/{int(BASE) + 100}"
    assert point.targets == ["do c", "do e"]
    assert point.windows == [[BASE + 100, BASE + 150], [BASE + 200, BASE + 200]]
    assert point.context[0] == {"id": "a", "start": BASE, "end": BASE + 10, "text": "do a", "day": "d0",
                                "session": "d0-s1"}
    assert point.meta == {"target_ids": ["c", "e"], "target_days": ["d0", "d0"], "n_context": 2}
    assert points["test"] == []


def test_points_roundtrip_through_jsonl(tmp_path):
    events = _timeline()
    points = build_points(events, _split(events), levels=(1,), ks=(2,), n_context=3)
    write_jsonl(tmp_path / "p.jsonl", points["train"])
    loaded = load_jsonl(tmp_path / "p.jsonl", ForecastPoint)
    assert [p.to_dict() for p in loaded] == [p.to_dict() for p in points["train"]]


def test_levels_are_separate_and_unknown_days_are_an_error():
    events = _timeline() + [_ev("L2a", 0, 150, level=2), _ev("L2b", 150, 300, level=2)]
    points = build_points(events, _split(events), levels=(2,), ks=(1,), n_context=5)
    assert _summary(points["train"]) == [("train", 150, ["L2a"], ["L2b"])]
    stray = _ev("z", 3 * DAY_S, 3 * DAY_S + 5, day="d3")
    with pytest.raises(DataError, match="p/d3"):
        build_points(events + [stray], _split(events), levels=(1,))




def test_sampling_caps_and_spreads_over_days():
    events = _many_days()
    split = make_day_split(events, val_frac=0.25, test_frac=0.25, min_history_days=2, seed=1)
    points = build_points(events, split, levels=(1,), ks=(1, 10), max_points=3, seed=7, n_context=5)
    counts = count_points(points)
    assert counts == {(s, 1, k): 3 for s in ("train", "val", "test") for k in (1, 10)}
    for split_points in points.values():
        for k in (1, 10):
            days = [p.day for p in split_points if p.k == k]
            assert len(set(days)) == len(days)  # one per day before any day gets a second
    again = build_points(events, split, levels=(1,), ks=(1, 10), max_points=3, seed=7, n_context=5)
    other = build_points(events, split, levels=(1,), ks=(1, 10), max_points=3, seed=8, n_context=5)
    ids = [p.id for s in points.values() for p in s]
    assert ids == [p.id for s in again.values() for p in s]
    assert ids != [p.id for s in other.values() for p in s]


def test_format_t0_is_exact():
    assert format_t0(1700000000.0) == "1700000000"
    assert format_t0(1700000000.25) == "1700000000.25"
    assert format_t0(0.1 + 0.2) != format_t0(0.3)


def test_points_command(tmp_path, capsys):
    write_jsonl(tmp_path / "events" / "events.jsonl", _many_days())
    out = tmp_path / "out"
    args = ["points", "--events", str(tmp_path / "events"), "--out", str(out), "--levels", "1", "2",
            "--k", "1", "10", "--context", "5", "--max-points", "4", "--min-history-days", "2"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "L1 K10" in printed and "L2 K1" in printed
    lines = {line.split()[0]: line.split() for line in printed.splitlines()[1:4]}
    assert lines["train"][:2] == ["train", "8"] and lines["test"][1] == "2"  # participant-days
    assert lines["train"][2:] == ["4", "4", "0", "0"]
    for split_name in ("train", "val", "test"):
        points = load_jsonl(out / f"points_{split_name}.jsonl", ForecastPoint)
        assert len(points) == 8 and all(p.split == split_name for p in points)
    manifest = json.loads((out / "points_manifest.json").read_text())
    assert manifest["participant_days"] == {"train": 8, "val": 2, "test": 2}
    # Reusing the saved split gives the same points; mixing it with split options is refused.
    again = tmp_path / "again"
    assert main(args[:4] + [str(again), "--splits", str(out / "splits.json"), "--levels", "1",
                            "--context", "5", "--max-points", "4"]) == 0
    assert (again / "points_test.jsonl").read_text() == (out / "points_test.jsonl").read_text()
    mixed = tmp_path / "mixed"  # a new folder: into `again` the other inputs are refused first (issue 36)
    assert main(args[:4] + [str(mixed), "--splits", str(out / "splits.json"), "--val-frac", "0.2"]) == 2
    assert "--val-frac would be ignored" in capsys.readouterr().err
