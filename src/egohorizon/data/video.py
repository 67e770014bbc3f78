"""MP4 (and other container) ingestion: frames sampled at 1 fps or a given rate, with decord or PyAV.

decord seeks by frame index and decodes only the frames it needs, which is fastest for sparse 1 Hz
sampling; it is not built for every platform (no aarch64 wheels) and rejects some codecs, so PyAV,
which decodes sequentially, is the fallback. Both report the same presentation times, and the sampled
frames are the ones whose times are nearest to ticks every 1/rate s from the first frame.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from egohorizon.data.ingested import GAZE_NO_SOURCE, IngestedRecording, RecordingWriter
from egohorizon.errors import DataError

log = logging.getLogger(__name__)

BACKENDS = ("auto", "decord", "pyav")


def tick_indices(times_s: np.ndarray, rate_hz: float | None) -> np.ndarray:
    """Indices of the frames nearest to ticks every 1/rate s from the first frame (each used once;
    a tie goes to the earlier frame); every frame when rate is None."""
    times_s = np.asarray(times_s, dtype=np.float64)
    if rate_hz is None or len(times_s) == 0:
        return np.arange(len(times_s))
    if rate_hz <= 0:
        raise DataError(f"rate: expected a positive frame rate in Hz, got {rate_hz}")
    ticks = np.arange(times_s[0], times_s[-1] + 1e-9, 1.0 / rate_hz)
    right = np.clip(np.searchsorted(times_s, ticks), 0, len(times_s) - 1)
    left = np.clip(right - 1, 0, len(times_s) - 1)
    nearest = np.where(np.abs(times_s[left] - ticks) <= np.abs(times_s[right] - ticks), left, right)
    return np.unique(nearest)


def _decord_frames(path: Path, rate_hz: float | None, chunk: int = 16) -> Iterator[tuple[float, np.ndarray]]:
    import decord

    reader = decord.VideoReader(str(path), ctx=decord.cpu(0))
    count = len(reader)
    if count == 0:
        return
    times = reader.get_frame_timestamp(np.arange(count))[:, 0]
    indices = tick_indices(times, rate_hz)
    for begin in range(0, len(indices), chunk):
        batch = indices[begin:begin + chunk]
        frames = reader.get_batch(batch.tolist()).asnumpy()
        for index, frame in zip(batch, frames):
            yield float(times[index]), frame


def _pyav_frames(path: Path, rate_hz: float | None) -> Iterator[tuple[float, np.ndarray]]:
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        # Decode once to learn the presentation times, then keep the frames nearest to each tick;
        # two passes keep memory at one frame instead of the whole video.
        times = np.array([float(f.time) for f in container.decode(stream) if f.time is not None])
    if len(times) == 0:
        return
    times -= times[0]
    wanted = set(tick_indices(times, rate_hz).tolist())
    with av.open(str(path)) as container:
        index = -1
        for frame in container.decode(container.streams.video[0]):
            if frame.time is None:
                continue
            index += 1
            if index in wanted:
                yield float(times[index]), frame.to_ndarray(format="rgb24")


def read_video_frames(path: str | os.PathLike, rate_hz: float | None = 1.0,
                      backend: str = "auto") -> Iterator[tuple[float, np.ndarray]]:
    """Yields (seconds from the first frame, RGB uint8 (H, W, 3)) sampled at ``rate_hz``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: video file not found")
    if backend not in BACKENDS:
        raise DataError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend in ("auto", "decord"):
        try:
            frames = _decord_frames(path, rate_hz)
            first = next(frames, None)  # opens the file: unsupported codecs fail here, before any yield
        except (ImportError, RuntimeError) as error:  # decord raises DECORDError, a RuntimeError
            if backend == "decord":
                raise DataError(f"{path}: decord cannot read this video ({error})") from error
            log.info("%s: decord unavailable or failed (%s); decoding with PyAV", path, error)
        else:
            if first is None:
                return
            origin = first[0]  # decord starts MP4s at 0; normalise anyway so both backends agree
            yield 0.0, first[1]
            try:
                for t, frame in frames:
                    yield t - origin, frame
            except RuntimeError as error:
                raise DataError(f"{path}: decord failed mid-video ({error})") from error
            return
    try:
        yield from _pyav_frames(path, rate_hz)
    except Exception as error:  # PyAV raises av.error.* (InvalidDataError, ...), all Exceptions
        raise DataError(f"{path}: cannot decode video ({error})") from error


def container_start_time(path: str | os.PathLike) -> float | None:
    """The container's ``creation_time`` tag as epoch seconds, when it has one."""
    import av

    try:
        with av.open(str(path)) as container:
            stamp = container.metadata.get("creation_time")
    except Exception:  # noqa: BLE001 - unreadable containers are reported by read_video_frames
        return None
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()  # Python >= 3.11 reads the trailing "Z"
    except ValueError:
        return None


def ingest_video(video_path: str | os.PathLike, out_dir: str | os.PathLike, *, participant: str,
                 day: str | None = None, session: str | None = None, rate_hz: float | None = 1.0,
                 start_time: float | None = None, backend: str = "auto",
                 overwrite: bool = False) -> IngestedRecording:
    """Writes an ingested recording folder from one video file (no gaze: frames are marked so).

    Times: ``start_time`` (epoch seconds of the first frame), else the container's creation_time,
    else the recording is placed at 0 s on a relative time base and ``day`` must be given.
    """
    video_path = Path(video_path)
    if start_time is None:
        start_time = container_start_time(video_path)
    time_base = "epoch" if start_time is not None else "relative"
    if day is None:
        if start_time is None:
            raise DataError(f"{video_path}: no start time in the container; pass --start-time or --day")
        day = datetime.fromtimestamp(start_time, tz=UTC).strftime("%Y-%m-%d")
    origin = start_time or 0.0
    writer = RecordingWriter(out_dir, overwrite=overwrite)
    try:
        times = []
        for t, frame in read_video_frames(video_path, rate_hz, backend):
            writer.add_frame(frame, t=origin + t, gaze=None, gaze_status=GAZE_NO_SOURCE)
            times.append(t)
        period = 1.0 / rate_hz if rate_hz else (float(np.median(np.diff(times))) if len(times) > 1 else 1.0)
        recording = writer.make_recording([], participant=participant, day=day,
                                          session=session or video_path.stem, source="video",
                                          frame_period_s=period)
        first = writer.frames[0]
        recording.meta = {"source": "video", "video": str(video_path), "image_size": [first.width, first.height],
                          "rotated_cw90": False, "time_base": time_base, "rate_hz": rate_hz,
                          "gaze_file": None}
        return writer.commit(recording, [])
    except BaseException:
        writer.abort()
        raise
