"""A zero-shot run's results: ``OUT/items.jsonl`` (one line per finished item, append-only) and
``OUT/summary.json`` (recomputed from those lines at the end of every run), plus the printed table.

A line of ``items.jsonl``::

    {"id", "task", "level", "difficulty", "gold": "B", "prediction": "B" | null, "correct": bool,
     "strict": "B" | null, "correct_strict": bool, "extraction": "egomonth-cs", "text": raw reply | null,
     "status": "ok" | "failed", "failure": null | {"kind": "input", "field", "file", "reason"},
     "blind": bool, "n_frames": 12, "frames": [{"video", "indices": [...], "t": [s, ...]}],
     "model", "prompt", "prompt_version", "protocol", "seed", "sampling": {...}, "max_new_tokens"}

``prediction`` is the letter the chosen extraction mode reads in ``text`` (the raw reply), ``strict``
the project's strict reading; null is an invalid answer, scored wrong and counted (SPEC §3). A
``failed`` line is an item whose input is bad (a corrupt or cut-off video: ``failure`` names the
field and file): it is scored as invalid and not tried again unless ``--retry-failed``. The lines are
also ``score qa`` predictions (``id`` + ``text``; ``--extraction`` re-reads them).

Nothing in either file depends on the time or the machine, so a rerun that has nothing left to do,
or one that finishes a killed run, leaves both files byte-identical to an uninterrupted run's.
The file is written through ``pipelines.append_log`` (locked, one write per line, a torn last line
cut off when it is opened again); the last line of an item counts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from egohorizon.atomic_files import write_json_atomic
from egohorizon.errors import ConfigError
from egohorizon.pipelines.append_log import LockedAppendLog, read_keyed_lines
from egohorizon.schema import QAItem

log = logging.getLogger(__name__)

ITEMS_FILE = "items.jsonl"
SUMMARY_FILE = "summary.json"
OK, FAILED = "ok", "failed"
PROVENANCE_KEYS = ("model", "prompt", "prompt_version", "protocol", "extraction", "blind", "seed", "sampling",
                   "max_new_tokens", "dtype", "stop")  # dtype, stop: a local model's (issue 37; None for a server)


def read_rows(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """item id -> its last line, and problems (file:line: what) of lines that were ignored."""
    lines, problems = read_keyed_lines(path, "id", "an item id", "its item is answered again")
    return dict(lines), problems


class ItemsLog(LockedAppendLog):
    """``OUT/items.jsonl`` of this process (locked while open)."""

    def open(self) -> dict[str, dict[str, Any]]:
        self._lock("; wait for it, or give this run its own --out")
        cut = self._cut_torn_tail()
        if cut:
            log.warning("%s: cut off a partial last line (%d bytes) left by a killed run; its item is answered "
                        "again", self.path, cut)
        rows, problems = read_rows(self.path)
        for problem in problems:
            log.warning("%s", problem)
        self._open_for_append()
        return rows


def provenance(row: Mapping[str, Any]) -> dict[str, Any]:
    return {key: row.get(key) for key in PROVENANCE_KEYS}


def check_provenance(rows: Mapping[str, Mapping[str, Any]], expected: Mapping[str, Any], out: Path) -> None:
    """One folder, one run: lines made with another model, prompt, protocol or sampling are refused."""
    for item_id, row in rows.items():
        found = provenance(row)
        if found != dict(expected):
            differ = {k: (found[k], expected[k]) for k in PROVENANCE_KEYS if found[k] != expected[k]}
            shown = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in differ.items())
            raise ConfigError(f"{out / ITEMS_FILE}: item {item_id!r} was answered with other settings ({shown}). "
                              "Use another --out for another model or protocol (or delete the folder to start over)")


def is_done(row: Mapping[str, Any] | None, retry_failed: bool) -> bool:
    return row is not None and (row.get("status") == OK or (row.get("status") == FAILED and not retry_failed))


def _difficulty(item: QAItem) -> str:
    value = item.meta.get("difficulty")
    return "-" if value is None else str(value)


def _brief(report: Mapping[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in ("Avg", "Acc", "n", "invalid")}


def summarize(items: Sequence[QAItem], rows: Mapping[str, Mapping[str, Any]], run: Mapping[str, Any]) -> dict:
    """The summary of ``items`` (the run's selection, in order) from their lines; an item without a line
    (its model failed in this run) is scored as invalid and listed in ``unfinished``."""
    from egohorizon.metrics.qa import score_qa

    mode = run["extraction"]
    done = [rows[i.id] for i in items if i.id in rows]
    chosen = {r["id"]: r.get("prediction") for r in done}
    strict = {r["id"]: r.get("strict") for r in done}
    difficulties = sorted({_difficulty(i) for i in items})
    per_difficulty = {}
    for value in difficulties:
        subset = [i for i in items if _difficulty(i) == value]
        per_difficulty[value] = {mode: _brief(score_qa(subset, chosen)), "strict": _brief(score_qa(subset, strict))}
    frames = [r.get("n_frames", 0) for r in done]
    failed = [r for r in done if r.get("status") == FAILED]
    return {
        **run,
        "items": len(items),
        "answered": len(done) - len(failed),
        "input_failures": [{"id": r["id"], **(r.get("failure") or {})} for r in failed],
        "unfinished": [i.id for i in items if i.id not in rows],
        "frames": {"total": sum(frames), "mean": sum(frames) / len(frames) if frames else None,
                   "max": max(frames, default=0)},
        "read_differently": sum(1 for r in done if r.get("prediction") != r.get("strict")),
        "scores": {mode: score_qa(items, chosen), **({} if mode == "strict" else {"strict": score_qa(items, strict)})},
        "per_difficulty": per_difficulty,
    }


def write_summary(out: Path, summary: Mapping[str, Any]) -> Path:
    path = out / SUMMARY_FILE
    write_json_atomic(path, summary)
    return path


def format_summary(summary: Mapping[str, Any]) -> str:
    """The printed table: per task type, level and difficulty, the chosen mode's and strict's figures."""
    from egohorizon.metrics.report import fmt, table

    mode = summary["extraction"]
    scores = summary["scores"]
    strict = scores.get("strict", scores[mode])
    both = mode != "strict"
    head = (f"{summary['model']} ({summary['backend']}), protocol {summary['protocol']}, extraction {mode}"
            + (" + strict" if both else "") + ", "
            + ("BLIND: no frames (text only)" if summary["blind"] else f"frames: {summary['sampling']['rule']} rule, "
               f"max {summary['sampling']['max_frames']}, {fmt(summary['frames']['mean'], 1)} per item"))
    per_task = scores[mode]["per_task"]
    task_rows = [[task, r["level"], r["acc"], *([strict["per_task"][task]["acc"]] if both else []), r["correct"],
                  r["n"], r["invalid"], *([strict["per_task"][task]["invalid"]] if both else [])]
                 for task, r in per_task.items()]
    acc_heads = [f"acc {mode}", "acc strict"] if both else ["acc"]
    inv_heads = [f"invalid {mode}", "invalid strict"] if both else ["invalid"]
    text = head + "\n" + table(["task", "level", *acc_heads, "correct", "n", *inv_heads], task_rows)
    levels = scores[mode]["per_level"]
    if levels:
        rows = [[f"L{lv}", r["avg"], r["acc"], *([strict["per_level"][lv]["avg"], strict["per_level"][lv]["acc"]]
                                                  if both else []), r["n"], r["n_tasks"]] for lv, r in levels.items()]
        heads = ["level", f"Avg {mode}", f"Acc {mode}", "Avg strict", "Acc strict"] if both else ["level", "Avg", "Acc"]
        text += "\n" + table([*heads, "n", "tasks"], rows)
    categories = scores[mode].get("per_category") or {}
    if categories:  # HD-EPIC VQA's 7 categories, named as such
        rows = [[name, r["avg"], r["acc"], *([strict["per_category"][name]["avg"], strict["per_category"][name]["acc"]]
                                             if both else []), r["n"], r["n_tasks"]] for name, r in categories.items()]
        heads = ["category", f"Avg {mode}", f"Acc {mode}", "Avg strict", "Acc strict"] if both else \
            ["category", "Avg", "Acc"]
        text += "\n" + table([*heads, "n", "tasks"], rows)
    per_difficulty = summary["per_difficulty"]
    if list(per_difficulty) != ["-"]:
        rows = [[value, r[mode]["Avg"], r[mode]["Acc"], *([r["strict"]["Avg"], r["strict"]["Acc"]] if both else []),
                 r[mode]["n"]] for value, r in per_difficulty.items()]
        heads = ["difficulty", f"Avg {mode}", f"Acc {mode}", "Avg strict", "Acc strict"] if both else \
            ["difficulty", "Avg", "Acc"]
        text += "\n" + table([*heads, "n"], rows)
    main = scores[mode]
    text += (f"\n{mode}: Avg {fmt(main['Avg'])} Acc {fmt(main['Acc'])} invalid {main['invalid']}"
             + (f"   strict: Avg {fmt(strict['Avg'])} Acc {fmt(strict['Acc'])} invalid {strict['invalid']} "
                f"({summary['read_differently']} replies read differently)" if both else "")
             + f"   chance {fmt(main['chance'])}   n {main['n']}\n")
    failures, unfinished = summary["input_failures"], summary["unfinished"]
    if failures:
        text += f"input failures (scored invalid): {len(failures)}, first: {failures[0]['id']}: {failures[0]['reason']}\n"
    if unfinished:
        text += f"unfinished (model failures, scored invalid): {len(unfinished)}; rerun the same command to finish\n"
    return text
