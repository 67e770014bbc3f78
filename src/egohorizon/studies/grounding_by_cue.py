"""The grounding study split by cue kind (issue 15): does a variant's lead come from the cue it saw?

    .venv/bin/python -m egohorizon.studies.grounding_by_cue POINTS.jsonl text=REPORT.json frames=REPORT.json \
        [hidden=REPORT.json ...]

Every REPORT is a per-point forecast report on the same points (a run's ``reports/test.json`` or
``reports/val_epochNNN_stepNNNNNN.json``, or eval.py's, e.g. with ``data.hide_cues=true``); POINTS the run's
``points/points_<split>.jsonl`` (their ``meta.cue`` marks). Prints a markdown table per level and subset
(all, cue_driven, phone, person, uncued): each variant's S_norm and its paired difference to the first
one named, with 95% percentile bootstrap intervals over points (the study's ``bootstrap``, 2,000
resamples, seed 0), and the share of first answers that name the phone (phone, message, notification).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from egohorizon.schema import ForecastPoint, load_jsonl
from egohorizon.studies.grounding import bootstrap

SUBSETS = ("all", "cue_driven", "phone", "person", "uncued")
PHONE_WORDS = ("phone", "message", "notification")


def in_subset(point: ForecastPoint, subset: str) -> bool:
    cued = bool(point.meta.get("cue_driven"))
    if subset in ("all", "cue_driven"):
        return subset == "all" or cued
    return (point.meta.get("cue") if cued else "uncued") == subset


def _predictions(report: Path) -> dict[str, str]:
    """First answers from the predictions file beside a run's report (empty when there is none)."""
    path = report.parent.parent / "predictions" / f"{report.stem}.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out[row["id"]] = row["candidates"][0][0] if row.get("candidates") else ""
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3 or any("=" not in a for a in argv[1:]):
        sys.stderr.write(__doc__.strip().splitlines()[2] + "\n")
        return 2
    points = {p.id: p for p in load_jsonl(Path(argv[0]), ForecastPoint)}
    reports = {}
    for arg in argv[1:]:
        name, path = arg.split("=", 1)
        reports[name] = (Path(path), {r["id"]: r for r in json.loads(Path(path).read_text(encoding="utf-8"))["per_point"]})
    ids = sorted(set.intersection(*(set(rows) for _, rows in reports.values())))
    if any(set(rows) != set(ids) for _, rows in reports.values()):
        sys.stderr.write("grounding_by_cue: the reports scored different points\n")
        return 1
    # The table is the study's output (stdout, written once at the end), not a log.
    sys.stdout.write("\n".join(table_lines(points, reports, ids)) + "\n")
    return 0


def table_lines(points: dict[str, ForecastPoint], reports: dict[str, tuple[Path, dict[str, dict]]],
                ids: list[str]) -> list[str]:
    """The markdown table: a row per level and subset, each variant's S_norm and its paired difference to
    the first one named, and the first answers that name the phone."""
    names = list(reports)
    answers = {name: _predictions(path) for name, (path, _) in reports.items()}
    head = " | ".join(f"{n} S_norm" + ("" if i == 0 else f" | {n} - {names[0]} [95% CI]") for i, n in enumerate(names))
    lines = [f"| level | points | n | {head} | phone answers ({', '.join(names)}) |", "|" + "---|" * (3 + 2 * len(names))]
    for level in sorted({points[i].level for i in ids}):
        for subset in SUBSETS:
            chosen = [i for i in ids if points[i].level == level and in_subset(points[i], subset)]
            if not chosen:
                continue
            s_rand = np.array([reports[names[0]][1][i]["S_rand"] for i in chosen])
            out = bootstrap({n: np.array([reports[n][1][i]["S"] for i in chosen]) for n in names}, s_rand, 2000, 0,
                            baseline=names[0])
            cells = []
            for k, n in enumerate(names):
                cells.append(f"{out[n]['S_norm']:.3f}")
                if k:
                    cells.append(f"{out[n]['diff']:+.3f} [{out[n]['diff_lo']:+.3f}, {out[n]['diff_hi']:+.3f}]")
            phone = ", ".join(f"{sum(any(w in answers[n].get(i, '') for w in PHONE_WORDS) for i in chosen)}"
                              if answers[n] else "-" for n in names)
            lines.append(f"| L{level} | {subset} | {len(chosen)} | {' | '.join(cells)} | {phone} |")
    return lines


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
