"""EPIC-KITCHENS-55 and -100 narrated action segments -> level-1 events, one video = one session.

Where to get the files (annotations only; no video is read):
- https://github.com/epic-kitchens/epic-kitchens-100-annotations (CC BY-NC 4.0):
  ``EPIC_100_train.csv`` (the full train set; optional, stored with Git LFS, fetch it with
  ``git lfs pull``), ``EPIC_100_validation.csv``, ``UDA_annotations/EPIC_100_uda_source_train.csv``,
  ``EPIC_100_uda_source_val.csv``, ``EPIC_100_uda_target_val.csv``, ``EPIC_100_video_info.csv``,
  ``EPIC_100_verb_classes.csv``, ``EPIC_100_noun_classes.csv``.
- https://github.com/epic-kitchens/epic-kitchens-55-annotations (CC BY-NC 4.0):
  ``EPIC_train_action_labels.csv``, ``EPIC_train_invalid_labels.csv``, ``EPIC_descriptions.csv``
  (recording date and time of every EPIC-55 video), ``EPIC_video_info.csv``.
- https://github.com/fpv-iplab/rulstm: ``RULSTM/data/ek100/training.csv`` (every EPIC-100 train
  segment: narration id, video, start/stop frame at 30 fps, verb/noun/action class; no text).
Put them anywhere under one folder and pass it as ``--root``; files are found by name.

What is built, and why:
- Segments are keyed by the EPIC-100 narration id (``P01_01_0``). Text comes from, in order of
  preference: ``EPIC_100_train.csv``, ``EPIC_100_validation.csv``, the three labelled UDA files, the
  EPIC-55 train labels, and last RULSTM's ``training.csv`` with text made from the EPIC-100 verb and
  noun class names ("take" + "board:chopping" -> "take chopping board"; ``meta.text_from`` says
  ``class_names``). Without RULSTM (or ``EPIC_100_train.csv``) about half of the EPIC-100 train
  segments have no text, leaving holes in every sequence, which would mislead a forecaster.
- Deduplication: the same narration id in several files is kept once (first file in the order
  above). EPIC-55 rows carry a running ``uid``; the EPIC-100 id of the same segment is
  ``<video>_<uid - first uid of the video>`` counting ``EPIC_train_invalid_labels.csv`` too (checked:
  28,420 of 28,472 rows map onto RULSTM segments with identical times). EPIC-55 rows whose id EPIC-100
  dropped (52 rows such as "using hand") are skipped and counted when an EPIC-100 train list is present.
- Rows with an empty ``narration_timestamp`` (EPIC lists them in ``*_missing_timestamp_narrations.csv``)
  still have segment start/stop times: they are kept and counted.
- Time: EPIC-55 videos (``PXX_YY``) have a recording date and clock time in ``EPIC_descriptions.csv``:
  events get real calendar days and Unix seconds (local clock written as UTC, see ``_common``).
  Stated starts are rounded to the minute and sometimes repeated, so videos are placed one after the
  other: a video starts at ``max(stated start, end of the previous video)`` (shift in the recording's
  meta). Times of 00:00:00 (P13, P21) mean "clock time unknown": the day is right, the time of day is
  not (``clock_time_known: false``). The EPIC-100 extension videos (``PXX_1YY``) have no date: they form
  a separate participant ``ek-PXX-ext`` whose times are seconds since the start of its first video,
  each video on its own placeholder day ``undated-PXX_1YY`` starting (number - first number) x 86,400 s
  after the first (the real gaps are unknown). One participant never mixes the two time bases; the
  basis of each is in ``metadata.json`` and each recording's meta.
- Participants are namespaced ``ek-PXX`` so that conversions of several data sets can sit together.
- Level-1 order: start, then end, then id. Overlapping segments (one action inside another) are kept
  as annotated, not clipped; their count is reported.
- Test-split files (timestamps without labels) are not read: they have no text.
- EPIC-100's own split: every event's ``meta.official_split`` is "validation" for the segments of
  ``EPIC_100_validation.csv`` and "train" for all others (the UDA "val" files are subsets of the
  official train set). ``strategy="official"`` of the day split (``egohorizon points --strategy
  official``, ``data.split_strategy=official``) makes every day holding a validation segment test,
  so none of them is a train target. The default day split ignores it: drawn days mix both sets.
- Held-out units: a split holds out (participant, day) pairs. For the dated participants those are
  calendar days; for the ``ek-PXX-ext`` participants each placeholder day is one video, so there a
  held-out "day" is a held-out video (the counts and ``metadata.json`` say how many of each).
"""

from __future__ import annotations

import ast
import functools
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.data.sources._common import (
    LOCAL_CLOCK_AS_UTC,
    SINCE_FIRST_RECORDING,
    TIME_ZONE_NOTE,
    Conversion,
    FileIndex,
    Row,
    SkipLog,
    count_overlaps,
    parse_clock,
    parse_int,
    read_csv,
    sort_events,
)
from egohorizon.data.sources.epic_timeline import VIDEO, Placement, descriptions, place_videos, video_info
from egohorizon.errors import DataError
from egohorizon.schema import Event, Recording

log = logging.getLogger(__name__)

SOURCE = "epic-kitchens"
RULSTM_FPS = 30.0  # RULSTM re-indexed every video's frames at 30 fps

# Labelled EPIC-100 files, in order of preference when a narration id appears in several.
EPIC100_TEXT_FILES = (
    "EPIC_100_train.csv",
    "EPIC_100_validation.csv",
    "EPIC_100_uda_source_train.csv",
    "EPIC_100_uda_source_val.csv",
    "EPIC_100_uda_target_val.csv",
)
EPIC100_COLUMNS = ("narration_id", "participant_id", "video_id", "narration_timestamp", "start_timestamp",
                   "stop_timestamp", "narration", "verb", "verb_class", "noun", "noun_class",
                   "all_nouns", "all_noun_classes")
EPIC55_COLUMNS = ("uid", "participant_id", "video_id", "narration", "start_timestamp", "stop_timestamp",
                  "verb", "verb_class", "noun", "noun_class", "all_nouns", "all_noun_classes")
RULSTM_FIELDS = ("narration_id", "video_id", "start_frame", "stop_frame", "verb_class", "noun_class",
                 "action_class")


@dataclass
class Segment:
    """One narrated action segment, times in seconds from the start of its video."""

    narration_id: str
    person: str
    video: str
    start: float
    end: float
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


def convert(root: str | Path, *, use_rulstm: bool = True) -> Conversion:
    """Reads the EPIC-KITCHENS annotation files under ``root`` (see the module docstring)."""
    index = FileIndex(root)
    conversion = Conversion(SOURCE)
    files: dict[str, str] = {}
    segments = _collect_segments(index, conversion, files, use_rulstm)
    if not segments:
        raise DataError(f"{root}: no EPIC-KITCHENS action segments found (looked for "
                        f"{', '.join(EPIC100_TEXT_FILES)}, EPIC_train_action_labels.csv)")
    videos = video_info(index, files)
    dates = descriptions(index, files)
    extent: dict[str, float] = defaultdict(float)
    for segment in segments.values():
        extent[segment.video] = max(extent[segment.video], segment.end)
    placements = place_videos(extent, videos, dates, conversion)
    conversion.events = sort_events(_event(s, placements[s.video]) for s in segments.values())
    conversion.recordings = _recordings(segments, videos, placements)
    conversion.counts["events"] = len(conversion.events)
    conversion.counts["overlapping adjacent segments (kept)"] = count_overlaps(conversion.events)
    units = _split_units(conversion.events)
    conversion.counts["split units: calendar days (dated videos)"] = units["days"]
    conversion.counts["split units: undated videos (a placeholder day each; held out as videos)"] = (
        units["undated_videos"])
    conversion.counts["events in EPIC-100's official validation set (meta.official_split)"] = (
        units["validation_events"])
    conversion.metadata = _metadata(files, placements, units)
    return conversion


def _split_units(events: list[Event]) -> dict[str, int]:
    """What a day split can hold out here, and how many events are in EPIC-100's validation set."""
    days = {(e.participant, e.day, e.meta["time_basis"]) for e in events}
    undated = sum(1 for _, _, basis in days if basis == SINCE_FIRST_RECORDING)
    return {"days": len(days) - undated, "undated_videos": undated,
            "validation_events": sum(1 for e in events if e.meta["official_split"] == "validation")}


# ----------------------------------------------------------------------------------------------
# Segments from the annotation files
# ----------------------------------------------------------------------------------------------


def _collect_segments(index: FileIndex, conversion: Conversion, files: dict[str, str],
                      use_rulstm: bool) -> dict[str, Segment]:
    segments: dict[str, Segment] = {}
    known_ids: set[str] = set()  # every EPIC-100 id seen, to tell which EPIC-55 rows EPIC-100 dropped
    has_full_train = False
    for name in EPIC100_TEXT_FILES:
        path = index.find(name)
        if path is None:
            continue
        files[name] = str(path)
        has_full_train |= name == "EPIC_100_train.csv"
        for segment in _read_epic100(path, conversion.skipped):
            known_ids.add(segment.narration_id)
            _add(segments, segment, conversion.counts)
    rulstm = index.find("training.csv", parent="ek100") if use_rulstm else None
    rulstm_rows = list(_read_rulstm(rulstm)) if rulstm else []
    if rulstm:
        files["rulstm ek100/training.csv"] = str(rulstm)
        known_ids.update(row["narration_id"] for row in rulstm_rows)
        has_full_train = True
    _add_epic55(index, segments, known_ids if has_full_train else None, conversion, files)
    if rulstm_rows:
        classes = _class_names(index, files)
        for row in rulstm_rows:
            if row["narration_id"] not in segments:
                segments[row["narration_id"]] = _rulstm_segment(row, classes)
                conversion.counts["segments with class-name text (RULSTM)"] += 1
    for name, count in Counter(s.meta["file"] for s in segments.values()).items():
        conversion.counts[f"segments from {'RULSTM ' if name == 'training.csv' else ''}{name}"] = count
    _mark_official_split(segments, index)
    return segments


def _mark_official_split(segments: dict[str, Segment], index: FileIndex) -> None:
    """EPIC-100's own split by narration id: the ids of EPIC_100_validation.csv are "validation",
    every other segment read here is from the official train set."""
    path = index.find("EPIC_100_validation.csv")
    validation = {row["narration_id"].strip() for row in read_csv(path, ("narration_id",))} if path else set()
    for narration_id, segment in segments.items():
        segment.meta["official_split"] = "validation" if narration_id in validation else "train"


def _add(segments: dict[str, Segment], segment: Segment, counts: Counter) -> None:
    kept = segments.get(segment.narration_id)
    if kept is None:
        segments[segment.narration_id] = segment
        return
    counts["duplicate segments across files (kept once)"] += 1
    if (kept.start, kept.end, kept.text) != (segment.start, segment.end, segment.text):
        counts["duplicates that differ (first file kept)"] += 1


def _read_epic100(path: Path, skipped: SkipLog):
    for row in read_csv(path, EPIC100_COLUMNS):
        person, video = _person_video(row)
        if not row["narration_timestamp"].strip():
            skipped.add("narration_timestamp missing (segment kept: start/stop are present)", row.where())
        yield _segment(row, row["narration_id"].strip(), person, video, {
            "narration_timestamp": row["narration_timestamp"] or None,
            "verb": row["verb"], "verb_class": parse_int(row, "verb_class"),
            "noun": row["noun"], "noun_class": parse_int(row, "noun_class"),
            "all_nouns": _literal_list(row, "all_nouns"),
            "all_noun_classes": _literal_list(row, "all_noun_classes"),
            "taxonomy": "epic100",
        })


def _add_epic55(index: FileIndex, segments: dict[str, Segment], known_ids: set[str] | None,
                conversion: Conversion, files: dict[str, str]) -> None:
    labels = index.find("EPIC_train_action_labels.csv")
    if labels is None:
        return
    invalid = index.find("EPIC_train_invalid_labels.csv", required=True,
                         what="needed to map EPIC-55 uids onto EPIC-100 narration ids")
    files["EPIC_train_action_labels.csv"] = str(labels)
    files["EPIC_train_invalid_labels.csv"] = str(invalid)
    rows = list(read_csv(labels, EPIC55_COLUMNS))
    first_uid: dict[str, int] = {}
    for row in sorted(rows + list(read_csv(invalid, ("uid", "video_id"))), key=lambda r: parse_int(r, "uid")):
        first_uid.setdefault(row["video_id"], parse_int(row, "uid"))
    for row in rows:
        narration_id = f"{row['video_id']}_{parse_int(row, 'uid') - first_uid[row['video_id']]}"
        if narration_id in segments:
            conversion.counts["EPIC-55 rows already in an EPIC-100 file (kept once)"] += 1
        elif known_ids is not None and narration_id not in known_ids:
            conversion.skipped.add("EPIC-55 segment that EPIC-100 removed", row.where())
        else:
            person, video = _person_video(row)
            segments[narration_id] = _segment(row, narration_id, person, video, {
                "uid": parse_int(row, "uid"),
                "verb": row["verb"], "verb_class": parse_int(row, "verb_class"),
                "noun": row["noun"], "noun_class": parse_int(row, "noun_class"),
                "all_nouns": _literal_list(row, "all_nouns"),
                "all_noun_classes": _literal_list(row, "all_noun_classes"),
                "taxonomy": "epic55",
            })


def _segment(row: Row, narration_id: str, person: str, video: str, meta: dict[str, Any]) -> Segment:
    start, end = parse_clock(row, "start_timestamp"), parse_clock(row, "stop_timestamp")
    if end < start:
        raise row.error("stop_timestamp", f"segment ends before it starts ({row['start_timestamp']})")
    text = row["narration"].strip()
    if not text:
        raise row.error("narration", "expected a non-empty narration")
    meta = {"file": row.path.name, "line": row.line, "text_from": "narration", **meta}
    return Segment(narration_id, person, video, start, end, text, meta)


def _person_video(row: Row) -> tuple[str, str]:
    video = row["video_id"].strip()
    match = VIDEO.match(video)
    if not match:
        raise row.error("video_id", "expected a video id like P01_01")
    if "participant_id" in row.cells and row["participant_id"].strip() != match.group(1):
        raise row.error("participant_id", f"does not match video {video}")
    return match.group(1), video


def _literal_list(row: Row, column: str) -> list:
    value = _parse_literal(row[column])
    if not isinstance(value, tuple):
        raise row.error(column, "expected a list such as ['door']")
    return list(value)


@functools.cache
def _parse_literal(text: str) -> tuple | None:
    """A Python list literal -> tuple (None if it is not one); cached, as the same few thousand
    values repeat across ~100k rows and ``literal_eval`` is the slowest step of the conversion."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return tuple(value) if isinstance(value, (list, tuple)) else None


def _read_rulstm(path: Path):
    for row in read_csv(path, RULSTM_FIELDS, fieldnames=RULSTM_FIELDS):
        _person_video(row)
        yield row


def _class_names(index: FileIndex, files: dict[str, str]) -> dict[str, dict[int, str]]:
    names = {}
    for kind in ("verb", "noun"):
        path = index.find(f"EPIC_100_{kind}_classes.csv") or index.find(f"EPIC_100_{kind}_classes_v2.csv")
        if path is None:
            raise DataError(f"{index.root}: EPIC_100_{kind}_classes.csv not found; it is needed to name "
                            "the RULSTM segments (or pass --no-rulstm)")
        files[f"EPIC_100_{kind}_classes"] = str(path)
        names[kind] = {parse_int(row, "id"): row["key"] for row in read_csv(path, ("id", "key"))}
    return names


def class_text(verb: str, noun: str) -> str:
    """EPIC class keys -> a narration-like phrase: 'turn-on' + 'maker:coffee' -> 'turn on coffee maker'."""
    noun_words = " ".join(reversed(noun.split(":")))
    return f"{verb.replace('-', ' ')} {noun_words}".strip()


def _rulstm_segment(row: Row, classes: dict[str, dict[int, str]]) -> Segment:
    verb_class, noun_class = parse_int(row, "verb_class"), parse_int(row, "noun_class")
    if verb_class not in classes["verb"]:
        raise row.error("verb_class", "not in EPIC_100_verb_classes.csv")
    if noun_class not in classes["noun"]:
        raise row.error("noun_class", "not in EPIC_100_noun_classes.csv")
    start, end = parse_int(row, "start_frame") / RULSTM_FPS, parse_int(row, "stop_frame") / RULSTM_FPS
    if start < 0:
        raise row.error("start_frame", "expected a frame number >= 0")
    if end < start:
        raise row.error("stop_frame", f"segment ends before it starts ({row['start_frame']})")
    verb, noun = classes["verb"][verb_class], classes["noun"][noun_class]
    person, video = _person_video(row)
    meta = {"file": row.path.name, "line": row.line, "text_from": "class_names", "verb": verb,
            "verb_class": verb_class, "noun": noun, "noun_class": noun_class,
            "action_class": parse_int(row, "action_class"), "taxonomy": "epic100"}
    return Segment(row["narration_id"].strip(), person, video, round(start, 3), round(end, 3),
                   class_text(verb, noun), meta)


def _event(segment: Segment, placement: Placement) -> Event:
    meta = {"narration_id": segment.narration_id, "video_id": segment.video,
            "offset_s": [segment.start, segment.end], "time_basis": placement.basis, **segment.meta}
    return Event(id=segment.narration_id, participant=placement.participant, day=placement.day,
                 session=segment.video, level=1, start=round(placement.start + segment.start, 3),
                 end=round(placement.start + segment.end, 3), text=segment.text, source=SOURCE, meta=meta)


def _recordings(segments: dict[str, Segment], videos: dict[str, dict[str, float]],
                placements: dict[str, Placement]) -> list[Recording]:
    annotated = Counter(s.video for s in segments.values())
    extent: dict[str, float] = defaultdict(float)
    for segment in segments.values():
        extent[segment.video] = max(extent[segment.video], segment.end)
    records = []
    for video, placement in sorted(placements.items(), key=lambda kv: (kv[1].participant, kv[1].start)):
        length = videos.get(video, {}).get("duration_s", extent[video])
        records.append(Recording(
            id=video, participant=placement.participant, day=placement.day, session=video,
            start=round(placement.start, 3), end=round(placement.start + length, 3), source=SOURCE,
            meta={"person": placement.person, "time_basis": placement.basis,
                  "annotated_segments": annotated[video], **placement.meta}))
    return records


def _metadata(files: dict[str, str], placements: dict[str, Placement], units: dict[str, int]) -> dict[str, Any]:
    participants: dict[str, dict[str, Any]] = {}
    for placement in placements.values():
        entry = participants.setdefault(placement.participant, {
            "person": placement.person, "time_basis": placement.basis, "videos": 0})
        entry["videos"] += 1
    return {
        "dataset": "EPIC-KITCHENS-55/100 narrated action segments",
        "levels": {"1": "narrated action segments"},
        "time_zone": TIME_ZONE_NOTE,
        "time_bases": {
            LOCAL_CLOCK_AS_UTC: "EPIC-55 videos dated by EPIC_descriptions.csv: Unix seconds of the local clock",
            SINCE_FIRST_RECORDING: "EPIC-100 extension videos (no date): seconds since the start of the "
                                   "participant's first video; one placeholder day per video, 86,400 s apart",
        },
        "participants": dict(sorted(participants.items())),
        "split_units": {
            "days": units["days"],
            "undated_videos": units["undated_videos"],
            "note": "a day split holds out (participant, day) pairs: calendar days of the dated videos, "
                    "and for the ek-PXX-ext participants placeholder days of one video each, so a held-out "
                    "placeholder day is a held-out video (real date unknown)",
        },
        "official_split": {
            "field": "meta.official_split",
            "validation_file": files.get("EPIC_100_validation.csv"),
            "validation_events": units["validation_events"],
            "note": "EPIC-100's own train/validation split; egohorizon points --strategy official (or "
                    "data.split_strategy=official) makes every day holding a validation segment test",
        },
        "files": files,
    }
