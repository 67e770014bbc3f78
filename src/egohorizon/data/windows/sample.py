"""30-second window samples (SPEC §5): the unit a captioning model sees and a shard stores.

A window of a recording covers ``[start + i * window_s, start + (i + 1) * window_s)`` from the
recording's start. It holds
- its 1 Hz frames, each downscaled so its long side is ``long_side`` px (never upscaled),
- per frame the gaze point in those downscaled pixels (and in native pixels), its status and
  confidence, and a ``crop_size`` square cut around the gaze from the native-resolution frame
  (frames whose gaze is missing or outside the image get no crop),
- optionally the gaze drawn on the downscaled frame,
- the words whose start lies in the window (each word belongs to exactly one window) and their text,
- the on-screen text read from a few of its de-identified frames (``egohorizon.data.windows.text``;
  ``screen_text``: unique lines with their time in the window; empty when the build did not read it),
- the events of the same participant that overlap the window, and the level-1 ones' texts as captions,
- ids (participant, day, session, recording, window index) and times.

Pixel convention (as in egohorizon.data.ingest.ingested): pixel centres at integer coordinates, so scaling
by ``s`` maps x to ``(x + 0.5) * s - 0.5``; this is what cv2.resize does to pixel centres.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from egohorizon.data.ingest.ingested import GAZE_MISSING, GAZE_OK, GAZE_OUTSIDE, Word
from egohorizon.schema import Event, Recording

# 2: ``screen_text`` (on-screen text lines) and the events' ``place``; readers that need them refuse
# shards of version 1 (built without them) instead of reading every window as text-less.
WINDOW_SCHEMA_VERSION = 2


@dataclass
class SourceFrame:
    """A frame as a recording source offers it: the image loads only when a window needs it."""

    t: float
    # RGB uint8 (H, W, 3), upright, native resolution; or (image, gaze or None, confidence) for
    # sources that only know the gaze once the frame is made (the demo world renders both at once).
    load: Callable[[], Any]
    gaze: tuple[float, float] | None = None  # native pixels
    gaze_status: str = "no_source"
    gaze_confidence: float | None = None
    gaze_dt: float | None = None


@dataclass
class WindowConfig:
    window_s: float = 30.0
    long_side: int = 448
    crop_size: int = 256
    draw_gaze: bool = False
    min_frames: int = 1  # windows with fewer frames are not built (they are counted by the writer)
    stride: int = 1  # build every stride-th window of a recording (1: all); a cheap subsample

    def __post_init__(self):
        if (self.window_s <= 0 or self.long_side < 8 or self.crop_size < 8 or self.min_frames < 0
                or self.stride < 1):
            raise ValueError(f"window config: expected window_s > 0, long_side >= 8, crop_size >= 8, "
                             f"min_frames >= 0, stride >= 1; got {self}")


@dataclass
class WindowFrame:
    t: float
    image: np.ndarray  # downscaled RGB uint8
    crop: np.ndarray | None  # native-resolution square around the gaze
    gaze: tuple[float, float] | None  # downscaled pixels
    gaze_native: tuple[float, float] | None
    gaze_status: str
    gaze_confidence: float | None
    gaze_dt: float | None
    crop_box: tuple[int, int, int, int] | None  # native [x0, y0, x1, y1), x1/y1 exclusive
    native_size: tuple[int, int]  # (width, height)


@dataclass
class WindowSample:
    recording: Recording
    index: int
    start: float
    end: float
    frames: list[WindowFrame]
    words: list[Word]
    events: list[Event]
    config: WindowConfig
    deid: dict[str, int] = field(default_factory=dict)
    screen_text: list[dict[str, Any]] = field(default_factory=list)  # {"t": s in the window, "text"}
    screen_text_counts: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return window_key(self.recording, self.index)

    @property
    def transcript(self) -> str:
        return " ".join(w.text for w in self.words)

    def meta(self) -> dict[str, Any]:
        """The sample's JSON: everything but the images (SPEC §5 shard sample)."""
        rec = self.recording
        return {
            "schema_version": WINDOW_SCHEMA_VERSION, "key": self.key, "participant": rec.participant,
            "day": rec.day, "session": rec.session, "recording": rec.id, "source": rec.source,
            "window": self.index, "start": self.start, "end": self.end,
            "long_side": self.config.long_side, "crop_size": self.config.crop_size,
            "gaze_drawn": self.config.draw_gaze,
            "frames": [_frame_meta(f) for f in self.frames],
            "words": [{"start": w.start, "end": w.end, "text": w.text, "confidence": w.confidence,
                       "speaker": w.speaker} for w in self.words],
            "transcript": self.transcript,
            "screen_text": [dict(line) for line in self.screen_text],
            # place: where the event happens when its source says (the demo world does): the gold scene
            "events": [{"id": e.id, "level": e.level, "start": e.start, "end": e.end, "text": e.text,
                        **({"place": e.meta["place"]} if isinstance(e.meta.get("place"), str) else {})}
                       for e in self.events],
            "captions": [e.text for e in self.events if e.level == 1],
            "deid": dict(self.deid),
        }


def _frame_meta(frame: WindowFrame) -> dict[str, Any]:
    return {"t": frame.t, "size": [int(frame.image.shape[1]), int(frame.image.shape[0])],
            "native_size": list(frame.native_size),
            "gaze": list(frame.gaze) if frame.gaze else None,
            "gaze_native": list(frame.gaze_native) if frame.gaze_native else None,
            "gaze_status": frame.gaze_status, "gaze_confidence": frame.gaze_confidence,
            "gaze_dt": frame.gaze_dt, "crop_box": list(frame.crop_box) if frame.crop_box else None}


_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def safe_name(text: str, max_length: int = 40) -> str:
    """A name usable in tar member names and as one folder name: WebDataset splits a sample's files at
    the first dot, USTAR tar names are limited (100 characters), and ``/`` or ``..`` would leave the
    shard folder. An id that is safe already is kept as it is (shards built before stay valid); any
    other keeps its readable part (accents dropped: ``Zoë`` -> ``Zoe``) and ends in a short hash of
    the original, so ids that read alike (``Zoë``/``Zoé``, ``p1``/``../p1``) get different names
    (issue 22). ``plan_shards`` refuses the (2^-32) case of two ids with one name."""
    readable = _KEY_UNSAFE.sub("-", _without_accents(text)).strip("-")
    if readable and readable == text and len(text) <= max_length:
        return text
    import hashlib

    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
    return f"{readable[:max_length - 9] or 'x'}-{digest}"


def _without_accents(text: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def window_key(recording: Recording, index: int) -> str:
    parts = (recording.participant, recording.day, recording.session)
    return "_".join(safe_name(p) for p in parts) + f"_w{index:05d}"


def window_count(recording: Recording, window_s: float) -> int:
    return max(1, math.ceil((recording.end - recording.start) / window_s - 1e-9))


def window_index(t: float, recording_start: float, window_s: float) -> int:
    return math.floor((t - recording_start) / window_s + 1e-12)


def assign_to_windows(times: Sequence[float], recording_start: float, window_s: float) -> list[int]:
    """Window index of each time (a word's start, a frame's time); negative before the start."""
    return [window_index(t, recording_start, window_s) for t in times]


def scale_point(point: tuple[float, float], scale_x: float, scale_y: float) -> tuple[float, float]:
    return (point[0] + 0.5) * scale_x - 0.5, (point[1] + 0.5) * scale_y - 0.5


def downscaled_size(width: int, height: int, long_side: int) -> tuple[int, int]:
    scale = min(1.0, long_side / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def crop_box(center: tuple[float, float], size: int, width: int, height: int) -> tuple[int, int, int, int]:
    """A size x size box around ``center`` shifted to lie inside the image (smaller if the image is)."""
    box_w, box_h = min(size, width), min(size, height)
    x0 = int(np.clip(round(center[0] - box_w / 2 + 0.5), 0, width - box_w))
    y0 = int(np.clip(round(center[1] - box_h / 2 + 0.5), 0, height - box_h))
    return x0, y0, x0 + box_w, y0 + box_h


def draw_gaze(image: np.ndarray, point: tuple[float, float]) -> np.ndarray:
    """The image with a ring at the gaze point (radius ~2.5% of the long side)."""
    import cv2

    out = image.copy()
    radius = max(3, round(max(image.shape[:2]) / 40))
    center = (round(float(point[0])), round(float(point[1])))
    cv2.circle(out, center, radius, (255, 0, 0), thickness=max(1, radius // 3), lineType=cv2.LINE_AA)
    return out


def make_window_frame(source: SourceFrame, image: np.ndarray, config: WindowConfig) -> WindowFrame:
    """Downscale, scale the gaze, cut the native crop; ``image`` is the (de-identified) native frame."""
    import cv2

    height, width = image.shape[:2]
    small_w, small_h = downscaled_size(width, height, config.long_side)
    small = image if (small_w, small_h) == (width, height) else cv2.resize(
        image, (small_w, small_h), interpolation=cv2.INTER_AREA)
    gaze_small = box = crop = None
    if source.gaze_status == GAZE_OK and source.gaze is not None:
        gaze_small = scale_point(source.gaze, small_w / width, small_h / height)
        box = crop_box(source.gaze, config.crop_size, width, height)
        crop = np.ascontiguousarray(image[box[1]:box[3], box[0]:box[2]])
        if config.draw_gaze:
            small = draw_gaze(small, gaze_small)
    return WindowFrame(t=source.t, image=small, crop=crop, gaze=gaze_small, gaze_native=source.gaze,
                       gaze_status=source.gaze_status, gaze_confidence=source.gaze_confidence,
                       gaze_dt=source.gaze_dt, crop_box=box, native_size=(width, height))


def overlapping_events(events: Iterable[Event], participant: str, start: float, end: float) -> list[Event]:
    """Events of the participant with a positive overlap with [start, end), in time order."""
    hits = [e for e in events if e.participant == participant and e.start < end and e.end > start]
    return sorted(hits, key=lambda e: (e.start, e.level, e.id))


def group_windows(recording: Recording, frames: Sequence[SourceFrame], words: Sequence[Word],
                  window_s: float) -> list[tuple[int, list[SourceFrame], list[Word]]]:
    """(index, frames, words) for every window of the recording, frames and words by their start time.
    Frames or words before the recording's start or after its last window are left out."""
    count = window_count(recording, window_s)
    by_frames: list[list[SourceFrame]] = [[] for _ in range(count)]
    by_words: list[list[Word]] = [[] for _ in range(count)]
    for frame, index in zip(frames, assign_to_windows([f.t for f in frames], recording.start, window_s)):
        if 0 <= index < count:
            by_frames[index].append(frame)
    for word, index in zip(words, assign_to_windows([w.start for w in words], recording.start, window_s)):
        if 0 <= index < count:
            by_words[index].append(word)
    return [(i, by_frames[i], by_words[i]) for i in range(count)]


def _load(source: SourceFrame) -> tuple[np.ndarray, SourceFrame]:
    loaded = source.load()
    if not isinstance(loaded, tuple):
        return loaded, source
    image, gaze, confidence = loaded
    status = GAZE_OK if gaze is not None else GAZE_MISSING
    height, width = image.shape[:2]
    if gaze is not None and not (-0.5 <= gaze[0] < width - 0.5 and -0.5 <= gaze[1] < height - 0.5):
        status = GAZE_OUTSIDE  # looked beyond the camera's view: marked, like Aria gaze outside the image
    gaze = (float(gaze[0]), float(gaze[1])) if status == GAZE_OK else None
    return image, replace(source, gaze=gaze, gaze_status=status,
                          gaze_confidence=float(confidence) if confidence is not None else None)


def build_window(recording: Recording, index: int, frames: Sequence[SourceFrame], words: Sequence[Word],
                 events: Iterable[Event], config: WindowConfig,
                 deidentify: Callable[[np.ndarray], tuple[np.ndarray, dict[str, int]]] | None = None,
                 screen_text=None) -> WindowSample:
    """One window sample; every native frame passes ``deidentify`` before anything is cut from it or
    read: ``screen_text`` (an ``egohorizon.data.windows.text.ScreenTextReader``) OCRs the de-identified
    frames only."""
    start = recording.start + index * config.window_s
    end = start + config.window_s
    totals: dict[str, int] = {}
    window_frames, to_read, slots = [], [], set()
    for source in frames:
        image, source = _load(source)
        if deidentify is not None:
            image, counts = deidentify(image)
            for name, value in counts.items():
                totals[name] = totals.get(name, 0) + value
        if screen_text is not None and screen_text.slot(source.t - start) not in slots:
            slots.add(screen_text.slot(source.t - start))
            to_read.append((source.t - start, image))  # the de-identified native frame
        window_frames.append(make_window_frame(source, image, config))
    lines, line_counts = screen_text.read_window(to_read) if screen_text is not None else ([], {})
    return WindowSample(recording=recording, index=index, start=start, end=end, frames=window_frames,
                        words=list(words), events=overlapping_events(events, recording.participant, start, end),
                        config=config, deid=totals, screen_text=lines, screen_text_counts=dict(line_counts))
