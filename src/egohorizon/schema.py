"""The project's records (SPEC §2-§6) and validating JSON Lines I/O.

Every part of egohorizon speaks these records: events of the L1-L5 hierarchy, recordings, forecast
points and predictions, QA items and answers, segments, hand boxes. Each record type declares its
fields once (``FIELDS``); ``from_dict`` checks a parsed JSON object against that declaration and
reports *every* defect with the field's name and what was expected, and ``read_jsonl`` adds the file
and line. Reading never stops at the first bad line, so one run lists all the defects of a file.

Only the standard library is imported here: ``egohorizon score`` and ``egohorizon data validate``
must start fast and work without the training stack.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

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


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------

R = TypeVar("R", bound="Record")


@dataclass
class Record:
    """Base of all records. Subclasses declare ``FIELDS``: name -> (check, required)."""

    FIELDS: ClassVar[dict[str, tuple[Check, bool]]] = {}
    KEY: ClassVar[str | None] = "id"  # field that must be unique within a file, if any
    # At least one of these fields must be present, and the message if none is. Checked on the keys,
    # so a present but invalid field is reported once, by its own check.
    ONE_OF: ClassVar[tuple[tuple[str, ...], str]] = ((), "")

    @classmethod
    def from_dict(cls, obj: Any) -> tuple[Self | None, list[tuple[str, str]]]:
        """Validate ``obj``; returns (record or None, [(field, problem), ...])."""
        if not isinstance(obj, dict):
            return None, [("", f"expected a JSON object, got {type(obj).__name__}")]
        problems: list[tuple[str, str]] = []
        values: dict[str, Any] = {}
        for name, (check, required) in cls.FIELDS.items():
            if name not in obj:
                if required:
                    problems.append((name, "missing required field"))
                continue
            value, problem = check(obj[name])
            if problem:
                problems.append((name, problem))
            else:
                values[name] = value
        names, message = cls.ONE_OF
        if names and not any(name in obj for name in names):
            problems.append((names[0], message))
        problems.extend(cls._cross_checks(values))
        if problems:
            return None, problems
        extra = {k: v for k, v in obj.items() if k not in cls.FIELDS}
        record = cls(**values)
        record.extra = extra
        return record, []

    @classmethod
    def _cross_checks(cls, values: dict[str, Any]) -> list[tuple[str, str]]:
        return []

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out.update(getattr(self, "extra", {}) or {})
        return out


def _end_after_start(values: dict[str, Any]) -> list[tuple[str, str]]:
    if "start" in values and "end" in values and values["end"] < values["start"]:
        return [("end", f"expected end >= start, got end {values['end']} < start {values['start']}")]
    return []


# A day is the split unit (SPEC §2), so a wrong one moves records across splits. Days are calendar
# days "YYYY-MM-DD", or, for data sets without dates, placeholder labels that do not start with a
# digit ("undated-P01_101"). Times are epoch seconds read as UTC (converters write local clock time
# as UTC, see data/sources/_common.py) or, without clock times, seconds since the first recording
# (SPEC §5). Starts from EPOCH_CLOCK_FROM on (2001-09-09, 31 years of relative time) are clock times
# and must fall on their day; smaller ones are relative and say nothing about the date.
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
EPOCH_CLOCK_FROM = 1e9


def _calendar_day(value: str) -> date | None:
    try:
        return date.fromisoformat(value) if _ISO_DAY.match(value) else None
    except ValueError:
        return None


def _day_matches_start(values: dict[str, Any], past_midnight: bool) -> list[tuple[str, str]]:
    """``day`` a calendar day or a placeholder label, and the calendar day of a clock-time ``start``.

    An event may start after the midnight that ends its day (``past_midnight``): it belongs to the
    day its recording started (docs/points.md); a recording starts on its own day.
    """
    day = values.get("day")
    if not isinstance(day, str):
        return []
    calendar_day = _calendar_day(day)
    if calendar_day is None:
        if day[:1].isdigit():
            return [("day", f"expected a calendar day YYYY-MM-DD or a placeholder label, got {day!r}")]
        return []
    start = values.get("start")
    if start is None or start < EPOCH_CLOCK_FROM:
        return []
    start_day = datetime.fromtimestamp(start, UTC).date()
    if start_day == calendar_day or (past_midnight and start_day == calendar_day + timedelta(days=1)):
        return []
    before = ", or the day before it (a recording that runs past midnight)" if past_midnight else ""
    expected = f"the calendar day of the start, {start_day.isoformat()} (UTC){before}"
    return [("day", f"expected {expected}, got {day!r}")]


@dataclass
class Event(Record):
    """One event of the hierarchy. ``start``/``end`` are seconds (SPEC §5)."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "participant": (nonempty_text, True),
        "day": (nonempty_text, True),
        "session": (text, True),
        "level": (level, True),
        "start": (number, True),
        "end": (number, True),
        "text": (text, True),
        "parent": (optional(text), False),
        "children": (list_of(text, "event ids"), False),
        "source": (text, False),
        "meta": (mapping, False),
    }
    id: str = ""
    participant: str = ""
    day: str = ""
    session: str = ""
    level: int = 1
    start: float = 0.0
    end: float = 0.0
    text: str = ""
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        return _end_after_start(values) + _day_matches_start(values, past_midnight=True)

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Recording(Record):
    """One recording session of a participant on a calendar day."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "participant": (nonempty_text, True),
        "day": (nonempty_text, True),
        "session": (nonempty_text, True),
        "start": (number, True),
        "end": (number, True),
        "source": (text, False),
        "meta": (mapping, False),
    }
    id: str = ""
    participant: str = ""
    day: str = ""
    session: str = ""
    start: float = 0.0
    end: float = 0.0
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        return _end_after_start(values) + _day_matches_start(values, past_midnight=False)


@dataclass
class ForecastPoint(Record):
    """A forecasting point (SPEC §2, §6): context before ``t0``, K target texts and their windows."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "source": (text, True),
        "participant": (text, True),
        "level": (level, True),
        "k": (positive_int, True),
        "t0": (number, True),
        "context": (list_of(context_event, "events"), True),
        "targets": (list_of(text, "action strings"), True),
        "windows": (list_of(window, "[start, end] windows"), True),
        "day": (text, False),
        "split": (text, False),
        "meta": (mapping, False),
    }
    id: str = ""
    source: str = ""
    participant: str = ""
    level: int = 1
    k: int = 1
    t0: float = 0.0
    context: list[dict[str, Any]] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    windows: list[list[float]] = field(default_factory=list)
    day: str = ""
    split: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        problems = []
        if "targets" in values and "windows" in values and len(values["targets"]) != len(values["windows"]):
            n_targets, n_windows = len(values["targets"]), len(values["windows"])
            problems.append(("windows", f"expected one window per target ({n_targets}), got {n_windows}"))
        # a point has exactly K targets (SPEC §2; points.py drops candidates with fewer): a K=5
        # group must not hold 3-target points, whose scores are not comparable
        if "targets" in values and "k" in values and len(values["targets"]) != values["k"]:
            problems.append(("targets", f"expected k={values['k']} targets, got {len(values['targets'])}"))
        if "context" in values and "t0" in values:
            for i, event in enumerate(values["context"]):
                if event["end"] > values["t0"] + 1e-9:
                    message = f"item {i} ends at {event['end']}, after t0 {values['t0']}: future leaked into the context"
                    problems.append(("context", message))
                    break
        return problems


@dataclass
class ForecastPrediction(Record):
    """A forecaster's answer for one point: parsed candidates, or raw ``text`` for the parser."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "candidates": (list_of(candidate, "candidate trajectories"), False),
        "text": (optional(text), False),  # null: a model that returned nothing, invalid (SPEC §1)
        "model": (text, False),
        "prompt": (text, False),
        "prompt_version": (text, False),
        "seed": (optional(integer), False),
    }
    ONE_OF: ClassVar = (
        ("candidates", "text"),
        "expected 'candidates' (a list of action lists) or 'text' (raw output)",
    )
    id: str = ""
    candidates: list[list[str]] | None = None
    text: str | None = None
    model: str = ""
    prompt: str = ""
    prompt_version: str = ""
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class RankedCandidates(Record):
    """Human rankings of candidate action sequences against a reference (metric validation, SPEC §1).

    ``rankings[a][c]``: annotator a's rank of candidate c (1 = closest to the reference; equal ranks
    are ties), one list per annotator, each as long as ``candidates``.
    """

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "reference": (list_of(text, "action strings"), True),
        "candidates": (list_of(candidate, "candidate trajectories"), True),
        "rankings": (list_of(list_of(number, "ranks"), "one list of ranks per annotator"), True),
    }
    id: str = ""
    reference: list[str] = field(default_factory=list)
    candidates: list[list[str]] = field(default_factory=list)
    rankings: list[list[float]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values: dict[str, Any]) -> list[tuple[str, str]]:
        if "candidates" not in values or "rankings" not in values:
            return []
        n = len(values["candidates"])
        problems = []
        if n < 2:
            problems.append(("candidates", f"expected at least 2 candidates to rank, got {n}"))
        if not values["rankings"]:
            problems.append(("rankings", "expected at least one annotator's ranking"))
        for a, ranks in enumerate(values["rankings"]):
            if len(ranks) != n:
                problems.append(("rankings", f"annotator {a}: {len(ranks)} ranks for {n} candidates"))
        return problems


@dataclass
class Evidence(Record):
    """Where a QA answer can be seen: a video/session and a time range."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "video": (text, True),
        "start": (optional(number), False),
        "end": (optional(number), False),
    }
    video: str = ""
    start: float | None = None
    end: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


def evidence_item(value: Any) -> tuple[Any, str | None]:
    record, problems = Evidence.from_dict(value)
    if problems:
        return value, "; ".join(f"{f or 'evidence'}: {p}" for f, p in problems)
    return record.to_dict(), None


@dataclass
class QAItem(Record):
    """A multiple-choice question (SPEC §3). ``answer`` is a letter; ``level`` comes from the task."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "participant": (text, True),
        "task": (nonempty_text, True),
        "question": (nonempty_text, True),
        "options": (list_of(text, "option strings"), True),
        "answer": (answer_letter, True),
        "level": (optional(integer), False),
        "evidence": (list_of(evidence_item, "evidence objects"), False),
        "source": (text, False),
        "meta": (mapping, False),
    }
    id: str = ""
    participant: str = ""
    task: str = ""
    question: str = ""
    options: list[str] = field(default_factory=list)
    answer: str = "A"
    level: int | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        options, answer = values.get("options"), values.get("answer")
        if options is not None and len(options) < 2:
            return [("options", f"expected at least 2 options, got {len(options)}")]
        if options and answer and not 0 <= ord(answer) - ord("A") < len(options):
            return [("answer", f"expected a letter A-{chr(ord('A') + len(options) - 1)}, got {answer!r}")]
        return []


@dataclass
class QAPrediction(Record):
    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "answer": (optional(text), False),
        "text": (optional(text), False),  # null: a model that returned nothing, invalid (SPEC §3)
        "model": (text, False),
        "prompt": (text, False),
        "prompt_version": (text, False),
        "seed": (optional(integer), False),
    }
    ONE_OF: ClassVar = (("answer", "text"), "expected 'answer' (a letter) or 'text' (raw model output)")
    id: str = ""
    answer: str | None = None
    text: str | None = None
    model: str = ""
    prompt: str = ""
    prompt_version: str = ""
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Segment(Record):
    """A labelled time span of a clip (SPEC §4, §6); ``hand`` for hand actions and captions."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "clip": (nonempty_text, True),
        "kind": (one_of(*SEGMENT_KINDS), True),
        "hand": (optional(one_of(*HANDS)), False),
        "start": (number, True),
        "end": (number, True),
        "label": (text, True),
    }
    clip: str = ""
    kind: str = "subtask"
    hand: str | None = None
    start: float = 0.0
    end: float = 0.0
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        problems = _end_after_start(values)
        if values.get("kind") in ("hand_action", "hand_caption") and values.get("hand") is None:
            problems.append(("hand", f"expected 'left' or 'right' for kind {values['kind']!r}"))
        return problems

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class HandBox(Record):
    """A gold hand box at a 30 fps frame index; ``grid`` N: the clip is annotated on frames 0, N, 2N, ..."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "clip": (nonempty_text, True),
        "frame": (non_negative_int, True),
        "hand": (one_of(*HANDS), True),
        "box": (box, True),
        "grid": (positive_int, False),
    }
    clip: str = ""
    frame: int = 0
    hand: str = "left"
    box: list[float] = field(default_factory=list)
    grid: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        if "frame" in values and values.get("grid") and values["frame"] % values["grid"]:
            grid = values["grid"]
            expected = f"expected a frame on the clip's grid of {grid} (0, {grid}, {2 * grid}, ...)"
            return [("frame", f"{expected}, got {values['frame']}")]
        return []


@dataclass
class BoxPrediction(Record):
    """A model's hand box at time ``t`` seconds; it belongs to frame ``round(30 * t)``."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "clip": (nonempty_text, True),
        "t": (number, True),
        "hand": (one_of(*HANDS), True),
        "box": (box, True),
    }
    clip: str = ""
    t: float = 0.0
    hand: str = "left"
    box: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class CaptionWindow(Record):
    """The gold caption of one window (issue 11): its timed actions (seconds from the window's start)
    and scene. ``session`` and ``start`` (the window's start, seconds since the epoch or the dataset's
    origin) order the windows of a session for the repeat-previous baseline; ``activity`` is the
    window's activity type for the breakdown (``egohorizon.metrics.captions.activity_of``)."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "window_s": (number, True),
        "actions": (list_of(caption_action, "action objects"), True),
        "scene": (optional(text), False),
        "source": (text, False),
        "participant": (text, False),
        "day": (text, False),
        "session": (text, False),
        "start": (optional(number), False),
        "activity": (optional(text), False),
    }
    id: str = ""
    window_s: float = 30.0
    actions: list[dict[str, Any]] = field(default_factory=list)
    scene: str | None = None
    source: str = ""
    participant: str = ""
    day: str = ""
    session: str = ""
    start: float | None = None
    activity: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        window_s = values.get("window_s")
        if window_s is None:
            return []
        if window_s <= 0:
            return [("window_s", f"expected a window length > 0 s, got {window_s}")]
        late = [i for i, a in enumerate(values.get("actions") or []) if a["end"] > window_s + 1e-6]
        if late:
            end = values["actions"][late[0]]["end"]
            return [("actions", f"item {late[0]}: ends at {end} s, after the window's end ({window_s:g} s)")]
        return []


@dataclass
class CaptionPrediction(Record):
    """A captioner's answer for one window: parsed ``actions`` (+ ``scene``), or raw ``text`` in the
    caption format (``egohorizon.formats.caption``), which the tolerant parser reads."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "actions": (list_of(caption_action, "action objects"), False),
        "scene": (optional(text), False),
        "text": (optional(text), False),  # null: a model that returned nothing, invalid
        "model": (text, False),
        "prompt": (text, False),
        "prompt_version": (text, False),
        "seed": (optional(integer), False),
    }
    ONE_OF: ClassVar = (
        ("actions", "text"),
        "expected 'actions' (a list of {start, end, action}) or 'text' (raw model output)",
    )
    id: str = ""
    actions: list[dict[str, Any]] | None = None
    scene: str | None = None
    text: str | None = None
    model: str = ""
    prompt: str = ""
    prompt_version: str = ""
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


RECORD_TYPES: dict[str, type[Record]] = {
    "event": Event,
    "recording": Recording,
    "forecast_point": ForecastPoint,
    "forecast_prediction": ForecastPrediction,
    "qa_item": QAItem,
    "qa_prediction": QAPrediction,
    "segment": Segment,
    "hand_box": HandBox,
    "box_prediction": BoxPrediction,
    "ranked_candidates": RankedCandidates,
    "caption_window": CaptionWindow,
    "caption_prediction": CaptionPrediction,
}


# --------------------------------------------------------------------------------------------
# JSON Lines
# --------------------------------------------------------------------------------------------


@dataclass
class ReadResult:
    """Records that validated, and the defects of those that did not (file, line, field)."""

    records: list
    defects: list[Defect]
    path: str

    def raise_for_defects(self) -> None:
        if self.defects:
            raise RecordError(self.defects)


def iter_json_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any, str | None]]:
    """Yields (line number, parsed object or None, problem or None); blank lines are skipped.

    Lines are decoded one by one, so a line that is not UTF-8 is a problem of that line (with the
    offending byte) and the lines after it are still read.
    """
    with open(path, "rb") as handle:
        for number_, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                byte = raw[error.start]
                yield number_, None, f"not UTF-8 text (byte 0x{byte:02x} at column {error.start + 1})"
                continue
            if number_ == 1:
                line = line.removeprefix("\ufeff")  # a byte-order mark some editors write
            if not line.strip():
                continue
            try:
                yield number_, json.loads(line), None
            except json.JSONDecodeError as error:
                yield number_, None, f"invalid JSON ({error.msg} at column {error.colno})"


def read_jsonl(path: str | os.PathLike, record_type: type[R]) -> ReadResult:
    """Reads every line, validating each; collects all defects instead of stopping at the first.

    Duplicate keys (``record_type.KEY``, usually ``id``) are defects too: the second occurrence is
    reported with the line of the first.
    """
    path = str(path)
    records: list[R] = []
    defects: list[Defect] = []
    seen: dict[str, int] = {}
    try:
        lines = list(iter_json_lines(path))
    except FileNotFoundError:
        return ReadResult([], [Defect(path, 0, "", "file not found")], path)
    except IsADirectoryError:
        return ReadResult([], [Defect(path, 0, "", "is a folder; expected a .jsonl file")], path)
    except OSError as error:
        return ReadResult([], [Defect(path, 0, "", f"cannot read the file ({error.strerror or error})")], path)
    if lines and (lines[0][2] or not isinstance(lines[0][1], dict)):
        # a CSV or one JSON document where JSON Lines are expected: one defect naming what the file
        # is, not one "invalid JSON" per line (issue 22, item 15, for every reader of records)
        from egohorizon.data.file_kind import not_json_lines

        wrong_kind = not_json_lines(path)
        if wrong_kind:
            return ReadResult([], [Defect(path, 0, "", wrong_kind.removeprefix(f"{path}: "))], path)
    for line_number, obj, json_problem in lines:
        if json_problem:
            defects.append(Defect(path, line_number, "", json_problem))
            continue
        record, problems = record_type.from_dict(obj)
        for field_name, problem in problems:
            defects.append(Defect(path, line_number, field_name, problem))
        if record is None:
            continue
        key = record_type.KEY
        if key:
            value = getattr(record, key)
            if value in seen:
                defects.append(Defect(path, line_number, key,
                                      f"duplicate {key} {value!r} (first on line {seen[value]})"))
                continue
            seen[value] = line_number
        records.append(record)
    if not records and defects and lines and isinstance(lines[0][1], dict):
        # another command's records (events where points are expected, predictions swapped with gold):
        # one line saying so instead of every missing field of every line
        found = record_type_of(lines[0][1])
        if found is None and {"image", "box"} <= set(lines[0][1]):  # `hands detect` writes boxes per image file
            return ReadResult([], [Defect(path, 0, "", (
                f"holds hands detect boxes (image, hand, box, score per image file), not the "
                f"{record_type.__name__} records expected here; `egohorizon hands detect IMAGES --gold CSV` "
                f"scores them ({len(defects)} defects)"))], path)
        if found is not None and found is not record_type:
            return ReadResult([], [Defect(path, 0, "", (
                f"holds {found.__name__} records (line 1 has {', '.join(list(lines[0][1])[:6])}), not the "
                f"{record_type.__name__} records expected here ({len(defects)} defects)"))], path)
    return ReadResult(records, defects, path)


def load_jsonl(path: str | os.PathLike, record_type: type[R]) -> list[R]:
    """Like ``read_jsonl`` but raises ``RecordError`` (listing every defect) if any line is bad."""
    result = read_jsonl(path, record_type)
    result.raise_for_defects()
    return result.records


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return value.to_dict() if isinstance(value, Record) else dataclasses.asdict(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def dumps(record: Record | dict[str, Any]) -> str:
    obj = record.to_dict() if isinstance(record, Record) else record
    return json.dumps(obj, ensure_ascii=False, default=_json_default)


def write_jsonl(path: str | os.PathLike, records: Iterable[Record | dict[str, Any]]) -> int:
    """Writes atomically (temp file + rename) so a crash never leaves half a file; returns the count."""
    from egohorizon.atomic_files import atomic_open

    count = 0
    with atomic_open(path) as handle:  # Ctrl-C or an error mid-write: no half file left (issue 22)
        for record in records:
            handle.write(dumps(record))
            handle.write("\n")
            count += 1
    return count


def remove_stale_temps(path: str | os.PathLike) -> list[Path]:
    """Removes the temp files ``write_jsonl`` (and writers like it) left beside ``path`` when killed
    (``.NAME.tmp-PID`` of a process no longer running); a live writer's file is kept."""
    path = Path(path)
    removed = []
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.tmp-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and _running(int(pid)):
            continue
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def detect_record_type(path: str | os.PathLike) -> type[Record] | None:
    """Guesses a JSONL file's record type from the keys of its first parseable object."""
    try:
        for _, obj, problem in iter_json_lines(path):
            if problem or not isinstance(obj, dict):
                continue
            return record_type_of(obj)
    except (OSError, UnicodeDecodeError):
        return None
    return None


def record_type_of(obj: dict[str, Any]) -> type[Record] | None:
    """The record type an object's keys say it is (None: none of them)."""
    keys = set(obj)
    if {"context", "targets"} <= keys:
        return ForecastPoint
    if {"reference", "rankings"} <= keys:
        return RankedCandidates
    if "candidates" in keys:
        return ForecastPrediction
    if {"actions", "window_s"} <= keys:
        return CaptionWindow
    if "actions" in keys:
        return CaptionPrediction
    if {"question", "options"} <= keys:
        return QAItem
    if "frame" in keys and "box" in keys:
        return HandBox
    if "t" in keys and "box" in keys:
        return BoxPrediction
    if {"clip", "kind"} <= keys:
        return Segment
    if "level" in keys and "text" in keys:
        return Event
    if {"session", "start", "end"} <= keys and "level" not in keys:
        return Recording
    if "answer" in keys:
        return QAPrediction
    return None
    return None
