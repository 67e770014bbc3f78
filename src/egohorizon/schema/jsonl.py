"""Validating JSON Lines I/O: read every defect with file and line, write atomically, detect a file's record type."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from egohorizon.schema.captions import CaptionPrediction, CaptionWindow
from egohorizon.schema.checks import Defect, RecordError
from egohorizon.schema.events import Event, Recording
from egohorizon.schema.forecast import ForecastPoint, ForecastPrediction, RankedCandidates
from egohorizon.schema.hands import BoxPrediction, HandBox, Segment
from egohorizon.schema.qa import QAItem, QAPrediction
from egohorizon.schema.record import R, Record

RECORD_TYPES: dict[str, type[Record]] = {
    "event": Event,
    "recording": Recording,
    "forecast_point": ForecastPoint,
    "forecast_prediction": ForecastPrediction,
    "qa_item": QAItem,
    "qa_prediction": QAPrediction,
    "segment": Segment,
    "hand_box": HandBox,
    "box_prediction": BoxPrediction,
    "ranked_candidates": RankedCandidates,
    "caption_window": CaptionWindow,
    "caption_prediction": CaptionPrediction,
}


# --------------------------------------------------------------------------------------------
# JSON Lines
# --------------------------------------------------------------------------------------------


@dataclass
class ReadResult:
    """Records that validated, and the defects of those that did not (file, line, field)."""

    records: list
    defects: list[Defect]
    path: str

    def raise_for_defects(self) -> None:
        if self.defects:
            raise RecordError(self.defects)


def iter_json_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any, str | None]]:
    """Yields (line number, parsed object or None, problem or None); blank lines are skipped.

    Lines are decoded one by one, so a line that is not UTF-8 is a problem of that line (with the
    offending byte) and the lines after it are still read.
    """
    with open(path, "rb") as handle:
        for number_, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                byte = raw[error.start]
                yield number_, None, f"not UTF-8 text (byte 0x{byte:02x} at column {error.start + 1})"
                continue
            if number_ == 1:
                line = line.removeprefix("\ufeff")  # a byte-order mark some editors write
            if not line.strip():
                continue
            try:
                yield number_, json.loads(line), None
            except json.JSONDecodeError as error:
                yield number_, None, f"invalid JSON ({error.msg} at column {error.colno})"


def read_jsonl(path: str | os.PathLike, record_type: type[R]) -> ReadResult:
    """Reads every line, validating each; collects all defects instead of stopping at the first.

    Duplicate keys (``record_type.KEY``, usually ``id``) are defects too: the second occurrence is
    reported with the line of the first.
    """
    path = str(path)
    records: list[R] = []
    defects: list[Defect] = []
    seen: dict[str, int] = {}
    try:
        lines = list(iter_json_lines(path))
    except FileNotFoundError:
        return ReadResult([], [Defect(path, 0, "", "file not found")], path)
    except IsADirectoryError:
        return ReadResult([], [Defect(path, 0, "", "is a folder; expected a .jsonl file")], path)
    except OSError as error:
        return ReadResult([], [Defect(path, 0, "", f"cannot read the file ({error.strerror or error})")], path)
    if lines and (lines[0][2] or not isinstance(lines[0][1], dict)):
        # a CSV or one JSON document where JSON Lines are expected: one defect naming what the file
        # is, not one "invalid JSON" per line (issue 22, item 15, for every reader of records)
        from egohorizon.schema.file_kind import not_json_lines

        wrong_kind = not_json_lines(path)
        if wrong_kind:
            return ReadResult([], [Defect(path, 0, "", wrong_kind.removeprefix(f"{path}: "))], path)
    for line_number, obj, json_problem in lines:
        if json_problem:
            defects.append(Defect(path, line_number, "", json_problem))
            continue
        record, problems = record_type.from_dict(obj)
        for field_name, problem in problems:
            defects.append(Defect(path, line_number, field_name, problem))
        if record is None:
            continue
        key = record_type.KEY
        if key:
            value = getattr(record, key)
            if value in seen:
                defects.append(Defect(path, line_number, key,
                                      f"duplicate {key} {value!r} (first on line {seen[value]})"))
                continue
            seen[value] = line_number
        records.append(record)
    if not records and defects and lines and isinstance(lines[0][1], dict):
        # another command's records (events where points are expected, predictions swapped with gold):
        # one line saying so instead of every missing field of every line
        found = record_type_of(lines[0][1])
        if found is None and {"image", "box"} <= set(lines[0][1]):  # `hands detect` writes boxes per image file
            return ReadResult([], [Defect(path, 0, "", (
                f"holds hands detect boxes (image, hand, box, score per image file), not the "
                f"{record_type.__name__} records expected here; `egohorizon hands detect IMAGES --gold CSV` "
                f"scores them ({len(defects)} defects)"))], path)
        if found is not None and found is not record_type:
            return ReadResult([], [Defect(path, 0, "", (
                f"holds {found.__name__} records (line 1 has {', '.join(list(lines[0][1])[:6])}), not the "
                f"{record_type.__name__} records expected here ({len(defects)} defects)"))], path)
    return ReadResult(records, defects, path)


def load_jsonl(path: str | os.PathLike, record_type: type[R]) -> list[R]:
    """Like ``read_jsonl`` but raises ``RecordError`` (listing every defect) if any line is bad."""
    result = read_jsonl(path, record_type)
    result.raise_for_defects()
    return result.records


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return value.to_dict() if isinstance(value, Record) else dataclasses.asdict(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def dumps(record: Record | dict[str, Any]) -> str:
    obj = record.to_dict() if isinstance(record, Record) else record
    return json.dumps(obj, ensure_ascii=False, default=_json_default)


def write_jsonl(path: str | os.PathLike, records: Iterable[Record | dict[str, Any]]) -> int:
    """Writes atomically (temp file + rename) so a crash never leaves half a file; returns the count."""
    from egohorizon.atomic_files import atomic_open

    count = 0
    with atomic_open(path) as handle:  # Ctrl-C or an error mid-write: no half file left (issue 22)
        for record in records:
            handle.write(dumps(record))
            handle.write("\n")
            count += 1
    return count


def remove_stale_temps(path: str | os.PathLike) -> list[Path]:
    """Removes the temp files ``write_jsonl`` (and writers like it) left beside ``path`` when killed
    (``.NAME.tmp-PID`` of a process no longer running); a live writer's file is kept."""
    path = Path(path)
    removed = []
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.tmp-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and _running(int(pid)):
            continue
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def detect_record_type(path: str | os.PathLike) -> type[Record] | None:
    """Guesses a JSONL file's record type from the keys of its first parseable object."""
    try:
        for _, obj, problem in iter_json_lines(path):
            if problem or not isinstance(obj, dict):
                continue
            return record_type_of(obj)
    except (OSError, UnicodeDecodeError):
        return None
    return None


def record_type_of(obj: dict[str, Any]) -> type[Record] | None:
    """The record type an object's keys say it is (None: none of them)."""
    keys = set(obj)
    if {"context", "targets"} <= keys:
        return ForecastPoint
    if {"reference", "rankings"} <= keys:
        return RankedCandidates
    if "candidates" in keys:
        return ForecastPrediction
    if {"actions", "window_s"} <= keys:
        return CaptionWindow
    if "actions" in keys:
        return CaptionPrediction
    if {"question", "options"} <= keys:
        return QAItem
    if "frame" in keys and "box" in keys:
        return HandBox
    if "t" in keys and "box" in keys:
        return BoxPrediction
    if {"clip", "kind"} <= keys:
        return Segment
    if "level" in keys and "text" in keys:
        return Event
    if {"session", "start", "end"} <= keys and "level" not in keys:
        return Recording
    if "answer" in keys:
        return QAPrediction
    return None
    return None
