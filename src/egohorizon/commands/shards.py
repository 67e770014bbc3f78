"""``egohorizon shards build|stats|verify``: window shards from recordings or the demo world."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from egohorizon.commands._args import (
    bounded_int,
    jpeg_quality,
    nonneg_int,
    out_dir,
    positive_float,
    positive_int,
)
from egohorizon.commands._owned import declare_output


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("shards", help="build, summarise and check WebDataset window shards",
                                   description="WebDataset shards of 30 s window samples (SPEC §5).")
    sub = parser.add_subparsers(dest="shards_command", metavar="SUBCOMMAND", required=True)

    build = sub.add_parser(
        "build", help="windows of ingested recordings or of the demo world -> shards + index.json",
        description="Cut recordings into 30 s windows (downscaled frames, gaze, native gaze crops, transcript, "
                    "overlapping events) and write them as tar shards grouped by participant and day. "
                    "Re-running into the same folder completes an interrupted build, skips shards whose inputs "
                    "are unchanged, rebuilds the rest and removes shards that no longer belong.")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--ingested", nargs="+", metavar="PATH",
                        help="ingested recording folders, or folders searched for them")
    source.add_argument("--demo", action="store_true", help="the demo world (frames rendered on the fly)")
    build.add_argument("--out", required=True, type=out_dir, help="the shard folder")
    build.add_argument("--events", nargs="*", default=[], metavar="FILE",
                       help="event .jsonl files whose events are attached to overlapping windows")
    build.add_argument("--demo-dir", help="demo world folder (default: data/demo)")
    build.add_argument("--demo-days", type=positive_int, default=None, help="only the first N recorded demo days")
    build.add_argument("--window", type=positive_float, default=30.0, help="window length in seconds (default 30)")
    build.add_argument("--long-side", type=bounded_int(8), default=448, help="stored frames' long side in px (default 448)")
    build.add_argument("--crop-size", type=bounded_int(8), default=256, help="native gaze crop size in px (default 256)")
    build.add_argument("--draw-gaze", action="store_true", help="draw the gaze on the stored frames")
    build.add_argument("--min-frames", type=nonneg_int, default=1, help="leave out windows with fewer frames (default 1)")
    build.add_argument("--stride", type=positive_int, default=1, help="keep every N-th window (default 1: all)")
    build.add_argument("--samples-per-shard", type=positive_int, default=32,
                       help="window samples per tar shard (default 32; shards never mix participants or days)")
    build.add_argument("--jpeg-quality", type=jpeg_quality, default=90,
                       help="JPEG quality of the stored downscaled frames, 1-100 (default 90; gaze crops: 95)")
    build.add_argument("--deid", choices=("auto", "on", "off", "faces", "text"), default="auto",
                       help="de-identification: auto = off for the demo world, faces + text for real data")
    build.add_argument("--deid-names", metavar="FILE",
                       help="names to hide in screen text and speech, one per line (# starts a comment)")
    build.add_argument("--no-screen-text", dest="screen_text", action="store_false",
                       help="do not OCR the windows' on-screen text (a captioner input; read from the "
                            "de-identified frames, the first frame of every 10 s)")
    build.set_defaults(handler=run_build)
    declare_output(build, inputs=("ingested", "events", "demo_dir", "deid_names"))

    stats = sub.add_parser("stats", help="what a shard folder holds (from index.json)")
    stats.add_argument("path", help="the shard folder or its index.json")
    stats.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")
    stats.set_defaults(handler=run_stats)

    verify = sub.add_parser("verify", help="read every sample of every shard and compare the index with the "
                                           "ingested recordings; exit 1 if anything is wrong or stale")
    verify.add_argument("path", help="the shard folder or its index.json")
    verify.add_argument("--json", dest="as_json", action="store_true",
                        help="print the totals and every shard's report as JSON")
    verify.add_argument("--no-inputs", dest="inputs", action="store_false",
                        help="do not compare the index with the ingested recordings it was built from "
                             "(e.g. shards copied without them)")
    verify.set_defaults(handler=run_verify)


def run_build(args: argparse.Namespace) -> int:
    from egohorizon.data.deid.sensitive import read_names
    from egohorizon.data.shards.sources import demo_sources, ingested_sources
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig
    from egohorizon.errors import ConfigError

    try:
        config = WindowConfig(window_s=args.window, long_side=args.long_side, crop_size=args.crop_size,
                              draw_gaze=args.draw_gaze, min_frames=args.min_frames, stride=args.stride)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if args.demo and args.events:  # they were ignored without a word
        raise ConfigError(f"--events {' '.join(args.events)}: --demo attaches the demo world's own events; "
                          "--events is for --ingested recordings")
    if args.demo:
        from egohorizon.data.demo import ensure_recorded_demo_world, load_demo_world

        world = load_demo_world(ensure_recorded_demo_world(args.demo_dir))
        days = sorted({r.day for r in world.recordings})[: args.demo_days] if args.demo_days else None
        recordings = [r for r in world.recordings if days is None or r.day in days]
        sources = demo_sources(world, frame_size=args.long_side, recordings=recordings)
    else:
        sources = ingested_sources(args.ingested, args.events)
    # Absolute paths: `shards verify` reads them again from wherever it runs.
    inputs = None if args.demo else {"ingested": [str(Path(p).resolve()) for p in args.ingested],
                                     "events": [str(Path(p).resolve()) for p in args.events]}
    index = build_shards(sources, args.out, config=config, samples_per_shard=args.samples_per_shard,
                         deid=args.deid, jpeg_quality=args.jpeg_quality, inputs=inputs,
                         deid_names=read_names(args.deid_names) if args.deid_names else (),
                         screen_text=args.screen_text)
    print(json.dumps({"index": str(index.root / "index.json"), **index.totals()}, indent=1))
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from egohorizon.data.shards.index import ShardIndex

    index = ShardIndex.load(args.path)
    totals = index.totals()
    per_day = {}
    for entry in index.shards:
        key = f"{entry['participant']} {entry['day']}"
        shards, samples, size = per_day.get(key, (0, 0, 0))
        per_day[key] = (shards + 1, samples + entry["samples"], size + entry["bytes"])
    if args.as_json:
        json.dump({**totals, "build": index.build, "per_day": {k: dict(zip(("shards", "samples", "bytes"), v))
                                                               for k, v in per_day.items()}}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{index.root}: {totals['shards']} shards, {totals['samples']} samples, {totals['frames']} frames, "
          f"{totals['words']} words, {totals['bytes'] / 1e6:.1f} MB")
    print(f"participants: {', '.join(totals['participants'])}; days: {len(totals['days'])}; "
          f"de-identification: {index.build.get('deid')} {totals['deid'] or ''}")
    print(f"windows left out (< {index.build.get('min_frames')} frames): {index.build.get('skipped_windows', 0)}")
    for key, (shards, samples, size) in per_day.items():
        print(f"  {key}: {shards} shard(s), {samples} samples, {size / 1e6:.1f} MB")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.data.shards.verify import verify_index

    index = ShardIndex.load(args.path)
    reports, totals = verify_index(index, inputs=args.inputs)
    bad = totals["shards_with_problems"] + totals["index_problems"]
    if args.as_json:
        json.dump({"totals": totals, "shards": [r.__dict__ for r in reports]}, sys.stdout, indent=1)
        print()
    else:
        for report in reports:
            for problem in report.problems:
                print(f"{report.path}: {problem}")
        stale = f", {totals['index_problems']} problem(s) with the index" if totals["index_problems"] else ""
        print(f"{index.root}: {len(index.shards)} shards, {sum(r.samples_ok for r in reports)} good samples, "
              f"{totals['shards_with_problems']} shard(s) with problems{stale}", file=sys.stderr if bad else sys.stdout)
    return 1 if bad else 0
