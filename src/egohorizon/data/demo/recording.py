"""Which parts of a simulated day the glasses record: days off, sessions and the gaps between them.

NextMe-800 records 126 calendar days, 18 of them with no recording at all, 4.9 sessions per recorded
day and about 6.3 hours a day, from shortly after waking until bedtime, pausing for charging or for
activities that do not suit the glasses. The same here: a day goes unrecorded with probability
``P_DAY_OFF``; otherwise the glasses switch on and off at activity (level-4) boundaries, a session
lasting a random time near ``SESSION_MEDIAN_MIN`` and a pause near ``GAP_MEDIAN_MIN``; private
activities (a shower) always pause recording.

Sessions start and end at level-4 boundaries, so levels 1-4 are never cut by a pause. An episode
(level 5) that a pause cuts gets one level-5 event per session (see ``build.py``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from egohorizon.data.demo.simulate import Node

P_DAY_OFF = 18 / 126  # NextMe-800's share of calendar days without any recording
P_ON_AT_WAKE = 0.7
SESSION_MEDIAN_MIN = 62.0
SESSION_SIGMA = 0.5
GAP_MEDIAN_MIN = 68.0
GAP_SIGMA = 0.7
P_RESUME_AFTER_PRIVATE = 0.4  # after a shower, the glasses often go straight back on
MIN_SESSION_S = 300  # nobody switches the glasses on for a minute: shorter stretches go unrecorded


@dataclass
class Session:
    """A recorded stretch of a day: consecutive level-4 activities, each with its episode."""

    parts: list[tuple[Node, Node]] = field(default_factory=list)  # (episode, activity)

    @property
    def start(self) -> int:
        return self.parts[0][1].start

    @property
    def end(self) -> int:
        return self.parts[-1][1].end


def _minutes(rng: random.Random, median: float, sigma: float) -> float:
    return 60.0 * median * math.exp(rng.gauss(0, sigma))


def days_off(rng: random.Random, n_days: int) -> set[int]:
    """Indices of the days without any recording."""
    return {index for index in range(n_days) if rng.random() < P_DAY_OFF}


def choose_sessions(episodes: list[Node], rng: random.Random) -> list[Session]:
    """The sessions recorded on a day whose timeline is ``episodes``."""
    sessions: list[Session] = []
    current: Session | None = None
    on = rng.random() < P_ON_AT_WAKE
    target = _minutes(rng, SESSION_MEDIAN_MIN, SESSION_SIGMA)
    off_left = 0.0 if on else _minutes(rng, GAP_MEDIAN_MIN, GAP_SIGMA) * rng.random()
    elapsed = 0.0
    for episode in episodes:
        for activity in episode.children:
            duration = activity.end - activity.start
            if activity.private:
                current, on = None, False  # the pause ends the session
                off_left = 0.0 if rng.random() < P_RESUME_AFTER_PRIVATE else _minutes(rng, GAP_MEDIAN_MIN, GAP_SIGMA)
                continue
            if not on and off_left <= 0:
                on, elapsed, target = True, 0.0, _minutes(rng, SESSION_MEDIAN_MIN, SESSION_SIGMA)
            if not on:
                off_left -= duration
                continue
            if current is None:
                current = Session()
                sessions.append(current)
            current.parts.append((episode, activity))
            elapsed += duration
            if elapsed >= target:
                current, on = None, False
                off_left = _minutes(rng, GAP_MEDIAN_MIN, GAP_SIGMA)
    return [s for s in sessions if s.end - s.start >= MIN_SESSION_S]
