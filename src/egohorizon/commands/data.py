"""``egohorizon data stats|validate|plot-day``: summarise, check and draw record files."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from egohorizon.commands._args import out_file
from egohorizon.commands._owned import declare_output

logger = logging.getLogger(__name__)

FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")  # what matplotlib writes that a user opens


def figure_file(value: str) -> str:
    """An argparse type: out_file whose suffix matplotlib can write (a .txt crashed in savefig after
    reading every event)."""
    value = out_file(value)
    if Path(value).suffix.lower() not in FIGURE_SUFFIXES:
        raise argparse.ArgumentTypeError(f"{value}: expected an image file name ending in "
                                         f"{', '.join(FIGURE_SUFFIXES)}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("data", help="fetch, summarise, validate and convert data sets",
                                   description="Fetch, summarise, validate and convert data sets.")
    data_sub = parser.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)

    stats = data_sub.add_parser(
        "stats", help="participants, days, sessions, events and per-level figures",
        description="Summarise event files: participants, days, sessions, events, and per level the "
                    "count, mean duration and adjacent-level compression ratio.")
    stats.add_argument("path", help="an events .jsonl file, or a folder searched for events*.jsonl")
    stats.add_argument("--json", dest="as_json", action="store_true", help="print the summary as JSON")
    stats.add_argument("--plot", metavar="PNG", type=figure_file, default=None,
                       help="also draw the per-level compression ratios and mean durations to this PNG")
    stats.set_defaults(handler=run_stats)

    validate = data_sub.add_parser(
        "validate", help="check a .jsonl file record by record",
        description="Check every line of a JSON Lines file against its record type (detected from the "
                    "first record, or --type). Prints one message per defect (file, line, field, what "
                    "was expected); event files are also checked for the hierarchy invariants. Exits 1 "
                    "if anything is wrong.")
    validate.add_argument("path", help="a .jsonl file")
    validate.add_argument("--type", dest="record_type", default=None,
                          help="record type (event, recording, forecast_point, forecast_prediction, "
                               "qa_item, qa_prediction, segment, hand_box, box_prediction)")
    validate.set_defaults(handler=run_validate)

    plot_day = data_sub.add_parser(
        "plot-day", help="draw one day's L1-L5 as an icicle chart (PNG)",
        description="Draw one participant-day of an event hierarchy as an icicle (flame) chart: one row "
                    "per level, L5 on top, each event a box over its time span in its top ancestor's colour.")
    plot_day.add_argument("path", help="an events .jsonl file, or a folder searched for events*.jsonl")
    plot_day.add_argument("--day", required=True, help="the day, as the events' day field (YYYY-MM-DD)")
    plot_day.add_argument("--participant", default=None,
                          help="the participant (needed when several have events on that day)")
    plot_day.add_argument("--out", required=True, type=figure_file, help="the PNG (or .pdf/.svg) to write")
    plot_day.set_defaults(handler=run_plot_day)
    declare_output(plot_day, inputs=("path",), kind="file")

    from egohorizon.commands import data_fetch

    data_fetch.register(data_sub)
    try:  # adapters register `data convert` when present
        from egohorizon.commands import data_convert
    except ImportError:
        return
    data_convert.register(data_sub)


def find_event_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.rglob("events*.jsonl") if p.is_file())
    return []


def load_events(path: str) -> tuple[list, list[Path]]:
    from egohorizon.errors import DataError
    from egohorizon.schema import Event, load_jsonl

    files = find_event_files(Path(path))
    if not files:
        raise DataError(f"{path}: no events .jsonl file found (looked for events*.jsonl)")
    events = [event for f in files for event in load_jsonl(f, Event)]
    if not events:  # summarised as 0 events and "hierarchy: OK" with exit 0, where points refuses it
        raise DataError(f"{path}: no events; expected JSON Lines of events (SPEC §5)")
    return events, files


def run_stats(args: argparse.Namespace) -> int:
    from egohorizon.data.events.stats import summarise_events

    events, files = load_events(args.path)
    summary = summarise_events(events)
    if args.plot:
        from egohorizon.data.events.figures import level_rows, plot_levels

        summary["plot"] = str(plot_levels(level_rows(events), args.plot, title=str(args.path)))
    summary["files"] = [str(f) for f in files]
    if args.as_json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from egohorizon.data.events.stats import format_summary

        sys.stdout.write(format_summary(summary))
    return 0


def run_plot_day(args: argparse.Namespace) -> int:
    from egohorizon.data.events.figures import plot_day

    events, _ = load_events(args.path)
    out = plot_day(events, args.day, args.out, participant=args.participant)
    logger.info("day %s drawn to %s", args.day, out)
    # the written path is the command's result on stdout, as the other data commands write theirs
    sys.stdout.write(f"{out}\n")
    return 0


def _has_records(path: Path) -> bool:
    """Whether the file holds any non-blank line (a record, or something that fails as one)."""
    from egohorizon.schema import iter_json_lines

    return next(iter(iter_json_lines(path)), None) is not None


def run_validate(args: argparse.Namespace) -> int:
    from egohorizon.errors import DataError
    from egohorizon.schema import RECORD_TYPES, Event, detect_record_type, read_jsonl

    path = Path(args.path)
    if path.is_dir():
        found = sorted(path.rglob("*.jsonl"))
        example = f", e.g. {found[0]}" if found else " (it holds none)"
        raise DataError(f"{path}: is a folder; expected a .jsonl file{example}")
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    from egohorizon.schema.file_kind import not_json_lines

    wrong_kind = not_json_lines(path)  # a CSV or one JSON document: one message, not one per line
    if wrong_kind:
        raise DataError(wrong_kind)
    if args.record_type:
        if args.record_type not in RECORD_TYPES:
            raise DataError(f"--type {args.record_type!r}: expected one of {', '.join(RECORD_TYPES)}")
        record_type = RECORD_TYPES[args.record_type]
    else:
        record_type = detect_record_type(path)
        if record_type is None:
            if not _has_records(path):
                raise DataError(f"{path}: no records; expected JSON Lines, one record a line")
            raise DataError(f"{path}: cannot tell the record type from the first record; pass --type")
    result = read_jsonl(path, record_type)
    messages = [str(d) for d in result.defects]
    if not result.records and not result.defects:
        messages.append(f"{path}: no records; expected JSON Lines of {record_type.__name__} records")
    if record_type is Event and result.records:
        from egohorizon.data.events.hierarchy import check_hierarchy

        messages += [f"{path}: hierarchy: {p}" for p in check_hierarchy(result.records).problems]
    for message in messages:
        print(message)
    name = record_type.__name__
    if messages:
        print(f"{path}: {len(messages)} problem(s); {len(result.records)} valid {name} record(s)", file=sys.stderr)
        return 1
    print(f"{path}: OK, {len(result.records)} {name} record(s)")
    return 0
