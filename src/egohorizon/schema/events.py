"""Events of the L1-L5 hierarchy and the recordings they come from (SPEC §2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from egohorizon.schema import checks
from egohorizon.schema.record import Record, _day_matches_start, _end_after_start, declared

# An event's ``meta.time_basis`` when its Unix seconds are the local wall-clock time written as UTC
# (data/sources/_common.py says why); the habit baselines read clock times only from such events.
LOCAL_CLOCK_AS_UTC = "local_clock_as_utc"


@dataclass
class Event(Record):
    """One event of the hierarchy. ``start``/``end`` are seconds (SPEC §5)."""

    id: str = declared(checks.nonempty_text, "")
    participant: str = declared(checks.nonempty_text, "")
    day: str = declared(checks.nonempty_text, "")
    session: str = declared(checks.text, "")
    level: int = declared(checks.level, 1)
    start: float = declared(checks.number, 0.0)
    end: float = declared(checks.number, 0.0)
    text: str = declared(checks.text, "")
    parent: str | None = declared(checks.optional(checks.text), None, required=False)
    children: list[str] = declared(checks.list_of(checks.text, "event ids"), factory=list, required=False)
    source: str = declared(checks.text, "", required=False)
    meta: dict[str, Any] = declared(checks.mapping, factory=dict, required=False)
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

    id: str = declared(checks.nonempty_text, "")
    participant: str = declared(checks.nonempty_text, "")
    day: str = declared(checks.nonempty_text, "")
    session: str = declared(checks.nonempty_text, "")
    start: float = declared(checks.number, 0.0)
    end: float = declared(checks.number, 0.0)
    source: str = declared(checks.text, "", required=False)
    meta: dict[str, Any] = declared(checks.mapping, factory=dict, required=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        return _end_after_start(values) + _day_matches_start(values, past_midnight=False)
