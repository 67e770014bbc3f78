"""The captioning job's results: an append-only JSON Lines file, one line per finished window.

``OUT/captions.jsonl`` (or ``OUT/captions.part-I-of-N.jsonl`` for a ``--shard-slice I/N`` run) holds one
object per window the job finished::

    {"window": "p1_2022-04-06_rec_w00003", "status": "ok" | "failed" | "skipped",
     "shard": "p1/2022-04-06-000.tar", "participant", "day", "session", "start", "end",
     "raw": model text | null, "actions": [{"start", "end", "action"}] (relative to the window),
     "scene": str | null, "dropped": n, "unparsed": n, "failure": null | {"kind", "reason"},
     "model", "adapter", "prompt": {"name", "version"}, "seed", "frames": [times used], "elapsed_s"}

- ``ok``: the model answered and the parser found actions or a scene;
- ``failed``: ``failure.kind`` is ``input`` (corrupt image, bad metadata: the shard must be fixed),
  ``output`` (the model answered, but nothing parsed: ``raw`` keeps the answer) or ``model`` (server
  error, timeout, backend exception). ``model`` failures are tried again by the next run; the others
  only with ``--retry-failed`` (greedy decoding would give the same answer);
- ``skipped``: a window the captioner cannot take (no frames); not counted as a failure.

Each line is written with one ``write`` on an ``O_APPEND`` descriptor, so a killed process leaves whole
lines; a torn last line (power loss, full disk) is cut off when the file is opened again and its
window is captioned again. The latest line of a window wins. One process writes a file at a time
(an advisory lock beside it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError
from egohorizon.pipelines.append_log import LockedAppendLog, read_keyed_lines

log = logging.getLogger(__name__)

RESULTS_FILE = "captions.jsonl"
PART_FILE = "captions.part-{index:04d}-of-{count:04d}.jsonl"
_PART_RE = re.compile(r"^captions\.part-\d{4}-of-\d{4}\.jsonl$")
OK, FAILED, SKIPPED = "ok", "failed", "skipped"
INPUT, OUTPUT, MODEL = "input", "output", "model"  # failure kinds
PROVENANCE_KEYS = ("model", "adapter", "prompt", "seed", "answer_set", "dtype")


def results_file(out_dir: Path, shard_slice: tuple[int, int] | None) -> Path:
    if shard_slice is None:
        return out_dir / RESULTS_FILE
    index, count = shard_slice
    return out_dir / PART_FILE.format(index=index, count=count)


def result_files(out_dir: Path) -> list[Path]:
    """Every results file in ``out_dir``: the whole run's and the slices', in name order."""
    if not out_dir.is_dir():
        return []
    return sorted(p for p in out_dir.iterdir() if p.name == RESULTS_FILE or _PART_RE.match(p.name))


def is_done(record: dict[str, Any], retry_failed: bool = False) -> bool:
    """Whether a window needs no new attempt (see the module docstring)."""
    status = record.get("status")
    if status in (OK, SKIPPED):
        return True
    if status == FAILED and not retry_failed:
        return (record.get("failure") or {}).get("kind") in (INPUT, OUTPUT)
    return False


def better(new: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Which of two lines of one window counts: an ``ok`` line over any other, else the later one."""
    return old is None or new.get("status") == OK or old.get("status") != OK


def read_results(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """window -> its line that counts, and problems (file:line: what) of lines that were ignored.
    A last line without its newline is a torn write: ignored here (``ResultsLog`` cuts it off)."""
    lines, problems = read_keyed_lines(path, "window", "a window id", "its window is captioned again")
    records: dict[str, dict[str, Any]] = {}
    for window, record in lines:
        if better(record, records.get(window)):
            records[window] = record
    return records, problems


def load_all_results(out_dir: Path) -> dict[str, dict[str, Any]]:
    """window -> its line that counts, over every results file of ``out_dir`` (read only)."""
    merged: dict[str, dict[str, Any]] = {}
    for path in result_files(out_dir):
        records, problems = read_results(path)
        for problem in problems:
            log.warning("%s", problem)
        for window, record in records.items():
            if better(record, merged.get(window)):
                merged[window] = record
    return merged


def provenance(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record.get(key) for key in PROVENANCE_KEYS}


def check_provenance(records: Iterable[dict[str, Any]], expected: dict[str, Any], out_dir: Path) -> None:
    """Refuses to mix captioners in one folder: finished windows must carry this run's provenance."""
    for record in records:
        if record.get("status") == OK and provenance(record) != expected:
            raise ConfigError(
                f"{out_dir} holds captions of window {record.get('window')} made by {provenance(record)}, "
                f"but this run is {expected}. Use another --out folder for another model, adapter, prompt "
                "or seed (or delete the folder to start over)")


class ResultsLog(LockedAppendLog):
    """The append-only results file of this process (locked while open)."""

    def open(self) -> dict[str, dict[str, Any]]:
        """Locks the file, cuts off a torn last line, and returns its windows (the lines that count)."""
        self._lock("; wait for it, or give each job its own --out or --shard-slice")
        cut = self._cut_torn_tail()
        if cut:
            log.warning("%s: cutting off a partial last line (%d bytes) left by a killed run; its window is "
                        "captioned again", self.path, cut)
        records, problems = read_results(self.path)
        for problem in problems:
            log.warning("%s", problem)
        self._open_for_append()
        return records


def prediction_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """A results line as a ``schema.CaptionPrediction`` object (what ``egohorizon score captions``
    reads), or None for a skipped window (no frames: nothing was asked). The model's raw text goes to
    scoring, whose parser is the one the job used, so dropped and unparsed lines are counted there too;
    a ``model`` failure has none (null), which scores as an invalid reply."""
    if record.get("status") == SKIPPED:
        return None
    prompt = record.get("prompt") or {}
    return {"id": record["window"], "text": record.get("raw"), "model": record.get("model") or "",
            "prompt": prompt.get("name") or "", "prompt_version": str(prompt.get("version") or ""),
            "seed": record.get("seed")}
