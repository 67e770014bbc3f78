"""How a time is written in text a person or a model reads: the clock formats, in one place.

Every time shown is a Unix time read on the UTC clock (the demo world's people live on UTC clock time,
docs/demo-world.md). One format per use, so two places that show the same kind of time cannot drift:

- ``minute_clock``: ``14:05``, the abstractor's runs of events (minutes apart);
- ``second_clock``: ``14:05:09``, the visual forecaster's frames (seconds apart);
- ``day_clock``: ``Tue 11 Mar 14:05``, QA questions, options, frames and memory notes (weeks apart).

Standard library only: the lowest floors (data/, prompts/) import it.
"""

from __future__ import annotations

from datetime import UTC, datetime


def _utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def minute_clock(t: float) -> str:
    """``14:05``: hours and minutes of the Unix time ``t`` (UTC)."""
    return _utc(t).strftime("%H:%M")


def second_clock(t: float) -> str:
    """``14:05:09``: hours, minutes and seconds of the Unix time ``t`` (UTC)."""
    return _utc(t).strftime("%H:%M:%S")


def day_clock(t: float) -> str:
    """``Tue 11 Mar 14:05``: weekday, day, month and time of the Unix time ``t`` (UTC)."""
    return _utc(t).strftime("%a %d %b %H:%M")
