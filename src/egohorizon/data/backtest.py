"""The rolling backtest's window of days (issue 38, item 5): one run per d, each participant's own days.

Each participant's recorded days are counted in the order of their first event (``participant_days``).
For a run at ``d``:
- days 1..d-1 are ``train`` (the model's training points and the habit baselines' history, SPEC §1);
- day d, the last day of the past, is ``val``: it chooses the checkpoint. It is taken out of the
  training days rather than shared with them because SPEC §2 lets no day give targets to two splits,
  and a validation day the model trained on would rank checkpoints by how well they memorise;
- day d + 1 is ``test``;
- every event of day d + 2 and later is **dropped before anything is built**, and day d + 1 is a test
  day only, so nothing at or after the test day reaches training, validation or the baselines; test
  points' contexts reach back into days 1..d as SPEC §2 allows.
So d counts the days of a person's past at the test day, of which d - 1 train the model; d >= 2.
A participant with fewer than d + 1 recorded days has no test day at d and is left out of that run
(named in the split's settings), so the people behind the curve change with d; ``min_days`` fixes the
cohort (only participants with at least that many days, in every run), so a change along d is the same
people's past growing. Undated recordings (placeholder days, ``splits.is_placeholder_day``) are
dropped: without a date they have no place in the order of a person's days.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from egohorizon.data.splits import DaySplit, is_placeholder_day, participant_days
from egohorizon.errors import ConfigError, DataError
from egohorizon.schema import Event

log = logging.getLogger(__name__)

STRATEGY = "backtest"


def backtest_window(events: Iterable[Event], day: int, min_days: int | None = None
                    ) -> tuple[list[Event], DaySplit]:
    """The events of each participant's first ``day + 1`` dated days and their day split (module doc)."""
    _check(day, min_days)
    events = list(events)
    dated = [e for e in events if not is_placeholder_day(e.day)]
    ordered = participant_days(dated)
    need = max(day + 1, min_days or 0)
    kept = {p: days[: day + 1] for p, days in ordered.items() if len(days) >= need}
    if not kept:
        most = max((len(days) for days in ordered.values()), default=0)
        raise ConfigError(f"data.backtest_day={day}, data.backtest_min_days={min_days}: no participant has "
                          f"{need} recorded (dated) days (the most any has is {most})")
    left_out = sorted(set(ordered) - set(kept))
    if left_out:
        log.info("backtest d=%d: %d participant(s) with fewer than %d dated days left out: %s", day,
                 len(left_out), need, ", ".join(left_out))
    days = {p: {d: _split_of(i, day) for i, d in enumerate(chosen, start=1)} for p, chosen in kept.items()}
    window = [e for e in events if e.day in days.get(e.participant, {})]
    settings = {"strategy": STRATEGY, "backtest_day": day, "min_days": min_days, "participants_left_out": left_out,
                "dropped_events": len(events) - len(window), "undated_events": len(events) - len(dated)}
    return window, DaySplit(days=days, settings=settings)


def _check(day: int, min_days: int | None) -> None:
    if isinstance(day, bool) or not isinstance(day, int) or day < 2:
        raise ConfigError(f"data.backtest_day={day!r}: expected a whole number >= 2 (day d validates, "
                          "days 1..d-1 train, day d + 1 is the test day)")
    if min_days is not None and (isinstance(min_days, bool) or not isinstance(min_days, int) or min_days < 3):
        raise ConfigError(f"data.backtest_min_days={min_days!r}: expected null or a whole number >= 3")


def _split_of(index: int, day: int) -> str:
    return "train" if index < day else ("val" if index == day else "test")


def window_for_split(events: list[Event], split: DaySplit) -> list[Event]:
    """The events a given split was made from: a backtest run's split (eval.py's ``ckpt=`` passes the run's
    own) gets its window again, so the later days it dropped stay dropped; any other split, ``events``."""
    if split.settings.get("strategy") != STRATEGY:
        return events
    window, again = backtest_window(events, split.settings.get("backtest_day"), split.settings.get("min_days"))
    if again.days != split.days:
        raise DataError(f"{split.settings.get('path', 'split')}: field 'participants': the backtest split at "
                        f"d={split.settings.get('backtest_day')} does not fit these events (were they changed "
                        "since the run?)")
    return window
