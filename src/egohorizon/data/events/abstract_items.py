"""Training and evaluation items of the abstractor, from a gold hierarchy (the demo world's grammar).

An item is a window of at most ``max_events`` consecutive level-L events of one session (L = 1..4)
with its gold grouping: the events' parents, clipped to the window (a parent cut by the window's edge
keeps its description). Windows are cut at fixed positions (every ``max_events`` events of the
session), not at gold boundaries, so a window's edges tell the model nothing about where groups end;
the last window of a session may be shorter. The same window size is the job's ``--max-events``.

With ``spread_lengths`` (training) the windows are still consecutive and still ignore gold boundaries,
but each one's length is drawn uniformly from ``min_events..max_events`` by a generator seeded with
``seed`` and the session and level, so the same seed cuts the same windows. The job asks runs of every
length (short sessions, the higher levels' shorter runs), and a model trained only on full windows answers
a 15-event run as if it held 16.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from egohorizon.errors import ConfigError
from egohorizon.formats.abstract import Group
from egohorizon.schema import Event


@dataclass
class AbstractItem:
    """A run of same-level events and the gold groups of its parents (indices into ``events``)."""

    id: str
    participant: str
    day: str
    level: int  # the level of the events; the groups are level + 1
    events: list[Event]
    gold: list[Group]

    @property
    def texts(self) -> list[str]:
        return [e.text for e in self.events]


def gold_groups(window: Sequence[Event], by_id: dict[str, Event]) -> list[Group]:
    """Consecutive events of ``window`` with the same parent form a group with the parent's text."""
    groups: list[Group] = []
    for i, event in enumerate(window):
        if groups and window[groups[-1].first].parent == event.parent:
            groups[-1] = Group(groups[-1].first, i, groups[-1].text)
        else:
            groups.append(Group(i, i, by_id[event.parent].text))
    return groups


def cut_windows(n: int, max_events: int, rng: random.Random | None = None, min_events: int = 2) -> list[range]:
    """Consecutive windows covering ``range(n)``: every ``max_events`` events, or (with ``rng``) of lengths
    drawn from ``min_events..max_events``; the last window holds what is left (it may be shorter)."""
    windows, first = [], 0
    while first < n:
        size = max_events if rng is None else rng.randint(min_events, max_events)
        windows.append(range(first, min(n, first + size)))
        first += size
    return windows


def make_items(events: Iterable[Event], days: set[str] | None = None, levels: Sequence[int] = (1, 2, 3, 4),
               max_events: int = 24, stride: int = 1, spread_lengths: bool = False, min_events: int = 2,
               seed: int = 0) -> list[AbstractItem]:
    """Items of every session of the chosen ``days`` (``participant/day``; None: all) at ``levels``,
    every ``stride``-th window of each session and level. Events without a parent are left out.
    ``spread_lengths``: window lengths drawn from ``min_events..max_events`` (deterministic per ``seed``)."""
    if not 1 <= min_events <= max_events:
        raise ConfigError(f"data.min_events={min_events}: must be between 1 and data.max_events={max_events}")
    events = list(events)
    by_id = {e.id: e for e in events}
    runs: dict[tuple[str, str, str, int], list[Event]] = defaultdict(list)
    for e in events:
        if e.level in levels and e.parent in by_id and (days is None or f"{e.participant}/{e.day}" in days):
            runs[(e.participant, e.day, e.session, e.level)].append(e)
    items = []
    for (participant, day, session, level), run in sorted(runs.items()):
        run.sort(key=lambda e: (e.start, e.end, e.id))
        # a string seed: random.Random hashes it with SHA-512, stable across processes and Python versions
        rng = random.Random(f"{seed}/{session}/L{level}") if spread_lengths else None
        for number, positions in enumerate(cut_windows(len(run), max_events, rng, min_events)):
            if number % stride:
                continue
            window = run[positions.start:positions.stop]
            items.append(AbstractItem(id=f"{session}-L{level}-w{number:03d}", participant=participant, day=day,
                                      level=level, events=window, gold=gold_groups(window, by_id)))
    return items


def gold_compression(items: Iterable[AbstractItem]) -> dict[int, float]:
    """Per level, events per gold group over ``items`` (the fixed-chunks baseline's size)."""
    n: dict[int, int] = defaultdict(int)
    groups: dict[int, int] = defaultdict(int)
    for item in items:
        n[item.level] += len(item.events)
        groups[item.level] += len(item.gold)
    return {level: n[level] / groups[level] for level in sorted(n) if groups[level]}
