"""egohorizon.studies.grounding_by_cue: the grounding comparison split by cue kind, by hand on a few points."""

from __future__ import annotations

import json
from pathlib import Path

from egohorizon.schema import ForecastPoint, write_jsonl
from egohorizon.studies.grounding_by_cue import main


def _report(path: Path, scores: dict[str, float]) -> str:
    rows = [{"id": pid, "S": s, "S_rand": 0.5} for pid, s in scores.items()]
    path.write_text(json.dumps({"per_point": rows}), encoding="utf-8")
    return str(path)


def test_rows_per_cue_kind_with_the_paired_difference(tmp_path, capsys):
    kinds = ["phone", "phone", "person", "person", None, None]
    points = [ForecastPoint(id=f"p{i}", participant="p01", level=1, k=1, t0=100.0 + i, context=[], targets=["x"],
                            windows=[[0, 1]], meta={"cue_driven": kind is not None, **({"cue": kind} if kind else {})})
              for i, kind in enumerate(kinds)]
    write_jsonl(tmp_path / "points.jsonl", points)
    text = _report(tmp_path / "text.json", {p.id: 0.5 for p in points})  # S_norm 0 everywhere
    # frames: right on the person points only (S 1 -> S_norm 1), as text elsewhere
    frames = _report(tmp_path / "frames.json", {p.id: 1.0 if p.meta.get("cue") == "person" else 0.5 for p in points})
    assert main([str(tmp_path / "points.jsonl"), f"text={text}", f"frames={frames}"]) == 0
    rows = {line.split(" | ")[1]: line for line in capsys.readouterr().out.splitlines() if line.startswith("| L1")}
    assert set(rows) == {"all", "cue_driven", "phone", "person", "uncued"}
    assert "| L1 | person | 2 | 0.000 | 1.000 | +1.000 [+1.000, +1.000] |" in rows["person"]
    assert "| L1 | phone | 2 | 0.000 | 0.000 | +0.000 [+0.000, +0.000] |" in rows["phone"]
    assert "| L1 | cue_driven | 4 | 0.000 | 0.500 |" in rows["cue_driven"]
    assert "| L1 | all | 6 |" in rows["all"]


def test_reports_on_different_points_are_refused(tmp_path, capsys):
    points = [ForecastPoint(id=f"p{i}", participant="p01", level=1, k=1, t0=float(i), context=[], targets=["x"],
                            windows=[[0, 1]], meta={"cue_driven": False}) for i in range(3)]
    write_jsonl(tmp_path / "points.jsonl", points)
    a = _report(tmp_path / "a.json", {"p0": 0.5, "p1": 0.5, "p2": 0.5})
    b = _report(tmp_path / "b.json", {"p0": 0.5, "p1": 0.5})
    assert main([str(tmp_path / "points.jsonl"), f"text={a}", f"frames={b}"]) == 1
    assert "different points" in capsys.readouterr().err
    assert main([str(tmp_path / "points.jsonl"), a]) == 2  # no name=REPORT: the usage line
    assert "-m egohorizon.studies.grounding_by_cue" in capsys.readouterr().err
