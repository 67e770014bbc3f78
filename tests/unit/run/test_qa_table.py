"""egohorizon.studies.qa_table: docs/qa.md's table from finished runs, by hand on a few items; the text is
built as lines (written once by main), not printed from the library."""

from __future__ import annotations

import json
from pathlib import Path

from egohorizon.schema import QAItem
from egohorizon.studies.qa_table import table_lines

OPTIONS = ["w", "x", "y", "z"]


def _item(i: int, split: str, task: str, level: int, answer: str) -> QAItem:
    return QAItem(id=f"q{i}", participant="p", task=task, question="?", options=OPTIONS, answer=answer, level=level,
                  meta={"split": split})


def _run(folder: Path, answers: dict[str, str], val_avgs: list[float]) -> Path:
    (folder / "reports").mkdir(parents=True)
    (folder / "predictions").mkdir()
    for epoch, avg in enumerate(val_avgs):
        (folder / "reports" / f"val_epoch{epoch:03d}.json").write_text(json.dumps({"Avg": avg}))
        (folder / "predictions" / f"val_epoch{epoch:03d}.jsonl").write_text(
            "".join(json.dumps({"id": pid, "answer": a}) + "\n" for pid, a in answers.items()))
    (folder / "predictions" / "test.jsonl").write_text(
        "".join(json.dumps({"id": pid, "answer": a}) + "\n" for pid, a in answers.items()))
    return folder


def test_the_table_by_hand(tmp_path):
    items = [_item(0, "train", "T1", 1, "B"), _item(1, "train", "T1", 1, "B"), _item(2, "train", "T2", 2, "C"),
             _item(3, "val", "T1", 1, "B"), _item(4, "val", "T2", 2, "A"),
             _item(5, "test", "T1", 1, "B"), _item(6, "test", "T1", 1, "A"), _item(7, "test", "T2", 2, "D")]
    # right on q3, q4 (val) and q5, q7 (test); wrong on q6; the second val epoch is chosen (best Avg)
    run = _run(tmp_path / "run", {"q3": "B", "q4": "A", "q5": "B", "q6": "C", "q7": "D"}, [0.5, 1.0])
    lines = table_lines(items, {"r": run})
    test = lines[lines.index("\n## test (3 items; majority letter B)\n"):]
    assert test[1] == "| task | level | n | chance | majority | answer prior | r |"
    # T1: majority B is right on q5 only (1/2); r right on q5 (1/2); T2: majority wrong, r right
    assert test[3].startswith("| T1 | 1 | 2 | 0.25 | 0.500 |") and test[3].endswith(" | 0.500 |")
    assert test[4].startswith("| T2 | 2 | 1 | 0.25 | 0.000 |") and test[4].endswith(" | 1.000 |")
    assert "| **Avg** | | 3 | 0.25 | 0.250 |" in test[7] and test[7].endswith(" | 0.750 |")  # mean over task types
    assert test[8].startswith("| **Acc** | | 3 | 0.25 | 0.333 |") and test[8].endswith(" | 0.667 |")
    assert lines[-1] == "r val Avg per epoch: [0.5, 1.0] chosen: val_epoch001"
