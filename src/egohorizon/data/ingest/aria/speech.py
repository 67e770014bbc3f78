"""Words of an Aria ``speech.csv`` (``startTime_ns, endTime_ns, written, confidence``), device time."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from egohorizon.errors import DataError

SPEECH_COLUMNS = ("startTime_ns", "endTime_ns", "written")


def read_speech(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Words of an Aria ``speech.csv``: dicts with start_ns, end_ns, text, confidence (or None).
    A malformed row raises DataError with file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: speech file not found")
    words = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in SPEECH_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}:1: missing column(s) {', '.join(missing)} (expected {', '.join(SPEECH_COLUMNS)})")
        for row in reader:
            line = reader.line_num
            try:
                start, end = int(row["startTime_ns"]), int(row["endTime_ns"])
            except (TypeError, ValueError):
                raise DataError(f"{path}:{line}: field 'startTime_ns'/'endTime_ns': expected integers, "
                                f"got {row['startTime_ns']!r}, {row['endTime_ns']!r}") from None
            if end < start:
                raise DataError(f"{path}:{line}: field 'endTime_ns': ends before it starts")
            confidence = row.get("confidence")
            try:
                confidence = float(confidence) if confidence not in (None, "") else None
            except ValueError:
                raise DataError(f"{path}:{line}: field 'confidence': expected a number, got {confidence!r}") from None
            words.append({"start_ns": start, "end_ns": end, "text": row["written"] or "", "confidence": confidence})
    return words


