"""What the shard writer reads: recordings with lazily loaded frames, their words and events.

Two kinds of input become ``RecordingSource`` objects:
- ingested recordings (``egohorizon ingest aria|video``), frames read from their JPEG files;
- the demo world, whose frames are rendered on the fly (deterministic per session and time) and
  never stored as files.

Each source has a fingerprint of everything a shard takes from it (``source_fingerprint``): the
recording record, frame times and gaze, words, the events overlapping it, and the identity of its
pixels (``pixels``: the frame files' names, sizes and mtimes for an ingested recording, the world's
seed and frame size for the demo). The writer reuses a shard only when the fingerprints of the
sessions it holds are unchanged, and ``shards verify`` compares them with the inputs (issue 9).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from egohorizon.data.ingest.ingested import GAZE_MISSING, IngestedRecording, Word, find_ingested
from egohorizon.data.windows.sample import SourceFrame, overlapping_events, window_count
from egohorizon.errors import DataError
from egohorizon.schema import Event, Recording, load_jsonl


@dataclass
class RecordingSource:
    recording: Recording
    frames: list[SourceFrame]
    words: list[Word]
    events: list[Event] = field(default_factory=list)
    kind: str = "ingested"  # "ingested" or "demo": decides the de-identification default
    # What identifies the frames' pixels without loading them; None: the fingerprint hashes the pixels.
    pixels: str | None = None


def _load_ingested_frame(recording: IngestedRecording, index: int) -> np.ndarray:
    return recording.load_image(recording.frames[index])


def ingested_source(recording: IngestedRecording, events: Sequence[Event] = ()) -> RecordingSource:
    frames = [SourceFrame(t=f.t, load=functools.partial(_load_ingested_frame, recording, i), gaze=f.gaze,
                          gaze_status=f.gaze_status, gaze_confidence=f.gaze_confidence, gaze_dt=f.gaze_dt)
              for i, f in enumerate(recording.frames)]
    participant = recording.recording.participant
    return RecordingSource(recording=recording.recording, frames=frames, words=list(recording.words),
                           events=[e for e in events if e.participant == participant], kind="ingested",
                           pixels=f"files {recording.frame_files_digest()}")


def ingested_sources(paths: Iterable[str | os.PathLike],
                     event_files: Iterable[str | os.PathLike] = ()) -> list[RecordingSource]:
    """Sources for every ingested recording folder at or below ``paths``; events from JSONL files.

    An events file none of whose events is of a recording's participant is refused: its events would
    be dropped without a word (another data set's events, or ids spelled otherwise)."""
    recordings = [IngestedRecording.load(p) for p in find_ingested(paths)]
    people = sorted({r.recording.participant for r in recordings})
    events: list[Event] = []
    for path in event_files:
        loaded = load_jsonl(path, Event)
        theirs = sorted({e.participant for e in loaded})
        if loaded and not set(theirs) & set(people):
            raise DataError(f"{path}: none of its {len(loaded)} events is of a participant of the recordings "
                            f"(events: {_few(theirs)}; recordings: {_few(people)}); no window would get them")
        events += loaded
    return [ingested_source(recording, events) for recording in recordings]


def _few(names: list[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _render_demo_frame(world, session: str, t: float, size: int):
    image, gaze, confidence = world.render_frame(session, t, size=size)
    return np.asarray(image.convert("RGB")), gaze, confidence


def _utterance_words(utterance: dict) -> list[Word]:
    """Timed words of a demo utterance (``words``: [[text, start, end], ...] in seconds from the
    utterance's start), or the whole utterance as one entry when it has no word times."""
    speaker = utterance.get("speaker")
    origin = float(utterance["start"])
    if utterance.get("words"):
        return [Word(start=origin + float(start), end=origin + float(end), text=str(text), speaker=speaker)
                for text, start, end in utterance["words"]]
    return [Word(start=float(utterance["start"]), end=float(utterance["end"]), text=str(utterance["text"]),
                 speaker=speaker)]


def demo_sources(world, *, frame_size: int = 448, rate_hz: float = 1.0,
                 recordings: Sequence[Recording] | None = None) -> list[RecordingSource]:
    """Sources for the demo world's recordings: 1 Hz frames rendered at ``frame_size`` when a window
    is built (with their gaze point), never stored as files."""
    sources = []
    transcript = list(getattr(world, "transcript", []) or [])
    # A demo frame is a pure function of (seed, session, t, the event at t, size): events and times are
    # in the fingerprint already, so this names the rest.
    pixels = f"demo seed {world.seed} generator {world.meta.get('version')} size {frame_size}"
    for recording in recordings if recordings is not None else world.recordings:
        if rate_hz == 1.0 and hasattr(world, "frame_times"):
            times = world.frame_times(recording.session)  # the world's own 1 Hz grid
        else:
            count = max(1, math.floor((recording.end - recording.start) * rate_hz + 1e-9))
            times = [recording.start + k / rate_hz for k in range(count)]
        render = functools.partial(_render_demo_frame, world, recording.session)
        frames = [SourceFrame(t=t, load=functools.partial(render, t, frame_size), gaze_status=GAZE_MISSING,
                              gaze_dt=0.0) for t in times]
        utterances = [u for u in transcript
                      if u.get("participant") == recording.participant and u.get("session") == recording.session]
        words = [w for u in utterances for w in _utterance_words(u)]
        events = [e for e in world.events if e.participant == recording.participant]
        sources.append(RecordingSource(recording=recording, frames=frames, words=words, events=events, kind="demo",
                                       pixels=pixels))
    return sources


def source_fingerprint(source: RecordingSource, window_s: float) -> str:
    """A hash of everything the shards take from ``source`` with windows of ``window_s`` seconds."""
    rec = source.recording
    span_end = rec.start + window_count(rec, window_s) * window_s
    content = {
        "recording": rec.to_dict(),
        "frames": [[f.t, f.gaze, f.gaze_status, f.gaze_confidence, f.gaze_dt] for f in source.frames],
        "words": [asdict(w) for w in source.words],
        # Only the events a window of this recording can carry, so an edit elsewhere changes nothing.
        "events": [e.to_dict() for e in overlapping_events(source.events, rec.participant, rec.start, span_end)],
        "pixels": source.pixels if source.pixels is not None else _pixels_digest(source.frames),
    }
    blob = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _pixels_digest(frames: Sequence[SourceFrame]) -> str:
    """The hash of every frame's pixels, for sources that cannot name them more cheaply."""
    digest = hashlib.sha256()
    for frame in frames:
        loaded = frame.load()
        image = np.ascontiguousarray(loaded[0] if isinstance(loaded, tuple) else loaded)
        digest.update(repr(image.shape).encode())
        digest.update(image.tobytes())
    return "pixels " + digest.hexdigest()
