"""Issue 22 item 7: `egohorizon points` refuses an empty events file and a run whose val or test split
would hold no point (too few days), naming the day and point counts per split and the days needed;
--allow-empty-splits writes them with a warning kept in the manifest."""

import json

from test_points_build import _many_days

from egohorizon.cli import main
from egohorizon.schema import write_jsonl


def _points_args(events_dir, out, *extra):
    return ["points", "--events", str(events_dir), "--out", str(out), "--levels", "1", "--k", "1",
            "--context", "5", *extra]


def test_an_empty_events_file_is_refused(tmp_path, capsys):
    (tmp_path / "events.jsonl").write_text("")
    assert main(_points_args(tmp_path / "events.jsonl", tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert "events.jsonl: no events" in err
    assert not (tmp_path / "out").exists()


def test_two_days_leave_val_and_test_empty_and_are_refused(tmp_path, capsys):
    write_jsonl(tmp_path / "events.jsonl", _many_days(n_days=2))  # both days are history days (3 by default)
    out = tmp_path / "out"
    assert main(_points_args(tmp_path / "events.jsonl", out)) == 2
    err = capsys.readouterr().err
    assert "no val and no test points (train 2 day(s) / 59 point(s), val 0 day(s) / 0 point(s), " \
           "test 0 day(s) / 0 point(s))" in err
    assert "needs at least 5 recorded days" in err and "the most days has 2" in err
    assert "--allow-empty-splits" in err
    assert not out.exists()  # refused before anything was written


def test_allow_empty_splits_writes_them_with_a_warning(tmp_path, capsys, caplog):
    write_jsonl(tmp_path / "events.jsonl", _many_days(n_days=2))
    out = tmp_path / "out"
    assert main(_points_args(tmp_path / "events.jsonl", out, "--allow-empty-splits")) == 0
    assert "no val and no test points" in caplog.text
    manifest = json.loads((out / "points_manifest.json").read_text())
    assert manifest["participant_days"] == {"train": 2, "val": 0, "test": 0}
    assert "no val and no test points" in manifest["warnings"][0]
    assert (out / "points_test.jsonl").read_text() == ""


def test_a_split_with_fraction_zero_was_not_asked_for(tmp_path):
    write_jsonl(tmp_path / "events.jsonl", _many_days(n_days=5))
    out = tmp_path / "out"
    assert main(_points_args(tmp_path / "events.jsonl", out, "--val-frac", "0")) == 0
    manifest = json.loads((out / "points_manifest.json").read_text())
    assert manifest["participant_days"]["val"] == 0 and "warnings" not in manifest


def test_held_out_days_without_a_complete_point_are_named(tmp_path, capsys):
    # Days of 5 events each: with K = 10 no point fits on one held-out day (train points straddle
    # consecutive train days, which is allowed).
    write_jsonl(tmp_path / "events.jsonl", _many_days(n_days=8, per_day=5))
    args = _points_args(tmp_path / "events.jsonl", tmp_path / "out")
    assert main([*args[:-4], "--k", "10", "--context", "5"]) == 2
    err = capsys.readouterr().err
    assert "no val and no test points" in err and "val 1 day(s) / 0 point(s)" in err
    assert "hold no complete point" in err and "lower --k" in err
