"""``egohorizon points``: forecast points on held-out days from event files (SPEC §2)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from egohorizon.commands._args import bounded_int, fraction, nonneg_int, out_dir, positive_int, seed
from egohorizon.commands._owned import declare_output

log = logging.getLogger(__name__)

# make_day_split's defaults, repeated here because this module may import only argparse (fast --help).
SPLIT_DEFAULTS = {"val_frac": 0.15, "test_frac": 0.15, "strategy": "random", "min_history_days": 3}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "points", help="build forecast points and held-out-day splits from event files",
        description="Build forecast points (context of the N most recent events, K targets and their "
                    "windows) per level and K, split by held-out days; every point passes the leakage "
                    "guard. Writes points_train.jsonl, points_val.jsonl, points_test.jsonl, splits.json "
                    "and points_manifest.json into --out, and prints the counts per split, level and K.")
    parser.add_argument("--events", required=True,
                        help="an events .jsonl file, or a folder searched for events*.jsonl")
    parser.add_argument("--out", required=True, type=out_dir, help="output folder")
    parser.add_argument("--levels", type=bounded_int(1, 5), nargs="+", default=[1, 2, 3, 4, 5], help="levels (default 1-5)")
    parser.add_argument("--k", dest="ks", type=positive_int, nargs="+", default=[1, 10],
                        help="numbers of targets per point (default 1 10)")
    parser.add_argument("--context", type=positive_int, default=50, help="context events per point (default 50)")
    parser.add_argument("--splits", default=None,
                        help="reuse this splits.json instead of drawing held-out days")
    # Split options default to None so that combining them with --splits can be refused.
    parser.add_argument("--val-frac", type=fraction, default=None,
                        help=f"share of days for val (default {SPLIT_DEFAULTS['val_frac']})")
    parser.add_argument("--test-frac", type=fraction, default=None,
                        help=f"share of days for test (default {SPLIT_DEFAULTS['test_frac']})")
    parser.add_argument("--strategy", choices=["random", "last", "official"], default=None,
                        help="held-out days drawn spread over the period (random, default), the final days "
                             "(last), or the data set's own split (official: EPIC-KITCHENS-100's validation "
                             "videos' days are test, val drawn from the rest; --test-frac does not apply)")
    parser.add_argument("--min-history-days", type=nonneg_int, default=None,
                        help=f"first days of each participant kept in train "
                             f"(default {SPLIT_DEFAULTS['min_history_days']})")
    parser.add_argument("--max-points", type=positive_int, default=None,
                        help="at most N points per split, level and K (default: all)")
    parser.add_argument("--seed", type=seed, default=0, help="seed for day drawing and point sampling")
    parser.add_argument("--source", default=None, help="source name in point ids (default: the events' source)")
    parser.add_argument("--allow-empty-splits", action="store_true",
                        help="write the points although a split (e.g. val or test of a run with too few days) "
                             "holds none; a warning says which (default: refuse)")
    parser.set_defaults(handler=run_points)
    declare_output(parser, inputs=("events", "splits"))


def run_points(args: argparse.Namespace) -> int:
    from egohorizon.commands.data import find_event_files
    from egohorizon.data.points.build import build_points, check_splits_filled, count_points
    from egohorizon.data.splits import SPLITS, DaySplit, make_day_split
    from egohorizon.errors import ConfigError, DataError
    from egohorizon.schema import Event, load_jsonl, write_jsonl

    files = find_event_files(Path(args.events))
    if not files:
        raise DataError(f"{args.events}: no events .jsonl file found (looked for events*.jsonl)")
    events = [event for f in files for event in load_jsonl(f, Event)]
    if not events:  # nothing to split: every split would be empty
        raise DataError(f"{', '.join(map(str, files))}: no events; expected JSON Lines of events (SPEC §5)")
    given = {name: getattr(args, name) for name in SPLIT_DEFAULTS if getattr(args, name) is not None}
    if args.splits:
        if given:
            options = ", ".join("--" + name.replace("_", "-") for name in given)
            raise ConfigError(f"--splits reuses a saved split; {options} would be ignored")
        split = DaySplit.load(args.splits)
    elif args.strategy == "official" and args.test_frac is not None:
        raise ConfigError("--strategy official takes test from the data set's own split; --test-frac "
                          "would be ignored")
    else:
        split = make_day_split(events, seed=args.seed, **{**SPLIT_DEFAULTS, **given})
    points = build_points(events, split, levels=args.levels, ks=args.ks, n_context=args.context,
                          max_points=args.max_points, seed=args.seed, source=args.source)
    warnings = check_splits_filled(points, split, allow_empty=args.allow_empty_splits)  # before any write
    from egohorizon.data.demo.cues.switches import cues_beside, mark_cue_points

    cues = cues_beside(args.events)  # a demo world made with --cue-switches: mark the cue-driven points
    cue_driven = {name: mark_cue_points(points[name], cues) for name in SPLITS} if cues else None

    out = Path(args.out)
    split.save(out / "splits.json")
    for split_name in SPLITS:
        write_jsonl(out / f"points_{split_name}.jsonl", points[split_name])
    counts = count_points(points)
    manifest = {
        "events": [str(f) for f in files],
        "settings": {"levels": args.levels, "ks": args.ks, "n_context": args.context,
                     "max_points": args.max_points, "seed": args.seed, "source": args.source,
                     "splits": args.splits},
        "split": split.to_dict()["settings"],
        "participant_days": split.counts(),
        # Undated recordings have a placeholder day each: there a held-out "day" is one held-out video.
        "held_out_units": split.unit_counts(),
        "counts": [{"split": s, "level": lv, "k": k, "points": n} for (s, lv, k), n in sorted(counts.items())],
    }
    if cue_driven is not None:
        manifest["cue_driven"] = cue_driven
    if warnings:
        manifest["warnings"] = warnings
    (out / "points_manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(_table(counts, args.levels, args.ks, split.counts()))
    units = split.unit_counts()
    if any(u["undated_videos"] for u in units.values()):
        print(_units_line(units))
    if cue_driven is not None:
        log.info("cue-driven points (meta.cue_driven; also in points_manifest.json): %s", cue_driven)
    print(f"wrote {out}/points_{{train,val,test}}.jsonl, splits.json, points_manifest.json")
    return 0


def _units_line(units: dict[str, dict[str, int]]) -> str:
    """What the days column counts: calendar days, and undated videos (one placeholder day each)."""
    parts = ", ".join(f"{s} {u['days']} days + {u['undated_videos']} undated videos" for s, u in units.items())
    return f"days: {parts} (an undated video has a placeholder day of its own: real date unknown)"


def _table(counts: dict, levels: list[int], ks: list[int], days: dict[str, int]) -> str:
    columns = [(lv, k) for lv in sorted(levels) for k in sorted(ks)]
    header = f"{'split':<6} {'days':>5} " + " ".join(f"{f'L{lv} K{k}':>8}" for lv, k in columns)
    rows = [header]
    for split_name in ("train", "val", "test"):
        cells = " ".join(f"{counts.get((split_name, lv, k), 0):>8}" for lv, k in columns)
        rows.append(f"{split_name:<6} {days[split_name]:>5} {cells}")
    return "\n".join(rows)
