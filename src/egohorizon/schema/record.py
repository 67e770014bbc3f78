"""The Record base: each field declared once, on the dataclass (``declared``: its check and whether it is
required), and every defect reported by from_dict."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, ClassVar, Self, TypeVar

from egohorizon.schema.checks import Check

# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------

R = TypeVar("R", bound="Record")


def declared(check: Check, default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING,
             required: bool = True) -> Any:
    """A record field with its check (``schema.checks``) and whether ``from_dict`` requires it; the
    default (or ``factory``) is what a record built in code gets."""
    metadata = {"check": check, "required": required}
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class Record:
    """Base of all records. Subclasses declare their fields with ``declared``; ``FIELDS()`` reads them back
    as name -> (check, required), in declaration order."""

    KEY: ClassVar[str | None] = "id"  # field that must be unique within a file, if any
    # At least one of these fields must be present, and the message if none is. Checked on the keys,
    # so a present but invalid field is reported once, by its own check.
    ONE_OF: ClassVar[tuple[tuple[str, ...], str]] = ((), "")

    @classmethod
    def FIELDS(cls) -> dict[str, tuple[Check, bool]]:
        found = _DECLARED.get(cls)
        if found is None:
            found = {f.name: (f.metadata["check"], f.metadata["required"])
                     for f in dataclasses.fields(cls) if "check" in f.metadata}
            _DECLARED[cls] = found
        return found

    @classmethod
    def from_dict(cls, obj: Any) -> tuple[Self | None, list[tuple[str, str]]]:
        """Validate ``obj``; returns (record or None, [(field, problem), ...])."""
        if not isinstance(obj, dict):
            return None, [("", f"expected a JSON object, got {type(obj).__name__}")]
        problems: list[tuple[str, str]] = []
        values: dict[str, Any] = {}
        for name, (check, required) in cls.FIELDS().items():
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
        extra = {k: v for k, v in obj.items() if k not in cls.FIELDS()}
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


_DECLARED: dict[type, dict[str, tuple[Check, bool]]] = {}  # per record class: read once from its fields


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
