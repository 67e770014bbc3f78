"""Hand-built L1 events for the points and chain tests: ``event`` at seconds from a fixed Wednesday,
``many_days`` a run of days with 30 events each."""

from __future__ import annotations

from egohorizon.schema import Event

BASE = 1_700_006_400.0  # Wed 2023-11-15 00:00 UTC
DAY_S = 86400.0


def event(id_, start, end, day="d0", level=1, participant="p"):
    return Event(id=id_, participant=participant, day=day, session=f"{day}-s1", level=level,
                 start=BASE + start, end=BASE + end, text=f"do {id_}", source="demo")


def many_days(n_days=12, per_day=30):
    events = []
    for d in range(n_days):
        for i in range(per_day):
            start = d * DAY_S + 30 * i
            events.append(event(f"e{d}-{i}", start, start + 20, day=f"d{d:02d}"))
    return events
