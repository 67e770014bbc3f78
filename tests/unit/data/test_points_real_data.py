"""Points, splits and the guard on real conversions (EPIC-KITCHENS, HD-EPIC) from ../shared/data."""

import pytest

from egohorizon.data.points.build import build_points, count_points
from egohorizon.data.points.leakage import check_points
from egohorizon.data.splits import make_day_split
from egohorizon.prompts.forecast import render_forecast_prompt


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["epic_kitchens", "hd_epic"])
def test_points_on_real_held_out_days(shared_data, adapter):
    import importlib

    events = importlib.import_module(f"egohorizon.data.sources.{adapter}").convert(shared_data).events
    split = make_day_split(events, val_frac=0.15, test_frac=0.15, seed=0, min_history_days=1)
    points = build_points(events, split, levels=(1,), ks=(1, 10), max_points=150, seed=0)
    counts = count_points(points)
    assert all(counts[(s, 1, k)] == 150 for s in ("train", "val", "test") for k in (1, 10)), counts
    # Re-checked independently, per split, as the datamodule and eval do on loaded points.
    for split_name, split_points in points.items():
        assert check_points(split_points, events, split, expected_split=split_name) == 300
    days = {s: {(p.participant, d) for p in pts for d in p.meta["target_days"]} for s, pts in points.items()}
    assert not (days["train"] & days["test"]) and not (days["val"] & days["test"])
    # Real clock times read as UTC (the converters store local clock time so): the date in the
    # prompt's "Now:" line is the recording's calendar day, except for sessions running past midnight.
    # EPIC-100 extension videos have no date ("undated-<video>", relative times): "day N" instead.
    dated = [p for p in points["test"] if not p.day.startswith("undated")]
    same_day = [f"Now: {_weekday(p.day)} {p.day} " in render_forecast_prompt(p) for p in dated]
    assert len(dated) > 50 and sum(same_day) >= 0.95 * len(same_day)
    undated = [p for p in points["test"] if p.day.startswith("undated")]
    assert all("Now: day " in render_forecast_prompt(p) for p in undated)
    assert undated or adapter == "hd_epic"  # HD-EPIC videos are all dated


def _weekday(day: str) -> str:
    from datetime import date

    return date.fromisoformat(day).strftime("%a")


# ----------------------------------------------------------------------------------------------
# EPIC-100's own split (issue 22, item 28), on the real annotation files of one participant
# ----------------------------------------------------------------------------------------------

KEEP = "P01"  # dated videos, one day mixing official train and validation videos, extension videos
# The files the EPIC adapter reads, by name: the column holding the video id (None: copied whole).
EPIC_FILES = {
    "epic-kitchens-100-annotations/EPIC_100_validation.csv": "video_id",
    "epic-kitchens-100-annotations/UDA_annotations/EPIC_100_uda_source_train.csv": "video_id",
    "epic-kitchens-100-annotations/UDA_annotations/EPIC_100_uda_source_val.csv": "video_id",
    "epic-kitchens-100-annotations/UDA_annotations/EPIC_100_uda_target_val.csv": "video_id",
    "epic-kitchens-100-annotations/EPIC_100_video_info.csv": "video_id",
    "epic-kitchens-100-annotations/EPIC_100_verb_classes.csv": None,
    "epic-kitchens-100-annotations/EPIC_100_noun_classes.csv": None,
    "epic-kitchens-55-annotations/EPIC_train_action_labels.csv": "video_id",
    "epic-kitchens-55-annotations/EPIC_train_invalid_labels.csv": "video_id",
    "epic-kitchens-55-annotations/EPIC_descriptions.csv": "video_id",
    "rulstm/RULSTM/data/ek100/training.csv": 1,  # no header: narration id, video, ...
}


@pytest.fixture(scope="module")
def epic_p01(shared_data, tmp_path_factory):
    """The real EPIC annotation files cut to participant P01's rows (a 1-second conversion), and
    the narration ids of EPIC_100_validation.csv for P01, read here straight from the file."""
    import csv

    from egohorizon.data.sources import epic_kitchens

    root = tmp_path_factory.mktemp("epic-p01")
    for name, column in EPIC_FILES.items():
        with open(shared_data / name, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
        if column is not None:
            index = column if isinstance(column, int) else rows[0].index(column)
            rows = rows[:1 if isinstance(column, str) else 0] + [
                r for r in rows[1 if isinstance(column, str) else 0:] if r[index].split("_")[0] == KEEP]
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        with open(root / name, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
    with open(shared_data / "epic-kitchens-100-annotations/EPIC_100_validation.csv", encoding="utf-8") as handle:
        validation = {r["narration_id"] for r in csv.DictReader(handle) if r["participant_id"] == KEEP}
    return root, epic_kitchens.convert(root), validation


def test_official_split_keeps_every_epic100_validation_segment_out_of_train(epic_p01, tmp_path):
    from egohorizon.data.splits import is_placeholder_day

    _, conversion, validation = epic_p01
    events = conversion.events
    marked = {e.id for e in events if e.meta["official_split"] == "validation"}
    assert marked == validation and len(validation) == 148 + 62 + 30 + 354 + 291  # P01_11 ... P01_15
    assert {e.meta["official_split"] for e in events if e.id not in validation} == {"train"}

    # The day split mixes the two sets: validation segments are train targets (the 6,289).
    drawn = make_day_split(events, seed=0, min_history_days=1)
    assert any(drawn.get(e.participant, e.day) == "train" for e in events if e.id in validation)

    split = make_day_split(events, val_frac=0.15, seed=0, strategy="official", min_history_days=1)
    split_of = {e.id: split.get(e.participant, e.day) for e in events}
    assert {split_of[i] for i in validation} == {"test"}
    test_days = split.days_in("test")
    assert all(any(e.id in validation for e in events if (e.participant, e.day) == d) for d in test_days)
    # 2017-05-10 holds P01_07-P01_10 (official train) and P01_11 (validation): the whole day is test.
    assert ("ek-P01", "2017-05-10") in test_days
    mixed = sum(1 for e in events if e.day == "2017-05-10" and e.id not in validation)
    assert mixed > 0 and split.settings["official"] == {
        "test_days": len(test_days), "validation_events": len(validation), "train_events_on_test_days": mixed}
    assert split.counts()["val"] > 0 and split.settings["test_frac"] is None
    assert not any(is_placeholder_day(d) for _, d in test_days)  # EPIC-100 validation videos are all dated

    points = build_points(events, split, levels=(1,), ks=(1, 10), n_context=5, seed=0)
    for split_name, split_points in points.items():
        assert split_points and check_points(split_points, events, split, expected_split=split_name)
        targets = {t for p in split_points for t in p.meta["target_ids"]}
        if split_name == "test":  # exactly EPIC-100's validation set: P01_07-P01_10 give no test targets
            assert targets <= validation and len(targets) >= len(validation) - 10
        else:
            assert not targets & validation, split_name


def test_points_command_official_split_and_held_out_videos(epic_p01, tmp_path, capsys):
    import json

    from egohorizon.cli import main

    root, _, _ = epic_p01
    assert main(["data", "convert", "epic-kitchens", "--root", str(root), "--out", str(tmp_path / "ek")]) == 0
    printed = capsys.readouterr().out
    assert "split units: undated videos (a placeholder day each; held out as videos)" in printed
    metadata = json.loads((tmp_path / "ek" / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["split_units"]["undated_videos"] == 8  # P01_102 ... P01_109 (no P01_101 in RULSTM)
    assert metadata["official_split"]["validation_events"] == 885

    events = str(tmp_path / "ek" / "events.jsonl")
    common = ["points", "--events", events, "--levels", "1", "--k", "1", "--context", "5",
              "--min-history-days", "1"]
    assert main([*common, "--out", str(tmp_path / "days")]) == 0
    printed = capsys.readouterr().out
    manifest = json.loads((tmp_path / "days" / "points_manifest.json").read_text(encoding="utf-8"))
    units = manifest["held_out_units"]
    assert units["val"]["undated_videos"] + units["test"]["undated_videos"] > 0
    assert sum(u["days"] + u["undated_videos"] for u in units.values()) == sum(manifest["participant_days"].values())
    assert "undated videos (an undated video has a placeholder day of its own" in printed

    assert main([*common, "--strategy", "official", "--out", str(tmp_path / "official")]) == 0
    manifest = json.loads((tmp_path / "official" / "points_manifest.json").read_text(encoding="utf-8"))
    assert manifest["split"]["strategy"] == "official" and manifest["split"]["official"]["validation_events"] == 885
    written = map(json.loads, (tmp_path / "ek" / "events.jsonl").read_text(encoding="utf-8").splitlines())
    validation = {e["id"] for e in written if e["meta"]["official_split"] == "validation"}
    for name in ("train", "val", "test"):
        lines = (tmp_path / "official" / f"points_{name}.jsonl").read_text(encoding="utf-8").splitlines()
        in_validation = [set(json.loads(x)["meta"]["target_ids"]) <= validation for x in lines]
        assert lines and (all(in_validation) if name == "test" else not any(in_validation)), name

    assert main([*common, "--strategy", "official", "--test-frac", "0.2", "--out", str(tmp_path / "x")]) == 2
    assert "--strategy official takes test from the data set's own split" in capsys.readouterr().err


def test_official_split_refuses_events_without_an_official_split():
    from egohorizon.errors import ConfigError
    from egohorizon.schema import Event

    events = [Event(id=f"e{i}", participant="p", day=f"2024-01-0{i}", session="s", level=1, start=1.7e9 + i * 86400,
                    end=1.7e9 + i * 86400 + 5, text="cook", meta={}) for i in range(1, 6)]
    with pytest.raises(ConfigError, match=r"event 'e1' has meta.official_split=None.*5 of 5 events lack it"):
        make_day_split(events, strategy="official")
    for event in events:
        event.meta["official_split"] = "train"
    with pytest.raises(ConfigError, match="none of the 5 events is in the official validation set"):
        make_day_split(events, strategy="official")
