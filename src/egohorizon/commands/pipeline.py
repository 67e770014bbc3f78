"""``egohorizon pipeline RECORDINGS --out RUN``: ingest -> shards -> caption -> abstract -> points in one run
folder, each stage skipped when it finished earlier with the same inputs (``egohorizon.pipelines.chain``)."""

from __future__ import annotations

import argparse

from egohorizon.commands import write_result


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pipeline", help="recordings -> shards -> L1 captions -> L1-L5 hierarchy -> forecast points, resumable",
        description="Runs ingest, shards build, caption, abstract and points into RUN (one folder per stage). A "
                    "stage that finished with the same inputs and settings is skipped; a killed run resumes. "
                    "RUN/report.json: counts, failures and compression ratios per level. docs/abstraction.md.")
    parser.add_argument("recordings", nargs="?",
                        help="a folder of .vrs / video files, or a manifest .jsonl (path, participant, day, ...)")
    parser.add_argument("--out", required=True, help="the run folder")
    parser.add_argument("--demo", action="store_true", help="the demo world instead of recordings")
    parser.add_argument("--demo-dir", help="demo world folder (default: data/demo)")
    parser.add_argument("--demo-days", type=int, help="only the first N recorded demo days")
    parser.add_argument("--demo-day", dest="demo_day_list", action="append", default=[], metavar="P/DAY",
                        help="only this demo participant-day, e.g. p01/2025-03-04 (repeat for more): days the "
                             "trained captioner and abstractor held out")
    parser.add_argument("--participant", default="p1", help="participant of a RECORDINGS folder (default p1)")
    parser.add_argument("--until", choices=("ingest", "shards", "caption", "abstract", "points"),
                        help="stop after this stage")
    shards = parser.add_argument_group("shards")
    shards.add_argument("--window", type=float, default=30.0)
    shards.add_argument("--long-side", type=int, default=448)
    shards.add_argument("--crop-size", type=int, default=256)
    shards.add_argument("--stride", type=int, default=1, help="every N-th window (default 1: all)")
    shards.add_argument("--min-frames", type=int, default=1)
    shards.add_argument("--deid", choices=("auto", "on", "off", "faces", "text"), default="auto")
    caption = parser.add_argument_group("caption")
    caption.add_argument("--captioner", required=True, help="trained adapter, local VLM, or the served model's name")
    caption.add_argument("--captioner-base-url", help="an OpenAI-compatible server for the captioner")
    caption.add_argument("--frames-per-window", type=int)
    caption.add_argument("--caption-concurrency", type=int, default=8)
    caption.add_argument("--max-caption-failures", type=float, default=0.05)
    abstract = parser.add_argument_group("abstract")
    abstract.add_argument("--abstractor", required=True, help="trained adapter, local model, or the served model's name")
    abstract.add_argument("--abstractor-base-url", help="an OpenAI-compatible server for the abstractor")
    abstract.add_argument("--levels", type=int, default=5)
    abstract.add_argument("--max-events", type=int, default=40)
    abstract.add_argument("--overlap", type=int, default=8)
    abstract.add_argument("--retries", type=int, default=2)
    abstract.add_argument("--constrained", action="store_true",
                          help="a trained abstractor decodes only valid groupings (egohorizon abstract --constrained)")
    abstract.add_argument("--abstract-concurrency", type=int, default=8)
    points = parser.add_argument_group("points")
    points.add_argument("--point-levels", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    points.add_argument("--k", type=int, nargs="+", default=[1, 10])
    points.add_argument("--context", type=int, default=50)
    points.add_argument("--val-frac", type=float, default=0.15)
    points.add_argument("--test-frac", type=float, default=0.15)
    points.add_argument("--allow-empty-splits", action="store_true",
                        help="finish although a split (val or test of a run with too few days) holds no point; "
                             "the report says which (default: the points stage refuses)")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(handler=run_pipeline)


def chain_settings(args: argparse.Namespace):
    from egohorizon.pipelines.chain import ChainSettings

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
    from egohorizon.pipelines.chain import run_chain

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as egohorizon caption: before torch loads
    if bool(args.recordings) == bool(args.demo):
        raise ConfigError("pipeline: give either RECORDINGS or --demo")
    report = run_chain(args.out, chain_settings(args), until=args.until)
    write_result(report)
    return 0
