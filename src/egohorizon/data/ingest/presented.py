"""How many frames a video presents, as against how many its container's index lists (issue 36, item 9).

An MP4 cut by a phone or a web tool often keeps the whole original in its sample table and hides the
cut-away part with an edit list (``elst``): the index lists 164 frames, a decoder presents 109.
FFmpeg (PyAV) applies the edit list: it demuxes the hidden samples a kept frame depends on with the
discard flag, drops them after decoding, and reports the stream's duration and start time of what is
presented. Every reader of video (``bench.video``, ``ingest.video``) counts and times frames by what
is presented; the container's count is kept beside it, as the paper protocol's indices (decord's
count) are defined on the container.

Counting the presented frames means demuxing the whole file (packets only, no decoding), so it is done
only where the index and the presented duration disagree (``frames != duration * rate``), which an
edit list that hides frames always causes; a file without an index count (Matroska, WebM) is counted
the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

# The index and the presented duration agree when they are within this many frames (rounding of a
# duration in the stream's time base; a variable-rate clip's average rate is frames / duration).
AGREE_FRAMES = 1.5


@dataclass(frozen=True)
class FrameCounts:
    presented: int  # frames a decoder presents, after the edit list
    container: int  # frames in the container's index; 0 when it keeps no count

    @property
    def edit_list(self) -> bool:
        """The index lists frames that are not presented (or fewer than are)."""
        return bool(self.container) and self.container != self.presented

    def to_meta(self) -> dict:
        """What a prediction or a recording records of a video whose counts differ."""
        return {"edit_list": True, "frames_presented": self.presented, "frames_container": self.container}


def presented_duration_s(stream) -> float | None:
    """The stream's duration after the edit list (FFmpeg's), in seconds; None when it states none."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    return None


def count_frames(container, stream) -> FrameCounts:
    """The presented and the container's frame counts of ``stream`` (a PyAV video stream of the open
    ``container``); demuxes the file only when they may differ. Raises ``av.FFmpegError`` on a damaged
    container (the caller names the file)."""
    listed = int(stream.frames or 0)
    duration = presented_duration_s(stream)
    rate = stream.average_rate or stream.guessed_rate
    if listed and duration and rate and abs(duration * float(rate) - listed) < AGREE_FRAMES:
        return FrameCounts(presented=listed, container=listed)
    # A packet the edit list hides carries the discard flag; its frame is decoded (a later frame may
    # need it) and dropped, so it is not presented.
    presented = sum(1 for p in container.demux(stream) if p.pts is not None and not p.is_discard)
    return FrameCounts(presented=presented, container=listed)
