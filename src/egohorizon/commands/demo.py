"""``egohorizon demo``: write the demo world (simulated people over weeks) and summarise it."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from egohorizon.commands._args import bounded_int, out_dir, positive_int, seed
from egohorizon.commands._owned import declare_output

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="generate the demo world and print its figures",
        description="Simulate the demo world (people over weeks: sessions, an L1-L5 event hierarchy, a "
                    "transcript; frames are rendered on demand) and write events.jsonl, recordings.jsonl, "
                    "transcript.jsonl and world.json to --out. Prints the same figures as `egohorizon data "
                    "stats`, plus the recording structure.")
    parser.add_argument("--out", type=out_dir, default=None,
                        help="folder to write (default: $EGOHORIZON_DEMO_DIR, else <repo>/data/demo)")
    parser.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    parser.add_argument("--participants", type=positive_int, default=2, help="simulated people (default 2)")
    parser.add_argument("--weeks", type=positive_int, default=6, help="calendar weeks per person (default 6)")
    parser.add_argument("--frames", action="store_true",
                        help="also write a sample of rendered frames (JPEGs, a contact sheet with gaze, an "
                             "index) to OUT/frames")
    parser.add_argument("--frame-count", type=positive_int, default=32, help="frames in the sample (default 32)")
    parser.add_argument("--frame-size", type=bounded_int(16), default=224, help="frame side in pixels (default 224)")
    parser.add_argument("--check", action="store_true",
                        help="also score a next-event n-gram predictor against repeat-last on held-out days")
    parser.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--cue-switches", action="store_true",
                        help="announce some task switches in the frames a few seconds ahead (a phone lighting "
                             "up, a colleague walking in) and write cues.jsonl; events are unchanged "
                             "(docs/grounding.md)")
    parser.add_argument("--hands", type=out_dir, default=None, metavar="DIR",
                        help="also write the hand-clip demo's records (clips, boxes, segments, split: docs/hands.md) "
                             "to DIR, the gold `score segments` and `score judges` read")
    parser.set_defaults(handler=run_demo)
    # A folder with world.json is a demo world (the default one is generated on first use, unmarked).
    declare_output(parser, run_only=("frames", "frame_count", "frame_size", "check", "hands"), legacy=("world.json",))


def run_demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from egohorizon.data.demo.summary import format_world_summary, world_summary
    from egohorizon.data.demo.writer import build_demo_world, default_demo_dir
    from egohorizon.errors import ConfigError

    if args.participants < 1 or args.weeks < 1:
        raise ConfigError(f"--participants and --weeks must be at least 1, got {args.participants} and {args.weeks}")
    if args.frame_size < 16 or args.frame_count < 1:
        raise ConfigError(f"--frame-size must be >= 16 and --frame-count >= 1, got {args.frame_size}, "
                          f"{args.frame_count}")
    if args.hands:  # the second folder it writes, claimed as --out is (cli.main) before any work
        from egohorizon.owned_output import claim_folder, describe_inputs

        claim_folder(args.hands, "demo --hands", describe_inputs({"seed": args.seed}), option="--hands",
                     legacy=("clips.jsonl",))
    out = Path(args.out) if args.out else default_demo_dir()
    world = build_demo_world(out, seed=args.seed, participants=args.participants, weeks=args.weeks,
                             cue_switches=args.cue_switches)
    summary = world_summary(world)
    summary["path"] = str(out)
    if world.cues is not None:
        from egohorizon.data.demo.cues.switches import cue_statistics

        summary["cue_switches"] = cue_statistics(world.cues.cues, world.events)
    if args.check:
        from egohorizon.data.demo.learnability import learnability_report

        summary["learnability"] = learnability_report(world.events)
    if args.frames:
        from egohorizon.data.demo.samples import write_frame_samples

        summary["frames"] = str(write_frame_samples(world, out / "frames", args.frame_count, args.frame_size))
    if args.hands:
        from egohorizon.data.demo.hands.clips import build_hand_clips

        summary["hands"] = {"path": str(args.hands), **build_hand_clips(args.hands, seed=args.seed)}
    if args.as_json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"wrote {out} in {world.meta['generation_s']:.1f} s")
    sys.stdout.write(format_world_summary(summary))
    if args.check:
        from egohorizon.data.demo.learnability import format_report

        sys.stdout.write("\n" + format_report(summary["learnability"]))
    if world.cues is not None:
        log.info("cue switches: %s", summary["cue_switches"])
    if args.frames:
        print(f"\nframes: {summary['frames']} (contact_sheet.jpg shows gaze as a red ring)")
    if args.hands:
        print(f"\nhand clips: {args.hands} ({summary['hands']['clips']}; gold segments in segments.jsonl)")
    return 0
