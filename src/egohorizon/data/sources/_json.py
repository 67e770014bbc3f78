"""Reading a benchmark's JSON files (EgoMonth, EgoSchema, Ego4D LTA) and naming their defects.

Each file is one JSON document, read whole (a JSON array is an array, never JSON Lines). A parse
failure names the file, line and column, and says when the text ends early (a cut download). Item
defects are collected, not raised one by one: ``Defects`` gathers "item [i]: field 'f': problem"
lines (``[i]`` is the 0-based index, as ``jq '.[i]'`` prints it) and raises one ``DataError`` that
lists them all (the first ``SHOWN``, then how many more).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from egohorizon.errors import DataError

SHOWN = 20
log = logging.getLogger(__name__)


def read_json(path: str | Path, what: str) -> Any:
    """The parsed document at ``path``; ``what`` says what the file should hold (for messages)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (expected {what})")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text at byte {error.start} (expected {what})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # an unterminated string runs to the end of the text: both mean the document was cut short
        ends_early = error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string")
        cut = " - the file ends early (a cut download?)" if ends_early else ""
        raise DataError(f"{path}:{error.lineno}: invalid JSON ({error.msg} at column {error.colno}){cut}; "
                        f"expected {what}") from None


class Defects:
    """Defects of one file's items, raised together by ``raise_if_any``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lines: list[str] = []

    def add(self, where: str, field: str | None, message: str) -> None:
        self.lines.append(f"{where}: field '{field}': {message}" if field else f"{where}: {message}")

    def raise_if_any(self) -> None:
        if not self.lines:
            return
        shown = "\n  ".join(self.lines[:SHOWN])
        more = f"\n  ... and {len(self.lines) - SHOWN} more" if len(self.lines) > SHOWN else ""
        raise DataError(f"{self.path}: {len(self.lines)} defect(s):\n  {shown}{more}")


def type_name(value: Any) -> str:
    """JSON's name for a parsed value's type (``list`` is an array, ``dict`` an object)."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
             int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def warn_duplicate_options(path: str | Path, where: str, options: Sequence[str]) -> int:
    """Logs each option whose text repeats an earlier one of the same item; returns how many.

    Such items are kept (a benchmark may really have them), but a reply that is only the repeated
    text cannot say which option it means: answer extraction scores it invalid (issue 36, item 6).
    """
    first: dict[str, int] = {}
    repeats = 0
    for i, option in enumerate(options):
        key = " ".join(option.split()).casefold()
        if key in first:
            repeats += 1
            log.warning("%s: %s: option %s has the same text as option %s (%r); a reply that is only this "
                        "text is invalid", path, where, chr(65 + i), chr(65 + first[key]), option)
        else:
            first[key] = i
    return repeats
