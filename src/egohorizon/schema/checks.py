"""Defects, errors and field checks: each check returns (value, problem), problem None when fine."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

LEVELS = (1, 2, 3, 4, 5)
HANDS = ("left", "right")
SEGMENT_KINDS = ("subtask", "hand_action", "hand_caption")
SCHEMA_VERSION = 1


# --------------------------------------------------------------------------------------------
# Defects and errors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Defect:
    """One problem with one record: where it is and what was expected."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: field '{self.field}': {self.message}" if self.field else f"{where}: {self.message}"


class RecordError(ValueError):
    """Raised when a file holds defective records; carries all of them, not only the first."""

    def __init__(self, defects: Sequence[Defect]):
        self.defects = list(defects)
        shown = "\n".join(str(d) for d in self.defects[:20])
        more = f"\n... and {len(self.defects) - 20} more" if len(self.defects) > 20 else ""
        super().__init__(f"{len(self.defects)} defective record(s):\n{shown}{more}")


# --------------------------------------------------------------------------------------------
# Field checks: each returns (value, problem) where problem is None when the value is fine
# --------------------------------------------------------------------------------------------

Check = Callable[[Any], "tuple[Any, str | None]"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(value: Any) -> tuple[Any, str | None]:
    if _is_number(value):
        return float(value), None
    return value, f"expected a finite number, got {value!r}"


def integer(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None
    if isinstance(value, float) and value.is_integer():
        return int(value), None
    return value, f"expected an integer, got {value!r}"


def text(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, str):
        return value, None
    return value, f"expected a string, got {type(value).__name__} {value!r}"


def nonempty_text(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, str) and value.strip():
        return value, None
    return value, f"expected a non-empty string, got {value!r}"


def optional(check: Check) -> Check:
    def _check(value: Any) -> tuple[Any, str | None]:
        return (None, None) if value is None else check(value)

    return _check


def list_of(check: Check, what: str) -> Check:
    def _check(value: Any) -> tuple[Any, str | None]:
        if not isinstance(value, list):
            return value, f"expected a list of {what}, got {type(value).__name__}"
        out = []
        for i, item in enumerate(value):
            item, problem = check(item)
            if problem:
                return value, f"item {i}: {problem}"
            out.append(item)
        return out, None

    return _check


def one_of(*allowed: Any) -> Check:
    def _check(value: Any) -> tuple[Any, str | None]:
        if value in allowed:
            return value, None
        return value, f"expected one of {', '.join(repr(a) for a in allowed)}, got {value!r}"

    return _check


def level(value: Any) -> tuple[Any, str | None]:
    value, problem = integer(value)
    if problem or value not in LEVELS:
        return value, f"expected a level in 1-5, got {value!r}"
    return value, None


def positive_int(value: Any) -> tuple[Any, str | None]:
    value, problem = integer(value)
    if problem or value < 1:
        return value, f"expected an integer >= 1, got {value!r}"
    return value, None


def non_negative_int(value: Any) -> tuple[Any, str | None]:
    value, problem = integer(value)
    if problem or value < 0:
        return value, f"expected an integer >= 0, got {value!r}"
    return value, None


def mapping(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, dict):
        return value, None
    return value, f"expected an object, got {type(value).__name__}"


def window(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, list) and len(value) == 2 and all(_is_number(v) for v in value):
        start, end = float(value[0]), float(value[1])
        if end < start:
            return value, f"expected [start, end] with end >= start, got {value!r}"
        return [start, end], None
    return value, f"expected [start, end] numbers, got {value!r}"


def box(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, list) and len(value) == 4 and all(_is_number(v) for v in value):
        x1, y1, x2, y2 = (float(v) for v in value)
        if x2 < x1 or y2 < y1:
            return value, f"expected [x1, y1, x2, y2] with x2 >= x1 and y2 >= y1, got {value!r}"
        return [x1, y1, x2, y2], None
    return value, f"expected [x1, y1, x2, y2] numbers, got {value!r}"


def answer_letter(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, str) and len(value.strip()) == 1 and value.strip().isalpha():
        return value.strip().upper(), None
    return value, f"expected one option letter such as 'B', got {value!r}"


def _timed_object(value: dict, what: str, checks: tuple) -> tuple[dict, str | None]:
    """Checks the keys of an inner object (an event of a context, an action of a caption)."""
    for key, check in checks:
        if key not in value:
            return value, f"{what} is missing '{key}'"
        checked, problem = check(value[key])
        if problem:
            return value, f"{what} field '{key}': {problem}"
        value = {**value, key: checked}
    return value, None


def context_event(value: Any) -> tuple[Any, str | None]:
    """A context event inside a forecast point: at least text, start and end."""
    if not isinstance(value, dict):
        return value, f"expected an event object, got {type(value).__name__}"
    value, problem = _timed_object(value, "event", (("text", text), ("start", number), ("end", number)))
    if problem:
        return value, problem
    if value["end"] < value["start"]:
        return value, f"event ends ({value['end']}) before it starts ({value['start']})"
    return value, None


def candidate(value: Any) -> tuple[Any, str | None]:
    return list_of(text, "action strings")(value)


def caption_action(value: Any) -> tuple[Any, str | None]:
    """A timed action of a caption: ``{"start", "end", "action"}``, seconds from the window's start."""
    if not isinstance(value, dict):
        return value, f"expected an action object {{start, end, action}}, got {type(value).__name__}"
    value, problem = _timed_object(value, "action", (("action", nonempty_text), ("start", number), ("end", number)))
    if problem:
        return value, problem
    if not 0 <= value["start"] < value["end"]:
        return value, f"expected 0 <= start < end, got start {value['start']}, end {value['end']}"
    return value, None
