"""An ingested recording on disk: what ``egohorizon ingest aria|video`` writes and the shard writer reads.

One folder per recording::

    recording.json      the schema.Recording (participant, day, session, start, end) plus ``meta``:
                        source, camera, native image size, rotation applied, time base, gaze file,
                        gaze tolerance and counts of gaze statuses
    frames.jsonl        one line per sampled frame (FrameInfo): time, image file, gaze point in the
                        stored image's native pixels (or null), gaze status, confidence, offset;
                        Aria frames' ``meta`` adds ``device_ns`` and, when MPS has them, ``hands``
                        (per side null or confidence, wrist/palm pixels (null outside the image) and
                        device-frame metres; null without a hand sample within the tolerance) and
                        ``device_pose`` (closed-loop T_world_device: t_world_device, q_world_device_wxyz)
    frames/000000.jpg   the frames at native resolution, upright (rotation already applied)
    transcript.jsonl    one line per spoken word (Word): start, end, text, confidence

Pixel convention: pixel centres sit at integer coordinates (projectaria-tools' convention), so a point
at the centre of the top-left pixel is (0, 0) and the image spans [-0.5, w - 0.5).

Times are seconds in the recording's time base (``meta["time_base"]``): ``epoch`` (seconds since
1970, SPEC §5) or ``relative`` (seconds since the start of the participant's first recording).
The folder is written under a temporary name and renamed when complete, so a crash never leaves
half a recording that looks finished.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.errors import DataError
from egohorizon.owned_output import carry_marker, is_empty
from egohorizon.schema import Recording, iter_json_lines

RECORDING_FILE = "recording.json"
FRAMES_FILE = "frames.jsonl"
TRANSCRIPT_FILE = "transcript.jsonl"
FRAMES_DIR = "frames"

# Gaze status of a frame. Frames are never dropped for their gaze; the status says what happened.
GAZE_OK = "ok"                # projected inside the image
GAZE_MISSING = "missing"      # no gaze sample within the matching tolerance
GAZE_OUTSIDE = "outside"      # the gaze ray leaves the camera's field of view or the image
GAZE_NO_SOURCE = "no_source"  # the recording has no gaze at all (e.g. plain MP4)
GAZE_STATUSES = (GAZE_OK, GAZE_MISSING, GAZE_OUTSIDE, GAZE_NO_SOURCE)


@dataclass
class FrameInfo:
    """One sampled frame. ``gaze`` is in the stored (upright, native) image's pixels."""

    index: int
    t: float
    file: str
    width: int
    height: int
    gaze: tuple[float, float] | None = None
    gaze_status: str = GAZE_NO_SOURCE
    gaze_confidence: float | None = None
    gaze_dt: float | None = None  # gaze sample time minus frame time, seconds
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["gaze"] = list(self.gaze) if self.gaze is not None else None
        return out


@dataclass
class Word:
    """One transcribed word, times in the recording's time base."""

    start: float
    end: float
    text: str
    confidence: float | None = None
    speaker: str | None = None  # when the source knows it (the demo world does; Aria ASR does not)


def _number(obj: dict, key: str, where: str, *, optional: bool = False) -> float | None:
    value = obj.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DataError(f"{where}: field '{key}': expected a number, got {value!r}")
    return float(value)


def _frame_from_dict(obj: Any, where: str) -> FrameInfo:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object")
    for key in ("index", "t", "file", "width", "height", "gaze_status"):
        if key not in obj:
            raise DataError(f"{where}: field '{key}': missing required field")
    if obj["gaze_status"] not in GAZE_STATUSES:
        raise DataError(f"{where}: field 'gaze_status': expected one of {GAZE_STATUSES}, got "
                        f"{obj['gaze_status']!r}")
    gaze = obj.get("gaze")
    if gaze is not None:
        if not (isinstance(gaze, list) and len(gaze) == 2):
            raise DataError(f"{where}: field 'gaze': expected [x, y] or null, got {gaze!r}")
        gaze = (float(gaze[0]), float(gaze[1]))
    if (gaze is not None) != (obj["gaze_status"] == GAZE_OK):
        raise DataError(f"{where}: field 'gaze': a point is present exactly when gaze_status is 'ok'")
    return FrameInfo(index=int(obj["index"]), t=_number(obj, "t", where), file=str(obj["file"]),
                     width=int(obj["width"]), height=int(obj["height"]), gaze=gaze,
                     gaze_status=obj["gaze_status"],
                     gaze_confidence=_number(obj, "gaze_confidence", where, optional=True),
                     gaze_dt=_number(obj, "gaze_dt", where, optional=True), meta=obj.get("meta") or {})


def _word_from_dict(obj: Any, where: str) -> Word:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object")
    if not isinstance(obj.get("text"), str):
        raise DataError(f"{where}: field 'text': expected a string, got {obj.get('text')!r}")
    start, end = _number(obj, "start", where), _number(obj, "end", where)
    if end < start:
        raise DataError(f"{where}: field 'end': expected end >= start, got {end} < {start}")
    speaker = obj.get("speaker")
    return Word(start=start, end=end, text=obj["text"], confidence=_number(obj, "confidence", where, optional=True),
                speaker=speaker if isinstance(speaker, str) else None)


@dataclass
class IngestedRecording:
    """A recording folder read back: its record, frames and words (images load on demand)."""

    root: Path
    recording: Recording
    frames: list[FrameInfo]
    words: list[Word]

    @property
    def meta(self) -> dict[str, Any]:
        return self.recording.meta

    def image_path(self, frame: FrameInfo) -> Path:
        return self.root / frame.file

    def load_image(self, frame: FrameInfo):
        """The frame as an RGB uint8 array (H, W, 3); a missing or corrupt file names itself."""
        import numpy as np
        from PIL import Image, UnidentifiedImageError

        path = self.image_path(frame)
        try:
            with Image.open(path) as image:
                return np.asarray(image.convert("RGB"))
        except (OSError, UnidentifiedImageError) as error:
            raise DataError(f"{path}: cannot read frame {frame.index} ({error})") from error

    def frame_files_digest(self) -> str:
        """A hash of every frame file's name, size and mtime_ns: what the shard writer checks before it
        trusts a shard built from these frames (issue 9). Stat, not content: hashing a month of JPEGs on
        every rebuild costs minutes, and re-ingesting rewrites every file (new mtimes). A copy that does
        not keep mtimes only costs a rebuild."""
        import hashlib

        digest = hashlib.sha256()
        for frame in self.frames:
            path = self.image_path(frame)
            try:
                stat = path.stat()
            except FileNotFoundError:
                raise DataError(f"{path}: frame {frame.index} listed in {self.root / FRAMES_FILE} is missing") from None
            digest.update(f"{frame.file}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()

    @classmethod
    def load(cls, root: str | os.PathLike) -> IngestedRecording:
        root = Path(root)
        rec_path = root / RECORDING_FILE
        if not rec_path.is_file():
            raise DataError(f"{root}: not an ingested recording ({RECORDING_FILE} is missing)")
        try:
            obj = json.loads(rec_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise DataError(f"{rec_path}: invalid JSON ({error.msg} at line {error.lineno})") from error
        recording, problems = Recording.from_dict(obj)
        if problems:
            raise DataError("; ".join(f"{rec_path}: field '{f}': {p}" for f, p in problems))
        frames = [_frame_from_dict(o, f"{root / FRAMES_FILE}:{n}") for n, o in _json_lines(root / FRAMES_FILE)]
        words = []
        if (root / TRANSCRIPT_FILE).is_file():
            words = [_word_from_dict(o, f"{root / TRANSCRIPT_FILE}:{n}")
                     for n, o in _json_lines(root / TRANSCRIPT_FILE)]
        frames.sort(key=lambda f: f.t)
        words.sort(key=lambda w: w.start)
        return cls(root=root, recording=recording, frames=frames, words=words)


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    for number, obj, problem in iter_json_lines(path):
        if problem:
            raise DataError(f"{path}:{number}: {problem}")
        yield number, obj


def find_ingested(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Recording folders at or below the given paths (a folder holding recording.json)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if (path / RECORDING_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p.parent for p in path.rglob(RECORDING_FILE)))
        else:
            raise DataError(f"{path}: no such folder")
    if not found:
        raise DataError(f"no ingested recording ({RECORDING_FILE}) under {', '.join(map(str, paths))}")
    return found


class RecordingWriter:
    """Writes a recording folder under a temporary name; ``commit`` renames it into place."""

    def __init__(self, out_dir: str | os.PathLike, *, jpeg_quality: int = 95, overwrite: bool = False):
        self.out_dir = Path(out_dir)
        # A folder holding only the command's claim (owned_output: marker and lock) is a new one.
        if not is_empty(self.out_dir) and not overwrite:
            raise DataError(f"{self.out_dir}: already exists (pass --overwrite to replace it)")
        self.tmp_dir = self.out_dir.with_name(f".{self.out_dir.name}.tmp-{os.getpid()}")
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        (self.tmp_dir / FRAMES_DIR).mkdir(parents=True)
        self.jpeg_quality = jpeg_quality
        self.frames: list[FrameInfo] = []

    def add_frame(self, image, *, t: float, gaze: tuple[float, float] | None, gaze_status: str,
                  gaze_confidence: float | None = None, gaze_dt: float | None = None,
                  meta: dict[str, Any] | None = None) -> FrameInfo:
        """Stores one upright RGB uint8 frame (H, W, 3) at native resolution."""
        from PIL import Image

        index = len(self.frames)
        name = f"{FRAMES_DIR}/{index:06d}.jpg"
        Image.fromarray(image).save(self.tmp_dir / name, quality=self.jpeg_quality)
        frame = FrameInfo(index=index, t=float(t), file=name, width=int(image.shape[1]),
                          height=int(image.shape[0]), gaze=gaze, gaze_status=gaze_status,
                          gaze_confidence=gaze_confidence, gaze_dt=gaze_dt, meta=meta or {})
        self.frames.append(frame)
        return frame

    def make_recording(self, words: list[Word], *, participant: str, day: str, session: str, source: str,
                       frame_period_s: float) -> Recording:
        """The Recording spans every stream: the frames (each lasting one sampling period) and the words."""
        times = [f.t for f in self.frames]
        if not times:
            raise DataError(f"{self.out_dir}: no frames were read; nothing to ingest")
        start = min([times[0]] + [w.start for w in words])
        end = max([times[-1] + frame_period_s] + [w.end for w in words])
        return Recording(id=f"{participant}/{day}/{session}", participant=participant, day=day,
                         session=session, start=start, end=end, source=source)

    def commit(self, recording: Recording, words: list[Word]) -> IngestedRecording:
        statuses = Counter(f.gaze_status for f in self.frames)
        recording.meta = {**recording.meta, "frames": len(self.frames), "words": len(words),
                          "gaze_status_counts": {s: statuses.get(s, 0) for s in GAZE_STATUSES}}
        # checked before the folder is in place (a --day that is not the clock's day was refused by
        # load() after the move, leaving a folder the corrected rerun had to --overwrite)
        _, problems = Recording.from_dict(recording.to_dict())
        if problems:
            raise DataError("; ".join(f"{self.out_dir}: recording field '{f}': {p}" for f, p in problems))
        _write_lines(self.tmp_dir / FRAMES_FILE, (f.to_dict() for f in self.frames))
        _write_lines(self.tmp_dir / TRANSCRIPT_FILE, (asdict(w) for w in words))
        (self.tmp_dir / RECORDING_FILE).write_text(
            json.dumps(recording.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if self.out_dir.exists():
            carry_marker(self.out_dir, self.tmp_dir)
            shutil.rmtree(self.out_dir)
        self.out_dir.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.tmp_dir, self.out_dir)
        return IngestedRecording.load(self.out_dir)

    def abort(self) -> None:
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


def _write_lines(path: Path, objects: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for obj in objects:
            handle.write(json.dumps(obj, ensure_ascii=False))
            handle.write("\n")
