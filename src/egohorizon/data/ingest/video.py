"""MP4 (and other container) ingestion: frames sampled at 1 fps or a given rate, with decord or PyAV.

decord seeks by frame index and decodes only the frames it needs, which is fastest for sparse 1 Hz
sampling; it is not built for every platform (no aarch64 wheels) and rejects some codecs, so PyAV,
which decodes sequentially, is the fallback. Both report the same presentation times, and the sampled
frames are the ones whose times are nearest to ticks every 1/rate s from the first frame.

``auto`` first reads the container's header with PyAV: VP9 and AV1 go straight to PyAV (decord's
bundled FFmpeg 4.1 fails on real VP9 first-person clips with "Error sending packet", issue 9), other
codecs to decord, and any decord failure falls back to PyAV. PyAV keeps every frame it can decode: a
packet the decoder rejects is skipped up to the next keyframe, and the time the container's index
promises but no decoded frame covers is reported in a DecodeReport (cut-off or damaged files).
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from egohorizon.data.ingest.ingested import GAZE_NO_SOURCE, IngestedRecording, RecordingWriter
from egohorizon.data.ingest.presented import FrameCounts, count_frames, presented_duration_s
from egohorizon.errors import DataError

log = logging.getLogger(__name__)

BACKENDS = ("auto", "decord", "pyav")
# Codecs ``auto`` never hands to decord: its FFmpeg fails on real VP9 clips (issue 9) and predates AV1.
PYAV_CODECS = ("vp9", "av1")
# A start time must fall between these (epoch seconds): earlier is a camera whose clock was never set
# (1970, MP4's 1904), later than tomorrow is a clock in another unit or a typo (issue 22, item 9).
EARLIEST_START = datetime(1990, 1, 1, tzinfo=UTC).timestamp()
LATEST_START_AHEAD_S = 86400.0
_FINER_UNITS = (("milliseconds", 1e3), ("microseconds", 1e6), ("nanoseconds", 1e9))


def _date(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return "no date"


def check_start_time(seconds: float, source: str = "--start-time") -> float:
    """``seconds`` when it is a plausible recording start (epoch seconds from 1990-01-01 to one day
    from now); otherwise a DataError naming ``source``, the date it would mean and, when the value
    reads as a plausible time in ms, us or ns, the value in seconds."""
    latest = time.time() + LATEST_START_AHEAD_S
    if math.isfinite(seconds) and EARLIEST_START <= seconds <= latest:
        return seconds
    hint = ""
    for unit, per_second in _FINER_UNITS:
        if math.isfinite(seconds) and EARLIEST_START <= seconds / per_second <= latest:
            hint = f"; it looks like {unit}: in seconds that is {seconds / per_second:.3f}"
            break
    raise DataError(f"{source}: {seconds:.0f} is not a plausible start time ({_date(seconds)}); expected epoch "
                    f"seconds from {EARLIEST_START:.0f} (1990-01-01) to {latest:.0f} (tomorrow){hint}")


@dataclass
class DecodeReport:
    """What reading one video found: the backend that decoded it and why, the frames the container's
    index promises and those decoded, and ``lost``: [start, end) seconds from the first frame that no
    decoded frame covers (a cut-off or damaged file)."""

    backend: str = ""
    reason: str = ""
    expected_frames: int | None = None  # presented, after an MP4's edit list (data/ingest/presented.py)
    decoded_frames: int = 0
    lost: list[list[float]] = field(default_factory=list)
    container_frames: int | None = None  # the container's index, when an edit list hides some of them

    def loss_message(self, path: Path) -> str:
        return (f"{path}: decoded {self.decoded_frames} frames (the index lists "
                f"{self.expected_frames or 'no count'}); lost (s from the first frame): {self.lost}")

    def to_meta(self, origin: float = 0.0) -> dict:
        """For recording.json: lost ranges moved into the recording's time base."""
        edit_list = {} if self.container_frames is None else \
            FrameCounts(presented=self.expected_frames or 0, container=self.container_frames).to_meta()
        return {"backend": self.backend, "reason": self.reason, "expected_frames": self.expected_frames,
                "decoded_frames": self.decoded_frames,
                "lost": [[origin + start, origin + end] for start, end in self.lost], **edit_list}


@dataclass
class _Header:
    codec: str
    frames: int  # presented (after an edit list); 0 when the index has none (Matroska, WebM)
    duration_s: float | None  # presented
    counts: FrameCounts | None = None


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


def lost_ranges(times_s: list[float], period_s: float, end_s: float) -> list[list[float]]:
    """[start, end) ranges of [0, end_s) that no frame covers, each frame covering one period from
    its time; gaps shorter than half a period are timestamp jitter, not loss."""
    lost, covered_to = [], 0.0
    for t in sorted(times_s) + [end_s]:
        if t - covered_to > period_s / 2:
            lost.append([round(covered_to, 6), round(t, 6)])
        covered_to = max(covered_to, t + period_s)
    return lost


def _short(error: BaseException) -> str:
    """decord's messages carry "[hh:mm:ss] /github/workspace/src/...cc:292: " prefixes; keep the words."""
    text = re.sub(r"\[[\d:]+\] \S+:\d+: ", "", str(error)).strip()
    return text.splitlines()[-1] if text else type(error).__name__


def _read_header(path: Path) -> _Header:
    import av

    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise DataError(f"{path}: no video stream in the file")
            stream = container.streams.video[0]
            duration = presented_duration_s(stream)
            if duration is None:
                duration = container.duration / 1e6 if container.duration else None
            name = stream.codec_context.name
            if not stream.frames:  # no count to check decord against; the packets are counted as decoded
                return _Header(name, 0, duration)
            counts = count_frames(container, stream)
            return _Header(name, counts.presented, duration, counts)
    except av.FFmpegError as error:  # e.g. a cut-off MP4 whose index (moov) came last
        raise DataError(f"{path}: cannot open video ({error})") from error


def _choose_backend(backend: str, header: _Header) -> tuple[str, str]:
    if backend != "auto":
        return backend, f"--backend {backend}"
    if header.counts is not None and header.counts.edit_list:
        return "pyav", "an MP4 edit list: decord indexes the frames it hides"
    if header.codec in PYAV_CODECS:
        return "pyav", f"{header.codec.upper()} video: decord's FFmpeg fails on real {header.codec.upper()} clips"
    try:
        import decord  # noqa: F401
    except ImportError:
        return "pyav", "decord is not installed"
    return "decord", f"{header.codec} video: decord seeks to the sampled frames"


def _decord_frames(path: Path, rate_hz: float | None, header: _Header, report: DecodeReport,
                   chunk: int = 16) -> Iterator[tuple[float, np.ndarray]]:
    import decord

    if header.counts is not None and header.counts.edit_list:  # decord counts and seeks the hidden frames
        raise RuntimeError(f"decord does not apply the MP4's edit list ({header.frames} of the "
                           f"{header.counts.container} frames in the index are presented)")
    reader = decord.VideoReader(str(path), ctx=decord.cpu(0))
    count = report.decoded_frames = len(reader)
    # decord silently counts only the frames it can reach in a cut-off file; the index knows better.
    if header.frames and count != header.frames:
        raise RuntimeError(f"decord sees {count} of the {header.frames} frames in the container's index")
    if count == 0:
        return
    times = reader.get_frame_timestamp(np.arange(count))[:, 0]
    times = times - times[0]  # decord starts MP4s at 0; normalise anyway so both backends agree
    # Without a frame count in the index (Matroska, WebM), a cut-off shows as frames ending early.
    if count > 1 and header.duration_s and times[-1] + 2 * np.median(np.diff(times)) < header.duration_s:
        raise RuntimeError(f"decord's frames end at {times[-1]:.2f} s of the container's {header.duration_s:.2f} s")
    indices = tick_indices(times, rate_hz)
    for begin in range(0, len(indices), chunk):
        batch = indices[begin:begin + chunk]
        frames = reader.get_batch(batch.tolist()).asnumpy()
        for index, frame in zip(batch, frames):
            yield float(times[index]), frame


def _packet_pts(path: Path) -> tuple[list[int], float]:
    """Every video packet's presentation time (demuxing only, no decoding) and the time base."""
    import av

    pts = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        try:
            # A packet an MP4's edit list hides (discard flag) is decoded for the frames after it, never shown.
            pts = [p.pts for p in container.demux(stream) if p.pts is not None and not p.is_discard]
        except av.FFmpegError as error:  # a damaged container: the packets before it are still good
            log.warning("%s: demuxing stopped after %d packets (%s)", path, len(pts), error)
        return sorted(pts), float(stream.time_base)


def _decode_what_can_be(path: Path):
    """Decoded frames in presentation order. A packet the decoder rejects is skipped together with
    the packets up to the next keyframe, which all depend on it; the rest of the file still decodes."""
    import av

    with av.open(str(path)) as container:
        packets = container.demux(container.streams.video[0])
        skipping = in_damage = False  # in_damage: one warning per damaged region, not per packet
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                return
            except av.FFmpegError as error:
                log.warning("%s: the file ends in damaged data (%s)", path, error)
                return
            if skipping and not packet.is_keyframe and packet.size:  # size 0: the final flush
                continue
            try:
                frames = packet.decode()
            except av.FFmpegError as error:
                if not in_damage:
                    log.warning("%s: undecodable data from pts %s (%s); skipping to the next keyframe",
                                path, packet.pts, error)
                skipping = in_damage = True
                continue
            skipping = False
            in_damage = in_damage and not frames
            yield from frames


def _pyav_frames(path: Path, rate_hz: float | None, header: _Header, report: DecodeReport,
                 after_s: float | None = None) -> Iterator[tuple[float, np.ndarray]]:
    """Sampled frames after ``after_s`` (the frames decord yielded before failing); fills ``report``."""
    pts, time_base = _packet_pts(path)
    if not pts:
        raise DataError(f"{path}: no video frame could be read")
    # Ticks are placed on every packet's time, decodable or not, so they match decord's and the
    # frames kept around a damaged region are the same ones an intact file would give.
    times = (np.array(pts, dtype=np.float64) - pts[0]) * time_base
    wanted = {pts[i] for i in tick_indices(times, rate_hz)}
    decoded = []
    for frame in _decode_what_can_be(path):
        if frame.pts is None:
            continue
        t = (frame.pts - pts[0]) * time_base
        decoded.append(t)
        if frame.pts in wanted and (after_s is None or t > after_s + 1e-6):
            yield t, frame.to_ndarray(format="rgb24")
    if not decoded:
        raise DataError(f"{path}: no video frame could be decoded")
    report.decoded_frames = len(decoded)
    period = header.duration_s / header.frames if header.frames and header.duration_s else \
        (float(np.median(np.diff(times))) if len(times) > 1 else 0.0)
    end = header.duration_s if header.duration_s else times[-1] + period
    report.lost = lost_ranges(decoded, period, end) if period > 0 else []


def read_video_frames(path: str | os.PathLike, rate_hz: float | None = 1.0, backend: str = "auto",
                      report: DecodeReport | None = None) -> Iterator[tuple[float, np.ndarray]]:
    """Yields (seconds from the first frame, RGB uint8 (H, W, 3)) sampled at ``rate_hz``; fills
    ``report`` (when given) with the backend used, why, and what could not be decoded."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: video file not found")
    if backend not in BACKENDS:
        raise DataError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    report = report if report is not None else DecodeReport()
    # PyAV first, also because decord's bundled libvpx, loaded first, shadows PyAV's.
    header = _read_header(path)
    report.expected_frames = header.frames or None
    if header.counts is not None and header.counts.edit_list:
        report.container_frames = header.counts.container
        log.info("%s: an edit list presents %d of the %d frames in the index", path, header.frames,
                 header.counts.container)
    chosen, report.reason = _choose_backend(backend, header)
    last_t = None
    if chosen == "decord":
        try:
            for last_t, frame in _decord_frames(path, rate_hz, header, report):
                yield last_t, frame
        except Exception as error:  # decord raises DECORDError, a bare Exception, and RuntimeError
            if backend == "decord":
                raise DataError(f"{path}: decord cannot read this video ({_short(error)}); "
                                "try --backend pyav") from error
            report.reason = f"decord failed: {_short(error)}"
        else:
            report.backend = "decord"
            log.info("%s: decoded with decord (%s)", path, report.reason)
            return
    report.backend = "pyav"
    log.info("%s: decoding with PyAV (%s)", path, report.reason)
    yield from _pyav_frames(path, rate_hz, header, report, after_s=last_t)
    if report.lost:
        log.warning("%s", report.loss_message(path))


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
        seconds = datetime.fromisoformat(stamp).timestamp()  # Python >= 3.11 reads the trailing "Z"
    except ValueError:
        return None
    try:
        return check_start_time(seconds, f"{path}: creation_time {stamp!r}")
    except DataError as error:  # a camera whose clock was never set: no clock rather than a wrong day
        log.warning("%s; ignoring it (pass --start-time)", error)
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
    else:
        check_start_time(start_time)
    time_base = "epoch" if start_time is not None else "relative"
    if day is None:
        if start_time is None:
            raise DataError(f"{video_path}: no usable start time in the container; pass --start-time or --day")
        day = datetime.fromtimestamp(start_time, tz=UTC).strftime("%Y-%m-%d")
    origin = start_time or 0.0
    writer = RecordingWriter(out_dir, overwrite=overwrite)
    try:
        times, report = [], DecodeReport()
        for t, frame in read_video_frames(video_path, rate_hz, backend, report):
            writer.add_frame(frame, t=origin + t, gaze=None, gaze_status=GAZE_NO_SOURCE)
            times.append(t)
        period = 1.0 / rate_hz if rate_hz else (float(np.median(np.diff(times))) if len(times) > 1 else 1.0)
        recording = writer.make_recording([], participant=participant, day=day,
                                          session=session or video_path.stem, source="video",
                                          frame_period_s=period)
        first = writer.frames[0]
        recording.meta = {"source": "video", "video": str(video_path), "image_size": [first.width, first.height],
                          "rotated_cw90": False, "time_base": time_base, "rate_hz": rate_hz,
                          "gaze_file": None, "decode": report.to_meta(origin),
                          "warnings": [report.loss_message(video_path)] if report.lost else []}
        return writer.commit(recording, [])
    except BaseException:
        writer.abort()
        raise
