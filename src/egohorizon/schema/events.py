"""Events of the L1-L5 hierarchy and the recordings they come from (SPEC §2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema.checks import level, list_of, mapping, nonempty_text, number, optional, text
from egohorizon.schema.record import Record, _day_matches_start, _end_after_start


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
