"""Hand-built events: ``event`` an L1 event at seconds from a fixed Wednesday and ``many_days`` a run of
days with 30 events each (the points and chain tests); ``day_hierarchy`` one day's small L1-L3 hierarchy
(the figure tests)."""

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


DAY_START = {"2025-03-03": 1740992400.0, "2025-03-04": 1741078800.0}  # 09:00 UTC on each day


def day_hierarchy(participant: str, day: str) -> list[Event]:
    """12 one-minute L1 events -> 4 L2 (3 each) -> 2 L3 (2 each): compression 3x and 2x."""
    t0, session = DAY_START[day], f"{participant}-{day}-s1"

    def event(level: int, n: int, start: float, end: float, children: list[str]) -> Event:
        return Event(id=f"{participant}-{day}-L{level}-{n}", participant=participant, day=day, session=session,
                     level=level, start=start, end=end, text=f"level {level} thing {n}", children=children)

    l1 = [event(1, i, t0 + 60 * i, t0 + 60 * i + 50, []) for i in range(12)]
    l2 = [event(2, j, l1[3 * j].start, l1[3 * j + 2].end, [e.id for e in l1[3 * j:3 * j + 3]]) for j in range(4)]
    l3 = [event(3, k, l2[2 * k].start, l2[2 * k + 1].end, [e.id for e in l2[2 * k:2 * k + 2]]) for k in range(2)]
    for parents in (l2, l3):
        for parent in parents:
            for child in l1 + l2:
                if child.id in parent.children:
                    child.parent = parent.id
    return l1 + l2 + l3
