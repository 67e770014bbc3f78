"""Which frames of an item's videos a zero-shot run shows the model: plain functions of the videos'
frame counts and rates, no decoding (``bench.video`` decodes the chosen indices).

``paper``: EgoMonth's Qwen3-VL-8B script (github.com/susu801/EgoMonth ``scripts/Qwen3-VL-8B.py``,
SPEC §7). Each video gets the budget ``max(4, int(duration / total_duration * 256))`` and is read
by ``qwen_vl_utils`` at 1 fps under that budget: ``smart_nframes`` takes ``duration * fps`` frames,
at least 4, at most the budget rounded down to an even number, at most the video's frames, rounded
down to an even number (its ``FRAME_FACTOR``, Qwen-VL's two frames per temporal patch); the frames
are ``linspace(0, frames - 1, n).round()``. Durations are ``frames / average fps``, as decord's
``len(vr) / vr.get_avg_fps()`` in the script. The 256 is a budget, not a hard cap: the floor of 4
per video can lift the total above it (two videos of 99% and 1% of the time: 252 + 4 = 256; three
of 98%, 1%, 1%: 250 + 4 + 4 = 258), as in the script. ``max_frames`` replaces the 256 for a small
run; the floor of 4 is then ``min(4, max_frames)``, and a video always gets at least one frame
(qwen_vl_utils would refuse a count below 2).

``uniform`` (``--protocol egohorizon``, SPEC §3): ``min(max_frames, total_duration * 1 fps)`` frames
(at least one) at the middles of equal parts of the item's videos laid end to end, so every video
gets frames in proportion to its length and none is favoured by a floor.

A video may be restricted to a span ``[start, end]`` (seconds from its first frame; ``None`` = the
whole video): its frames are then only those inside the span, and its duration the span's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PAPER_MAX_FRAMES = 256  # VIDEO_CONFIG["max_frames"] in the script
PAPER_MIN_FRAMES = 4  # max(4, ...) in the script; qwen_vl_utils' FPS_MIN_FRAMES too
PAPER_FPS = 1.0  # the script's "fps": 1.0
FRAME_FACTOR = 2  # qwen_vl_utils: frame counts are multiples of 2 (one temporal patch = 2 frames)
RULES = ("paper", "uniform")


@dataclass(frozen=True)
class VideoSpan:
    """The part of one video a run samples from: ``first`` .. ``first + frames - 1`` (frame indices in
    presentation order) at ``fps`` frames per second."""

    frames: int
    fps: float
    first: int = 0

    @property
    def duration(self) -> float:
        return self.frames / self.fps

    @classmethod
    def of(cls, total_frames: int, fps: float, start: float | None = None, end: float | None = None) -> VideoSpan:
        """The frames of a video with ``total_frames`` at ``fps`` that lie in ``[start, end]`` seconds."""
        first = 0 if start is None else min(total_frames - 1, max(0, math.ceil(start * fps - 1e-9)))
        last = total_frames - 1 if end is None else min(total_frames - 1, max(first, math.floor(end * fps + 1e-9)))
        return cls(frames=last - first + 1, fps=fps, first=first)


def _floor_by(value: float, factor: int) -> int:
    return math.floor(value / factor) * factor


def _ceil_by(value: float, factor: int) -> int:
    return math.ceil(value / factor) * factor


def paper_frame_counts(spans: Sequence[VideoSpan], max_frames: int = PAPER_MAX_FRAMES) -> list[int]:
    """Frames per video under EgoMonth's Qwen3-VL-8B rule (module docstring)."""
    if not spans:
        return []
    total = sum(s.duration for s in spans)
    floor = min(PAPER_MIN_FRAMES, max_frames)
    counts = []
    for span in spans:
        budget = max(floor, int((span.duration / total) * max_frames))  # the script's max_frames per video
        # qwen_vl_utils.smart_nframes(ele={"fps": 1.0, "max_frames": budget}, total_frames, video_fps)
        low, high = _ceil_by(floor, FRAME_FACTOR), _floor_by(budget, FRAME_FACTOR)
        n = min(min(max(span.frames / span.fps * PAPER_FPS, low), high), span.frames)
        counts.append(max(1, min(_floor_by(n, FRAME_FACTOR), span.frames)))
    return counts


def paper_indices(span: VideoSpan, count: int) -> list[int]:
    """``torch.linspace(0, frames - 1, count).round()`` (qwen_vl_utils), shifted to the span's first frame.

    torch computes it in float32, from the start for the first half and from the end for the second,
    with fused multiply-adds (its CPU kernel); numpy's float64 linspace picks a neighbouring frame for
    about 3% of (frames, count) pairs of long videos, so the same arithmetic is done here (float64
    products of float32 values are exact, one rounding to float32 as the fused operation does; equal to
    torch on 12,000 pairs, tests/unit/bench/test_bench_run.py checks a few). Halves round to even, as in torch."""
    import numpy as np

    if count <= 1:
        return [span.first] * count
    end = np.float32(span.frames - 1)
    step = np.float64(np.float32(end / np.float32(count - 1)))
    i = np.arange(count, dtype=np.float64)
    values = np.where(i < count // 2, step * i, np.float64(end) - step * (count - 1 - i)).astype(np.float32)
    return [span.first + int(v) for v in np.round(values).astype(np.int64)]


def uniform_indices(spans: Sequence[VideoSpan], max_frames: int, fps: float = PAPER_FPS) -> list[list[int]]:
    """Per video, the frame indices of ``min(max_frames, total seconds * fps)`` frames (at least one) at the
    middles of equal parts of the videos laid end to end."""
    if not spans:
        return []
    total = sum(s.duration for s in spans)
    count = max(1, min(max_frames, math.floor(total * fps + 1e-9)))
    chosen: list[list[int]] = [[] for _ in spans]
    starts = [sum(s.duration for s in spans[:k]) for k in range(len(spans))]
    video = 0
    for j in range(count):
        t = (j + 0.5) * total / count
        while video + 1 < len(spans) and t >= starts[video + 1]:
            video += 1
        span = spans[video]
        chosen[video].append(span.first + min(span.frames - 1, int((t - starts[video]) * span.fps)))
    return chosen


def frame_plan(spans: Sequence[VideoSpan], rule: str, max_frames: int) -> list[list[int]]:
    """Per video, the frame indices to decode (ascending), under ``rule`` (one of ``RULES``)."""
    if rule == "paper":
        return [paper_indices(s, n) for s, n in zip(spans, paper_frame_counts(spans, max_frames), strict=True)]
    if rule == "uniform":
        return uniform_indices(spans, max_frames)
    raise ValueError(f"unknown sampling rule {rule!r}; expected one of {', '.join(RULES)}")
