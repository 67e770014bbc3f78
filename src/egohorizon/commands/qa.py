"""``egohorizon qa generate --world data/demo --out qa.jsonl``: the demo world's month-scale QA items
(14 EgoMonth task types, held-out-day splits, leakage-checked); ``qa answer``: the in-context baseline
that answers from the memory's text alone through an LLM backend (local or OpenAI-compatible);
``qa serve``: ``egohorizon serve`` (a loopback OpenAI-compatible server in front of a local model). docs/qa.md.
The work of ``qa answer`` is ``egohorizon.bench.qa_answer``; this module parses, calls it and prints."""

from __future__ import annotations

import argparse

from egohorizon.commands import write_result
from egohorizon.commands._args import (
    DTYPE_HELP,
    fraction,
    nonneg_int,
    out_dir,
    out_file,
    positive_float,
    positive_int,
    seed,
)
from egohorizon.commands._owned import declare_output


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
    gen.add_argument("--out", required=True, type=out_file, help="the items (JSONL); the day split goes beside it as "
                                                  "<stem>.splits.json")
    gen.add_argument("--split-file", default=None, help="reuse this splits.json instead of drawing held-out days")
    gen.add_argument("--val-frac", type=fraction, default=0.15, help="share of days held out for val, 0-1")
    gen.add_argument("--test-frac", type=fraction, default=0.15, help="share of days held out for test, 0-1")
    gen.add_argument("--min-history-days", type=nonneg_int, default=3,
                     help="first recorded days of each person asked nothing about, and kept in train (default 3)")
    gen.add_argument("--per-day", type=positive_int, default=1, help="question times per task type and day (default 1)")
    gen.add_argument("--train-per-day", type=nonneg_int, default=0,
                     help="more question times per task type on each training day, from a random stream of "
                          "their own: val and test items stay the same bytes (default 0)")
    gen.add_argument("--seed", type=seed, default=0, help="draws the held-out days and the items")
    gen.set_defaults(handler=run_generate)
    declare_output(gen, inputs=("world", "split_file"), kind="file")
    _register_answer(sub)
    _register_serve(sub)


def _register_answer(sub: argparse._SubParsersAction) -> None:
    answer = sub.add_parser(
        "answer", help="answer QA items from the memory's text alone with an LLM backend",
        description="For each item of --split, the --notes event descriptions (levels --levels) most similar to "
                    "the question and options (--memory recent: the latest ones), all ending before the item's question time (meta.t_question), "
                    "go into the qa prompt without frames; the backend's answer is read without guessing and "
                    "scored with chance and the majority-position baseline. Writes OUT/predictions.jsonl and "
                    "OUT/report.json and prints the report. --notes 0: the question alone (items without a "
                    "question time, e.g. HD-EPIC's).")
    answer.add_argument("items", help="QA items (JSONL, schema.QAItem)")
    answer.add_argument("--out", required=True, type=out_dir, help="output folder")
    answer.add_argument("--model", required=True, help="local model folder or hub id; with --base-url the served name")
    answer.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    answer.add_argument("--events", help="event JSONL the memory indexes (default: the demo world's, --world)")
    answer.add_argument("--world", default=None, help="demo world folder for the events (default world)")
    answer.add_argument("--split", default="test", help="items whose meta.split is this (all: every item)")
    answer.add_argument("--notes", type=nonneg_int, default=20, help="memory notes per question (default 20)")
    answer.add_argument("--memory", choices=("retrieved", "recent"), default="retrieved",
                        help="which notes: the most similar to the question and options, or the latest before the "
                             "question time (default retrieved)")
    answer.add_argument("--levels", default="1,2,3,4,5", help="event levels in the memory, comma-separated")
    answer.add_argument("--embedder", default="words", help="memory text embedder: words | minilm | ...")
    answer.add_argument("--max-new-tokens", type=positive_int, default=8, help="most tokens generated per answer")
    answer.add_argument("--cache-dir", help="cache every answer on disk (egohorizon.llm.cache)")
    answer.add_argument("--dtype", choices=("float32", "bfloat16"),
                        help=DTYPE_HELP)
    answer.add_argument("--timeout", type=positive_float, default=300.0, help="seconds per server reply (default 300)")
    answer.add_argument("--concurrency", type=positive_int, default=2, help="requests in flight to the server (default 2)")
    answer.add_argument("--limit", type=positive_int, help="the first N items of the split (default: all)")
    answer.add_argument("--per-task", type=positive_int,
                        help="the first N items of each task type of the split, in file order (a stratified quick "
                             "look, e.g. at HD-EPIC VQA's 28 prototypes); applied before --limit")
    answer.set_defaults(handler=run_answer)
    declare_output(answer, inputs=("items", "model", "events", "world"))


def _register_serve(sub: argparse._SubParsersAction) -> None:
    from egohorizon.commands.serve import add_serve_options

    serve = sub.add_parser("serve", help="a loopback OpenAI-compatible chat server in front of a local model",
                           description="The same server as `egohorizon serve` (which also takes --adapter, "
                                       "--device, --dtype): binds 127.0.0.1 (a free port unless --port), prints "
                                       "'PORT <n>', and answers POST /v1/chat/completions (text and image "
                                       "parts) with the local model, one request at a time, until --lifetime "
                                       "seconds have passed.")
    add_serve_options(serve)
    serve.set_defaults(handler=run_serve)


def run_generate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from egohorizon.data.demo import load_demo_world
    from egohorizon.data.demo.qa.items import generate_items
    from egohorizon.data.points.leakage import check_qa_items
    from egohorizon.data.splits import DaySplit, make_day_split
    from egohorizon.errors import ConfigError
    from egohorizon.progress import StepProgress
    from egohorizon.schema import write_jsonl

    if args.per_day < 1 or args.min_history_days < 0 or args.train_per_day < 0:
        raise ConfigError(f"--per-day must be >= 1, --min-history-days and --train-per-day >= 0, got "
                          f"{args.per_day}, {args.min_history_days}, {args.train_per_day}")
    progress = StepProgress()  # a bar with ETA on stderr when it is a terminal, else a log line every 30 s
    with progress.step("loading the demo world"):  # generated on first use: minutes
        world = load_demo_world(args.world)
    if args.split_file:
        split = DaySplit.load(args.split_file)
    else:
        split = make_day_split(world.events, val_frac=args.val_frac, test_frac=args.test_frac, seed=args.seed,
                               min_history_days=args.min_history_days)
    items, report = generate_items(world, split, seed=args.seed, per_day=args.per_day,
                                   min_history_days=args.min_history_days, train_per_day=args.train_per_day,
                                   progress=progress)
    check_qa_items(items, split)
    out = Path(args.out)
    write_jsonl(out, items)
    split_path = split.save(out.with_name(f"{out.stem}.splits.json"))
    write_result({"out": str(out), "splits": str(split_path), "world": str(world.path), **report})
    return 0


def run_answer(args: argparse.Namespace) -> int:
    from egohorizon.bench.qa_answer import QAAnswerSettings, answer_items

    settings = QAAnswerSettings(split=args.split, notes=args.notes, memory=args.memory, levels=args.levels,
                                embedder=args.embedder, max_new_tokens=args.max_new_tokens, limit=args.limit,
                                per_task=args.per_task, events=args.events, world=args.world)
    options = {"timeout": args.timeout, "max_concurrency": args.concurrency} if args.base_url else {}
    if args.dtype and not args.base_url:
        options["dtype"] = args.dtype
    write_result(answer_items(args.items, args.out, args.model, base_url=args.base_url, cache_dir=args.cache_dir,
                              backend_options=options, settings=settings))
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from egohorizon.commands.serve import run_serve as serve

    return serve(args)
