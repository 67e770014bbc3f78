"""Forecast points (SPEC §2) built from an event set and a held-out-day split.

For every participant, level in ``levels`` and K in ``ks``, a candidate point exists at the start of
every event (``t0``):
- targets: the first K events of the level starting at or after ``t0``, in time order (start, end,
  id), with their texts and [start, end] windows. When several events start at the same instant only
  the first of them opens a point, so the events starting at ``t0`` are always targets, never hidden;
- context: the ``n_context`` most recent events of the level (ranked by end) that end at or before
  ``t0`` and start before it, shown oldest first with id, start, end, text, day and session. It may
  reach back over sessions, missing days and days of any split. An event still running at ``t0``
  (started before, ends after) is in neither list;
- split: the split of the targets' days (each event's ``day`` field). A candidate whose K targets fall
  on days of different splits is **not made** (counted as ``straddling``), nor is one with fewer than
  K events left (``too_few_targets``) or with an empty context (``no_context``). Under a split of
  strategy ``official`` a test point is made only when all its targets are in the data set's own
  validation set (``meta.official_split``): official-train events sharing a day with validation ones
  are no target at all (``official_train_on_test_day``), so test is the official validation set.

Sampling: with ``max_points``, each (split, level, K) group keeps at most that many points, drawn
round-robin over (participant, day of t0) strata in a seeded order, so the points spread over
participants and dates instead of piling onto the busiest day.

Ids are ``<source>/<participant>/L<level>/K<k>/<t0>`` with t0 in seconds (shortest exact form).
``meta`` holds ``target_ids``, ``target_days`` and ``n_context``, which the leakage guard reads.
Every point made here passes ``check_points`` before it is returned.
"""

from __future__ import annotations

import bisect
import logging
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from egohorizon.data.points.leakage import check_points, context_view, recency_order, time_order
from egohorizon.data.splits import OFFICIAL_FIELD, SPLITS, DaySplit
from egohorizon.errors import ConfigError, DataError
from egohorizon.schema import Event, ForecastPoint
from egohorizon.schema.forecast_groups import ks_problem

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Candidate:
    participant: str
    level: int
    k: int
    index: int  # position of the first target in the level's time order
    split: str
    day: str  # day of the first target (the stratum for sampling)


class _LevelEvents:
    """One participant's events of one level: time order for targets, end order for the context."""

    def __init__(self, events: list[Event]):
        self.by_start = sorted(events, key=time_order)
        self.by_end = sorted(events, key=recency_order)
        self.ends = [e.end for e in self.by_end]

    def context_before(self, t0: float, n: int) -> list[Event]:
        """The n most recent events ending at or before t0 and starting before it, oldest first."""
        picked: list[Event] = []
        i = bisect.bisect_right(self.ends, t0) - 1
        while i >= 0 and len(picked) < n:
            event = self.by_end[i]
            if event.start < t0:  # only a zero-length event at t0 itself fails this
                picked.append(event)
            i -= 1
        return sorted(picked, key=time_order)

    def opens_point(self, index: int) -> bool:
        return index == 0 or self.by_start[index - 1].start < self.by_start[index].start


def build_points(
    events: Iterable[Event],
    split: DaySplit,
    *,
    levels: Sequence[int] = (1, 2, 3, 4, 5),
    ks: Sequence[int] = (1, 10),
    n_context: int = 50,
    max_points: int | None = None,
    seed: int = 0,
    source: str | None = None,
) -> dict[str, list[ForecastPoint]]:
    """Forecast points keyed by split ("train", "val", "test"), checked by the leakage guard."""
    _check_arguments(levels, ks, n_context, max_points)
    events = list(events)
    timelines = _group(events, levels)
    candidates, dropped = _collect_candidates(timelines, split, ks)
    chosen = _sample(candidates, max_points, seed)
    points: dict[str, list[ForecastPoint]] = {s: [] for s in SPLITS}
    for candidate in chosen:
        timeline = timelines[(candidate.participant, candidate.level)]
        points[candidate.split].append(_make_point(candidate, timeline, n_context, source))
    for split_name in SPLITS:
        points[split_name].sort(key=lambda p: (p.participant, p.level, p.k, p.t0))
    missing_levels = sorted(set(levels) - {level for _, level in timelines})
    if missing_levels:
        log.info("no events at level(s) %s: no points there", missing_levels)
    log.info("points not made: %s", dict(dropped) or "none")
    # Each point's `split` field is checked against its targets' days, so one pass covers all splits.
    check_points((p for split_points in points.values() for p in split_points), events, split)
    return points


def _check_arguments(levels: Sequence[int], ks: Sequence[int], n_context: int, max_points: int | None) -> None:
    if not levels or any(lv not in (1, 2, 3, 4, 5) for lv in levels):
        raise ConfigError(f"levels={list(levels)}: expected levels among 1-5")
    if problem := ks_problem(ks):
        raise ConfigError(problem)
    if n_context < 1:
        raise ConfigError(f"n_context={n_context}: expected >= 1 (a point needs context)")
    if max_points is not None and max_points < 1:
        raise ConfigError(f"max_points={max_points}: expected >= 1, or None for all points")


def _group(events: list[Event], levels: Sequence[int]) -> dict[tuple[str, int], _LevelEvents]:
    grouped: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for event in events:
        if event.level in levels:
            grouped[(event.participant, event.level)].append(event)
    return {key: _LevelEvents(group) for key, group in sorted(grouped.items())}


def _collect_candidates(timelines: dict[tuple[str, int], _LevelEvents], split: DaySplit,
                        ks: Sequence[int]) -> tuple[list[_Candidate], Counter]:
    candidates: list[_Candidate] = []
    dropped: Counter = Counter()
    unknown_days: set[tuple[str, str]] = set()
    for (participant, level), timeline in timelines.items():
        events = timeline.by_start
        splits = [split.get(participant, e.day) for e in events]
        unknown_days.update((participant, e.day) for e, s in zip(events, splits) if s is None)
        official = ([(e.meta or {}).get(OFFICIAL_FIELD) == "validation" for e in events]
                    if split.settings.get("strategy") == "official" else None)
        for index, first in enumerate(events):
            if not timeline.opens_point(index):
                continue
            has_context = bool(timeline.context_before(first.start, 1))
            for k in ks:
                reason = _reject_reason(splits[index:index + k], k, has_context)
                if not reason and official and splits[index] == "test" and not all(official[index:index + k]):
                    reason = "official_train_on_test_day"
                if reason:
                    dropped[f"{reason} L{level} K{k}"] += 1
                    continue
                candidates.append(_Candidate(participant, level, k, index, splits[index], first.day))
    if unknown_days:
        listed = ", ".join(f"{p}/{d}" for p, d in sorted(unknown_days)[:5])
        raise DataError(f"{len(unknown_days)} participant day(s) with events are not in the day split "
                        f"({split.settings.get('path', 'built in memory')}), e.g. {listed}; rebuild the "
                        "split for these events")
    return candidates, dropped


def _reject_reason(target_splits: list[str | None], k: int, has_context: bool) -> str | None:
    if len(target_splits) < k:
        return "too_few_targets"
    if not has_context:
        return "no_context"
    if len(set(target_splits)) > 1:
        return "straddling"
    return None


def _sample(candidates: list[_Candidate], max_points: int | None, seed: int) -> list[_Candidate]:
    if max_points is None:
        return candidates
    groups: dict[tuple[str, int, int], list[_Candidate]] = defaultdict(list)
    for candidate in candidates:
        groups[(candidate.split, candidate.level, candidate.k)].append(candidate)
    chosen: list[_Candidate] = []
    for (split_name, level, k), group in sorted(groups.items()):
        rng = random.Random(f"points:{seed}:{split_name}:L{level}:K{k}")
        chosen += _round_robin(group, max_points, rng)
    return chosen


def _round_robin(group: list[_Candidate], cap: int, rng: random.Random) -> list[_Candidate]:
    """Up to ``cap`` candidates, one per (participant, day) stratum in turn, strata in seeded order."""
    if len(group) <= cap:
        return group
    strata: dict[tuple[str, str], list[_Candidate]] = defaultdict(list)
    for candidate in group:
        strata[(candidate.participant, candidate.day)].append(candidate)
    queues = [strata[key] for key in sorted(strata)]
    rng.shuffle(queues)
    for queue in queues:
        rng.shuffle(queue)
    chosen: list[_Candidate] = []
    while len(chosen) < cap:
        for queue in queues:
            if queue and len(chosen) < cap:
                chosen.append(queue.pop())
    return chosen


def format_t0(t0: float) -> str:
    """Shortest exact text of a time in seconds, for ids (distinct floats give distinct texts)."""
    return str(int(t0)) if float(t0).is_integer() else repr(float(t0))


def _make_point(candidate: _Candidate, timeline: _LevelEvents, n_context: int,
                source: str | None) -> ForecastPoint:
    targets = timeline.by_start[candidate.index:candidate.index + candidate.k]
    t0 = targets[0].start
    source = source or targets[0].source or "events"
    return ForecastPoint(
        id=f"{source}/{candidate.participant}/L{candidate.level}/K{candidate.k}/{format_t0(t0)}",
        source=source,
        participant=candidate.participant,
        level=candidate.level,
        k=candidate.k,
        t0=t0,
        context=[context_view(e) for e in timeline.context_before(t0, n_context)],
        targets=[e.text for e in targets],
        windows=[[e.start, e.end] for e in targets],
        day=targets[0].day,
        split=candidate.split,
        meta={"target_ids": [e.id for e in targets], "target_days": [e.day for e in targets],
              "n_context": n_context},
    )


def check_splits_filled(points: dict[str, list[ForecastPoint]], split: DaySplit, *,
                        allow_empty: bool = False) -> list[str]:
    """Refuses (DataError) a split that was asked for but holds no point, with the days and points per
    split and the days a participant needs; with ``allow_empty`` the same text is logged as a warning
    and returned, so a report can carry it. A split drawn with fraction 0 was not asked for."""
    wanted = [s for s in SPLITS if s == "train" or split.settings.get(f"{s}_frac", 1) != 0]
    empty = [s for s in wanted if not points.get(s)]
    if not empty:
        return []
    days = split.counts()
    listed = ", ".join(f"{s} {days[s]} day(s) / {len(points.get(s, []))} point(s)" for s in SPLITS)
    if all(days[s] for s in empty):  # the days are there, but no candidate on them became a point
        advice = ("Their days hold no complete point (K targets on one day, with context before them): "
                  "lower --k or record longer days")
    else:
        advice = _days_needed(split, wanted)
    message = f"no {' and no '.join(empty)} points ({listed}). {advice}"
    if not allow_empty:
        raise DataError(f"{message}; or pass --allow-empty-splits to write the empty split(s) anyway")
    log.warning("%s (written anyway: --allow-empty-splits)", message)
    return [message]


def _days_needed(split: DaySplit, wanted: list[str]) -> str:
    """What it takes for every wanted split to hold a day: the history days plus one day per held-out split."""
    history = split.settings.get("min_history_days")
    if history is None:  # a split file made elsewhere: only the day counts are known
        return "Each split needs days of its own with events; build the split for more days"
    needed = history + len(wanted) - 1
    most = max((len(days) for days in split.days.values()), default=0)
    return (f"With min_history_days={history} a participant needs at least {needed} recorded days "
            f"({history} history + one per held-out split) for a point in every split; the participant with "
            f"the most days has {most}. Use more days, or fewer history days (points --min-history-days)")


def count_points(points: dict[str, list[ForecastPoint]]) -> dict[tuple[str, int, int], int]:
    """Number of points per (split, level, K)."""
    return dict(Counter((s, p.level, p.k) for s, split_points in points.items() for p in split_points))
