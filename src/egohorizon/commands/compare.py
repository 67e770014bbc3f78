"""``egohorizon compare RUN_OR_CKPT ...``: several checkpoints on the same held-out points."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="evaluate several checkpoints on the same held-out points; table, plots, W&B run",
        description="Evaluate several checkpoints (run folders, *.ckpt files, *.adapter folders, DeepSpeed "
                    "checkpoint folders) on the same held-out points with eval.py's code, and write a "
                    "comparison: comparison.json, S_norm.png and S.png (score per level and K, one bar per "
                    "checkpoint beside the repeat-last-K and random baselines), index.html, and one W&B run "
                    "(offline unless --wandb-online) holding the same table and plots.")
    parser.add_argument("targets", nargs="+", metavar="RUN_OR_CKPT", help="checkpoints to compare")
    parser.add_argument("--points", default=None,
                        help="forecast points JSONL (default: the first run folder's points/points_test.jsonl)")
    parser.add_argument("--out", default=None, help="output folder (default: outputs/compare/<time>)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="an eval.yaml override for every evaluation, e.g. --set trainer=gpu "
                             "--set embedder=exact (repeatable)")
    parser.add_argument("--wandb-project", default=None, help="W&B project (default: egohorizon)")
    parser.add_argument("--wandb-online", action="store_true", help="sync to W&B now instead of writing offline")
    parser.add_argument("--no-wandb", action="store_true", help="write the local files only")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from egohorizon.compare import (
        comparison_rows,
        log_to_wandb,
        page_title,
        plot_comparison,
        write_html,
        write_json,
    )
    from egohorizon.compare_eval import default_points, evaluate_checkpoints

    out = Path(args.out or f"outputs/compare/{time.strftime('%Y-%m-%d_%H-%M-%S')}")
    out.mkdir(parents=True, exist_ok=True)
    points = Path(args.points) if args.points else default_points(args.targets)
    entries = evaluate_checkpoints(args.targets, points, out, args.overrides)
    rows = comparison_rows(entries)
    plots = plot_comparison(rows, out)
    n_points = entries[0].report["overall"]["n"]
    notes = [f"Points: {points} ({n_points} points). Overrides: {' '.join(args.overrides) or 'none'}."]
    extra = {"points": str(points), "n_points": n_points, "overrides": args.overrides}
    if not args.no_wandb:
        extra["wandb_dir"] = log_to_wandb(rows, plots, out, args.wandb_project, name=out.name,
                                          offline=not args.wandb_online,
                                          config={"checkpoints": [e.path for e in entries], **extra})
        notes.append(f"W&B run: {extra['wandb_dir']}" + ("" if args.wandb_online else " (offline: `wandb sync` it)"))
    write_json(entries, rows, out, extra)
    page = write_html(rows, plots, out, page_title(len(entries)), notes)
    for row in rows:
        if row["level"] == "all":
            s_norm = "n/a" if row["S_norm"] is None else f"{row['S_norm']:.3f}"
            print(f"{row['checkpoint']:>32}  S {row['S'] or 0.0:.3f}  S_norm {s_norm}  invalid {row['invalid']}/{row['n']}")
    print(f"page: {page}")
    return 0
