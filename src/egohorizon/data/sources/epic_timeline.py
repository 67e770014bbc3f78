"""EPIC-KITCHENS videos on a timeline: recording dates, durations, and the two time bases.

See ``epic_kitchens`` for the decisions: EPIC-55 videos are dated by ``EPIC_descriptions.csv`` (local
clock as UTC, videos placed so they cannot overlap); undated EPIC-100 extension videos form a
participant ``ek-PXX-ext`` with seconds since its first video, one placeholder day per video.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from egohorizon.data.sources._common import (
    LOCAL_CLOCK_AS_UTC,
    SINCE_FIRST_RECORDING,
    Conversion,
    FileIndex,
    Row,
    day_of,
    local_clock_seconds,
    parse_seconds,
    place_sessions,
    read_csv,
)

UNDATED_DAY_S = 86400.0
VIDEO = re.compile(r"^(P\d+)_(\d+)$")


@dataclass
class Placement:
    """Where a video sits on its participant's timeline."""

    participant: str
    person: str
    basis: str
    start: float
    day: str
    meta: dict[str, Any] = field(default_factory=dict)




def video_info(index: FileIndex, files: dict[str, str]) -> dict[str, dict[str, float]]:
    """Duration and fps per video, from EPIC_100_video_info.csv (or EPIC-55's EPIC_video_info.csv)."""
    path = index.find("EPIC_100_video_info.csv")
    column = "video_id"
    if path is None:
        path, column = index.find("EPIC_video_info.csv"), "video"
    if path is None:
        return {}
    files["video info"] = str(path)
    return {row[column].strip(): {"duration_s": parse_seconds(row, "duration"), "fps": parse_seconds(row, "fps")}
            for row in read_csv(path, (column, "duration", "fps"))}


def descriptions(index: FileIndex, files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Recording date and clock time of each EPIC-55 video (two date formats occur in the file)."""
    path = index.find("EPIC_descriptions.csv")
    if path is None:
        return {}
    files["EPIC_descriptions.csv"] = str(path)
    dates = {}
    for row in read_csv(path, ("video_id", "date", "time", "description")):
        date = parse_date(row)
        try:
            clock = datetime.strptime(row["time"].strip(), "%H:%M:%S").time()
        except ValueError:
            raise row.error("time", "expected a clock time HH:MM:SS") from None
        dates[row["video_id"].strip()] = {
            "start": datetime.combine(date, clock),
            "clock_time_known": row["time"].strip() != "00:00:00",  # P13, P21: date only
            "description": row["description"].strip(),
        }
    return dates


def parse_date(row: Row):
    for layout in ("%d/%m/%Y", "%Y-%m-%d"):
        try:
            return datetime.strptime(row["date"].strip(), layout).date()
        except ValueError:
            continue
    raise row.error("date", "expected a date DD/MM/YYYY or YYYY-MM-DD")


def place_videos(extent: dict[str, float], videos: dict[str, dict[str, float]],
                 dates: dict[str, dict[str, Any]], conversion: Conversion) -> dict[str, Placement]:
    """Every video (annotated, with the end of its last segment in ``extent``, or listed in the video
    info) on its participant's timeline."""
    all_videos = set(extent) | {v for v in videos if VIDEO.match(v)}
    dated, undated = defaultdict(list), defaultdict(list)
    for video in all_videos:
        person = VIDEO.match(video).group(1)
        (dated if video in dates else undated)[person].append(video)
    duration = {v: videos.get(v, {}).get("duration_s", extent[v]) for v in all_videos}
    conversion.counts["videos without duration info (last segment end used)"] = sum(
        1 for v in all_videos if v not in videos)
    placements: dict[str, Placement] = {}
    for person, person_videos in dated.items():
        placements.update(place_dated(person, person_videos, duration, dates, conversion))
    for person, person_videos in undated.items():
        placements.update(place_undated(person, person_videos))
    for video, placement in placements.items():
        placement.meta.update(videos.get(video, {}))
    return placements


def place_dated(person: str, videos: list[str], duration: dict[str, float],
                 dates: dict[str, dict[str, Any]], conversion: Conversion) -> dict[str, Placement]:
    stated = [(v, local_clock_seconds(dates[v]["start"]), duration[v]) for v in videos]
    placed = place_sessions(stated)
    out = {}
    for video, (start, shift) in placed.items():
        if shift > 0:
            conversion.counts["videos shifted to start after the previous one ended"] += 1
            largest = "largest such shift (s, rounded)"
            conversion.counts[largest] = max(conversion.counts[largest], round(shift))
        info = dates[video]
        out[video] = Placement(f"ek-{person}", person, LOCAL_CLOCK_AS_UTC, start,
                               day_of(local_clock_seconds(info["start"])), {
                                   "stated_start": info["start"].strftime("%Y-%m-%d %H:%M:%S"),
                                   "start_shift_s": round(shift, 3),
                                   "clock_time_known": info["clock_time_known"],
                                   "description": info["description"]})
    return out


def place_undated(person: str, videos: list[str]) -> dict[str, Placement]:
    number = {v: int(VIDEO.match(v).group(2)) for v in videos}
    first = min(number.values())
    return {v: Placement(f"ek-{person}-ext", person, SINCE_FIRST_RECORDING,
                         (number[v] - first) * UNDATED_DAY_S, f"undated-{v}", {"placeholder_day": True})
            for v in videos}
