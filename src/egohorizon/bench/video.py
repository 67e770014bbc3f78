"""An item's videos with PyAV: the frame count and rate (``probe``) and the frames at given indices
(``read_frames``), downscaled to a long side. PyAV, not decord: decord's FFmpeg fails on real VP9
first-person clips (issue 9, ``data/ingest/video.py``).

Frame ``i`` is the ``i``-th frame in presentation order, as decord's index (the EgoMonth script
reads with decord): it is found by its presentation time ``start + i / fps``, seeking to the
keyframe before it when it is more than ``SEEK_AFTER_S`` ahead, so a sparse sample of an hour-long
video decodes a few GOPs per frame, not the whole file. Any problem (no such file, not a video, a
cut-off or damaged file, a frame the index promises but the file does not hold) is a ``DataError``
naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from egohorizon.errors import DataError

SEEK_AFTER_S = 3.0  # a frame further ahead than this is reached by seeking, nearer ones by decoding on


@dataclass(frozen=True)
class VideoInfo:
    frames: int  # presented, after the container's edit list (data/ingest/presented.py)
    fps: float
    width: int
    height: int
    container_frames: int = 0  # the container's index; 0 when it keeps no count

    @property
    def edit_list(self) -> bool:
        return bool(self.container_frames) and self.container_frames != self.frames


def _open(path: Path):
    import av

    if not path.is_file():
        raise DataError(f"{path}: video file not found")
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as error:  # e.g. not a video, or an MP4 cut before its index
        raise DataError(f"{path}: cannot open video ({error})") from None
    if not container.streams.video:
        container.close()
        raise DataError(f"{path}: no video stream in the file")
    return container


def probe(path: str | os.PathLike) -> VideoInfo:
    """Frame count (presented: after an MP4's edit list; demuxed packets when the index has none),
    the container's count beside it, and the average rate."""
    import av

    from egohorizon.data.ingest.presented import count_frames

    path = Path(path)
    with _open(path) as container:
        stream = container.streams.video[0]
        rate = stream.average_rate or stream.guessed_rate
        fps = float(rate) if rate else 0.0
        try:
            counts = count_frames(container, stream)
        except av.FFmpegError as error:
            raise DataError(f"{path}: damaged container ({error})") from None
        width, height = stream.codec_context.width, stream.codec_context.height
    if counts.presented <= 0:
        raise DataError(f"{path}: the video holds no frames")
    if not fps > 0:
        raise DataError(f"{path}: the video stream states no frame rate")
    return VideoInfo(frames=counts.presented, fps=fps, width=int(width), height=int(height),
                     container_frames=counts.container)


def scaled_size(width: int, height: int, long_side: int | None) -> tuple[int, int]:
    """(width, height) with the longer side at most ``long_side`` (None or 0: unchanged), aspect kept."""
    if not long_side or max(width, height) <= long_side:
        return width, height
    scale = long_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def read_frames(path: str | os.PathLike, indices: Sequence[int], info: VideoInfo, long_side: int | None = None):
    """RGB uint8 arrays (H, W, 3) of the frames at ``indices`` (ascending), in that order."""
    import av

    path = Path(path)
    if not indices:
        return []
    width, height = scaled_size(info.width, info.height, long_side)
    out = []
    with _open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        base, unit = stream.start_time or 0, float(stream.time_base)
        half = 0.5 / info.fps
        frames, current = None, None  # the decoding iterator and the time of its last frame
        try:
            for k, index in enumerate(indices):
                if k and index == indices[k - 1]:  # a rate below 1 fps can name a frame twice
                    out.append(out[-1])
                    continue
                target = index / info.fps
                if frames is None or current is None or target - current > SEEK_AFTER_S:
                    container.seek(base + int(max(0.0, target - half) / unit), stream=stream, backward=True)
                    frames = container.decode(stream)
                    current = None
                while True:
                    frame = next(frames, None)
                    if frame is None:
                        raise DataError(f"{path}: the video ends before frame {index} ({target:.2f} s); it "
                                        f"should present {info.frames} frames (a cut-off or damaged file?)")
                    if frame.pts is None:
                        continue
                    current = (frame.pts - base) * unit
                    if current >= target - half:
                        break
                out.append(frame.to_ndarray(format="rgb24", width=width, height=height))
        except av.FFmpegError as error:
            raise DataError(f"{path}: cannot decode the frames near {target:.2f} s ({error})") from None
    return out
