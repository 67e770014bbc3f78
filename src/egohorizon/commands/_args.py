"""Shared argparse pieces of the subcommands: bounded numeric types, output-path types and the help
formatter. Only the standard library is imported here, so ``egohorizon <cmd> --help`` stays fast.

A bad value fails while the command line is parsed, before any work, with argparse's own message
naming the option, the value and what was expected (issue 22, items 8 and 10):
``egohorizon shards build: error: argument --jpeg-quality: expected a whole number from 1 to 100, got '500'``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterator
from pathlib import Path

# --dtype of the commands that load a local model (egohorizon.llm.local_dtype; issue 37)
DTYPE_HELP = ("local model: the weights' torch dtype, e.g. float32 (default: bfloat16 where the CPU or GPU "
              "computes it natively, else float32; the tiny backbone float32)")


def _number_text(value: float) -> str:
    # Whole bounds in full (a seed's "4294967295", not :g's "4.29497e+09"); fractions short.
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _range_text(lo: float | None, hi: float | None, lo_open: bool = False, hi_open: bool = False) -> str:
    if lo is not None and hi is not None and not (lo_open or hi_open):
        return f"from {_number_text(lo)} to {_number_text(hi)}"
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {_number_text(lo)}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {_number_text(hi)}")
    return " and ".join(parts)


def bounded_int(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in [lo, hi] (either bound may be None: open)."""
    text = _range_text(lo, hi)

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number {text}, got {value!r}") from None
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            raise argparse.ArgumentTypeError(f"expected a whole number {text}, got {value!r}")
        return number

    parse.__name__ = f"int {text}"
    parse.bounds = (lo, hi)  # for scripts that check documented values against the options
    return parse


def bounded_float(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                  hi_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number between lo and hi (open ends with lo_open / hi_open)."""
    text = _range_text(lo, hi, lo_open, hi_open)

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number {text}, got {value!r}") from None
        too_low = lo is not None and (number <= lo if lo_open else number < lo)
        too_high = hi is not None and (number >= hi if hi_open else number > hi)
        if not math.isfinite(number) or too_low or too_high:  # nan compares False everywhere
            raise argparse.ArgumentTypeError(f"expected a number {text}, got {value!r}")
        return number

    parse.__name__ = f"float {text}"
    parse.bounds = (lo, hi)
    return parse


positive_int = bounded_int(1)
nonneg_int = bounded_int(0)
seed = bounded_int(0, 2**32 - 1)  # numpy's seeds
port = bounded_int(0, 65535)
jpeg_quality = bounded_int(1, 100)  # PIL's scale
positive_float = bounded_float(0, lo_open=True)
nonneg_float = bounded_float(0)
fraction = bounded_float(0, 1)  # a share, 0-1


def _nearest_existing(path: Path) -> Path:
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def out_dir(value: str) -> str:
    """An argparse type: a folder to write (may not exist yet), never an existing file.

    Checked at parse time so a command fails before any work, not when it first writes (as
    ``ingest`` checks its folder before reading the recording)."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is a file; expected a folder to write into (or a new name)")
    above = _nearest_existing(path)
    if not path.exists() and not above.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create {value}: {above} is a file, not a folder")
    return value


def out_file(value: str) -> str:
    """An argparse type: a file to write (may not exist yet), never an existing folder."""
    path = Path(value)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is a folder; expected a file name to write")
    above = _nearest_existing(path)
    if not above.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create {value}: {above} is a file, not a folder")
    return value


class HelpFormatter(argparse.HelpFormatter):
    """Adds "(default: X)" to an option's help unless the text already says its default, or the
    option has none worth showing (None, a flag's False/True)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or default in (None, argparse.SUPPRESS) or isinstance(default, bool)
                or not (action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE))):
            return text
        if isinstance(default, (list, tuple)):
            if not default:
                return text
            return f"{text} (default: {' '.join(map(str, default))})"
        return f"{text} (default: %(default)s)"


def iter_parsers(parser: argparse.ArgumentParser, name: str = "egohorizon"
                 ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser under ``parser`` (itself first), with its command line: "egohorizon shards build"."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for sub_name, sub in action.choices.items():
                if id(sub) not in seen:  # aliases name one parser twice
                    seen.add(id(sub))
                    yield from iter_parsers(sub, f"{name} {sub_name}")


def use_help_formatter(parser: argparse.ArgumentParser) -> None:
    """Every subcommand's --help shows defaults the same way (subparsers do not inherit a formatter)."""
    for _, sub in iter_parsers(parser):
        sub.formatter_class = HelpFormatter
