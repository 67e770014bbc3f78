"""``egohorizon data convert``: turn a real data set into egohorizon records."""

from __future__ import annotations

import argparse

from egohorizon.commands._args import bounded_int, out_dir
from egohorizon.commands._owned import declare_output

SOURCES = ("epic-kitchens", "hd-epic", "hd-epic-vqa", "egomonth", "egoschema", "ego4d-lta")  # = sources.ADAPTERS
ROOTED = ("epic-kitchens", "hd-epic", "hd-epic-vqa")  # found by name under --root


def register(data_subparsers: argparse._SubParsersAction) -> None:
    parser = data_subparsers.add_parser(
        "convert", help="convert EPIC-KITCHENS / HD-EPIC / EgoMonth / EgoSchema / Ego4D LTA files into "
                        "events, recordings, QA items or forecast points",
        description="Convert a real data set's annotation files (found by name anywhere under --root) "
                    "into events.jsonl, recordings.jsonl or qa.jsonl, plus metadata.json (time basis "
                    "per participant, files read, rows skipped and why). docs/data-sources.md and "
                    "docs/benchmarks.md say where to get each data set. Benchmarks: `data convert egomonth "
                    "QA.json --videos ROOT`, `data convert egoschema --questions Q --answers A`, `data convert "
                    "ego4d-lta --annotations F... --taxonomy T`.")
    parser.add_argument("source", choices=SOURCES, help="which data set")
    parser.add_argument("file", nargs="?", default=None, help="egomonth: its QA.json (a JSON array of items)")
    parser.add_argument("--root", default=None,
                        help="epic-kitchens, hd-epic, hd-epic-vqa: folder holding the data set's annotation files")
    parser.add_argument("--videos", default=None,
                        help="egomonth: the folder the items' video_path entries are relative to (every video "
                             "must exist)")
    parser.add_argument("--participant", default=None,
                        help="egomonth: participant id of the items (default: the QA file's folder name)")
    parser.add_argument("--questions", default=None, help="egoschema: questions.json")
    parser.add_argument("--answers", default=None, help="egoschema: subset_answers.json ({q_uid: 0-based index})")
    parser.add_argument("--annotations", nargs="+", default=None,
                        help="ego4d-lta: fho_lta_train.json, fho_lta_val.json and/or fho_lta_test_unannotated.json")
    parser.add_argument("--taxonomy", default=None, help="ego4d-lta: fho_lta_taxonomy.json")
    parser.add_argument("--input-actions", type=bounded_int(1, 100), default=2,
                        help="ego4d-lta: observed actions per point, 1-100 (default 2, the LTA baselines')")
    parser.add_argument("--future-actions", type=bounded_int(1, 100), default=20,
                        help="ego4d-lta: actions to forecast per point (Z), 1-100 (default 20, the benchmark's)")
    parser.add_argument("--out", required=True, type=out_dir, help="output folder")
    parser.add_argument("--no-rulstm", action="store_true",
                        help="epic-kitchens: do not add RULSTM's text-less EPIC-100 train segments "
                             "(named from their verb/noun classes)")
    parser.add_argument("--narrations", default=None,
                        help="hd-epic: HD_EPIC_Narrations.pkl or .csv (default: found under --root); "
                             "narrations become level 1 and activities level 2")
    parser.set_defaults(handler=run_convert)
    declare_output(parser, inputs=("file", "root", "videos", "questions", "answers", "annotations", "taxonomy",
                                   "narrations"))


def run_convert(args: argparse.Namespace) -> int:
    import importlib

    from egohorizon.data.sources import ADAPTERS

    module = importlib.import_module(f"egohorizon.data.sources.{ADAPTERS[args.source]}")
    _check_inputs(args)
    if args.source == "egomonth":
        conversion = module.convert(args.file, args.videos, participant=args.participant)
    elif args.source == "egoschema":
        conversion = module.convert(args.questions, args.answers)
    elif args.source == "ego4d-lta":
        conversion = module.convert(args.annotations, args.taxonomy, input_actions=args.input_actions,
                                    z=args.future_actions)
    elif args.source == "epic-kitchens":
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
    elif "points" in written:
        print(f"next: egohorizon data validate {written['points']}")
    return 0


def _check_inputs(args: argparse.Namespace) -> None:
    """Each source's own inputs, named when missing (the benchmarks take files, the others --root)."""
    from egohorizon.errors import ConfigError

    needed = {"egomonth": (("file", "QA.json (the positional FILE)"), ("videos", "--videos ROOT")),
              "egoschema": (("questions", "--questions questions.json"), ("answers", "--answers subset_answers.json")),
              "ego4d-lta": (("annotations", "--annotations fho_lta_*.json"), ("taxonomy",
                                                                                      "--taxonomy fho_lta_taxonomy.json"))}
    for attr, shown in needed.get(args.source, (("root", "--root DIR"),)):
        if not getattr(args, attr):
            raise ConfigError(f"data convert {args.source}: {shown} is required")
    if args.source in ROOTED and args.file:
        raise ConfigError(f"data convert {args.source}: takes --root DIR, not a file ({args.file})")
