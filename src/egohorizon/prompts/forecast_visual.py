"""The grounded forecasting prompt (issue 15): the text forecast prompt plus what the wearer saw just
before ``t0`` and, optionally, similar moments of their own past.

The text prompt (``forecast.txt``, its history, windows and answer format) is kept as it is; a block
goes in right before its ``Now:`` line:

    What I saw just before now (gaze as a red ring), oldest first:
    18:19:52 <image>
    18:19:56 <image>
    Close-up around my gaze at 18:19:59: <image>
    Similar moments from my past and what I did next:
    Tue 2025-03-04 09:12 check my messages -> reply to Anna's message
    ...

Each ``<image>`` is ``image_mark`` (the collator's image placeholder; "" for the tokenizer's corpus).
With no frames, no close-up and no memory lines the text prompt comes back unchanged, byte for byte:
M = 0 is the text-only forecaster.
"""

from __future__ import annotations

from collections.abc import Sequence

# the image marker must be the one the collator expands into image tokens (a constant, torch-free module)
from egohorizon.backbones.collate import IMAGE_PLACEHOLDER
from egohorizon.clock import second_clock
from egohorizon.prompts.forecast import render_forecast_prompt
from egohorizon.schema import ForecastPoint

VISUAL_PROMPT_VERSION = "1"
NOW_MARK = "\nNow: "


def visual_block(frame_times: Sequence[float], crop_time: float | None, memory_lines: Sequence[str] = (),
                 image_mark: str = IMAGE_PLACEHOLDER) -> str:
    """The lines inserted before ``Now:`` ("" when there is nothing to show)."""
    lines = []
    if frame_times:
        lines.append("What I saw just before now (gaze as a red ring), oldest first:")
        lines += [f"{second_clock(t)} {image_mark}".rstrip() for t in frame_times]
    if crop_time is not None:
        lines.append(f"Close-up around my gaze at {second_clock(crop_time)}: {image_mark}".rstrip())
    if memory_lines:
        lines.append("Similar moments from my past and what I did next:")
        lines += list(memory_lines)
    return "\n".join(lines)


def render_grounded_prompt(point: ForecastPoint, frame_times: Sequence[float] = (), crop_time: float | None = None,
                           memory_lines: Sequence[str] = (), prompt=None, n_candidates: int = 1,
                           max_context: int | None = None, image_mark: str = IMAGE_PLACEHOLDER) -> str:
    """The forecast prompt of ``point`` with the visual and memory block before its ``Now:`` line."""
    if any(t >= point.t0 for t in frame_times) or (crop_time is not None and crop_time >= point.t0):
        raise ValueError(f"point {point.id}: a frame at or after t0={point.t0} would show the future")
    text = render_forecast_prompt(point, prompt=prompt, n_candidates=n_candidates, max_context=max_context)
    block = visual_block(frame_times, crop_time, memory_lines, image_mark)
    if not block:
        return text
    at = text.find(NOW_MARK)
    if at < 0:  # a custom template without a Now: line: the block goes first
        return block + "\n\n" + text
    return text[:at] + "\n\n" + block + text[at:]
