"""HD-EPIC fine narrations (level 1) under high-level activities (level 2).

The narrations table (``HD_EPIC_Narrations.pkl`` from the HD-EPIC release, a pandas DataFrame, or the
same table saved as CSV) has, per the annotation repository's README: ``unique_narration_id,
participant_id, video_id, narration, start_timestamp, end_timestamp`` (seconds) and ``nouns, verbs,
pairs, main_actions, verb_classes, noun_classes, pair_classes, main_action_classes, hands,
narration_timestamp``. The first five named here are required; the rest go to ``meta`` when present
(in a CSV, list cells are Python literals such as ``['open', 'hold']``).

How the two levels are made valid (SPEC §5: a parent spans its children exactly, children are
consecutive, every level-1 event has one parent) although activities overlap and leave gaps:
1. each narration is assigned one activity of its video: among those containing its midpoint, the one
   that started last (an interruption inside a longer activity wins), else the nearest in time
   (counted: "narrations outside every activity");
2. narrations in level-1 order (start, end, id, per participant) are cut into maximal runs with the
   same activity; each run is one level-2 event with the activity's label, spanning its children.
   An activity interrupted by another becomes several parts (``meta.part`` / ``meta.parts``); its
   annotated times stay in ``meta.offset_s``.
Narrations of videos with no activity at all are skipped and counted; activities that receive no
narration produce no event (counted).
"""

from __future__ import annotations

import ast
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from egohorizon.data.sources._common import LOCAL_CLOCK_AS_UTC, Conversion, Row, clock_seconds, read_csv
from egohorizon.data.sources.hd_epic_records import Activity, Video, activity_meta
from egohorizon.errors import DataError
from egohorizon.schema import Event

REQUIRED = ("unique_narration_id", "video_id", "narration", "start_timestamp", "end_timestamp")
OPTIONAL = ("participant_id", "nouns", "verbs", "pairs", "main_actions", "verb_classes", "noun_classes",
            "pair_classes", "main_action_classes", "hands", "narration_timestamp")


def read_narrations(path: Path, videos: dict[str, Video], conversion: Conversion) -> list[dict[str, Any]]:
    """Narrations as dicts (id, video, start, end, text, meta), times in seconds from the video start."""
    if not path.is_file():
        raise DataError(f"{path}: narrations file not found")
    rows = _pickle_rows(path) if path.suffix == ".pkl" else read_csv(path, REQUIRED)
    items, seen = [], set()
    for row in rows:
        item = _narration(row, videos, conversion)
        if item is None:
            continue
        if item["id"] in seen:
            raise row.error("unique_narration_id", "duplicate narration id")
        seen.add(item["id"])
        items.append(item)
    conversion.counts["narrations read"] = len(items)
    return items


def _pickle_rows(path: Path):
    """Rows of the release's DataFrame pickle; ``line`` is the 1-based row number."""
    try:
        import pandas
    except ImportError:
        raise DataError(f"{path}: reading the narrations pickle needs pandas (pip install 'egohorizon[data]'), "
                        "or save it as CSV with pandas and pass that file") from None
    frame = pandas.read_pickle(path)
    if not isinstance(frame, pandas.DataFrame):
        raise DataError(f"{path}: expected a pandas DataFrame, got {type(frame).__name__}")
    if "unique_narration_id" not in frame.columns and frame.index.name == "unique_narration_id":
        frame = frame.reset_index()
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}; columns are {', '.join(map(str, frame.columns))}")
    for number, record in enumerate(frame.to_dict("records"), start=1):
        yield Row(path, number, {str(k): _plain(v) for k, v in record.items()})


def _plain(value: Any) -> Any:
    """pandas/numpy cell -> JSON-safe Python (NaN -> None, tuples and arrays -> lists)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _narration(row: Row, videos: dict[str, Video], conversion: Conversion) -> dict[str, Any] | None:
    video_id = str(row["video_id"]).strip()
    if video_id not in videos:
        conversion.skipped.add("narration of a video not in HD_EPIC_YouTube_URLs.csv", row.where("video_id"))
        return None
    start, end = _seconds(row, "start_timestamp"), _seconds(row, "end_timestamp")
    if start < 0:
        raise row.error("start_timestamp", "expected seconds >= 0")
    if end < start:
        raise row.error("end_timestamp", f"narration ends before it starts ({row['start_timestamp']})")
    text = str(row["narration"] or "").strip()
    if not text:
        raise row.error("narration", "expected a non-empty narration")
    meta = {"kind": "narration", "video_id": video_id, "offset_s": [start, end],
            "time_basis": LOCAL_CLOCK_AS_UTC, "file": row.path.name, "line": row.line}
    meta.update({c: _cell(row.cells[c]) for c in OPTIONAL if c in row.cells})
    return {"id": str(row["unique_narration_id"]).strip(), "video": video_id, "start": start, "end": end,
            "text": text, "meta": meta}


def _seconds(row: Row, column: str) -> float:
    value = row[column]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    text = str(value).strip()
    try:
        number = float(text)
        if math.isfinite(number):
            return number
    except ValueError:
        pass
    clock = clock_seconds(text)
    if clock is None:
        raise row.error(column, "expected seconds or HH:MM:SS.fff")
    return clock


def _cell(value: Any) -> Any:
    """CSV list cells are Python literals; parse them, keep anything else as it is."""
    if isinstance(value, str) and value[:1] in "[(":
        try:
            return _plain(ast.literal_eval(value))
        except (ValueError, SyntaxError):
            return value
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _assign(narration: dict[str, Any], activities: list[Activity]) -> tuple[Activity, bool]:
    """The narration's activity (see module docstring) and whether its midpoint lay inside it."""
    middle = (narration["start"] + narration["end"]) / 2
    inside = [a for a in activities if a.start <= middle <= a.end]
    if inside:
        return max(inside, key=lambda a: (a.start, -a.end, a.id)), True
    nearest = min(activities, key=lambda a: (max(a.start - middle, middle - a.end), a.start))
    return nearest, False


def build_two_levels(narrations: list[dict[str, Any]], activities: list[Activity],
                     videos: dict[str, Video], conversion: Conversion) -> list[Event]:
    """Level-1 narration events with level-2 activity parents (module docstring)."""
    by_video: dict[str, list[Activity]] = defaultdict(list)
    for activity in activities:
        by_video[activity.video].append(activity)
    children: list[tuple[Event, Activity]] = []
    for item in narrations:
        if not by_video.get(item["video"]):
            conversion.skipped.add("narration of a video without high-level activities", item["id"])
            continue
        activity, inside = _assign(item, by_video[item["video"]])
        if not inside:
            conversion.counts["narrations outside every activity (nearest activity used)"] += 1
        video = videos[item["video"]]
        event = Event(id=item["id"], participant=video.participant, day=video.day, session=video.id, level=1,
                      start=round(video.start + item["start"], 3), end=round(video.start + item["end"], 3),
                      text=item["text"], source="hd-epic", meta=item["meta"])
        children.append((event, activity))
    parents = _group_runs(children, videos)
    used = {p.meta["activity_id"] for p in parents}
    conversion.counts["activities without narrations (no event)"] = len({a.id for a in activities} - used)
    conversion.counts["activities split into parts by interruptions"] = sum(
        1 for p in parents if p.meta["part"] == 2)
    return [event for event, _ in children] + parents


def _group_runs(children: list[tuple[Event, Activity]], videos: dict[str, Video]) -> list[Event]:
    """Maximal runs of consecutive narrations (per participant, level-1 order) with one activity."""
    children.sort(key=lambda pair: (pair[0].participant, pair[0].start, pair[0].end, pair[0].id))
    runs: list[tuple[Activity, list[Event]]] = []
    for event, activity in children:
        last = runs[-1] if runs else None
        if last and last[0] is activity and last[1][0].participant == event.participant:
            last[1].append(event)
        else:
            runs.append((activity, [event]))
    parts: dict[str, int] = defaultdict(int)
    for activity, _ in runs:
        parts[activity.id] += 1
    seen: dict[str, int] = defaultdict(int)
    parents = []
    for activity, members in runs:
        seen[activity.id] += 1
        part = seen[activity.id]
        parent_id = activity.id if parts[activity.id] == 1 else f"{activity.id}-p{part}"
        video = videos[activity.video]
        meta = {**activity_meta(activity), "activity_id": activity.id, "part": part, "parts": parts[activity.id]}
        parent = Event(id=parent_id, participant=video.participant, day=video.day, session=video.id, level=2,
                       start=min(e.start for e in members), end=max(e.end for e in members),
                       text=activity.label, children=[e.id for e in members], source="hd-epic", meta=meta)
        for member in members:
            member.parent = parent_id
        parents.append(parent)
    return parents
