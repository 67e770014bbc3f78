"""The settings of one caption run (``CaptionSettings``): what decides the prompt and the answer of each
window. Its own module so that the job, the window preparation (``windows``) and the runners all import
it from below, none of them from another (issue 24)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class CaptionSettings:
    """What decides the prompt and the answer of each window (the same for every window of a run)."""

    prompt: str  # a bundled prompt name or a .txt path (an adapter's own copy)
    prompt_name: str
    prompt_version: str
    frames_per_window: int | None = 8
    with_crop: bool = True
    max_new_tokens: int = 256
    temperature: float = 0.0
    seed: int = 0
    jpeg_quality: int = 90
    num_beams: int = 1  # beam search width of a local model (an adapter's own when it was scored so)
    # A local adapter's closed answer set (egohorizon.llm.answer_set): file, counts, digest; None: free text.
    answer_set: dict[str, Any] | None = None
