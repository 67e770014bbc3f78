"""``egohorizon data fetch``: the public annotation sets the experiments read, into a data home."""

from __future__ import annotations

import argparse
import logging

from egohorizon.commands import write_result

# = egohorizon.data.fetch.NAMES (tests/unit/data/test_fetch.py checks): spelled out so that --help
# does not load the manifest.
NAMES = ("epic-kitchens", "epic-kitchens-100", "epic-kitchens-55", "rulstm", "hd-epic")


def register(data_subparsers: argparse._SubParsersAction) -> None:
    parser = data_subparsers.add_parser(
        "fetch", help="fetch EPIC-KITCHENS / RULSTM / HD-EPIC annotation files into a data home",
        description="Fetch the annotation files the experiments read from each set's own public git "
                    "repository at the commit the project pins (git, shallow, only the needed files), each "
                    "checked against the project's sha256 manifest, into the data home: $EGOHORIZON_DATA, "
                    "else $EGOHORIZON_SHARED_DATA, else data/sources in the checkout. Nothing is fetched "
                    "when a data home already holds them all ($EGOHORIZON_DATA, $EGOHORIZON_SHARED_DATA, "
                    "../shared/data, data/sources, in that order). Rerun to resume. Prints each set's license "
                    "and citation and writes them beside the files (docs/data-sources.md).")
    parser.add_argument("names", nargs="+", choices=NAMES, metavar="NAME",
                        help="epic-kitchens (= epic-kitchens-100 + epic-kitchens-55 + rulstm: what `data convert "
                             "epic-kitchens` and the EPIC experiments read), or one set: "
                             + ", ".join(NAMES[1:]))
    parser.add_argument("--from", dest="from_dir", default=None, metavar="DIR",
                        help="copy from a local copy instead of git: DIR laid out as a data home "
                             "(DIR/epic-kitchens-100-annotations/...) or as the set's repository; checked the same way")
    parser.add_argument("--url", default=None,
                        help="one set only: fetch from this git repository (a mirror) instead of the set's own")
    parser.add_argument("--commit", default=None, type=full_commit,
                        help="one set only: this full commit hash instead of the pinned one (the sha256 "
                             "manifest still decides what is taken)")
    parser.set_defaults(handler=run_fetch)


def full_commit(value: str) -> str:
    """An argparse type: a full 40-hex commit hash (a server hands out a commit by its whole name only)."""
    if len(value) != 40 or any(c not in "0123456789abcdef" for c in value.lower()):
        raise argparse.ArgumentTypeError(f"expected a full 40-character commit hash, got {value!r}")
    return value.lower()


def run_fetch(args: argparse.Namespace) -> int:
    from egohorizon.data.fetch import GROUPS, fetch
    from egohorizon.errors import ConfigError

    remotes = {}
    if args.url or args.commit:
        if len(args.names) != 1 or args.names[0] in GROUPS:
            raise ConfigError("data fetch: --url and --commit take exactly one set (not a group such as "
                              f"{', '.join(GROUPS)})")
        remotes[args.names[0]] = (args.url, args.commit)
    # the terms and progress go through logging (stderr); the result, the data home, is the JSON on stdout
    home = fetch(args.names, from_dir=args.from_dir, remotes=remotes, say=logging.getLogger(__name__).info)
    write_result({"data_home": str(home)})
    return 0
