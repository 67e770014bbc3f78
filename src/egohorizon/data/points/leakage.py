"""The leakage guard (SPEC §2): nothing that starts at or after ``t0`` may reach a forecaster.

``check_points(points, events, split)`` re-derives every point from the full event set and raises
``LeakageError`` if any of these fails:

- context: every item is a real event of the point's participant and level, copied unchanged (id,
  start, end, text, day, session), that ends at or before ``t0`` and starts before it; items are in
  time order, without duplicates;
- context completeness: the items are exactly the most recent events of that level ending at or
  before ``t0`` (ranked by end, then start, then id) -- no event skipped, and as many as the point's
  ``meta.n_context`` asks for when the history has them;
- targets: ``t0`` is the start of the first target; the targets are the first K events of the level
  starting at or after ``t0`` (in start order), with their own texts and [start, end] windows;
- split: all target days (the events' ``day`` fields) belong to one split of ``split``, which is the
  point's ``split`` field (and ``expected_split`` when given).

The guard is deliberately written apart from the point builder (it counts with bisection where the
builder collects), so a bug in one is caught by the other; the property tests compare both with a
brute-force scan.

``HistoryIndex`` is the only way a retrieval-augmented predictor may reach older history: it answers
``before(participant, level, t0)`` with events ending strictly before ``t0`` (SPEC §2: "retrieval
over older history is limited to events ending before t0"), as plain context dicts without parent,
children or meta, so nothing about the future rides along.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from egohorizon.data.splits import DaySplit
from egohorizon.errors import LeakageError
from egohorizon.schema import Event, ForecastPoint

CONTEXT_KEYS = ("id", "start", "end", "text", "day", "session")


def context_view(event: Event) -> dict[str, Any]:
    """What a forecaster may see of a past event: id, times, text, day and session; nothing else."""
    return {"id": event.id, "start": event.start, "end": event.end, "text": event.text, "day": event.day,
            "session": event.session}


def time_order(event: Event) -> tuple[float, float, str]:
    return (event.start, event.end, event.id)


def recency_order(event: Event) -> tuple[float, float, str]:
    return (event.end, event.start, event.id)


@dataclass
class _Timeline:
    """One participant's events of one level, sorted two ways for bisection."""

    by_start: list[Event]
    starts: list[float]
    by_end: list[Event]
    end_keys: list[tuple[float, float, str]]
    zero_length_at: Counter = field(default_factory=Counter)  # time -> events with start == end there

    @classmethod
    def of(cls, events: list[Event]) -> _Timeline:
        by_start = sorted(events, key=time_order)
        by_end = sorted(events, key=recency_order)
        zero = Counter(e.start for e in events if e.start == e.end)
        return cls(by_start, [e.start for e in by_start], by_end, [recency_order(e) for e in by_end], zero)

    def n_ended_by(self, t0: float) -> int:
        """Events with end <= t0 and start < t0 (zero-length events at t0 start at t0: excluded)."""
        return bisect.bisect_right(self.end_keys, (t0, float("inf"), "")) - self.zero_length_at[t0]

    def following(self, t0: float, k: int) -> list[Event]:
        """The first k events starting at or after t0, in time order."""
        i = bisect.bisect_left(self.starts, t0)
        return self.by_start[i:i + k]


def _timelines(events: Iterable[Event]) -> dict[tuple[str, int], _Timeline]:
    grouped: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for event in events:
        grouped[(event.participant, event.level)].append(event)
    return {key: _Timeline.of(group) for key, group in grouped.items()}


class HistoryIndex:
    """Retrieval over a participant's past that cannot return anything ending at or after ``t0``."""

    def __init__(self, events: Iterable[Event]):
        self._timelines = _timelines(events)

    def before(self, participant: str, level: int, t0: float, limit: int | None = None) -> list[dict[str, Any]]:
        """Events of ``level`` ending strictly before ``t0``, oldest first; the most recent ``limit``."""
        timeline = self._timelines.get((participant, level))
        if timeline is None:
            return []
        # end < t0 implies start < t0, as every event has start <= end.
        stop = bisect.bisect_left(timeline.end_keys, (t0, float("-inf"), ""))
        first = 0 if limit is None else max(0, stop - limit)
        chosen = sorted(timeline.by_end[first:stop], key=time_order)
        return [context_view(e) for e in chosen]


def history_before(events: Iterable[Event], participant: str, level: int, t0: float,
                   limit: int | None = None) -> list[dict[str, Any]]:
    """One-off form of ``HistoryIndex(events).before(...)``; build the index once for many queries."""
    return HistoryIndex(events).before(participant, level, t0, limit)


def check_points(points: Iterable[ForecastPoint], events: Iterable[Event], split: DaySplit, *,
                 expected_split: str | None = None, max_problems: int = 50) -> int:
    """Checks every point against the full event set (module doc); returns the number checked."""
    events = list(events)
    guard = _Guard(events, split)
    problems: list[str] = []
    checked = 0
    for point in points:
        checked += 1
        problems += [f"point {point.id!r}: {p}" for p in guard.problems_of(point, expected_split)]
        if len(problems) >= max_problems:
            break
    if problems:
        raise LeakageError(problems)
    return checked


def _fmt(event: Any) -> str:
    if isinstance(event, Event):
        return f"event {event.id!r} ({event.start!r}-{event.end!r})"
    return f"event {event.get('id')!r} ({event.get('start')!r}-{event.get('end')!r})"


class _Guard:
    def __init__(self, events: list[Event], split: DaySplit):
        self.split = split
        self.by_id = {e.id: e for e in events}
        self.by_content = {(e.participant, e.level, e.start, e.end, e.text): e for e in events}
        self.timelines = _timelines(events)

    def problems_of(self, point: ForecastPoint, expected_split: str | None) -> list[str]:
        timeline = self.timelines.get((point.participant, point.level))
        if timeline is None:
            return [f"no events of participant {point.participant!r} at L{point.level} in the event set"]
        problems, context = self._context_problems(point)
        if not problems:  # completeness only makes sense once every item is a real, past event
            problems += self._completeness_problems(point, context, timeline)
        target_problems, targets = self._target_problems(point, timeline)
        problems += target_problems
        if not problems:
            problems += self._split_problems(point, targets, expected_split)
        return problems

    def _resolve(self, point: ForecastPoint, item: dict[str, Any]) -> Event | None:
        if item.get("id") is not None:
            return self.by_id.get(item["id"])
        return self.by_content.get((point.participant, point.level, item["start"], item["end"], item["text"]))

    def _context_problems(self, point: ForecastPoint) -> tuple[list[str], list[Event]]:
        problems, seen, resolved = [], set(), []
        t0 = point.t0
        for i, item in enumerate(point.context):
            if item["end"] > t0:
                problems.append(f"context item {i}, {_fmt(item)}, ends after t0 {t0!r}")
            if item["start"] >= t0:
                problems.append(f"context item {i}, {_fmt(item)}, starts at or after t0 {t0!r}")
            event = self._resolve(point, item)
            if event is None:
                problems.append(f"context item {i}, {_fmt(item)}, is not in the event set")
                continue
            if (event.participant, event.level) != (point.participant, point.level):
                problems.append(f"context item {i}, {_fmt(event)}, belongs to participant "
                                f"{event.participant!r} L{event.level}, not the point's")
            view = context_view(event)
            if len(item) != len(view) or item != view:
                problems += self._item_differences(i, item, view)
            if event.id in seen:
                problems.append(f"context item {i}, {_fmt(event)}, appears twice")
            seen.add(event.id)
            resolved.append(event)
        starts = [(c["start"], c["end"]) for c in point.context]
        if starts != sorted(starts):
            problems.append("context items are not in time order")
        return problems, resolved

    @staticmethod
    def _item_differences(i: int, item: dict[str, Any], view: dict[str, Any]) -> list[str]:
        """Fields a context item changed or added; items without an id/day/session may omit them."""
        problems = []
        extra = sorted(set(item) - set(CONTEXT_KEYS))
        if extra:
            problems.append(f"context item {i}, {_fmt(item)}, carries fields {extra} beyond "
                            f"{list(CONTEXT_KEYS)}")
        changed = [k for k in CONTEXT_KEYS if k in item and item[k] != view[k]]
        if changed:
            problems.append(f"context item {i}, {_fmt(item)}, differs from the event record in {changed} "
                            f"(record: {_fmt(view)})")
        return problems

    def _completeness_problems(self, point: ForecastPoint, context: list[Event],
                               timeline: _Timeline) -> list[str]:
        t0 = point.t0
        available = timeline.n_ended_by(t0)
        wanted = point.meta.get("n_context") if isinstance(point.meta, dict) else None
        if isinstance(wanted, int) and len(context) != min(wanted, available):
            return [(f"context holds {len(context)} events, but {available} events of L{point.level} end "
                     f"at or before t0 {t0!r} and n_context is {wanted}")]
        if not context:  # a point needs n_context >= 1, so an empty context hides available history
            return [(f"context is empty, but {available} events of L{point.level} end at or before t0 "
                     f"{t0!r}")] if available else []
        oldest = min(recency_order(e) for e in context)
        newer = (bisect.bisect_right(timeline.end_keys, (t0, float("inf"), ""))
                 - bisect.bisect_left(timeline.end_keys, oldest) - timeline.zero_length_at[t0])
        if newer == len(context):
            return []
        ids = {e.id for e in context}
        lo = bisect.bisect_left(timeline.end_keys, oldest)
        skipped = [e for e in timeline.by_end[lo:] if e.end <= t0 and e.start < t0 and e.id not in ids]
        names = ", ".join(_fmt(e) for e in skipped[:3])
        return [f"context skips {len(skipped)} more recent event(s) ending at or before t0 {t0!r}: {names}"]

    def _target_problems(self, point: ForecastPoint, timeline: _Timeline) -> tuple[list[str], list[Event]]:
        t0 = point.t0
        ids = point.meta.get("target_ids") if isinstance(point.meta, dict) else None
        if ids is not None and len(ids) != len(point.targets):
            return [f"meta.target_ids lists {len(ids)} ids for {len(point.targets)} targets"], []
        problems, targets = [], []
        for i, (text, (start, end)) in enumerate(zip(point.targets, point.windows)):
            item = {"id": ids[i] if ids else None, "start": start, "end": end, "text": text}
            event = self._resolve(point, item)
            if event is None:
                return [f"target {i} ({text!r}, {start!r}-{end!r}) is not in the event set"], []
            if (event.start, event.end, event.text) != (start, end, text):
                problems.append(f"target {i} differs from the record of {_fmt(event)}")
            if event.start < t0:
                problems.append(f"target {i}, {_fmt(event)}, starts before t0 {t0!r}")
            targets.append(event)
        if targets and targets[0].start != t0:
            problems.append(f"t0 {t0!r} is not the start of the first target, {_fmt(targets[0])}")
        expected = timeline.following(t0, point.k)
        short = len(targets) < min(point.k, len(expected))
        if short or [e.id for e in targets] != [e.id for e in expected[:len(targets)]]:
            problems.append(f"targets {[e.id for e in targets]} are not the {point.k} events following t0 "
                            f"{t0!r}: expected {[e.id for e in expected]}")
        return problems, targets

    def _split_problems(self, point: ForecastPoint, targets: list[Event],
                        expected_split: str | None) -> list[str]:
        found: dict[str, Event] = {}
        for event in targets:
            split = self.split.get(event.participant, event.day)
            if split is None:
                return [f"target {_fmt(event)} is on day {event.day!r}, which the day split does not know"]
            found.setdefault(split, event)
        if len(found) > 1:
            where = "; ".join(f"{_fmt(e)} on day {e.day!r} is {s!r}" for s, e in found.items())
            return [f"targets fall on days of {len(found)} splits: {where}"]
        if not found:
            return []
        (split, event), = found.items()
        for claimed, what in ((point.split, "the point's split"), (expected_split, "the expected split")):
            if claimed and claimed != split:
                return [(f"{what} is {claimed!r}, but target {_fmt(event)} is on day {event.day!r} of "
                         f"split {split!r}")]
        return []


def check_qa_items(items: Iterable[Any], split: DaySplit | None = None, *, max_problems: int = 50) -> int:
    """The QA form of the guard (issue 13): every item carries ``meta.t_question``; every evidence
    window starts before it and ends at or before it; with ``split``, the item's ``meta.split`` is the
    split of its question day (``meta.day``, the UTC date of ``t_question``'s recording day). Raises
    ``LeakageError`` listing the problems; returns the number of items checked."""
    problems: list[str] = []
    checked = 0
    for item in items:
        checked += 1
        problems += [f"QA item {item.id!r}: {p}" for p in _qa_problems(item, split)]
        if len(problems) >= max_problems:
            break
    if problems:
        raise LeakageError(problems)
    return checked


def _qa_problems(item: Any, split: DaySplit | None) -> list[str]:
    meta = item.meta if isinstance(item.meta, dict) else {}
    t_q = meta.get("t_question")
    if not isinstance(t_q, (int, float)) or isinstance(t_q, bool):
        return [f"meta.t_question: expected a number (Unix s), got {t_q!r}"]
    problems = []
    for i, evidence in enumerate(item.evidence):
        start, end = evidence.get("start"), evidence.get("end")
        if start is None or end is None:
            problems.append(f"evidence {i} ({evidence.get('video')!r}) has no time range")
        elif start >= t_q or end > t_q:
            problems.append(f"evidence {i} ({evidence.get('video')!r} {start!r}-{end!r}) does not end by the "
                            f"question time {t_q!r}")
    if split is not None:
        actual = split.get(item.participant, meta.get("day", ""))
        if actual is None or actual != meta.get("split"):
            problems.append(f"meta.split is {meta.get('split')!r}, but day {meta.get('day')!r} of participant "
                            f"{item.participant!r} is {actual!r} in the day split")
    return problems
