"""Records and JSON Lines validation: every defect reported with file, line and field."""

from __future__ import annotations

import json

import pytest

from egohorizon.cli import main
from egohorizon.schema import (
    Event,
    ForecastPoint,
    QAItem,
    RecordError,
    Segment,
    load_jsonl,
    read_jsonl,
    write_jsonl,
)


def _event(**overrides):
    base = {"id": "e1", "participant": "p1", "day": "2026-01-01", "session": "s1", "level": 1,
            "start": 0.0, "end": 5.0, "text": "open the fridge", "parent": None, "children": []}
    return {**base, **overrides}


def test_round_trip_keeps_unknown_fields(tmp_path):
    path = tmp_path / "events.jsonl"
    write_jsonl(path, [_event(extra_field={"a": 1})])
    [event] = load_jsonl(path, Event)
    assert event.text == "open the fridge" and event.duration == 5.0
    assert json.loads(path.read_text())["extra_field"] == {"a": 1}
    write_jsonl(path, [event])
    assert json.loads(path.read_text())["extra_field"] == {"a": 1}


def _defective_file(tmp_path):
    lines = [
        json.dumps(_event(id="ok")),
        "{not json",
        json.dumps({k: v for k, v in _event(id="nofield").items() if k != "text"}),
        json.dumps(_event(id="badtype", start="soon")),
        json.dumps(_event(id="backwards", start=9.0, end=3.0)),
        json.dumps(_event(id="toodeep", level=7)),
        json.dumps(_event(id="ok")),
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_reports_every_defect_with_line_and_field(tmp_path):
    path = _defective_file(tmp_path)
    result = read_jsonl(path, Event)
    found = {(d.line, d.field) for d in result.defects}
    assert found == {(2, ""), (3, "text"), (4, "start"), (5, "end"), (6, "level"), (7, "id")}
    assert [e.id for e in result.records] == ["ok"]
    assert "duplicate id 'ok' (first on line 1)" in str(result.defects[-1])
    with pytest.raises(RecordError) as error:
        result.raise_for_defects()
    assert f"{path}:3: field 'text': missing required field" in str(error.value)


def test_validate_cli_prints_one_message_per_defect(tmp_path, capsys):
    path = _defective_file(tmp_path)
    assert main(["data", "validate", str(path)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 6
    assert out[0].startswith(f"{path}:2: invalid JSON")
    assert any(f"{path}:6: field 'level': expected a level in 1-5" in line for line in out)


def test_forecast_point_rejects_context_after_t0():
    point = {"id": "x", "source": "demo", "participant": "p", "level": 1, "k": 1, "t0": 10.0,
             "context": [{"text": "a", "start": 0, "end": 12}], "targets": ["b"], "windows": [[10, 11]]}
    record, problems = ForecastPoint.from_dict(point)
    assert record is None and problems[0][0] == "context" and "leaked" in problems[0][1]


def test_qa_answer_must_name_an_option():
    item = {"id": "q", "participant": "p", "task": "Event Counting", "question": "How many?",
            "options": ["1", "2", "3", "4"], "answer": "E"}
    assert QAItem.from_dict(item)[1] == [("answer", "expected a letter A-D, got 'E'")]
    assert QAItem.from_dict({**item, "answer": "c"})[0].answer == "C"


def test_hand_segments_need_a_hand():
    seg = {"clip": "c", "kind": "hand_action", "start": 0, "end": 1, "label": "hold"}
    assert Segment.from_dict(seg)[1][0][0] == "hand"
    assert Segment.from_dict({**seg, "hand": "left"})[0].hand == "left"


def test_forecast_point_needs_exactly_k_targets():
    point = {"id": "x", "source": "demo", "participant": "p", "level": 1, "k": 5, "t0": 10.0,
             "context": [{"text": "a", "start": 0, "end": 1}], "targets": ["b", "c", "d"],
             "windows": [[10, 11], [11, 12], [12, 13]]}
    record, problems = ForecastPoint.from_dict(point)
    assert record is None and problems == [("targets", "expected k=5 targets, got 3")]
    assert ForecastPoint.from_dict({**point, "k": 3})[0].k == 3


JAN1 = 1767225600.0  # 2026-01-01 00:00 UTC: the project reads clock times as UTC (local clock, SPEC §5)


@pytest.mark.parametrize("day, start", [
    ("2026-01-01", JAN1 + 10 * 3600),  # 10:00 on that day
    ("2026-01-01", JAN1 + 24.5 * 3600),  # 00:30 the next day: a recording that runs past midnight
    ("2026-01-01", 3600.0),  # a relative time base (device seconds, seconds since the first recording)
    ("undated-P01_101", 86400.0),  # a placeholder day of a data set without dates
    ("d3", 7.0),
])
def test_event_days_that_agree_with_their_start(day, start):
    record, problems = Event.from_dict(_event(day=day, start=start, end=start + 5))
    assert problems == [] and record.day == day


@pytest.mark.parametrize("day, start, expected", [
    ("2026-01-05", JAN1 + 3600, ("expected the calendar day of the start, 2026-01-01 (UTC), or the day "
                                 "before it (a recording that runs past midnight), got '2026-01-05'")),
    ("2025-12-30", JAN1 + 3600, "got '2025-12-30'"),
    ("2026-02-30", JAN1, "expected a calendar day YYYY-MM-DD or a placeholder label, got '2026-02-30'"),
    ("2026/01/01", JAN1, "expected a calendar day YYYY-MM-DD"),
    ("01-01-2026", JAN1, "expected a calendar day YYYY-MM-DD"),
    ("", JAN1, "expected a non-empty string"),
])
def test_event_day_is_checked_as_a_date_and_against_the_start(day, start, expected):
    record, problems = Event.from_dict(_event(day=day, start=start, end=start + 5))
    assert record is None and [f for f, _ in problems] == ["day"] and expected in problems[0][1]


def test_recording_starts_on_its_day():
    from egohorizon.schema import Recording

    rec = {"id": "r", "participant": "p", "day": "2026-01-01", "session": "s", "start": JAN1 + 60, "end": JAN1 + 99}
    assert Recording.from_dict(rec)[1] == []
    record, problems = Recording.from_dict({**rec, "day": "2025-12-31"})
    assert record is None and problems[0][0] == "day" and "2026-01-01" in problems[0][1]
    # a recording belongs to the day it started, so the day after midnight is refused too
    assert Recording.from_dict({**rec, "start": JAN1 - 60})[1][0][0] == "day"


def test_a_line_that_is_not_utf8_is_named_and_the_rest_still_read(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(json.dumps(_event(id="a")).encode() + b"\n"
                     + json.dumps(_event(id="b", text="caf\u00e9"), ensure_ascii=False).encode("latin-1") + b"\n"
                     + json.dumps(_event(id="c")).encode() + b"\n")
    result = read_jsonl(path, Event)
    assert [e.id for e in result.records] == ["a", "c"]
    [defect] = result.defects
    assert defect.line == 2 and str(defect).startswith(f"{path}:2: not UTF-8 text (byte 0xe9 at column ")


def test_a_folder_is_a_defect_not_a_traceback(tmp_path):
    [defect] = read_jsonl(tmp_path, Event).defects
    assert str(defect) == f"{tmp_path}: is a folder; expected a .jsonl file"


def test_prediction_with_null_text_is_one_invalid_answer_not_a_defect():
    from egohorizon.schema import ForecastPrediction, QAPrediction

    record, problems = QAPrediction.from_dict({"id": "q", "text": None})
    assert problems == [] and record.text is None and record.answer is None
    assert ForecastPrediction.from_dict({"id": "p", "text": None})[1] == []
    # a wrong type is one defect, not also "expected 'answer' or 'text'"
    assert QAPrediction.from_dict({"id": "q", "text": 5})[1] == [("text", "expected a string, got int 5")]
    assert QAPrediction.from_dict({"id": "q"})[1][0][0] == "answer"


def test_validate_cli_on_a_folder_and_an_empty_file(tmp_path, capsys):
    (tmp_path / "events.jsonl").write_text(json.dumps(_event()) + "\n")
    assert main(["data", "validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}: is a folder; expected a .jsonl file, e.g. {tmp_path / 'events.jsonl'}" in err
    assert "Traceback" not in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["data", "validate", str(empty), "--type", "event"]) == 1
    assert f"{empty}: no records" in capsys.readouterr().out
    assert main(["data", "validate", str(empty)]) == 2
    assert f"{empty}: no records" in capsys.readouterr().err
