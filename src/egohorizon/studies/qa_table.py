"""The QA results table of docs/qa.md §6 from finished runs: per task and level on the test days, the
baselines of the first run's report (chance, majority position, answer prior), each run's chosen
validation epoch, each run's Avg less chance with its bootstrap interval, and paired bootstrap
differences (resampled within task type) between runs (overall and per level) and against the majority
position and the answer prior.

    python -m egohorizon.studies.qa_table --items data/demo_qa/qa.jsonl uniform=outputs/RUN1 retrieval=outputs/RUN2
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from egohorizon.errors import EgohorizonError
from egohorizon.metrics.qa import answer_prior, prior_answers
from egohorizon.schema import QAItem, RecordError, load_jsonl


def _predictions(run: Path, split: str) -> dict[str, str]:
    rows = [json.loads(line) for line in (run / "predictions" / f"{split}.jsonl").read_text().splitlines() if line]
    return {r["id"]: r["answer"] for r in rows}


def _avg(hits: dict[str, list[bool]]) -> float:
    return sum(sum(h) / len(h) for h in hits.values()) / len(hits)


def _per_task(items: list[QAItem], answers: dict[str, str]) -> dict[str, list[bool]]:
    hits: dict[str, list[bool]] = defaultdict(list)
    for item in items:
        hits[item.task].append(answers.get(item.id) == item.answer)
    return hits


def _bootstrap(items: list[QAItem], a: dict[str, str], b: dict[str, str], draws: int = 2000) -> tuple[float, float, float]:
    """Avg(a) - Avg(b), with a 95% interval from resampling items within each task type."""
    rng = random.Random(0)
    by_task: dict[str, list[QAItem]] = defaultdict(list)
    for item in items:
        by_task[item.task].append(item)
    point = _avg(_per_task(items, a)) - _avg(_per_task(items, b))
    diffs = []
    for _ in range(draws):
        sample = [rng.choice(group) for group in by_task.values() for _ in group]
        diffs.append(_avg(_per_task(sample, a)) - _avg(_per_task(sample, b)))
    diffs.sort()
    return point, diffs[int(0.025 * draws)], diffs[int(0.975 * draws) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="data/demo_qa/qa.jsonl")
    parser.add_argument("runs", nargs="+", help="label=run folder (the folder holding reports/ and predictions/)")
    args = parser.parse_args()
    items = load_jsonl(args.items, QAItem)
    runs = {label: Path(path) for label, path in (r.split("=", 1) for r in args.runs)}
    # The table is the study's output (stdout, written once at the end), not a log.
    sys.stdout.write("\n".join(table_lines(items, runs)) + "\n")


def table_lines(items: list[QAItem], runs: dict[str, Path]) -> list[str]:
    """The study's text, line by line: the val and test tables with their bootstrap lines, then each run's
    val Avg per epoch and the chosen epoch."""
    train = [i for i in items if i.meta["split"] == "train"]
    majority = Counter(i.answer for i in train).most_common(1)[0][0]
    table = answer_prior(train)
    lines = []
    for split in ("val", "test"):
        scored = [i for i in items if i.meta["split"] == split]
        columns = {"majority": {i.id: majority for i in scored},
                   "answer prior": prior_answers(scored, table, tie_letter=majority)}
        for label, run in runs.items():
            columns[label] = _predictions(run, split if split == "test" else _chosen_val(run))
        lines += _split_table(split, scored, columns, majority)
        lines += _split_differences(split, scored, columns, list(runs))
    for label, run in runs.items():
        epochs = sorted((run / "reports").glob("val_epoch*.json"))
        lines.append(f"{label} val Avg per epoch: {[round(json.loads(p.read_text())['Avg'], 3) for p in epochs]} "
                     f"chosen: {_chosen_val(run)}")
    return lines


def _split_table(split: str, scored: list[QAItem], columns: dict[str, dict[str, str]], majority: str) -> list[str]:
    """Per task, per level and overall (Avg over task types, Acc over items) for each column."""
    hits = {name: _per_task(scored, answers) for name, answers in columns.items()}
    lines = [f"\n## {split} ({len(scored)} items; majority letter {majority})\n",
             "| task | level | n | chance | " + " | ".join(columns) + " |",
             "|---|---|---|---|" + "---|" * len(columns)]
    tasks = sorted({i.task for i in scored}, key=lambda t: (next(i.level for i in scored if i.task == t), t))
    for task in tasks:
        level = next(i.level for i in scored if i.task == task)
        n = len(hits["majority"][task])
        cells = " | ".join(f"{sum(h[task]) / n:.3f}" for h in hits.values())
        lines.append(f"| {task} | {level} | {n} | 0.25 | {cells} |")
    for level, level_items in _by_level(scored).items():
        cells = " | ".join(f"{_avg(_per_task(level_items, answers)):.3f}" for answers in columns.values())
        lines.append(f"| **level {level} Avg** | | {len(level_items)} | 0.25 | {cells} |")
    lines.append(f"| **Avg** | | {len(scored)} | 0.25 | " + " | ".join(f"{_avg(h):.3f}" for h in hits.values()) + " |")
    acc = " | ".join(f"{sum(sum(v) for v in h.values()) / len(scored):.3f}" for h in hits.values())
    lines.append(f"| **Acc** | | {len(scored)} | 0.25 | {acc} |")
    return lines


def _split_differences(split: str, scored: list[QAItem], columns: dict[str, dict[str, str]],
                       labels: list[str]) -> list[str]:
    """Each run against chance, the majority position and the answer prior, and each later run against
    the first (overall and per level), with 95% bootstrap intervals."""
    lines = []
    for a in labels:  # against chance: the run's Avg resampled alone, less 1/4
        point, low, high = _bootstrap(scored, columns[a], {})
        lines.append(f"{split}: {a} - chance: {point - 0.25:+.3f} [95% {low - 0.25:+.3f}, {high - 0.25:+.3f}]")
    run_pairs = [(later, labels[0]) for later in labels[1:]]
    pairs = [(a, "majority") for a in labels] + [(a, "answer prior") for a in labels] + run_pairs
    for a, b in pairs:
        point, low, high = _bootstrap(scored, columns[a], columns[b])
        lines.append(f"{split}: {a} - {b}: {point:+.3f} [95% {low:+.3f}, {high:+.3f}]")
    for a, b in run_pairs:  # run vs the first run, per level too (the issue asks per level)
        for level, level_items in _by_level(scored).items():
            point, low, high = _bootstrap(level_items, columns[a], columns[b])
            lines.append(f"{split}: {a} - {b}, level {level} ({len(level_items)} items): "
                         f"{point:+.3f} [95% {low:+.3f}, {high:+.3f}]")
    return lines


def _by_level(scored: list[QAItem]) -> dict[int, list[QAItem]]:
    return {level: [i for i in scored if i.level == level] for level in sorted({i.level for i in scored})}


def _chosen_val(run: Path) -> str:
    """The validation epoch of the chosen checkpoint: the best val Avg, the first among ties (the
    checkpoint callback keeps a new best only when it is strictly better)."""
    reports = sorted((run / "reports").glob("val_epoch*.json"))
    if not reports:
        raise FileNotFoundError(f"{run}/reports: no val_epoch*.json; not a finished QA run folder")
    best = max(reports, key=lambda p: (json.loads(p.read_text())["Avg"], -reports.index(p)))
    return best.stem


if __name__ == "__main__":
    try:
        main()
    except (RecordError, EgohorizonError, OSError, KeyError) as err:  # a bad items file or run folder: say which
        raise SystemExit(f"qa_table.py: {err}") from None
