"""A small, hand-built event timeline for the forecasting tests (seconds to build, no demo world).

Two participants, 14 days each (one day skipped), a fixed daily routine of level-3 events with
seeded variation in wording, durations, gaps and skipped steps: enough for a held-out-day split with
three days of minimum history, and a next event that is predictable from the previous one.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from egohorizon.schema import Event, write_jsonl

ROUTINE = [
    ["have breakfast", "eat breakfast in the kitchen"],
    ["ride the bike to work", "commute to the office"],
    ["write code at my desk", "work on the laptop"],
    ["have lunch with colleagues", "eat lunch at the cafeteria"],
    ["go to the gym", "work out at the gym"],
    ["cook dinner", "make dinner in the kitchen"],
    ["play the guitar", "practice guitar in the living room"],
    ["wash the dishes", "clean up the kitchen"],
    ["call my family", "talk to my parents on the phone"],
    ["read a book on the sofa", "read a novel"],
    ["watch a movie", "watch a film on the laptop"],
    ["brush my teeth", "get ready for bed"],
]


def toy_events(participants: int = 2, days: int = 14, seed: int = 0) -> list[Event]:
    rng = random.Random(seed)
    events = []
    for p in range(participants):
        participant = f"p{p + 1}"
        for d in range(days):
            if d == 5:
                continue  # a day without recordings
            day = datetime(2024, 3, 4, 7, tzinfo=UTC) + timedelta(days=d)
            t = day.timestamp() + rng.randint(0, 1800)
            session = 0
            for step, wordings in enumerate(ROUTINE):
                if step and rng.random() < 0.15:
                    continue  # a skipped step keeps the sequence from being perfectly periodic
                duration = rng.randint(600, 2400)
                events.append(
                    Event(
                        id=f"{participant}-{d:02d}-{step}",
                        participant=participant,
                        day=day.strftime("%Y-%m-%d"),
                        session=f"{participant}-{d:02d}-s{session}",
                        level=3,
                        start=t,
                        end=t + duration,
                        text=rng.choice(wordings),
                        source="toy",
                    )
                )
                t += duration + rng.choice([0, 120, 1200])
                if rng.random() < 0.2:
                    session += 1
    return events


def write_toy_events(folder: Path, **kwargs) -> Path:
    path = Path(folder) / "events.jsonl"
    write_jsonl(path, toy_events(**kwargs))
    return path
