"""The habit baselines of SPEC §1: a person's own past, learned from the run's training days only.

``learn_habits(events, train_days)`` tallies the events of the training (participant, day) pairs per
(source, participant, level) and per (source, level) for everyone; ``habit_predictions(name, points,
history)`` answers every point with the named baseline's candidates:

- ``frequency`` (1 candidate): the first K texts of the frequency order (count desc, last start desc,
  text order);
- ``markov`` (3 candidates): each candidate starts with one text of the start list (the successor
  order of the context's last text, then the frequency order) and follows first successors, falling
  back to the first frequency-order text not yet in the candidate;
- ``time_of_day`` (1 candidate): slot i gets the text most often started within 30 min (clock time,
  across midnight) of window i's start, among events with a known clock time; no such event: the first
  text of the frequency order, counted ``no_clock`` (one count per slot);
- ``frequency_all``, ``markov_all``: the same over every participant's training events.

A point whose participant (for ``_all``: nobody) has training events of its source and level gets no
candidate and is counted ``no_history``. Plain data in, plain data out: no torch, no embedder.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Any

import numpy as np

from egohorizon.schema import Event, ForecastPoint
from egohorizon.schema.events import LOCAL_CLOCK_AS_UTC

PERSONAL = ("frequency", "markov", "time_of_day")
POPULATION = ("frequency_all", "markov_all")
HABIT_PREDICTORS = PERSONAL + POPULATION
# The rivals the trained model's paired difference is taken to (the strongest on validation days).
STRONGEST_AMONG = ("repeat_last", "frequency", "markov", "time_of_day")
DAY_S = 86_400.0
CLOCK_WINDOW_S = 1_800.0
MARKOV_CANDIDATES = 3


@dataclass
class Habits:
    """The tallies of one group of training events (one participant's or everyone's, one source and
    level): texts' counts and latest starts, transitions within a day, clock-known starts."""

    count: Counter = field(default_factory=Counter)
    last: dict[str, float] = field(default_factory=dict)
    successors: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    successor_last: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    clock: list[tuple[float, float, str]] = field(default_factory=list)  # (clock s, Unix start, text)

    def add_day(self, day_events: Sequence[Event]) -> None:
        """One participant's events of one training day (any order): counts, transitions, clock times."""
        ordered = sorted(day_events, key=lambda e: (e.start, e.end, e.id))
        for event in ordered:
            self.count[event.text] += 1
            self.last[event.text] = max(self.last.get(event.text, event.start), event.start)
            if clock_time_known(event):
                self.clock.append((event.start % DAY_S, event.start, event.text))
        for before, after in pairwise(ordered):
            self.successors[before.text][after.text] += 1
            latest = self.successor_last[before.text].get(after.text, after.start)
            self.successor_last[before.text][after.text] = max(latest, after.start)

    @cached_property
    def frequency_order(self) -> list[str]:
        return sorted(self.count, key=lambda t: (-self.count[t], -self.last[t], t))

    def successor_order(self, text: str | None) -> list[str]:
        following = self.successors.get(text) if text is not None else None
        if not following:
            return []
        latest = self.successor_last[text]
        return sorted(following, key=lambda y: (-following[y], -latest[y], y))

    @cached_property
    def _clock_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        texts = sorted({t for _, _, t in self.clock})
        index = {t: i for i, t in enumerate(texts)}
        clocks = np.array([c for c, _, _ in self.clock], dtype=np.float64)
        starts = np.array([s for _, s, _ in self.clock], dtype=np.float64)
        ids = np.array([index[t] for _, _, t in self.clock], dtype=np.int64)
        return clocks, starts, ids, texts

    def clock_text(self, at: float) -> str | None:
        """The text started most often within 30 min (clock time, across midnight) of ``at``'s clock
        time; ties by the latest Unix start among those events, then text order. None if no event."""
        clocks, starts, ids, texts = self._clock_arrays
        if not texts:
            return None
        distance = np.abs(clocks - at % DAY_S)
        inside = np.minimum(distance, DAY_S - distance) <= CLOCK_WINDOW_S
        if not inside.any():
            return None
        counts = np.bincount(ids[inside], minlength=len(texts))
        latest = np.full(len(texts), -np.inf)
        np.maximum.at(latest, ids[inside], starts[inside])
        present = np.flatnonzero(counts)
        best = min(present, key=lambda i: (-counts[i], -latest[i], texts[i]))
        return texts[best]


def clock_time_known(event: Event) -> bool:
    """SPEC §1: an event's clock time counts unless its ``meta.time_basis`` is present and not
    ``local_clock_as_utc`` (e.g. seconds since a first recording) or its meta says
    ``clock_time_known: false`` (a date without a time, EPIC-55's 00:00:00 videos)."""
    basis = event.meta.get("time_basis")
    if basis is not None and basis != LOCAL_CLOCK_AS_UTC:
        return False
    return event.meta.get("clock_time_known") is not False


@dataclass
class HabitHistory:
    """Habits per (source, participant, level) and, for the population rows, per (source, level)."""

    personal: dict[tuple[str, str, int], Habits]
    population: dict[tuple[str, int], Habits]
    n_train_events: int = 0

    def habits_for(self, point: ForecastPoint, population: bool = False) -> Habits | None:
        if population:
            return self.population.get((point.source, point.level))
        return self.personal.get((point.source, point.participant, point.level))


def learn_habits(events: Iterable[Event], train_days: Iterable[tuple[str, str]],
                 source: str | None = None) -> HabitHistory:
    """The habits of the events on ``train_days`` ((participant, day) pairs: a split's ``train``
    days); every other event is ignored. ``source``: the name the points were built under (the
    datamodule's ``source``), else each event's own ``source``, else "events" (as the point builder)."""
    allowed = set(train_days)
    by_day: dict[tuple[str, str, int, str], list[Event]] = defaultdict(list)
    for event in events:
        if (event.participant, event.day) in allowed:
            by_day[(source or event.source or "events", event.participant, event.level, event.day)].append(event)
    personal: dict[tuple[str, str, int], Habits] = defaultdict(Habits)
    population: dict[tuple[str, int], Habits] = defaultdict(Habits)
    for (src, participant, level, _), day_events in sorted(by_day.items()):
        personal[(src, participant, level)].add_day(day_events)
        population[(src, level)].add_day(day_events)  # transitions stay within one person's day
    return HabitHistory(dict(personal), dict(population), sum(len(v) for v in by_day.values()))


def frequency_candidates(habits: Habits, k: int) -> list[list[str]]:
    return [habits.frequency_order[:k]]


def markov_candidates(habits: Habits, last_text: str | None, k: int) -> list[list[str]]:
    """Up to 3 candidates of K events each (SPEC §1's ``markov``)."""
    following = habits.successor_order(last_text)
    starts = following + [t for t in habits.frequency_order if t not in set(following)]
    candidates = []
    for first in starts[:MARKOV_CANDIDATES]:
        candidate = [first]
        while len(candidate) < k:
            after = habits.successor_order(candidate[-1])
            if after:
                candidate.append(after[0])
            else:
                unused = [t for t in habits.frequency_order if t not in candidate]
                candidate.append(unused[0] if unused else habits.frequency_order[0])
        candidates.append(candidate)
    return candidates


def time_of_day_candidates(habits: Habits, windows: Sequence[Sequence[float]]) -> tuple[list[list[str]], int]:
    """One candidate, a text per target window; and how many slots fell back (``no_clock``)."""
    slots, fallbacks = [], 0
    for start, _ in windows:
        text = habits.clock_text(start)
        if text is None:
            text, fallbacks = habits.frequency_order[0], fallbacks + 1
        slots.append(text)
    return [slots], fallbacks


def habit_predictions(name: str, points: Sequence[ForecastPoint], history: HabitHistory
                      ) -> tuple[dict[str, list[list[str]] | None], dict[str, int]]:
    """The named baseline's candidates for every point (None: no history), and its counts
    ``{"no_history": points without training events, "no_clock": time_of_day slots that fell back}``."""
    if name not in HABIT_PREDICTORS:
        raise ValueError(f"habit baseline: unknown {name!r}; known: {list(HABIT_PREDICTORS)}")
    base = name.removesuffix("_all")
    out: dict[str, list[list[str]] | None] = {}
    counts = {"no_history": 0, "no_clock": 0}
    for point in points:
        habits = history.habits_for(point, population=name.endswith("_all"))
        if habits is None or not habits.count:
            out[point.id] = None
            counts["no_history"] += 1
        elif base == "frequency":
            out[point.id] = frequency_candidates(habits, point.k)
        elif base == "markov":
            last = point.context[-1]["text"] if point.context else None
            out[point.id] = markov_candidates(habits, last, point.k)
        else:
            out[point.id], fallbacks = time_of_day_candidates(habits, point.windows)
            counts["no_clock"] += fallbacks
    return out, counts


def history_summary(history: HabitHistory) -> dict[str, Any]:
    """What the habits were learned from, for reports."""
    return {"train_events": history.n_train_events, "participants": len({p for _, p, _ in history.personal})}
