"""``egohorizon data validate`` on files that are not JSON Lines (issue 22, item 15): one message
saying what the file is and how to convert it, instead of one "invalid JSON" line per row."""

from __future__ import annotations

import json

import pytest

from egohorizon.cli import main

BOX_CSV = "filename,width,height,class,xmin,ymin,xmax,ymax\n" + "".join(
    f"frame_{i:04d}.jpg,1280,720,hand,{i},10,{i + 50},90\n" for i in range(30))


def validate(capsys, *argv) -> tuple[int, str, str]:
    code = main(["data", "validate", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("type_args", [[], ["--type", "hand_box"]])
def test_a_csv_is_named_as_one_with_its_header_and_the_command_that_reads_it(capsys, tmp_path, type_args):
    boxes = tmp_path / "boxes.csv"
    boxes.write_text(BOX_CSV)
    code, out, err = validate(capsys, boxes, *type_args)
    assert code == 2 and "invalid JSON" not in out + err and err.count("\n") == 1
    assert f"{boxes}: a CSV file (header: filename,width,height,class,xmin,ymin,xmax,ymax), not JSON Lines" in err
    assert f"egohorizon hands detect IMAGES --gold {boxes}" in err


def test_an_epic_kitchens_csv_points_to_data_convert(capsys, tmp_path):
    epic = tmp_path / "EPIC_100_validation.csv"
    epic.write_text("narration_id,participant_id,video_id,start_timestamp\nP01_11_0,P01,P01_11,00:00:00.56\n"
                    "P01_11_1,P01,P01_11,00:00:04.37\n")
    code, _, err = validate(capsys, epic)
    assert code == 2 and f"egohorizon data convert epic-kitchens --root {tmp_path} --out OUT" in err


def test_a_json_array_is_named_with_its_length_and_a_conversion(capsys, tmp_path):
    qa = tmp_path / "QA.json"
    qa.write_text(json.dumps([{"id": f"q{i}", "question": "?"} for i in range(3)], indent=2))
    code, out, err = validate(capsys, qa)
    assert code == 2 and "line 1: invalid JSON" not in out + err
    assert f"{qa}: a JSON array of 3 items, not JSON Lines (one record a line)" in err
    assert f"jq -c '.[]' {qa} > {tmp_path / 'QA.jsonl'}" in err


def test_an_hd_epic_vqa_file_points_to_its_converter(capsys, tmp_path):
    folder = tmp_path / "hd-epic-annotations" / "vqa-benchmark"
    folder.mkdir(parents=True)
    item = {"inputs": {"video 1": {"id": "P01-20240202-110250"}}, "question": "What?", "choices": ["a", "b"],
            "correct_idx": 0}
    vqa = folder / "recipe_step_localization.json"
    vqa.write_text(json.dumps({"recipe_step_localization_0": item}, indent=4))
    code, _, err = validate(capsys, vqa)
    assert code == 2 and "one JSON object of 1 keys spread over several lines, not JSON Lines" in err
    assert f"egohorizon data convert hd-epic-vqa --root {tmp_path / 'hd-epic-annotations'} --out OUT" in err


def test_plain_text_is_not_json_lines(capsys, tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text("just some notes\nabout the data\n")
    code, _, err = validate(capsys, notes)
    assert code == 2 and f"{notes}: not a JSON Lines file (one JSON record a line): none of its first 2 lines" in err


def test_json_lines_with_one_broken_line_still_get_per_line_defects(capsys, tmp_path):
    events = tmp_path / "events.jsonl"
    good = {"id": "e1", "participant": "p1", "day": "2025-01-01", "level": 1, "start": 0.0, "end": 1.0,
            "text": "a", "parent": None}
    events.write_text(json.dumps(good) + "\n{broken\n")
    code, out, _ = validate(capsys, events, "--type", "event")
    assert code == 1 and f"{events}:2: invalid JSON" in out


@pytest.mark.parametrize("command", [["data", "stats"], ["points", "--out", "{out}", "--events"]])
def test_every_reader_of_records_names_a_csv_or_json_array_once(capsys, tmp_path, command):
    """Bad-input pass: `data stats` and `points` read records through schema.read_jsonl, which said
    "283 defective record(s)" with one "invalid JSON" per row of a CSV and "line 1: expected a JSON
    object, got list" for a JSON array."""
    boxes = tmp_path / "boxes.csv"
    boxes.write_text(BOX_CSV)
    array = tmp_path / "events.json"
    array.write_text(json.dumps([{"id": "e1"}, {"id": "e2"}]))
    argv = [a.replace("{out}", str(tmp_path / "out")) for a in command]
    assert main([*argv, str(boxes)]) == 2
    err = capsys.readouterr().err
    assert "1 defective record(s)" in err and "invalid JSON" not in err
    assert f"{boxes}: a CSV file (header: filename,width,height,class,xmin,ymin,xmax,ymax), not JSON Lines" in err
    assert main([*argv, str(array)]) == 2
    err = capsys.readouterr().err
    assert f"{array}: a JSON array of 2 items, not JSON Lines" in err and "got list" not in err


def test_records_of_another_type_are_named_once(tmp_path):
    """Bad-input pass: `score forecast --gold events.jsonl` said "71235 defective record(s)" (every
    missing field of every event); --gold and --pred swapped said 320."""
    from egohorizon.schema import ForecastPoint, ForecastPrediction, read_jsonl, write_jsonl

    preds = tmp_path / "pred.jsonl"
    write_jsonl(preds, [ForecastPrediction(id=f"p{i}", candidates=[["walk"]]) for i in range(3)])
    result = read_jsonl(preds, ForecastPoint)
    # 3 lines, each missing the 8 required point fields other than id
    expected = (f"{preds}: holds ForecastPrediction records (line 1 has id, candidates, text, model, prompt, "
                "prompt_version), not the ForecastPoint records expected here (24 defects)")
    assert result.records == [] and [str(d) for d in result.defects] == [expected]
    assert [r.id for r in read_jsonl(preds, ForecastPrediction).records] == ["p0", "p1", "p2"]


def test_hands_detect_output_given_to_score_boxes_is_named(tmp_path):
    """Bad-input pass: `score boxes --gold detect.jsonl` listed 392 "field 'clip': missing" defects."""
    from egohorizon.schema import HandBox, read_jsonl

    detected = tmp_path / "detect.jsonl"
    detected.write_text('{"image": "a.jpg", "hand": "left", "box": [1, 2, 3, 4], "score": 0.9}\n')
    (defect,) = read_jsonl(detected, HandBox).defects
    assert str(defect).startswith(f"{detected}: holds hands detect boxes (image, hand, box, score per image file), "
                                  "not the HandBox records expected here; `egohorizon hands detect IMAGES --gold CSV`")
