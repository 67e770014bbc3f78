"""Real-data adapters (EPIC-KITCHENS-55/100, HD-EPIC, HD-EPIC VQA) on the files of ../shared/data.

Each conversion runs once per session (EPIC takes ~3 s); expected numbers come from SOURCES.md's row
counts and from rows read by hand in the CSV/JSON files, as noted beside each.
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from itertools import pairwise

import pytest

from egohorizon.cli import main
from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.data.sources import epic_kitchens, hd_epic, hd_epic_vqa
from egohorizon.data.sources._common import place_sessions
from egohorizon.errors import DataError


def utc(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


@pytest.fixture(scope="session")
def epic(shared_data):
    return epic_kitchens.convert(shared_data)


@pytest.fixture(scope="session")
def hd(shared_data):
    return hd_epic.convert(shared_data / "hd-epic-annotations")


@pytest.fixture(scope="session")
def vqa(shared_data):
    return hd_epic_vqa.convert(shared_data / "hd-epic-annotations")


def by_id(records):
    return {r.id: r for r in records}


# --------------------------------------------------------------------------------------------
# EPIC-KITCHENS
# --------------------------------------------------------------------------------------------


def test_epic_counts_match_the_source_files(epic):
    # RULSTM training.csv = the full EPIC-100 train (67,217 rows), EPIC_100_validation.csv 9,668 rows,
    # and P30_04_84 of EPIC_100_uda_source_val.csv is missing from RULSTM's list: 76,886 segments.
    assert len(epic.events) == 67217 + 9668 + 1
    assert len({e.id for e in epic.events}) == len(epic.events)
    assert len(epic.recordings) == 700  # EPIC_100_video_info.csv rows
    assert epic.counts["segments from EPIC_100_validation.csv"] == 9668
    assert epic.counts["segments from EPIC_100_uda_source_train.csv"] == 16115
    # EPIC-55 rows are EPIC-100 segments under another id; each is kept once.
    assert epic.counts["EPIC-55 rows already in an EPIC-100 file (kept once)"] == 19782
    assert epic.counts["segments from EPIC_train_action_labels.csv"] == 28472 - 19782 - 51
    skipped = epic.skipped.counts
    assert skipped["EPIC-55 segment that EPIC-100 removed"] == 51
    assert skipped["narration_timestamp missing (segment kept: start/stop are present)"] == 12 + 101 + 70
    assert all(e.level == 1 and e.source == "epic-kitchens" for e in epic.events)


def test_epic_first_p01_01_segment_has_its_real_day_and_time(epic):
    event = by_id(epic.events)["P01_01_0"]
    # EPIC_descriptions.csv: P01_01,30/04/2017,13:49:00; the segment runs 00:00:00.14-00:00:03.37.
    assert event.participant == "ek-P01"
    assert event.day == "2017-04-30"
    assert event.session == "P01_01"
    assert event.text == "open door"
    assert event.start == pytest.approx(1493560140.14)  # 2017-04-30 13:49:00 as UTC + 0.14 s
    assert event.start == pytest.approx(utc("2017-04-30 13:49:00") + 0.14)
    assert event.end == pytest.approx(utc("2017-04-30 13:49:00") + 3.37)
    assert event.meta["verb"] == "open" and event.meta["noun_class"] == 3
    assert event.meta["time_basis"] == "local_clock_as_utc"


def test_epic_deduplicates_epic55_rows_onto_epic100_ids(epic):
    p01_01 = [e for e in epic.events if e.session == "P01_01"]
    assert len(p01_01) == 329  # RULSTM lists 329 ids for P01_01; EPIC-55 has 326 of them (+3 invalid)
    assert sum(e.text == "open door" and e.meta["offset_s"][0] == 0.14 for e in p01_01) == 1
    # A segment only the EPIC-55 file has text for: uid 10225 is P05_01's first (P05_01_0).
    event = by_id(epic.events)["P05_01_0"]
    assert event.meta["file"] == "EPIC_train_action_labels.csv" and event.meta["uid"] == 10225
    assert event.text == "take kettle" and event.day == "2017-05-12"


def test_epic_text_from_class_names_for_rulstm_segments(epic):
    assert epic_kitchens.class_text("turn-on", "maker:coffee") == "turn on coffee maker"
    event = by_id(epic.events)["P01_103_13"]
    assert event.meta["text_from"] == "class_names"
    assert event.text == "take chopping board"  # verb 'take', noun 'board:chopping'
    assert epic.counts["segments with class-name text (RULSTM)"] == 29556


def test_epic_undated_extension_videos_form_a_relative_participant(epic):
    recordings = by_id(epic.recordings)
    first, second = recordings["P01_101"], recordings["P01_102"]
    assert first.participant == second.participant == "ek-P01-ext"
    assert (first.start, first.day) == (0.0, "undated-P01_101")
    assert (second.start, second.day) == (86400.0, "undated-P01_102")
    assert epic.metadata["participants"]["ek-P01-ext"]["time_basis"] == "seconds_since_first_recording"
    assert epic.metadata["participants"]["ek-P01"]["time_basis"] == "local_clock_as_utc"
    event = by_id(epic.events)["P01_102_0"]
    assert event.start == pytest.approx(86400.533)  # RULSTM frame 16 at 30 fps


def test_epic_sessions_never_overlap_and_unknown_clock_times_are_flagged(epic):
    recordings = by_id(epic.recordings)
    # EPIC_descriptions.csv gives P18_06 and P18_08 the same start (17:32:04): P18_08 follows P18_06.
    assert recordings["P18_08"].start == pytest.approx(recordings["P18_06"].end)
    assert recordings["P13_01"].meta["clock_time_known"] is False  # listed as 00:00:00
    by_participant = {}
    for rec in epic.recordings:
        by_participant.setdefault(rec.participant, []).append(rec)
    for recs in by_participant.values():
        recs.sort(key=lambda r: r.start)
        assert all(b.start >= a.end - 1e-6 for a, b in pairwise(recs))


def test_place_sessions_pushes_overlapping_starts():
    placed = place_sessions([("a", 0.0, 100.0), ("b", 60.0, 10.0), ("c", 500.0, 5.0)])
    assert placed == {"a": (0.0, 0.0), "b": (100.0, 40.0), "c": (500.0, 0.0)}


# --------------------------------------------------------------------------------------------
# HD-EPIC activities and narrations
# --------------------------------------------------------------------------------------------


def test_hd_epic_activities_are_level_one_with_real_days(hd):
    # 1,490 activity rows (SOURCES.md: 119+127+339+204+54+46+46+211+344) - 7 ending at/before their
    # start - 1 without a label - 4 listed once per recipe = 1,478 events.
    assert len(hd.events) == 1478
    assert hd.skipped.counts["activity ends at or before its start"] == 7
    assert hd.skipped.counts["activity without a label"] == 1
    assert hd.counts["identical activities merged (one per recipe)"] == 4
    assert len(hd.recordings) == 156  # HD_EPIC_YouTube_URLs.csv rows
    events = by_id(hd.events)
    first = events["P01-20240202-110250-a00"]  # "P01-20240202-110250,R01,Prepare Coffee,0.0,48.0"
    assert (first.participant, first.day, first.text) == ("hd-P01", "2024-02-02", "Prepare Coffee")
    assert first.start == pytest.approx(utc("2024-02-02 11:02:50"))
    assert first.end == pytest.approx(utc("2024-02-02 11:02:50") + 48)
    last = events["P01-20240202-110250-a06"]  # "Clean and clear,319.0,end"; the video lasts 396.266667 s
    assert last.end == pytest.approx(utc("2024-02-02 11:02:50") + 396.266667)
    assert {e.level for e in hd.events} == {1}


def test_hd_epic_repairs_the_video_id_with_a_dropped_zero(hd):
    # P09_recipe_timestamps.csv lines 152-153 say P09-2024623-154547; the video is P09-20240623-154547.
    repaired = [e for e in hd.events if e.session == "P09-20240623-154547"]
    assert [e.text for e in repaired] == ["Fill mug with boiling water and stir", "Cleanup"]
    assert repaired[0].day == "2024-06-23"


def test_hd_epic_merges_an_activity_listed_for_two_recipes(hd):
    merged = [e for e in hd.events if e.session == "P03-20240217-192543" and e.text == "Get ingredients from the fridge"]
    assert len(merged) == 1 and merged[0].meta["recipe_ids"] == ["R07", "R09"]


NARRATIONS = [
    # id, video, narration, start, end: P04-20240414-181030 has "Clean and clear - put away
    # ingredients" 0-72 and "Heat pan for making dosa" 19-25; P09-20240624-160737 has "Clean and tidy
    # up" 1960-2054 interrupted by "Tidy up" 1979-1985; P09-20240621-093545's first activity starts at
    # 10 s; P02-20240210-092616 has no activity at all.
    ("P04-20240414-181030-1", "P04-20240414-181030", "Put the milk in the fridge.", 4.0, 6.0),
    ("P04-20240414-181030-2", "P04-20240414-181030", "Turn on the hob.", 19.5, 21.0),
    ("P04-20240414-181030-3", "P04-20240414-181030", "Put the pan on the hob.", 22.0, 24.0),
    ("P09-20240624-160737-1", "P09-20240624-160737", "Wipe the counter.", 1965.0, 1967.0),
    ("P09-20240624-160737-2", "P09-20240624-160737", "Put the cloth away.", 1980.0, 1982.0),
    ("P09-20240624-160737-3", "P09-20240624-160737", "Wipe the hob.", 1990.0, 1992.0),
    ("P09-20240621-093545-1", "P09-20240621-093545", "Open the fridge.", 2.0, 4.0),
    ("P02-20240210-092616-1", "P02-20240210-092616", "Pick up the kettle.", 1.0, 2.0),
]


def write_narrations_csv(path):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["unique_narration_id", "participant_id", "video_id", "narration", "start_timestamp",
                         "end_timestamp", "verbs", "nouns", "narration_timestamp"])
        for nid, video, text, start, end in NARRATIONS:
            writer.writerow([nid, video[:3], video, text, start, end, "['put']", "['milk']", ""])


def check_two_levels(conversion):
    events = by_id(conversion.events)
    assert check_hierarchy(conversion.events).problems == []
    assert sum(e.level == 1 for e in conversion.events) == 7
    assert conversion.skipped.counts["narration of a video without high-level activities"] == 1
    assert conversion.counts["narrations outside every activity (nearest activity used)"] == 1
    clean = events["P04-20240414-181030-a00"]
    assert clean.level == 2 and clean.children == ["P04-20240414-181030-1"]
    assert clean.meta["offset_s"] == [0.0, 72.0]  # annotated span kept; the event spans its child
    assert (clean.start, clean.end) == (events["P04-20240414-181030-1"].start, events["P04-20240414-181030-1"].end)
    heat = events[events["P04-20240414-181030-2"].parent]
    assert heat.text == "Heat pan for making dosa"
    assert heat.children == ["P04-20240414-181030-2", "P04-20240414-181030-3"]
    tidy = [e for e in conversion.events if e.level == 2 and e.text == "Clean and tidy up"]
    assert [(e.meta["part"], e.meta["parts"], e.children) for e in tidy] == [
        (1, 2, ["P09-20240624-160737-1"]), (2, 2, ["P09-20240624-160737-3"])]
    assert events[events["P09-20240624-160737-2"].parent].text == "Tidy up"
    assert events[events["P09-20240621-093545-1"].parent].text == "Retrieve ingredients from fridge"
    assert events["P04-20240414-181030-1"].meta["verbs"] == ["put"]


def test_hd_epic_narrations_csv_gives_two_valid_levels(shared_data, tmp_path):
    path = tmp_path / "HD_EPIC_Narrations.csv"
    write_narrations_csv(path)
    check_two_levels(hd_epic.convert(shared_data / "hd-epic-annotations", narrations=path))


def test_hd_epic_narrations_pickle_gives_the_same_result(shared_data, tmp_path):
    pandas = pytest.importorskip("pandas", reason="reading HD_EPIC_Narrations.pkl needs pandas (data extra)")
    frame = pandas.DataFrame([
        {"unique_narration_id": nid, "participant_id": video[:3], "video_id": video, "narration": text,
         "start_timestamp": start, "end_timestamp": end, "verbs": ["put"], "nouns": ["milk"],
         "pairs": [("put", "milk")], "narration_timestamp": float("nan")}
        for nid, video, text, start, end in NARRATIONS])
    path = tmp_path / "HD_EPIC_Narrations.pkl"
    frame.to_pickle(path)
    conversion = hd_epic.convert(shared_data / "hd-epic-annotations", narrations=path)
    check_two_levels(conversion)
    event = by_id(conversion.events)["P04-20240414-181030-1"]
    assert event.meta["pairs"] == [["put", "milk"]] and event.meta["narration_timestamp"] is None


# --------------------------------------------------------------------------------------------
# HD-EPIC VQA
# --------------------------------------------------------------------------------------------


def test_vqa_items_letters_and_evidence(vqa):
    assert len(vqa.qa) == 6550  # the 28 vqa-benchmark files' entries in SOURCES.md
    assert vqa.counts["items: gaze_gaze_estimation"] == 1000
    assert all(len(item.options) == 5 for item in vqa.qa)
    items = by_id(vqa.qa)
    first = items["3d_perception_fixture_interaction_counting_0"]  # correct_idx 0, choices ["0", ...]
    assert (first.answer, first.options[0], first.task) == ("A", "0", "3d_perception_fixture_interaction_counting")
    assert first.participant == "hd-P01"
    assert first.evidence == [{"video": "P01-20240202-110250", "start": None, "end": None,
                               "input": "video 1", "kind": "video"}]
    location = items["3d_perception_fixture_location_0"]  # correct_idx 3 -> "3 o'clock"
    assert (location.answer, location.options[3]) == ("D", "3 o'clock")
    how = items["fine_grained_how_recognition_0"]  # 00:01:19.170-00:01:21.250, correct_idx 3
    assert how.answer == "D" and how.options[3] == "by pressing the release button"
    assert (how.evidence[0]["start"], how.evidence[0]["end"]) == (79.17, 81.25)
    order = items["ingredient_ingredients_order_0"]  # choices are lists; correct_idx 3
    assert order.answer == "D" and order.options[3] == "sugar, coffee, water, whole milk"
    assert order.meta["choices"][3] == ["sugar", "coffee", "water", "whole milk"]
    images = items["nutrition_image_nutrition_estimation_0"]  # five images of five participants
    assert images.participant == "" and len(images.meta["participants"]) == 5
    assert images.evidence[0] == {"video": "P09-20240623-120359", "start": 823.393, "end": 823.393,
                                  "input": "image 1", "kind": "image"}
    assert images.answer == "C" and images.options[2] == "tomatoes"
    why = items["fine_grained_why_recognition_0"]
    assert why.meta["stat"] == "2 make up" and why.meta["correct_idx"] == 4 and why.answer == "E"


# --------------------------------------------------------------------------------------------
# The command: convert, validate, stats
# --------------------------------------------------------------------------------------------


def test_written_hd_epic_conversions_validate_and_report_stats(hd, vqa, tmp_path, capsys):
    hd.write(tmp_path / "hd")
    vqa.write(tmp_path / "vqa")
    for path in ("hd/events.jsonl", "hd/recordings.jsonl", "vqa/qa.jsonl"):
        assert main(["data", "validate", str(tmp_path / path)]) == 0, path
    capsys.readouterr()
    assert main(["data", "stats", str(tmp_path / "hd"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["participants"], summary["days"], summary["sessions"], summary["events"]) == (9, 32, 149, 1478)
    assert summary["hierarchy"]["ok"]


@pytest.mark.slow  # writes and re-reads 76,886 events (~7 s)
def test_written_epic_conversion_validates_and_reports_stats(epic, tmp_path, capsys):
    epic.write(tmp_path / "ek")
    for path in ("ek/events.jsonl", "ek/recordings.jsonl"):
        assert main(["data", "validate", str(tmp_path / path)]) == 0, path
    capsys.readouterr()
    assert main(["data", "stats", str(tmp_path / "ek"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["participants"], summary["days"], summary["sessions"], summary["events"]) == (50, 318, 633, 76886)
    assert summary["hierarchy"]["ok"]
    metadata = json.loads((tmp_path / "ek" / "metadata.json").read_text())
    assert metadata["skipped"]["EPIC-55 segment that EPIC-100 removed"]["count"] == 51


def test_epic_marks_the_official_split_and_counts_days_and_undated_videos(epic):
    # Issue 22, item 28: 117 calendar days and 201 undated extension videos (each its own placeholder
    # day, so a day split holds them out as videos); EPIC_100_validation.csv's 9,668 segments marked.
    official = [e.meta["official_split"] for e in epic.events]
    assert official.count("validation") == 9668 and official.count("train") == len(official) - 9668
    assert epic.counts["split units: calendar days (dated videos)"] == 117
    assert epic.counts["split units: undated videos (a placeholder day each; held out as videos)"] == 201
    assert (epic.metadata["split_units"]["days"], epic.metadata["split_units"]["undated_videos"]) == (117, 201)
    assert epic.metadata["official_split"]["validation_events"] == 9668
    undated = {(e.participant, e.day) for e in epic.events if e.day.startswith("undated-")}
    assert len(undated) == 201 and all(p.endswith("-ext") for p, _ in undated)


def test_epic_events_pass_the_hierarchy_checks(epic):
    assert check_hierarchy(epic.events).problems == []


def test_convert_command_writes_files(shared_data, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["data", "convert", "hd-epic", "--root", str(shared_data / "hd-epic-annotations"),
                 "--out", str(out)]) == 0
    # Besides the command's marker and lock (owned_output, issue 36): exactly these files.
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} == {"events.jsonl", "recordings.jsonl",
                                                                             "metadata.json"}
    assert "activity ends at or before its start" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Malformed input: the error names file, line and column
# --------------------------------------------------------------------------------------------

EPIC_HEADER = ("narration_id,participant_id,video_id,narration_timestamp,start_timestamp,stop_timestamp,"
               "start_frame,stop_frame,narration,verb,verb_class,noun,noun_class,all_nouns,all_noun_classes")


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


def test_malformed_epic_timestamp_names_file_line_and_column(tmp_path):
    (tmp_path / "EPIC_100_validation.csv").write_text(lines(
        EPIC_HEADER,
        "P01_11_0,P01,P01_11,00:00:00.560,00:00:00.00,00:00:01.89,1,113,take plate,take,0,plate,2,['plate'],[2]",
        "P01_11_1,P01,P01_11,00:00:01.700,00:00:01.56,1:99,93,147,put down plate,put-down,1,plate,2,['plate'],[2]",
    ))
    with pytest.raises(DataError, match=r"EPIC_100_validation\.csv:3: column 'stop_timestamp': .*'1:99'"):
        epic_kitchens.convert(tmp_path)


def test_malformed_rows_name_file_line_and_column(tmp_path, capsys):
    (tmp_path / "EPIC_100_validation.csv").write_text(lines(
        EPIC_HEADER,
        "P01_11_0,P01,P01_11,00:00:00.560,00:00:00.00,00:00:01.89,1,113,take plate,take,0,plate,2,['plate'],[2]",
        "P01_11_1,P01,P01_11,00:00:01.700,00:00:01.56,00:00:02.45,93,147,put down plate,put-down,x,plate,2,['plate'],[2]",
    ))
    (tmp_path / "EPIC_descriptions.csv").write_text(
        "video_id,date,time,description\nP01_11,31/31/2017,13:49:00,cooking\n")
    with pytest.raises(DataError, match=r"EPIC_100_validation\.csv:3: column 'verb_class': expected an integer"):
        epic_kitchens.convert(tmp_path)
    (tmp_path / "EPIC_100_validation.csv").write_text(EPIC_HEADER + "\n" + (
        "P01_11_0,P01,P01_11,00:00:00.560,00:00:00.00,00:00:01.89,1,113,take plate,take,0,plate,2,['plate'],[2]\n"))
    with pytest.raises(DataError, match=r"EPIC_descriptions\.csv:2: column 'date': expected a date"):
        epic_kitchens.convert(tmp_path)
    # Through the command: a message on stderr, no traceback, exit status 2.
    assert main(["data", "convert", "epic-kitchens", "--root", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "EPIC_descriptions.csv:2: column 'date'" in capsys.readouterr().err


def test_malformed_hd_epic_activity_names_file_line_and_column(tmp_path):
    (tmp_path / "HD_EPIC_YouTube_URLs.csv").write_text(
        "video_id,youtube_url,duration\nP01-20240202-110250,https://youtu.be/x,396.266667\n")
    (tmp_path / "P01_recipe_timestamps.csv").write_text(
        "video_id,recipe_id,high_level_activity_label,start_time,end_time\n"
        "P01-20240202-110250,R01,Prepare Coffee,0.0,48.0\n"
        "P01-20240202-110250,,Wash up,4x8,end\n")
    with pytest.raises(DataError, match=r"P01_recipe_timestamps\.csv:3: column 'start_time': expected a number"):
        hd_epic.convert(tmp_path)
    (tmp_path / "P01_recipe_timestamps.csv").write_text(
        "video_id,recipe_id,high_level_activity_label,start_time,end_time\n"
        "P01-20240202-110250,R01,Prepare Coffee,0.0\n")
    with pytest.raises(DataError, match=r"P01_recipe_timestamps\.csv:2: expected 5 cells"):
        hd_epic.convert(tmp_path)


def test_malformed_vqa_item_names_file_item_and_field(tmp_path):
    folder = tmp_path / "vqa-benchmark"
    folder.mkdir()
    (folder / "recipe_step_recognition.json").write_text(json.dumps({
        "recipe_step_recognition_0": {"inputs": {"video 1": {"id": "P07-20240529-194518"}},
                                      "question": "Which step?", "choices": list("abcde"), "correct_idx": 5}}))
    with pytest.raises(DataError, match=r"recipe_step_recognition\.json: item 'recipe_step_recognition_0': "
                                        r"field 'correct_idx': expected an integer 0-4, got 5"):
        hd_epic_vqa.convert(tmp_path)
