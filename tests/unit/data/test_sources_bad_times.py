"""Issue 36, items 5 and 15: the importers refuse (or skip and count) times that are not finite or
are negative, naming item and field, and read CSV files saved with a UTF-8 byte-order mark."""

from __future__ import annotations

import json

import pytest

from egohorizon import cli
from egohorizon.data.sources import epic_kitchens, hd_epic
from egohorizon.errors import DataError

EPIC_HEADER = ("narration_id,participant_id,video_id,narration_timestamp,start_timestamp,stop_timestamp,"
               "start_frame,stop_frame,narration,verb,verb_class,noun,noun_class,all_nouns,all_noun_classes")
EPIC_ROW = "P01_11_0,P01,P01_11,00:00:00.560,00:00:00.00,00:00:01.89,1,113,take plate,take,0,plate,2,['plate'],[2]"
TAXONOMY = {"verbs": ["take_(pick,_grab,_get)", "put_(place,_leave,_drop)"], "nouns": ["bread", "knife"]}


def _lta(tmp_path, start, end):
    rows = [{"clip_uid": "c1", "action_idx": i, "verb_label": 0, "noun_label": 1,
             "action_clip_start_sec": 2.0 * i, "action_clip_end_sec": 2.0 * i + 1} for i in range(4)]
    rows[1].update(action_clip_start_sec=start, action_clip_end_sec=end)
    annotations, taxonomy = tmp_path / "fho_lta_train.json", tmp_path / "fho_lta_taxonomy.json"
    annotations.write_text(json.dumps({"split": "train", "clips": rows}))  # json writes NaN, Infinity
    taxonomy.write_text(json.dumps(TAXONOMY))
    return ["data", "convert", "ego4d-lta", "--annotations", str(annotations), "--taxonomy", str(taxonomy),
            "--future-actions", "1", "--out", str(tmp_path / "out")]


@pytest.mark.parametrize(("start", "end", "field"), [
    (float("nan"), 3.0, "action_clip_start_sec"), (2.0, float("inf"), "action_clip_end_sec"),
    (-1.0, 3.0, "action_clip_start_sec"), (float("-inf"), float("nan"), "action_clip_start_sec")])
def test_ego4d_lta_refuses_non_finite_and_negative_times_by_item_and_field(tmp_path, capsys, start, end, field):
    assert cli.main(_lta(tmp_path, start, end)) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "fho_lta_train.json" in err and f"item [1]: field '{field}': expected finite seconds >= 0" in err
    assert not (tmp_path / "out" / "points.jsonl").exists()


def _hd_epic(tmp_path, start, end, duration="396.266667"):
    (tmp_path / "HD_EPIC_YouTube_URLs.csv").write_text(
        f"video_id,youtube_url,duration\nP01-20240202-110250,https://youtu.be/x,{duration}\n")
    (tmp_path / "P01_recipe_timestamps.csv").write_text(
        "video_id,recipe_id,high_level_activity_label,start_time,end_time\n"
        "P01-20240202-110250,R01,Prepare Coffee,0.0,48.0\n"
        f"P01-20240202-110250,R01,Wash up,{start},{end}\n")


@pytest.mark.parametrize(("start", "end", "field"), [
    ("nan", "60", "start_time"), ("50", "inf", "end_time"), ("-5", "60", "start_time"), ("50", "-inf", "end_time")])
def test_hd_epic_skips_and_counts_activities_with_non_finite_or_negative_times(tmp_path, start, end, field):
    _hd_epic(tmp_path, start, end)
    conversion = hd_epic.convert(tmp_path)
    assert [e.text for e in conversion.events] == ["Prepare Coffee"]
    (reason,) = [r for r in conversion.skipped.counts if field in r]
    assert conversion.skipped.counts[reason] == 1
    assert conversion.skipped.examples[reason] == [f"{tmp_path / 'P01_recipe_timestamps.csv'}:3: column '{field}'"]


@pytest.mark.parametrize("duration", ["-3", "nan"])
def test_hd_epic_refuses_a_video_duration_that_is_negative_or_not_finite(tmp_path, duration):
    _hd_epic(tmp_path, "50", "60", duration)
    with pytest.raises(DataError, match=r"HD_EPIC_YouTube_URLs\.csv:2: column 'duration': expected "):
        hd_epic.convert(tmp_path)


def test_epic_video_info_refuses_a_negative_duration(tmp_path):
    (tmp_path / "EPIC_100_validation.csv").write_text(EPIC_HEADER + "\n" + EPIC_ROW + "\n")
    (tmp_path / "EPIC_100_video_info.csv").write_text("video_id,duration,fps,resolution\nP01_11,-12.0,59.94,1920x1080\n")
    with pytest.raises(DataError, match=r"EPIC_100_video_info\.csv:2: column 'duration': expected seconds >= 0"):
        epic_kitchens.convert(tmp_path)


def test_epic_csv_with_a_byte_order_mark_is_read(tmp_path, capsys):
    (tmp_path / "EPIC_100_validation.csv").write_text(EPIC_HEADER + "\n" + EPIC_ROW + "\n", encoding="utf-8-sig")
    assert (tmp_path / "EPIC_100_validation.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    conversion = epic_kitchens.convert(tmp_path)
    assert [e.id for e in conversion.events if e.level == 1] == ["P01_11_0"]
    out = tmp_path / "out"
    assert cli.main(["data", "convert", "epic-kitchens", "--root", str(tmp_path), "--out", str(out)]) == 0
    assert (out / "events.jsonl").exists()


def test_hd_epic_narration_with_a_negative_time_is_refused(tmp_path):
    _hd_epic(tmp_path, "50", "60")
    narrations = tmp_path / "narrations.csv"
    narrations.write_text("unique_narration_id,participant_id,video_id,narration,start_timestamp,end_timestamp\n"
                          "n1,P01,P01-20240202-110250,Fill the kettle.,-2.0,1.0\n")
    with pytest.raises(DataError, match=r"narrations\.csv:2: column 'start_timestamp': expected seconds >= 0"):
        hd_epic.convert(tmp_path, narrations=narrations)


def test_a_rulstm_segment_with_a_negative_frame_is_refused(tmp_path, shared_data):
    for kind in ("verb", "noun"):
        name = f"EPIC_100_{kind}_classes.csv"
        (tmp_path / name).write_bytes((shared_data / "epic-kitchens-100-annotations" / name).read_bytes())
    (tmp_path / "EPIC_100_validation.csv").write_text(EPIC_HEADER + "\n" + EPIC_ROW + "\n")
    (tmp_path / "ek100").mkdir()
    (tmp_path / "ek100" / "training.csv").write_text("P01_01_0,P01_01,-30,101,3,3,2413\n")
    with pytest.raises(DataError, match=r"ek100/training\.csv:1: column 'start_frame': expected a frame number >= 0"):
        epic_kitchens.convert(tmp_path)
