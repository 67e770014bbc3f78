"""``egohorizon data convert``: turn a real data set into egohorizon records."""

from __future__ import annotations

import argparse

from egohorizon.commands._args import out_dir

SOURCES = ("epic-kitchens", "hd-epic", "hd-epic-vqa")  # = egohorizon.data.sources.ADAPTERS


def register(data_subparsers: argparse._SubParsersAction) -> None:
    parser = data_subparsers.add_parser(
        "convert", help="convert EPIC-KITCHENS / HD-EPIC annotations into events, recordings, QA items",
        description="Convert a real data set's annotation files (found by name anywhere under --root) "
                    "into events.jsonl, recordings.jsonl or qa.jsonl, plus metadata.json (time basis "
                    "per participant, files read, rows skipped and why). docs/data-sources.md says "
                    "where to get each data set.")
    parser.add_argument("source", choices=SOURCES, help="which data set")
    parser.add_argument("--root", required=True, help="folder holding the data set's annotation files")
    parser.add_argument("--out", required=True, type=out_dir, help="output folder")
    parser.add_argument("--no-rulstm", action="store_true",
                        help="epic-kitchens: do not add RULSTM's text-less EPIC-100 train segments "
                             "(named from their verb/noun classes)")
    parser.add_argument("--narrations", default=None,
                        help="hd-epic: HD_EPIC_Narrations.pkl or .csv (default: found under --root); "
                             "narrations become level 1 and activities level 2")
    parser.set_defaults(handler=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    import importlib

    from egohorizon.data.sources import ADAPTERS

    module = importlib.import_module(f"egohorizon.data.sources.{ADAPTERS[args.source]}")
    if args.source == "epic-kitchens":
        conversion = module.convert(args.root, use_rulstm=not args.no_rulstm)
    elif args.source == "hd-epic":
        conversion = module.convert(args.root, narrations=args.narrations)
    else:
        conversion = module.convert(args.root)
    written = conversion.write(args.out)
    for path in written.values():
        print(f"wrote {path}")
    for reason, count in sorted(conversion.counts.items()):
        print(f"  {count:>8}  {reason}")
    skipped = conversion.skipped.to_dict()
    if skipped:
        print("skipped or repaired (known defects of the data set; first places in metadata.json):")
        for reason, entry in skipped.items():
            print(f"  {entry['count']:>8}  {reason}")
    if "events" in written:
        print(f"next: egohorizon data stats {args.out}; egohorizon data validate {written['events']}")
    elif "qa" in written:
        print(f"next: egohorizon data validate {written['qa']}")
    return 0
