"""Records and JSON Lines validation: every defect reported with file, line and field."""

from __future__ import annotations

import json

import pytest

from egohorizon.cli import main
from egohorizon.schema import (Event, ForecastPoint, QAItem, RecordError, Segment, load_jsonl,
                               read_jsonl, write_jsonl)


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
