"""``egohorizon compare RUN_OR_CKPT ...``: several checkpoints of one task on the same held-out items."""

from __future__ import annotations

import argparse
import sys

from egohorizon.commands._args import out_dir
from egohorizon.commands._owned import declare_output


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="evaluate several checkpoints of one task on the same held-out items; table, plots, W&B run",
        description="Evaluate several checkpoints of one task (run folders, *.ckpt files, *.adapter folders, "
                    "DeepSpeed checkpoint folders; the task is read from each run folder's config.yaml) on the "
                    "same held-out items with eval.py's code, and write a comparison: comparison.json, one PNG "
                    "per figure the task plots (forecast: S_norm.png and S.png per level and K; caption: "
                    "f1.png and soft_edit.png per source), one bar per checkpoint beside the task's baselines, "
                    "index.html, and one W&B run (offline unless --wandb-online) holding the same table and "
                    "plots. Checkpoints of different tasks, or scored on different items, are refused; so are runs "
                    "whose held-out days differ (each run's split.json; the days one run holds out and another "
                    "trained on are named), unless --intersect-held-out scores them all on the days every run "
                    "holds out.")
    parser.add_argument("targets", nargs="+", metavar="RUN_OR_CKPT", help="checkpoints to compare")
    parser.add_argument("--points", default=None,
                        help="forecast points JSONL (default: the first run folder's points/points_test.jsonl); "
                             "other tasks' items come from the first run's data settings")
    parser.add_argument("--task", default=None,
                        help="the checkpoints' task, for adapters whose run folder is gone (checked against "
                             "what the run folders record)")
    parser.add_argument("--out", type=out_dir, default=None, help="output folder (default: outputs/compare/<time>)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="an eval.yaml override for every evaluation, e.g. --set trainer=gpu "
                             "--set embedder=exact --set split=val (repeatable)")
    parser.add_argument("--intersect-held-out", action="store_true",
                        help="runs with different day splits: score every checkpoint on the held-out days all of "
                             "them hold out (the page gives the counts) instead of refusing")
    parser.add_argument("--wandb-project", default=None, help="W&B project (default: egohorizon)")
    parser.add_argument("--wandb-online", action="store_true", help="sync to W&B now instead of writing offline")
    parser.add_argument("--no-wandb", action="store_true", help="write the local files only")
    parser.set_defaults(handler=run)
    declare_output(parser, inputs=("targets", "points"))


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from egohorizon.run.comparison import (
        baseline_notes,
        comparison_rows,
        headline_lines,
        log_to_wandb,
        page_title,
        plot_comparison,
        task_of,
        write_html,
        write_json,
    )
    from egohorizon.run.comparison_eval import default_points, evaluate_checkpoints, plan_held_out

    out = Path(args.out or f"outputs/compare/{time.strftime('%Y-%m-%d_%H-%M-%S')}")
    out.mkdir(parents=True, exist_ok=True)
    points = Path(args.points) if args.points else default_points(args.targets)
    plan = plan_held_out(args.targets, points, out, args.overrides, intersect=args.intersect_held_out)
    entries = evaluate_checkpoints(args.targets, points, out, args.overrides, task=args.task, plan=plan)
    points = plan.points
    task = task_of(entries)
    rows = comparison_rows(entries)
    plots = plot_comparison(rows, task, out)
    n_items = len(entries[0].item_ids)
    items = f"Points: {points}" if points else "Items: the first run's held-out split"
    notes = [f"Task: {task.name}. {items} ({n_items} items). Overrides: {' '.join(args.overrides) or 'none'}.",
             *plan.notes, *baseline_notes(entries)]
    extra = {"points": str(points) if points else None, "n_points": n_items, "overrides": args.overrides,
             "held_out": plan.info}
    if not args.no_wandb:
        extra["wandb_dir"] = log_to_wandb(rows, task, plots, out, args.wandb_project, name=out.name,
                                          offline=not args.wandb_online,
                                          config={"task": task.name, "checkpoints": [e.path for e in entries], **extra})
        notes.append(f"W&B run: {extra['wandb_dir']}" + ("" if args.wandb_online else " (offline: `wandb sync` it)"))
    write_json(entries, rows, out, extra)
    page = write_html(rows, task, plots, out, page_title(len(entries), task.name), notes)
    # The command's result for a reader: the headline figures and where the page is (the table itself
    # is in comparison.json); progress and warnings went to logging.
    sys.stdout.write("\n".join(headline_lines(rows, task)) + f"\npage: {page}\n")
    return 0
