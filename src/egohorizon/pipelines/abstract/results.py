"""The abstraction job's results: ``OUT/days.jsonl``, append-only, one line per finished day.

    {"day": "p01/2025-03-03", "participant", "status": "ok" | "failed",
     "events": [L2.. events of the day, SPEC §5] (ok), "parents": {L1 id: L2 id} (ok),
     "failure": null | {"kind": "output" | "model" | "invariant", "reason", "raw"},
     "counts": {"calls", "invalid", "chunks", "errors"}, "model", "adapter", "prompt": {"name", "version"},
     "settings": {...}, "elapsed_s"}

``failed`` days of kind ``model`` (server down, timeout) are tried again by the next run; ``output``
days (every reply invalid) only with ``--retry-failed``, since the cached replies would be the same.
One ``write`` per line on an ``O_APPEND`` descriptor, so a killed run leaves whole lines; a torn last
line is cut off on the next open and its day done again. The latest line of a day wins, an ``ok`` line
over a failed one. An advisory lock keeps a second job out of the same folder.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError
from egohorizon.pipelines.append_log import LockedAppendLog, read_keyed_lines

log = logging.getLogger(__name__)

RESULTS_FILE = "days.jsonl"
OK, FAILED = "ok", "failed"
PROVENANCE_KEYS = ("model", "adapter", "prompt", "settings", "dtype")


def is_done(record: dict[str, Any], retry_failed: bool = False) -> bool:
    if record.get("status") == OK:
        return True
    kind = (record.get("failure") or {}).get("kind")
    return record.get("status") == FAILED and not retry_failed and kind in ("output", "invariant")


def read_days(path: Path) -> dict[str, dict[str, Any]]:
    """day -> its line that counts; lines that are not JSON objects with a day are logged and ignored."""
    lines, problems = read_keyed_lines(path, "day", "'participant/day'", "its day is done again")
    for problem in problems:
        log.warning("%s", problem)
    records: dict[str, dict[str, Any]] = {}
    for day, record in lines:
        old = records.get(day)
        if old is None or record.get("status") == OK or old.get("status") != OK:
            records[day] = record
    return records


def check_provenance(records: dict[str, dict[str, Any]], expected: dict[str, Any], out: Path) -> None:
    """Refuses to mix abstractors (model, adapter, prompt, settings) in one folder."""
    for day, record in records.items():
        found = {key: record.get(key) for key in PROVENANCE_KEYS}
        if record.get("status") == OK and found != expected:
            raise ConfigError(f"{out} holds day {day} abstracted by {found}, but this run is {expected}; use "
                              "another --out for another model, adapter, prompt or settings (or delete the folder)")


class DaysLog(LockedAppendLog):
    """The append-only results file, locked while this job writes it."""

    def open(self) -> dict[str, dict[str, Any]]:
        self._lock()
        records = read_days(self.path)  # warns about a torn last line itself
        self._cut_torn_tail()
        self._open_for_append()
        return records
