"""``egohorizon pipeline RECORDINGS --out RUN``: ingest -> shards -> caption -> abstract -> points in one run
folder, each stage skipped when it finished earlier with the same inputs (``egohorizon.pipelines.chain.runner``)."""

from __future__ import annotations

import argparse

from egohorizon.commands import write_result
from egohorizon.commands._args import (
    bounded_int,
    fraction,
    nonneg_int,
    out_dir,
    positive_float,
    positive_int,
    seed,
)
from egohorizon.commands._owned import declare_output


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pipeline", help="recordings -> shards -> L1 captions -> L1-L5 hierarchy -> forecast points, resumable",
        description="Runs ingest, shards build, caption, abstract and points into RUN (one folder per stage). A "
                    "stage that finished with the same inputs and settings is skipped; a killed run resumes. "
                    "RUN/report.json: counts, failures and compression ratios per level. docs/abstraction.md.")
    parser.add_argument("recordings", nargs="?",
                        help="a folder of .vrs / video files, or a manifest .jsonl (path, participant, day, ...)")
    parser.add_argument("--out", required=True, type=out_dir, help="the run folder")
    parser.add_argument("--demo", action="store_true", help="the demo world instead of recordings")
    parser.add_argument("--demo-dir", help="demo world folder (default: data/demo)")
    parser.add_argument("--demo-days", type=positive_int, help="only the first N recorded demo days")
    parser.add_argument("--demo-day", dest="demo_day_list", action="append", default=[], metavar="P/DAY",
                        help="only this demo participant-day, e.g. p01/2025-03-04 (repeat for more): days the "
                             "trained captioner and abstractor held out")
    parser.add_argument("--participant", default="p1", help="participant of a RECORDINGS folder (default p1)")
    parser.add_argument("--until", choices=("ingest", "shards", "caption", "abstract", "points"),
                        help="stop after this stage")
    shards = parser.add_argument_group("shards")
    shards.add_argument("--window", type=positive_float, default=30.0, help="window length in seconds")
    shards.add_argument("--long-side", type=bounded_int(8), default=448,
                        help="stored frames' long side in px")
    shards.add_argument("--crop-size", type=bounded_int(8), default=256, help="native gaze crop size in px")
    shards.add_argument("--stride", type=positive_int, default=1, help="every N-th window (default 1: all)")
    shards.add_argument("--min-frames", type=nonneg_int, default=1, help="leave out windows with fewer frames")
    shards.add_argument("--deid", choices=("auto", "on", "off", "faces", "text"), default="auto",
                        help="de-identification: auto = off for the demo world, faces + text for real data")
    caption = parser.add_argument_group("caption")
    caption.add_argument("--captioner", required=True, help="trained adapter, local VLM, or the served model's name")
    caption.add_argument("--captioner-base-url", help="an OpenAI-compatible server for the captioner")
    caption.add_argument("--frames-per-window", type=positive_int,
                         help="frames per window, spread evenly (default: the adapter's, else 8)")
    caption.add_argument("--caption-concurrency", type=positive_int, default=8,
                         help="requests in flight to the captioner's server (with --captioner-base-url)")
    caption.add_argument("--max-caption-failures", type=fraction, default=0.05,
                         help="share of the windows that may fail before the caption stage stops, 0-1")
    abstract = parser.add_argument_group("abstract")
    abstract.add_argument("--abstractor", required=True, help="trained adapter, local model, or the served model's name")
    abstract.add_argument("--abstractor-base-url", help="an OpenAI-compatible server for the abstractor")
    abstract.add_argument("--levels", type=bounded_int(2, 5), default=5, help="build the hierarchy up to this level, 2-5")
    abstract.add_argument("--max-events", type=bounded_int(2), default=40,
                          help="most events per LLM request; a longer day is cut into overlapping chunks")
    abstract.add_argument("--overlap", type=nonneg_int, default=8,
                          help="events at a chunk's end decided again by the next chunk, < --max-events")
    abstract.add_argument("--retries", type=nonneg_int, default=2, help="asks again after an invalid reply")
    abstract.add_argument("--constrained", action="store_true",
                          help="a trained abstractor decodes only valid groupings (egohorizon abstract --constrained)")
    abstract.add_argument("--abstract-concurrency", type=positive_int, default=8,
                          help="days abstracted at once (with --abstractor-base-url)")
    points = parser.add_argument_group("points")
    points.add_argument("--point-levels", type=bounded_int(1, 5), nargs="+", default=[1, 2, 3, 4, 5],
                        help="levels that get forecast points")
    points.add_argument("--k", type=positive_int, nargs="+", default=[1, 10], help="numbers of targets per point")
    points.add_argument("--context", type=positive_int, default=50, help="context events per point")
    points.add_argument("--val-frac", type=fraction, default=0.15, help="share of days held out for val, 0-1")
    points.add_argument("--test-frac", type=fraction, default=0.15, help="share of days held out for test, 0-1")
    points.add_argument("--allow-empty-splits", action="store_true",
                        help="finish although a split (val or test of a run with too few days) holds no point; "
                             "the report says which (default: the points stage refuses)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of every stage (sampling, day split)")
    parser.set_defaults(handler=run_pipeline)
    # --until: a later stop continues the same run folder (its stages resume).
    declare_output(parser, inputs=("recordings", "demo_dir", "captioner", "abstractor"), run_only=("until",))


def chain_settings(args: argparse.Namespace):
    from egohorizon.pipelines.chain.settings import ChainSettings

    captioner = {"model": args.captioner, "base_url": args.captioner_base_url, "seed": args.seed,
                 "frames_per_window": args.frames_per_window, "max_failures": args.max_caption_failures}
    if args.captioner_base_url:
        captioner["concurrency"] = args.caption_concurrency
    abstractor = {"model": args.abstractor, "base_url": args.abstractor_base_url, "top_level": args.levels,
                  "max_events": args.max_events, "overlap": args.overlap, "retries": args.retries, "seed": args.seed}
    if args.constrained:  # only when asked, so earlier runs' fingerprints stay the same
        abstractor["constrained"] = True
    if args.abstractor_base_url:
        abstractor["max_concurrency"] = args.abstract_concurrency
    return ChainSettings(
        recordings=args.recordings, demo=args.demo, demo_dir=args.demo_dir, demo_days=args.demo_days,
        demo_day_list=args.demo_day_list,
        participant=args.participant, allow_empty_splits=args.allow_empty_splits,
        shards={"window_s": args.window, "long_side": args.long_side, "crop_size": args.crop_size,
                "stride": args.stride, "min_frames": args.min_frames, "deid": args.deid},
        captioner=captioner, abstractor=abstractor,
        points={"levels": args.point_levels, "ks": args.k, "n_context": args.context, "val_frac": args.val_frac,
                "test_frac": args.test_frac, "seed": args.seed})


def run_pipeline(args: argparse.Namespace) -> int:
    import os

    from egohorizon.errors import ConfigError
    from egohorizon.pipelines.chain.runner import run_chain

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as egohorizon caption: before torch loads
    if bool(args.recordings) == bool(args.demo):
        raise ConfigError("pipeline: give either RECORDINGS or --demo")
    report = run_chain(args.out, chain_settings(args), until=args.until)
    write_result(report)
    return 0
