"""Answer-extraction modes (issue 25, item 2): a table of realistic replies and the letter each mode
reads, written by hand from the paper scripts' regexes (EgoMonth: ``re.search(r'\\b([A-D])\\b', r)``,
case-sensitive in Qwen3-VL-8B.py, on ``r.upper()`` in qwen2vl.py) and the rules in
egohorizon/metrics/extraction.py; and ``egohorizon score qa --extraction MODE``."""

from __future__ import annotations

import json
import re

import pytest

from egohorizon import cli
from egohorizon.metrics.extraction import MODES, extract

OPTIONS = ["In the car", "In the kitchen", "At the office", "In the garden"]

# reply: (strict, egomonth-cs, egomonth-upper, egoschema)
TABLE = {
    "B": ("B", "B", "B", "B"),
    "c": ("C", None, "C", None),
    "a": ("A", None, "A", None),
    "b)": ("B", None, "B", None),
    "A.": ("A", "A", "A", "A"),
    "I think A or B": (None, "A", "A", None),
    "B\n\nExplanation: the phone was left on the seat.": (None, "B", "B", "B"),
    "C is correct.": (None, "C", "C", None),
    "(A) In the car": ("A", "A", "A", "A"),
    "答案：B": (None, "B", "B", None),
    "答案B": (None, None, None, None),
    "Ｂ": (None, None, None, None),
    "The answer is B.": ("B", "B", "B", "B"),
    "Answer: D": ("D", "D", "D", "D"),
    "ANSWER: B": ("B", "B", "B", "B"),
    "A dog is in the car": (None, "A", "A", None),
    "**B**": ("B", "B", "B", None),
    "Option C": ("C", "C", "C", "C"),
    "2": (None, None, None, "C"),
    "3": (None, None, None, "D"),
    "I'd say D": (None, "D", "D", None),
    "Between A and C, I choose C.": (None, "A", "A", None),
    "": (None, None, None, None),
    "None of the options": (None, None, None, None),
    "In the kitchen": ("B", None, None, "B"),
    "E": (None, None, None, None),
    "The correct answer is (C) At the office": ("C", "C", "C", "C"),
    "D. In the garden": ("D", "D", "D", "D"),
    "Based on the video, a person is cooking, so B": (None, "B", "A", None),
    "B or C": (None, "B", "B", None),
    "The final answer is A, in the car.": ("A", "A", "A", "A"),
    "C: At the office": ("C", "C", "C", "C"),
}


@pytest.mark.parametrize("reply", list(TABLE))
@pytest.mark.parametrize("mode", MODES)
def test_each_mode_reads_the_hand_written_letter(reply, mode):
    assert extract(reply, OPTIONS, mode) == TABLE[reply][MODES.index(mode)]


@pytest.mark.parametrize("reply", list(TABLE))
def test_egomonth_modes_are_the_scripts_regexes_on_four_options(reply):
    cs = re.search(r"\b([A-D])\b", reply)
    upper = re.search(r"\b([A-D])\b", reply.upper())
    assert extract(reply, OPTIONS, "egomonth-cs") == (cs.group(1).upper() if cs else None)
    assert extract(reply, OPTIONS, "egomonth-upper") == (upper.group(1) if upper else None)


def test_the_table_is_realistic_and_the_modes_disagree_on_many_replies():
    assert len(TABLE) >= 30
    differing = [reply for reply, row in TABLE.items() if len(set(row)) > 1]
    assert len(differing) >= 13


def test_egoschema_reads_a_camera_wearer_option_by_its_text_not_its_c():
    options = ["C stops scrolling to check notifications", "C types on the laptop", "C drinks from a cup",
               "C talks to a man", "C reads a paper"]
    assert extract("C drinks from a cup", options, "egoschema") == "C"
    assert extract("C reads a paper.", options, "egoschema") == "E"
    assert extract("C talks to someone", options, "egoschema") is None
    assert extract("C talks to someone", options, "egomonth-cs") == "C"  # the first-capital rule misreads it
    assert extract("4", options, "egoschema") == "E"
    assert extract("5", options, "egoschema") is None
    assert extract("E", options, "egomonth-cs") == "E"  # A up to the last option: five options reach E


def test_an_unknown_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown extraction mode 'loose'.*strict, egomonth-cs"):
        extract("B", OPTIONS, "loose")


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_score_qa_extraction_mode_changes_what_is_read_and_reports_strict_beside_it(tmp_path, capsys):
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    replies = {"q1": "I think A or B", "q2": "c", "q3": "B\n\nExplanation: ...", "q4": "Answer: D"}
    answers = {"q1": "A", "q2": "C", "q3": "B", "q4": "A"}
    _write(gold, [{"id": i, "participant": "p1", "task": "Detail Retrieval", "question": "Where?",
                   "options": OPTIONS, "answer": answers[i]} for i in replies])
    _write(pred, [{"id": i, "text": t} for i, t in replies.items()])
    out = tmp_path / "report.json"
    assert cli.main(["score", "qa", "--gold", str(gold), "--pred", str(pred), "--extraction", "egomonth-upper",
                     "--out", str(out)]) == 0
    text = capsys.readouterr().out
    report = json.loads(out.read_text())
    # upper: q1 A (right), q2 C (right), q3 B (right), q4 D (wrong); strict: q1 None, q2 C, q3 None, q4 D
    assert report["Acc"] == 0.75 and report["extraction"]["mode"] == "egomonth-upper"
    assert report["extraction"]["strict"]["Acc"] == 0.25
    assert report["extraction"]["read_differently"] == 2
    assert "extraction egomonth-upper; strict: Avg 0.2500 Acc 0.2500 invalid 2 (2 of 4 replies read differently)" in text


def test_score_qa_refuses_an_unknown_extraction_mode(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", "qa", "--gold", "g", "--pred", "p", "--extraction", "loose"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'loose'" in capsys.readouterr().err
