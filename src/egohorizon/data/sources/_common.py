"""Helpers shared by the real-data adapters: finding files, reading CSV rows with their line numbers,
parsing clock times, counting skipped rows, and writing a conversion to disk.

Every error raised here names the file, the line and the column, so that a user can open the file
and see the bad cell. Only the standard library is used (``csv``): the annotation files are small
(a few MB) and ``csv.reader.line_num`` gives exact physical line numbers, which pandas does not.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from egohorizon.atomic_files import write_json_atomic
from egohorizon.errors import DataError
from egohorizon.schema import SCHEMA_VERSION, Event, QAItem, Recording, remove_stale_temps, write_jsonl
from egohorizon.schema.events import LOCAL_CLOCK_AS_UTC  # noqa: F401 - the converters import it from here

log = logging.getLogger(__name__)

# Extensions worth indexing: annotation files only, so a --root that also holds videos stays cheap.
ANNOTATION_SUFFIXES = (".csv", ".json", ".pkl")

# Recording clocks are local wall-clock times with no time zone in any of these data sets. We write
# them as if they were UTC: `datetime.fromtimestamp(t, timezone.utc)` then gives back the local date
# and clock time, so days are the real calendar days and time of day keeps its meaning (breakfast at
# 08:00). The absolute instant is off by the (unknown) UTC offset, which no use here depends on.
SINCE_FIRST_RECORDING = "seconds_since_first_recording"
TIME_ZONE_NOTE = ("Recording clock times are local wall-clock times without a time zone; they are "
                  "stored as if they were UTC, so the UTC date of a timestamp is the local calendar "
                  "day and its UTC clock time is the local time of day.")


class FileIndex:
    """All annotation files under ``root`` by file name, found with one walk of the tree."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        if not self.root.is_dir():
            raise DataError(f"--root {self.root}: no such folder")
        self._by_name: dict[str, list[Path]] = defaultdict(list)
        for folder, _dirs, files in os.walk(self.root):
            for name in files:
                if name.endswith(ANNOTATION_SUFFIXES):
                    self._by_name[name].append(Path(folder) / name)

    def find(self, name: str, *, parent: str | None = None, required: bool = False,
             what: str = "") -> Path | None:
        """The one file called ``name`` (in a folder called ``parent`` if given), or None."""
        paths = [p for p in self._by_name.get(name, []) if parent is None or p.parent.name == parent]
        if len(paths) > 1:
            listed = ", ".join(str(p) for p in sorted(paths))
            raise DataError(f"{self.root}: {len(paths)} files called {name!r} ({listed}); "
                            "point --root at a folder that holds only one copy")
        if not paths:
            if required:
                where = f"{parent}/{name}" if parent else name
                raise DataError(f"{self.root}: required file {where} not found{f' ({what})' if what else ''}")
            return None
        return paths[0]

    def matching(self, pattern: str) -> list[Path]:
        """Every file whose name matches the regular expression ``pattern``, sorted by path."""
        regex = re.compile(pattern)
        return sorted(p for name, paths in self._by_name.items() if regex.fullmatch(name) for p in paths)


@dataclass(frozen=True)
class Row:
    """One CSV row: its cells by column name, and where it is."""

    path: Path
    line: int
    cells: dict[str, str]

    def __getitem__(self, column: str) -> str:
        return self.cells[column]

    def where(self, column: str | None = None) -> str:
        return f"{self.path}:{self.line}" + (f": column '{column}'" if column else "")

    def error(self, column: str, message: str) -> DataError:
        return DataError(f"{self.where(column)}: {message} (got {self.cells.get(column)!r})")


def read_csv(path: Path, columns: Sequence[str], *, fieldnames: Sequence[str] | None = None) -> Iterator[Row]:
    """Rows of a CSV file; checks the header has ``columns`` (or uses ``fieldnames`` when the file
    has no header) and that every row has as many cells as the header."""
    # utf-8-sig: spreadsheet tools save CSV with a byte-order mark, which would otherwise stick to the
    # first column's name (issue 36, item 15); the JSON and JSONL readers drop it the same way.
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = list(fieldnames) if fieldnames else next(reader, None)
        if header is None:
            raise DataError(f"{path}: empty file, expected a header with {', '.join(columns)}")
        header = [h.strip() for h in header]
        missing = [c for c in columns if c not in header]
        if missing:
            raise DataError(f"{path}:1: missing column(s) {', '.join(missing)}; header is {', '.join(header)}")
        for cells in reader:
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue
            if len(cells) != len(header):
                raise DataError(f"{path}:{reader.line_num}: expected {len(header)} cells "
                                f"({', '.join(header)}), got {len(cells)}")
            yield Row(path, reader.line_num, dict(zip(header, cells)))


_CLOCK = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}(?:\.\d*)?)$")


def clock_seconds(text: str) -> float | None:
    """``HH:MM:SS(.fff)`` -> seconds, or None when the text is not a clock time."""
    match = _CLOCK.match(text.strip())
    if not match:
        return None
    hours, minutes, seconds = match.groups()
    if int(minutes) >= 60 or float(seconds) >= 60:
        return None
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def parse_clock(row: Row, column: str) -> float:
    value = clock_seconds(row[column])
    if value is None:
        raise row.error(column, "expected a time HH:MM:SS.ss")
    return value


def parse_number(row: Row, column: str) -> float:
    try:
        value = float(row[column])
    except ValueError:
        raise row.error(column, "expected a number") from None
    if not math.isfinite(value):
        raise row.error(column, "expected a finite number")
    return value


def parse_seconds(row: Row, column: str) -> float:
    """A time or duration in seconds: a finite number, not negative (issue 36, item 5)."""
    value = parse_number(row, column)
    if value < 0:
        raise row.error(column, "expected seconds >= 0")
    return value


def bad_seconds(text: str) -> str | None:
    """Why ``text`` is not a usable time in seconds (not a number, not finite, negative), or None."""
    try:
        value = float(text)
    except ValueError:
        return "expected a number"
    if not math.isfinite(value):
        return "expected a finite number"
    return "expected seconds >= 0" if value < 0 else None


def parse_int(row: Row, column: str) -> int:
    try:
        return int(row[column])
    except ValueError:
        raise row.error(column, "expected an integer") from None


def local_clock_seconds(moment: datetime) -> float:
    """A naive local wall-clock time -> seconds, written as if UTC (see ``TIME_ZONE_NOTE``)."""
    return moment.replace(tzinfo=UTC).timestamp()


def day_of(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


class SkipLog:
    """Rows skipped (or repaired) for a known reason: counts, and the first few places of each."""

    EXAMPLES = 5

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = defaultdict(list)

    def add(self, reason: str, where: str = "") -> None:
        self.counts[reason] += 1
        if where and len(self.examples[reason]) < self.EXAMPLES:
            self.examples[reason].append(where)

    def to_dict(self) -> dict[str, Any]:
        return {reason: {"count": n, "examples": self.examples.get(reason, [])}
                for reason, n in sorted(self.counts.items())}


@dataclass
class Conversion:
    """What an adapter produced: records, the data set's metadata, and what it skipped or counted."""

    source: str
    events: list[Event] = field(default_factory=list)
    recordings: list[Recording] = field(default_factory=list)
    qa: list[QAItem] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    skipped: SkipLog = field(default_factory=SkipLog)

    def write(self, out: str | os.PathLike) -> dict[str, Path]:
        """Writes events.jsonl / recordings.jsonl / qa.jsonl (those that have records) and
        metadata.json into ``out``; returns the paths written."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        for name in ("events.jsonl", "recordings.jsonl", "qa.jsonl", "metadata.json"):
            remove_stale_temps(out / name)  # what an interrupted earlier run left (issue 22)
        written: dict[str, Path] = {}
        for name, records in (("events", self.events), ("recordings", self.recordings), ("qa", self.qa)):
            if records:
                path = out / f"{name}.jsonl"
                write_jsonl(path, records)
                written[name] = path
        meta = {"source": self.source, "schema_version": SCHEMA_VERSION, **self.metadata,
                "counts": dict(sorted(self.counts.items())), "skipped": self.skipped.to_dict()}
        path = out / "metadata.json"
        write_json_atomic(path, meta, indent=2)
        written["metadata"] = path
        return written


def sort_events(events: Iterable[Event]) -> list[Event]:
    """File order: participant, level, then time (start, end, id): the order the hierarchy checker
    uses, so overlapping segments keep one deterministic order."""
    return sorted(events, key=lambda e: (e.participant, e.level, e.start, e.end, e.id))


def count_overlaps(events: Sequence[Event]) -> int:
    """Adjacent pairs (same participant and level, time order) where the next starts before the
    previous ends: how often annotated segments overlap."""
    overlaps = 0
    for previous, current in pairwise(events):
        same_stream = (previous.participant, previous.level) == (current.participant, current.level)
        if same_stream and current.start < previous.end:
            overlaps += 1
    return overlaps


def place_sessions(stated: Sequence[tuple[str, float, float]]) -> dict[str, tuple[float, float]]:
    """Start times for one participant's sessions that cannot overlap.

    ``stated`` holds (session id, stated start, duration). One camera records one video at a time,
    but stated starts are often rounded to the minute (or repeated), so a session can appear to begin
    before the previous one ended. Sessions are taken in stated order and each starts at
    ``max(stated start, end of the previous)``. Returns {session: (start, shift applied)}.
    """
    placed: dict[str, tuple[float, float]] = {}
    previous_end = float("-inf")
    for session, start, duration in sorted(stated, key=lambda s: (s[1], s[0])):
        actual = max(start, previous_end)
        placed[session] = (actual, actual - start)
        previous_end = actual + duration
    return placed
