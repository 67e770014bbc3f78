"""One participant's past as the QA generator sees it: everything that ended by the question time.

``History.until(t_q)`` is the only view the question makers (``tasks``) get, so an answer or a
distractor can only come from what was recorded before the question was asked (SPEC §2, issue 13).
Time is rendered the same way everywhere (``egohorizon.clock.day_clock``), in the prompts and in the options.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from egohorizon.schema import Event, Recording

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def date_of(day: str) -> str:
    """'2025-03-11' -> 'Tuesday 11 March'."""
    d = dt.date.fromisoformat(day)
    return f"{WEEKDAYS[d.weekday()]} {d.day} {d.strftime('%B')}"


def weekday(day: str) -> str:
    return WEEKDAYS[dt.date.fromisoformat(day).weekday()]


@dataclass
class Past:
    """Events of every level that ended at or before ``t_q`` (and so started before it), sessions that
    started before it, of one participant, in time order."""

    participant: str
    t_q: float
    events: dict[int, list[Event]]
    sessions: list[Recording]
    children: dict[str, list[Event]] = field(default_factory=dict)

    def level(self, level: int) -> list[Event]:
        return self.events.get(level, [])

    def days(self) -> list[str]:
        return sorted({e.day for e in self.level(1)})

    def kids(self, event: Event) -> list[Event]:
        return self.children.get(event.id, [])


class History:
    """A participant's events (all levels) and sessions, indexed by end time for ``until``."""

    def __init__(self, participant: str, events: list[Event], recordings: list[Recording]):
        self.participant = participant
        self.sessions = sorted((r for r in recordings if r.participant == participant), key=lambda r: r.start)
        mine = sorted((e for e in events if e.participant == participant), key=lambda e: (e.end, e.start, e.id))
        self._by_end = mine
        self._ends = [e.end for e in mine]

    def days(self) -> list[str]:
        return sorted({r.day for r in self.sessions})

    def sessions_of(self, day: str) -> list[Recording]:
        return [r for r in self.sessions if r.day == day]

    def until(self, t_q: float) -> Past:
        """What had ended by ``t_q``: events with end <= t_q and start < t_q (a zero-length event at t_q
        is left out, as the forecasting context does)."""
        stop = bisect.bisect_right(self._ends, t_q)
        events: dict[int, list[Event]] = defaultdict(list)
        for e in self._by_end[:stop]:
            if e.start < t_q:
                events[e.level].append(e)
        for rows in events.values():
            rows.sort(key=lambda e: (e.start, e.end, e.id))
        children: dict[str, list[Event]] = defaultdict(list)
        for rows in events.values():
            for e in rows:
                if e.parent:
                    children[e.parent].append(e)
        sessions = [r for r in self.sessions if r.start < t_q]
        return Past(self.participant, t_q, dict(events), sessions, dict(children))
