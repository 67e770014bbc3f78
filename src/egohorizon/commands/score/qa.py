"""``score qa``: multiple-choice accuracy through the QA task of the registry, with ``--extraction`` modes."""

from __future__ import annotations

import argparse

from egohorizon.commands.score.common import (
    finish,
    load,
    load_gold,
    reconcile,
    select_gold,
    selection_lines,
    warn_missing,
)


def run_qa(args: argparse.Namespace) -> int:
    import json

    from egohorizon.commands.export import check_exports, qa_exports, write_exports
    from egohorizon.errors import DataError
    from egohorizon.metrics.exports import qa_rows
    from egohorizon.metrics.qa import item_level
    from egohorizon.metrics.report import fmt, format_qa
    from egohorizon.schema import QAItem, QAPrediction
    from egohorizon.tasks import get_task

    check_exports(args)
    task = get_task("qa")  # the same parsing and scoring as the evaluation callback's
    every = load_gold(args, QAItem)
    records = load(args.pred, QAPrediction)
    items, selection = select_gold(every, {r.id for r in records}, args)
    records = [r for r in records if r.id not in selection["other_split_ids"]]  # neither missing nor unknown
    by_id = {item.id: item for item in items}
    raws = {r.id: (r.answer if r.answer is not None else r.text) for r in records if r.id in by_id}
    answers = {i: task.parse([raw], by_id[i]) for i, raw in raws.items()}
    mode = getattr(args, "extraction", "strict")
    strict_answers = answers
    if mode != "strict":
        from egohorizon.metrics.extraction import extract

        answers = {i: extract(raw, by_id[i].options, mode) for i, raw in raws.items()}
    task_levels = None
    if args.task_levels:
        try:
            with open(args.task_levels, encoding="utf-8") as handle:
                task_levels = json.load(handle)
        except (OSError, json.JSONDecodeError) as error:
            raise DataError(
                f"{args.task_levels}: cannot read a JSON object {{task: level}} ({error})"
            ) from error
        if not isinstance(task_levels, dict) or not all(isinstance(v, int) for v in task_levels.values()):
            raise DataError(
                f"{args.task_levels}: expected a JSON object mapping task names to integer levels"
            )
    report = task.evaluate(items, answers, "test", task_levels=task_levels).report
    levels = {item.id: item_level(item, task_levels) for item in items}
    report["per_item"] = qa_rows(items, raws, answers, mode, levels, strict_answers if mode != "strict" else None)
    report["inputs"] = reconcile([i.id for i in items], [r.id for r in records], args)
    report["inputs"].update({k: v for k, v in selection.items() if k != "other_split_ids"})
    warn_missing(report["inputs"], "gold item")
    text = format_qa(report)
    if mode != "strict":
        strict = task.evaluate(items, strict_answers, "test", task_levels=task_levels).report
        differ = sum(1 for i in raws if answers[i] != strict_answers[i])
        report["extraction"] = {"mode": mode, "read_differently": differ,
                                "strict": {k: strict[k] for k in ("Avg", "Acc", "n", "invalid")}}
        text += (f"extraction {mode}; strict: Avg {fmt(strict['Avg'])} Acc {fmt(strict['Acc'])} "
                 f"invalid {strict['invalid']} ({differ} of {len(raws)} replies read differently)\n")
    exports = qa_exports(args, items, report["per_item"], report, records, len(every))
    finish(report, selection_lines(selection) + text, args)
    return write_exports(exports)
