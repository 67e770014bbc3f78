"""Checks of the L1-L5 event hierarchy (SPEC §5) and its summary figures.

Invariants, per participant:
- a parent spans its children exactly (start of the first child, end of the last);
- a parent's children are one level below it, listed in time order, and consecutive: no other event
  of the children's level lies between them;
- every event below the participant's top level has exactly one parent, one level up, which lists it
  among its children (a hierarchy may stop below L5, e.g. a data set with only level-1 actions);
- events above level 1 have children.

The report also gives per-level counts, mean durations and adjacent-level compression ratios
(count at level k / count at level k+1), the figure NextMe-800 reports as 1.6x-11x.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from egohorizon.schema import LEVELS, Event

TIME_TOLERANCE_S = 1e-6


@dataclass
class LevelStats:
    count: int
    mean_duration_s: float


@dataclass
class HierarchyReport:
    problems: list[str] = field(default_factory=list)
    levels: dict[int, LevelStats] = field(default_factory=dict)
    compression: dict[str, float] = field(default_factory=dict)  # "L1/L2" -> ratio

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "problems": self.problems,
            "levels": {f"L{k}": {"count": v.count, "mean_duration_s": v.mean_duration_s}
                       for k, v in sorted(self.levels.items())},
            "compression": self.compression,
        }


def level_stats(events: Iterable[Event]) -> tuple[dict[int, LevelStats], dict[str, float]]:
    """Per-level counts and mean durations, and count(L_k) / count(L_k+1) for adjacent levels."""
    durations: dict[int, list[float]] = defaultdict(list)
    for event in events:
        durations[event.level].append(event.duration)
    stats = {lvl: LevelStats(len(d), sum(d) / len(d)) for lvl, d in sorted(durations.items())}
    compression = {
        f"L{lvl}/L{lvl + 1}": stats[lvl].count / stats[lvl + 1].count
        for lvl in LEVELS[:-1]
        if lvl in stats and lvl + 1 in stats and stats[lvl + 1].count
    }
    return stats, compression


def check_hierarchy(events: Iterable[Event], max_problems: int = 200) -> HierarchyReport:
    """Checks the invariants above; lists problems (up to ``max_problems``) and the summary."""
    events = list(events)
    report = HierarchyReport()
    report.levels, report.compression = level_stats(events)
    by_participant: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_participant[event.participant].append(event)
    for participant_events in by_participant.values():
        _check_participant(participant_events, report.problems)
        if len(report.problems) >= max_problems:
            report.problems = report.problems[:max_problems] + ["... (more problems not listed)"]
            break
    return report


def _check_participant(events: list[Event], problems: list[str]) -> None:
    by_id = {e.id: e for e in events}
    top = max(e.level for e in events)
    # Position of every event within its level's time order, to test "consecutive".
    position: dict[str, int] = {}
    for lvl in LEVELS:
        ordered = sorted((e for e in events if e.level == lvl), key=lambda e: (e.start, e.end, e.id))
        position.update({e.id: i for i, e in enumerate(ordered)})

    for event in events:
        where = f"event {event.id!r} (L{event.level}, participant {event.participant})"
        if event.level < top:
            if not event.parent:
                problems.append(f"{where}: has no parent, but L{event.level + 1} exists")
            elif event.parent not in by_id:
                problems.append(f"{where}: parent {event.parent!r} does not exist")
            else:
                parent = by_id[event.parent]
                if parent.level != event.level + 1:
                    problems.append(f"{where}: parent {parent.id!r} is L{parent.level}, expected L{event.level + 1}")
                if event.id not in parent.children:
                    problems.append(f"{where}: parent {parent.id!r} does not list it among its children")
        elif event.parent:
            problems.append(f"{where}: is at the top level but names parent {event.parent!r}")
        if event.level > 1:
            _check_children(event, by_id, position, problems, where)
        elif event.children:
            problems.append(f"{where}: is L1 but lists children")


def _check_children(event: Event, by_id: dict[str, Event], position: dict[str, int],
                    problems: list[str], where: str) -> None:
    if not event.children:
        problems.append(f"{where}: has no children")
        return
    missing = [c for c in event.children if c not in by_id]
    if missing:
        problems.append(f"{where}: children {missing[:3]} do not exist")
        return
    children = [by_id[c] for c in event.children]
    wrong_level = [c.id for c in children if c.level != event.level - 1]
    if wrong_level:
        problems.append(f"{where}: children {wrong_level[:3]} are not L{event.level - 1}")
        return
    not_mine = [c.id for c in children if c.parent != event.id]
    if not_mine:
        problems.append(f"{where}: children {not_mine[:3]} name another parent")
    if any(b.start < a.start for a, b in itertools.pairwise(children)):
        problems.append(f"{where}: children are not listed in time order")
    ranks = [position[c.id] for c in children]
    if sorted(ranks) != list(range(min(ranks), min(ranks) + len(ranks))):
        problems.append(f"{where}: children are not consecutive (another L{event.level - 1} event lies between them)")
    first, last = min(c.start for c in children), max(c.end for c in children)
    if abs(event.start - first) > TIME_TOLERANCE_S or abs(event.end - last) > TIME_TOLERANCE_S:
        problems.append(f"{where}: spans {event.start}-{event.end} but its children span {first}-{last}")
