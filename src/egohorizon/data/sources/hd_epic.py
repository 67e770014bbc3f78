"""HD-EPIC high-level activities (and fine narrations when you have them) -> events.

Where to get the files: https://github.com/hd-epic/hd-epic-annotations (CC BY-NC 4.0; project page
https://hd-epic.github.io/). Read here:
- ``high-level/activities/PXX_recipe_timestamps.csv`` (video_id, recipe_id, high_level_activity_label,
  start_time, end_time; ``end`` means the end of the video);
- ``youtube-links/HD_EPIC_YouTube_URLs.csv`` (video durations, needed to resolve ``end``);
- optionally ``narrations-and-action-segments/HD_EPIC_Narrations.pkl`` (a pandas DataFrame; reading it
  needs pandas) or the same table as CSV ``HD_EPIC_Narrations.csv``; found under ``--root`` or given
  with ``--narrations FILE``. It is not in the annotation repository's tree that ships with this
  project's test data; download it from the HD-EPIC release.

What is built:
- Without narrations: the activities alone are level 1 (several may overlap: "(with interruptions) heat
  soup" runs across "washing up"; they are kept as annotated, ordered by start, end, id).
- With narrations: narrations are level 1 and activities level 2 (``hd_epic_narrations``).
- Recipes (``complete_recipes.json``) are not made a level: several recipes are cooked at once (P03's
  R07 and R09 share steps) and background activities belong to none, so recipe events could not have
  consecutive children nor give every activity one parent.
- Video ids embed the local recording date and time (``P01-20240202-110250``): events get real days
  and Unix seconds of the local clock (written as UTC; see ``_common.TIME_ZONE_NOTE``); one video is
  one session.
- Known defects of the activity files, skipped or repaired and counted (first places in
  ``metadata.json``): rows that end at or before their start (7), one row without a label, and one
  video id with a dropped zero (``P09-2024623-154547``, 2 rows), repaired when exactly one listed
  video has the same participant, clock time and date digits. Identical activities listed once per recipe (same video, times and
  label) become one event whose ``recipe_ids`` lists both.
- Participants are namespaced ``hd-PXX``.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from egohorizon.data.sources._common import (
    LOCAL_CLOCK_AS_UTC,
    TIME_ZONE_NOTE,
    Conversion,
    FileIndex,
    Row,
    bad_seconds,
    count_overlaps,
    local_clock_seconds,
    parse_number,
    parse_seconds,
    place_sessions,
    read_csv,
    sort_events,
)
from egohorizon.data.sources.hd_epic_narrations import build_two_levels, read_narrations
from egohorizon.data.sources.hd_epic_records import Activity, Video, activity_meta
from egohorizon.errors import DataError
from egohorizon.schema import Event, Recording

log = logging.getLogger(__name__)

SOURCE = "hd-epic"
VIDEO_ID = re.compile(r"^(P\d\d)-(\d{8})-(\d{6})$")
ACTIVITY_COLUMNS = ("video_id", "recipe_id", "high_level_activity_label", "start_time", "end_time")
NARRATION_FILES = ("HD_EPIC_Narrations.pkl", "HD_EPIC_Narrations.csv")


def video_start(video_id: str) -> datetime | None:
    """The local recording start embedded in an HD-EPIC video id, or None if it has none."""
    match = VIDEO_ID.match(video_id)
    if not match:
        return None
    try:
        return datetime.strptime(f"{match.group(2)}{match.group(3)}", "%Y%m%d%H%M%S")
    except ValueError:
        return None


def convert(root: str | Path, *, narrations: str | Path | None = None) -> Conversion:
    """Reads the HD-EPIC files under ``root``; ``narrations`` overrides the narrations file found there."""
    index = FileIndex(root)
    conversion = Conversion(SOURCE)
    files: dict[str, str] = {}
    videos = _videos(index, files)
    activities = _activities(index, videos, conversion, files)
    narration_path = Path(narrations) if narrations else _find_narrations(index)
    if narration_path is not None:
        files["narrations"] = str(narration_path)
        items = read_narrations(narration_path, videos, conversion)
        conversion.events = build_two_levels(items, activities, videos, conversion)
        levels = {"1": "narrations (HD_EPIC_Narrations)", "2": "high-level activities"}
    else:
        conversion.events = [_activity_event(a, videos[a.video]) for a in activities]
        levels = {"1": "high-level activities (no narrations file given)"}
    conversion.events = sort_events(conversion.events)
    conversion.recordings = _recordings(videos, activities)
    conversion.counts["events"] = len(conversion.events)
    conversion.counts["overlapping adjacent events (kept)"] = count_overlaps(conversion.events)
    conversion.metadata = _metadata(files, videos, levels)
    return conversion


def _find_narrations(index: FileIndex) -> Path | None:
    for name in NARRATION_FILES:
        path = index.find(name)
        if path is not None:
            return path
    return None


def _videos(index: FileIndex, files: dict[str, str]) -> dict[str, Video]:
    """Every video of the release, from the YouTube link list (which carries durations)."""
    path = index.find("HD_EPIC_YouTube_URLs.csv", required=True,
                      what="video durations; from youtube-links/ of the HD-EPIC annotations")
    files["HD_EPIC_YouTube_URLs.csv"] = str(path)
    stated: dict[str, tuple[str, float, float, str]] = {}
    for row in read_csv(path, ("video_id", "duration")):
        video_id = row["video_id"].strip()
        start = video_start(video_id)
        if start is None:
            raise row.error("video_id", "expected an id like P01-20240202-110250 (participant-date-time)")
        stated[video_id] = (video_id[:3], local_clock_seconds(start), parse_seconds(row, "duration"),
                            row.cells.get("youtube_url", ""))
    videos: dict[str, Video] = {}
    for person in sorted({p for p, *_ in stated.values()}):
        mine = [(v, s, d) for v, (p, s, d, _) in stated.items() if p == person]
        for video_id, (start, shift) in place_sessions(mine).items():
            _, _, duration, url = stated[video_id]
            videos[video_id] = Video(video_id, person, start, duration,
                                     {"youtube_url": url, "start_shift_s": round(shift, 3)})
    return videos


def _activities(index: FileIndex, videos: dict[str, Video], conversion: Conversion,
                files: dict[str, str]) -> list[Activity]:
    paths = index.matching(r"P\d\d_recipe_timestamps\.csv")
    if not paths:
        raise DataError(f"{index.root}: no high-level/activities/PXX_recipe_timestamps.csv found")
    files["activities"] = ", ".join(str(p) for p in paths)
    merged: dict[tuple, Activity] = {}
    for path in paths:
        for row in read_csv(path, ACTIVITY_COLUMNS):
            activity = _activity(row, videos, conversion)
            if activity is None:
                continue
            key = (activity.video, activity.start, activity.end, activity.label)
            if key in merged:
                merged[key].recipe_ids += [r for r in activity.recipe_ids if r not in merged[key].recipe_ids]
                conversion.counts["identical activities merged (one per recipe)"] += 1
            else:
                merged[key] = activity
    by_video: dict[str, list[Activity]] = {}
    for activity in merged.values():
        by_video.setdefault(activity.video, []).append(activity)
    activities = []
    for video_id, items in sorted(by_video.items()):
        for k, activity in enumerate(sorted(items, key=lambda a: (a.start, a.end, a.label))):
            activity.id = f"{video_id}-a{k:02d}"
            activities.append(activity)
    conversion.counts["activities"] = len(activities)
    return activities


def _activity(row: Row, videos: dict[str, Video], conversion: Conversion) -> Activity | None:
    video_id = _known_video(row, videos, conversion)
    if video_id is None:
        return None
    end_text = row["end_time"].strip()
    for column in ("start_time", "end_time"):
        problem = None if (column, end_text) == ("end_time", "end") else bad_seconds(row[column].strip())
        if problem and problem != "expected a number":  # NaN, inf or negative: a bad row (issue 36, item 5)
            conversion.skipped.add(f"activity with a non-finite or negative {column}", row.where(column))
            return None
    start = parse_number(row, "start_time")
    end = videos[video_id].duration if end_text == "end" else parse_number(row, "end_time")
    if end <= start:
        conversion.skipped.add("activity ends at or before its start", row.where("end_time"))
        return None
    label = row["high_level_activity_label"].strip()
    if not label:
        conversion.skipped.add("activity without a label", row.where("high_level_activity_label"))
        return None
    recipe = row["recipe_id"].strip()
    return Activity("", video_id, start, end, label, [recipe] if recipe else [],
                    {"file": row.path.name, "line": row.line, "end_is_video_end": end_text == "end"})


def _known_video(row: Row, videos: dict[str, Video], conversion: Conversion) -> str | None:
    """The row's video id if listed; a unique repair of a dropped digit; else None (skipped)."""
    video_id = row["video_id"].strip()
    if video_id in videos:
        return video_id
    parts = video_id.split("-")
    candidates = [v for v in videos if len(parts) == 3 and v.startswith(parts[0] + "-")
                  and v.endswith("-" + parts[2]) and _is_subsequence(parts[1], v.split("-")[1])]
    if len(candidates) == 1:
        conversion.skipped.add(f"video id repaired ({video_id} -> {candidates[0]})", row.where("video_id"))
        return candidates[0]
    conversion.skipped.add("activity of an unknown video", row.where("video_id"))
    return None


def _is_subsequence(short: str, long: str) -> bool:
    remaining = iter(long)
    return all(ch in remaining for ch in short)


def _activity_event(activity: Activity, video: Video) -> Event:
    return Event(id=activity.id, participant=video.participant, day=video.day, session=video.id, level=1,
                 start=round(video.start + activity.start, 3), end=round(video.start + activity.end, 3),
                 text=activity.label, source=SOURCE, meta=activity_meta(activity))


def _recordings(videos: dict[str, Video], activities: list[Activity]) -> list[Recording]:
    with_activities = {a.video for a in activities}
    return [Recording(id=v.id, participant=v.participant, day=v.day, session=v.id, start=round(v.start, 3),
                      end=round(v.start + v.duration, 3), source=SOURCE,
                      meta={"person": v.person, "time_basis": LOCAL_CLOCK_AS_UTC, "duration_s": v.duration,
                            "has_activities": v.id in with_activities, **v.meta})
            for v in sorted(videos.values(), key=lambda v: (v.participant, v.start))]


def _metadata(files: dict[str, str], videos: dict[str, Video], levels: dict[str, str]) -> dict[str, Any]:
    participants: dict[str, dict[str, Any]] = {}
    for video in videos.values():
        entry = participants.setdefault(video.participant, {
            "person": video.person, "time_basis": LOCAL_CLOCK_AS_UTC, "videos": 0})
        entry["videos"] += 1
    return {
        "dataset": "HD-EPIC",
        "levels": levels,
        "time_zone": TIME_ZONE_NOTE,
        "time_bases": {LOCAL_CLOCK_AS_UTC: "video ids embed the local recording date and time"},
        "participants": dict(sorted(participants.items())),
        "not_converted": {"complete_recipes.json": "recipes interleave and background activities have "
                                                   "no recipe, so recipes cannot form a valid level"},
        "files": files,
    }
