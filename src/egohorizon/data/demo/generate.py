"""Simulate the whole demo world in memory: personas -> days -> recorded sessions -> records."""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from pathlib import Path
from typing import Any

from egohorizon.data.demo import vocab  # noqa: F401  (registers and checks every act)
from egohorizon.data.demo.build import Records, add_day
from egohorizon.data.demo.personas import make_persona
from egohorizon.data.demo.recording import choose_sessions, days_off
from egohorizon.data.demo.simulate import simulate_person

# Bump when the generator's output changes for the same arguments. ensure_demo_world also compares
# a digest of this package's code, so a world made by other code is regenerated even if one forgets.
GENERATOR_VERSION = "2"
START_DATE = dt.date(2025, 3, 3)  # a Monday
TIME_BASE = "unix seconds, UTC"


# Modules and subpackages of this package that do not change what is written (frames are rendered on demand;
# the QA generator and the hand clips read a finished world; the cues are checked by their own settings,
# cues.switches.settings), so editing them leaves existing worlds valid. The vocab/ subpackage is output.
_NOT_OUTPUT = {"__init__.py", "world.py", "writer.py", "summary.py", "learnability.py", "samples.py", "render.py",
               "qa", "hands", "cues"}


def output_sources() -> list[str]:
    """The source files that decide the generated files, relative to this package (vocab/ included)."""
    root = Path(__file__).parent
    names = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    return [name for name in names if name not in _NOT_OUTPUT and name.split("/")[0] not in _NOT_OUTPUT]


def code_digest() -> str:
    """A short hash of ``output_sources``: their names and contents."""
    root = Path(__file__).parent
    digest = hashlib.sha1()
    for name in output_sources():
        digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    return digest.hexdigest()[:12]


def participant_id(index: int) -> str:
    return f"p{index + 1:02d}"


def simulate_world(seed: int = 0, participants: int = 2, weeks: int = 6,
                   start: dt.date = START_DATE) -> tuple[Records, dict[str, Any]]:
    """The records of the world and its metadata (what ``world.json`` holds)."""
    if participants < 1 or weeks < 1:
        raise ValueError(f"need at least one participant and one week, got {participants} and {weeks}")
    records = Records()
    people = []
    n_days = 7 * weeks
    for index in range(participants):
        persona = make_persona(index, start)
        pid = participant_id(index)
        off = days_off(random.Random(f"{seed}:{pid}:days-off"), n_days)
        days = simulate_person(persona, seed, pid, start, n_days, skip=off)
        for offset, episodes in days.items():
            date = start + dt.timedelta(days=offset)
            sessions = choose_sessions(episodes, random.Random(f"{seed}:{pid}:{date.isoformat()}:recording"))
            add_day(records, pid, date, sessions)
        people.append({"id": pid, "name": persona.name, "persona": persona.key, "description": persona.description})
    meta = {
        "generator": "egohorizon.data.demo",
        "version": GENERATOR_VERSION,
        "code": code_digest(),
        "seed": seed,
        "weeks": weeks,
        "start_date": start.isoformat(),
        "end_date": (start + dt.timedelta(days=n_days - 1)).isoformat(),
        "calendar_days": n_days,
        "participants": people,
        "time_base": TIME_BASE,
        "timezone": "UTC (the simulated people live on UTC clock time)",
        "frames": {"fps": 1, "default_size": 224, "rendered": "on demand by DemoWorld.render_frame"},
    }
    return records, meta
