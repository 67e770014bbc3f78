"""Held-out-day splits (SPEC §2): every (participant, calendar day) belongs to exactly one split.

A forecast point takes its split from the days of its targets, so "no day contributes targets to two
splits" holds by construction: a day has one split, and a point whose targets fall on days of
different splits is not made (``egohorizon.data.points.build``).

How days are chosen, per participant (days ordered by their first event):
- the first ``min_history_days`` days always stay in ``train``, so held-out points have history;
- ``n_test = round(test_frac * n_days)`` and ``n_val = round(val_frac * n_days)``, at least 1 each when
  the fraction is > 0, capped by the days left after the history days (test is served first);
- ``strategy="random"`` (default): the eligible days are cut into ``n_test + n_val`` consecutive runs
  and one day is drawn from each run (so held-out days spread over the whole period), then the drawn
  days are shuffled into test and val; seeded per participant, so adding a participant does not move
  another participant's days;
- ``strategy="last"``: the final ``n_test`` days are test and the ``n_val`` days before them val (a
  forecasting-style split: nothing of a held-out day is ever seen as context by a train point).
- ``strategy="official"``: a data set's own split, for comparison with published results. Converters of
  data sets that have one write it into every event's ``meta.official_split`` ("train" or
  "validation"; EPIC-KITCHENS-100). Every day holding a "validation" event is test -- a whole day,
  since a day is never split: the official-train events sharing such a day go with it (counted in
  the settings; the point builder makes no target of them), and no official-validation event is ever
  a train or val target -- and val is drawn as by ``random`` among the other days (``val_frac``;
  ``test_frac`` is not used).
- explicit ``val_days`` / ``test_days`` ({participant: [day, ...]}) replace the drawing for the
  participants they name.

A day is the event's ``day`` field (the calendar day of its recording, SPEC §5), not a date computed
from its timestamps: an event that runs past midnight belongs to the day its recording started. Data
sets without dates give each recording a placeholder day of its own ("undated-P01_101", SPEC §5):
there a held-out "day" is one held-out video, and ``DaySplit.unit_counts`` says which is which.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError, DataError
from egohorizon.schema import Event

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
STRATEGIES = ("random", "last", "official")
SPLIT_FILE_VERSION = 1
OFFICIAL_FIELD = "official_split"  # event.meta key of a data set's own split (strategy="official")
OFFICIAL_VALUES = ("train", "validation")
_CALENDAR_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")  # anything else is a placeholder day (schema.record)


def is_placeholder_day(day: str) -> bool:
    """A day label that stands for one undated recording (real date unknown), not a calendar day."""
    return not _CALENDAR_DAY.match(day)


@dataclass
class DaySplit:
    """participant -> day -> split name, plus how it was made (saved as ``splits.json``)."""

    days: dict[str, dict[str, str]]
    settings: dict[str, Any] = field(default_factory=dict)

    def split_of(self, participant: str, day: str) -> str:
        """The split of one participant's day; a day the split does not know is an error."""
        split = self.get(participant, day)
        if split is None:
            raise DataError(f"participant {participant!r} day {day!r} is not in the day split "
                            f"({self.settings.get('path', 'built in memory')}); rebuild the split for "
                            "these events")
        return split

    def get(self, participant: str, day: str) -> str | None:
        return self.days.get(participant, {}).get(day)

    def days_in(self, split: str) -> set[tuple[str, str]]:
        """All (participant, day) pairs of one split."""
        return {(p, d) for p, days in self.days.items() for d, s in days.items() if s == split}

    def counts(self) -> dict[str, int]:
        """Number of (participant, day) pairs per split."""
        return {split: len(self.days_in(split)) for split in SPLITS}

    def unit_counts(self) -> dict[str, dict[str, int]]:
        """Per split, how many of its (participant, day) pairs are calendar days and how many are
        placeholder days, each of which is one undated video (real date unknown)."""
        out = {}
        for split in SPLITS:
            days = self.days_in(split)
            undated = sum(1 for _, day in days if is_placeholder_day(day))
            out[split] = {"days": len(days) - undated, "undated_videos": undated}
        return out

    def to_dict(self) -> dict[str, Any]:
        participants = {}
        for participant in sorted(self.days):
            by_split: dict[str, list[str]] = {s: [] for s in SPLITS}
            for day, split in self.days[participant].items():
                by_split[split].append(day)
            participants[participant] = {s: sorted(d) for s, d in by_split.items()}
        settings = {k: v for k, v in self.settings.items() if k != "path"}
        return {"version": SPLIT_FILE_VERSION, "settings": settings, "participants": participants}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> DaySplit:
        path = Path(path)
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DataError(f"{path}: split file not found") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise DataError(f"{path}: not a JSON split file ({error})") from None
        return cls.from_dict(obj, source=str(path))

    @classmethod
    def from_dict(cls, obj: Any, source: str = "split") -> DaySplit:
        if not isinstance(obj, dict) or not isinstance(obj.get("participants"), dict):
            raise DataError(f"{source}: field 'participants': expected an object "
                            "{participant: {train: [...], val: [...], test: [...]}}")
        days: dict[str, dict[str, str]] = {}
        for participant, by_split in obj["participants"].items():
            where = f"{source}: field 'participants.{participant}'"
            if not isinstance(by_split, dict) or set(by_split) - set(SPLITS):
                raise DataError(f"{where}: expected an object with keys among {list(SPLITS)}")
            days[participant] = {}
            for split, split_days in by_split.items():
                if not isinstance(split_days, list) or not all(isinstance(d, str) for d in split_days):
                    raise DataError(f"{where}.{split}: expected a list of day strings")
                for day in split_days:
                    if day in days[participant]:
                        raise DataError(f"{where}: day {day!r} is in both {days[participant][day]!r} "
                                        f"and {split!r}; a day may belong to one split only")
                    days[participant][day] = split
        settings = dict(obj.get("settings") or {})
        settings["path"] = source
        return cls(days=days, settings=settings)


def participant_days(events: Iterable[Event]) -> dict[str, list[str]]:
    """Each participant's days, ordered by the earliest event start on the day."""
    first_start: dict[str, dict[str, float]] = defaultdict(dict)
    for event in events:
        if not event.day:
            raise DataError(f"event {event.id!r} (participant {event.participant!r}) has an empty 'day': "
                            "held-out-day splits need the calendar day of every event")
        known = first_start[event.participant].get(event.day)
        if known is None or event.start < known:
            first_start[event.participant][event.day] = event.start
    return {p: sorted(days, key=lambda d: (days[d], d)) for p, days in sorted(first_start.items())}


def make_day_split(
    events: Iterable[Event],
    val_frac: float = 0.15,
    test_frac: float = 0.15,
    seed: int = 0,
    strategy: str = "random",
    min_history_days: int = 3,
    *,
    val_days: Mapping[str, Iterable[str]] | None = None,
    test_days: Mapping[str, Iterable[str]] | None = None,
) -> DaySplit:
    """Assigns every (participant, day) of ``events`` to train, val or test (rules in the module doc)."""
    _check_settings(val_frac, test_frac, strategy, min_history_days)
    events = list(events)
    days_by_participant = participant_days(events)
    explicit = _explicit_days(days_by_participant, val_days or {}, test_days or {})
    official, official_counts = _official_test_days(events) if strategy == "official" else ({}, {})
    days: dict[str, dict[str, str]] = {}
    for participant, ordered in days_by_participant.items():
        if participant in explicit:
            days[participant] = {d: explicit[participant].get(d, "train") for d in ordered}
            continue
        if strategy == "official":  # test is given; val is drawn from the other days, as by "random"
            fixed = official.get(participant, set())
            free = [d for d in ordered if d not in fixed]
            held_out = _draw_held_out(free, participant, val_frac, 0.0, seed, "random", min_history_days)
            held_out.update({d: "test" for d in fixed})
        else:
            held_out = _draw_held_out(ordered, participant, val_frac, test_frac, seed, strategy,
                                      min_history_days)
        days[participant] = {d: held_out.get(d, "train") for d in ordered}
    settings = {"val_frac": val_frac, "test_frac": test_frac, "seed": seed, "strategy": strategy,
                "min_history_days": min_history_days, "explicit_participants": sorted(explicit)}
    if strategy == "official":
        settings.update(test_frac=None, official=official_counts)
    split = DaySplit(days=days, settings=settings)
    log.info("day split: %s (participant-days per split)", split.counts())
    return split


def _check_settings(val_frac: float, test_frac: float, strategy: str, min_history_days: int) -> None:
    if not (0 <= val_frac < 1 and 0 <= test_frac < 1 and val_frac + test_frac < 1):
        raise ConfigError(f"val_frac={val_frac}, test_frac={test_frac}: expected fractions >= 0 "
                          "that sum to less than 1")
    if strategy not in STRATEGIES:
        raise ConfigError(f"strategy={strategy!r}: expected one of {list(STRATEGIES)}")
    if min_history_days < 0:
        raise ConfigError(f"min_history_days={min_history_days}: expected >= 0")


def _official_test_days(events: list[Event]) -> tuple[dict[str, set[str]], dict[str, int]]:
    """The days holding an official-validation event, per participant, and what they hold."""
    by_day: dict[tuple[str, str], set[str]] = defaultdict(set)
    for event in events:
        value = (event.meta or {}).get(OFFICIAL_FIELD)
        if value not in OFFICIAL_VALUES:
            unmarked = sum(1 for e in events if (e.meta or {}).get(OFFICIAL_FIELD) not in OFFICIAL_VALUES)
            raise ConfigError(
                f"split strategy 'official': event {event.id!r} has meta.{OFFICIAL_FIELD}={value!r}, expected "
                f"one of {list(OFFICIAL_VALUES)} ({unmarked} of {len(events)} events lack it); only "
                "conversions of data sets with their own split write it (egohorizon data convert "
                "epic-kitchens, with EPIC_100_validation.csv under --root)")
        by_day[(event.participant, event.day)].add(value)
    test_days: dict[str, set[str]] = defaultdict(set)
    for (participant, day), values in by_day.items():
        if "validation" in values:
            test_days[participant].add(day)
    if not test_days:
        raise ConfigError(f"split strategy 'official': none of the {len(events)} events is in the official "
                          "validation set, so test would be empty (was EPIC_100_validation.csv under the "
                          "conversion's --root?)")
    on_test = [e for e in events if e.day in test_days.get(e.participant, ())]
    counts = {"test_days": sum(len(d) for d in test_days.values()),
              "validation_events": sum(1 for e in on_test if e.meta[OFFICIAL_FIELD] == "validation"),
              "train_events_on_test_days": sum(1 for e in on_test if e.meta[OFFICIAL_FIELD] == "train")}
    if counts["train_events_on_test_days"]:
        log.info("split strategy 'official': %d official-train events share a day with official-validation "
                 "events and are test with them (a day is never split)", counts["train_events_on_test_days"])
    return dict(test_days), counts


def _held_out_counts(n_days: int, eligible: int, val_frac: float, test_frac: float) -> tuple[int, int]:
    def count(frac: float) -> int:
        return max(1, int(frac * n_days + 0.5)) if frac > 0 else 0  # round half up, at least one

    n_test = min(count(test_frac), eligible)
    n_val = min(count(val_frac), eligible - n_test)
    return n_test, n_val


def _draw_held_out(ordered: list[str], participant: str, val_frac: float, test_frac: float, seed: int,
                   strategy: str, min_history_days: int) -> dict[str, str]:
    eligible = ordered[min_history_days:]
    n_test, n_val = _held_out_counts(len(ordered), len(eligible), val_frac, test_frac)
    if n_test + n_val == 0:
        return {}
    if strategy == "last":
        tail = eligible[len(eligible) - n_test - n_val:]
        return {**{d: "val" for d in tail[:n_val]}, **{d: "test" for d in tail[n_val:]}}
    # A string seed is hashed with SHA-512 by random.Random, so it is stable across processes.
    rng = random.Random(f"day-split:{seed}:{participant}")
    n_held = n_test + n_val
    runs = [eligible[i * len(eligible) // n_held:(i + 1) * len(eligible) // n_held] for i in range(n_held)]
    drawn = [rng.choice(run) for run in runs]
    rng.shuffle(drawn)
    return {**{d: "test" for d in drawn[:n_test]}, **{d: "val" for d in drawn[n_test:]}}


def _explicit_days(days_by_participant: dict[str, list[str]], val_days: Mapping[str, Iterable[str]],
                   test_days: Mapping[str, Iterable[str]]) -> dict[str, dict[str, str]]:
    explicit: dict[str, dict[str, str]] = defaultdict(dict)
    for split, given in (("val", val_days), ("test", test_days)):
        for participant, chosen in given.items():
            known = set(days_by_participant.get(participant, ()))
            for day in chosen:
                if day not in known:
                    raise ConfigError(f"{split} day {day!r} of participant {participant!r} has no events")
                if explicit[participant].get(day, split) != split:
                    raise ConfigError(f"day {day!r} of participant {participant!r} is listed as both val "
                                      "and test")
                explicit[participant][day] = split
    return dict(explicit)
