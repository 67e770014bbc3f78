"""The captioner's prompt and answer: a window's frames (gaze drawn), the gaze close-up and the speech
in, the wearer's actions out.

Each frame is preceded by its time in the window, then the image marker that the backbone's processor
expands into the image's tokens (``egohorizon.backbones.collate``); the close-up comes last. The answer
is one action per line, oldest first: what the demo world's gold L1 events of the window say.
"""

from __future__ import annotations

from collections.abc import Sequence

from egohorizon.prompts import load_prompt

CAPTION_PROMPT_NAME = "caption"
# The marker egohorizon.backbones.collate expands into image tokens (kept equal to its IMAGE_PLACEHOLDER;
# a test checks it), here so that rendering a prompt needs no backbone import.
IMAGE_MARK = "<|vision_start|><|image_pad|><|vision_end|>"


def render_caption_prompt(
    times: Sequence[float],
    transcript: str,
    window_s: float = 30.0,
    with_crop: bool = False,
    prompt: str | None = None,
) -> str:
    """The prompt of one window with ``len(times)`` frames (and a gaze close-up when ``with_crop``)."""
    template = load_prompt(prompt or CAPTION_PROMPT_NAME)
    frames = "".join(f"t={t:.0f}s {IMAGE_MARK}\n" for t in times)
    crop = f"close-up around the gaze point: {IMAGE_MARK}\n" if with_crop else ""
    text = template.render(
        n_frames=len(times),
        window_s=f"{window_s:g}",
        crop_note="The last image is a close-up around the gaze point." if with_crop else "",
        transcript=transcript.strip() or "(none)",
    )
    return frames + crop + text


def render_caption_answer(actions: Sequence[str]) -> str:
    return "\n".join(a.strip() for a in actions if a.strip())
