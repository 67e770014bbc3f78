"""The ``egohorizon`` command.

Each subcommand lives in its own module under ``egohorizon.commands`` and exposes
``register(subparsers)``; those modules import only argparse at module level and do their heavy
imports inside the handler, so ``egohorizon <cmd> --help`` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from egohorizon.commands._args import HelpFormatter, use_help_formatter
from egohorizon.commands._owned import claim_output
from egohorizon.errors import EgohorizonError
from egohorizon.schema import RecordError

# Subcommand name -> module. Order is the order shown in --help.
COMMANDS: dict[str, str] = {
    "data": "egohorizon.commands.data",
    "demo": "egohorizon.commands.demo",
    "points": "egohorizon.commands.points",
    "ingest": "egohorizon.commands.ingest",
    "shards": "egohorizon.commands.shards",
    "deid": "egohorizon.commands.deid",
    "caption": "egohorizon.commands.caption",
    "abstract": "egohorizon.commands.abstract",
    "pipeline": "egohorizon.commands.pipeline",
    "score": "egohorizon.commands.score",
    "bench": "egohorizon.commands.bench",
    "export": "egohorizon.commands.export",
    "export-adapter": "egohorizon.commands.export_adapter",
    "compare": "egohorizon.commands.compare",
    "qa": "egohorizon.commands.qa",
    "serve": "egohorizon.commands.serve",
    "hands": "egohorizon.commands.hands",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="egohorizon",
        description="Train and evaluate models on months of one person's egocentric recordings.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).register(subparsers)
    use_help_formatter(parser)
    return parser


def backbone_by_name(name: str) -> tuple[str, str] | None:
    """``--model smollm2_135m`` (qa answer, serve, bench, abstract, a judge): the middle reads the backbone
    config (issue 39 §2); imported only when a local model's name is looked up, so commands start fast."""
    from egohorizon.run.named_backbones import backbone_by_name as by_name

    return by_name(name)


def main(argv: list[str] | None = None) -> int:
    from egohorizon.llm.local_model import use_model_names

    parser = build_parser()
    args = parser.parse_args(argv)
    use_model_names(backbone_by_name)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    failed = True
    try:
        claim_output(args)  # the folder it writes is its own (issue 36), before any work
        code = int(args.handler(args) or 0)
        failed = code != 0
        return code
    except RecordError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except EgohorizonError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is a user's choice, not a crash: no traceback. The long-running commands keep what
        # they finished (shards, captions, QA items), so the same command line continues the work.
        print("\ninterrupted; rerun the same command to resume", file=sys.stderr)
        return 130  # 128 + SIGINT, what a shell reports for a command killed by Ctrl-C
    finally:
        from egohorizon.owned_output import release_all

        release_all(failed)  # the output folders' locks (a test runs many commands in one process)


if __name__ == "__main__":
    sys.exit(main())
