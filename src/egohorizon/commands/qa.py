"""``egohorizon qa generate --world data/demo --out qa.jsonl``: the demo world's month-scale QA items
(14 EgoMonth task types, held-out-day splits, leakage-checked); docs/qa.md."""

from __future__ import annotations

import argparse

from egohorizon.commands import write_result


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("qa", help="month-scale multiple-choice QA (EgoMonth task types)")
    sub = parser.add_subparsers(dest="qa_command", metavar="SUBCOMMAND", required=True)
    gen = sub.add_parser(
        "generate", help="QA items of the 14 task types from a demo world",
        description="Write multiple-choice items whose answers the demo world knows for certain: question "
                    "time, evidence windows, four options (distractors from the same person's history), level "
                    "and split (held-out days). Every item passes the leakage guard before it is written. "
                    "Prints per-task counts, the answer-position balance and the question times without an "
                    "item as JSON.")
    gen.add_argument("--world", default=None, help="a demo world folder (default: the default world, "
                                                   "generated on first use)")
    gen.add_argument("--out", required=True, help="the items (JSONL); the day split goes beside it as "
                                                  "<stem>.splits.json")
    gen.add_argument("--split-file", default=None, help="reuse this splits.json instead of drawing held-out days")
    gen.add_argument("--val-frac", type=float, default=0.15)
    gen.add_argument("--test-frac", type=float, default=0.15)
    gen.add_argument("--min-history-days", type=int, default=3,
                     help="first recorded days of each person asked nothing about, and kept in train (3)")
    gen.add_argument("--per-day", type=int, default=1, help="question times per task type and day (1)")
    gen.add_argument("--seed", type=int, default=0)
    gen.set_defaults(handler=run_generate)


def run_generate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from egohorizon.data.demo import load_demo_world
    from egohorizon.data.demo.qa import generate_items
    from egohorizon.data.leakage import check_qa_items
    from egohorizon.data.splits import DaySplit, make_day_split
    from egohorizon.errors import ConfigError
    from egohorizon.schema import write_jsonl

    if args.per_day < 1 or args.min_history_days < 0:
        raise ConfigError(f"--per-day must be >= 1 and --min-history-days >= 0, got {args.per_day}, "
                          f"{args.min_history_days}")
    world = load_demo_world(args.world)
    if args.split_file:
        split = DaySplit.load(args.split_file)
    else:
        split = make_day_split(world.events, val_frac=args.val_frac, test_frac=args.test_frac, seed=args.seed,
                               min_history_days=args.min_history_days)
    items, report = generate_items(world, split, seed=args.seed, per_day=args.per_day,
                                   min_history_days=args.min_history_days)
    check_qa_items(items, split)
    out = Path(args.out)
    write_jsonl(out, items)
    split_path = split.save(out.with_name(f"{out.stem}.splits.json"))
    write_result({"out": str(out), "splits": str(split_path), "world": str(world.path), **report})
    return 0
