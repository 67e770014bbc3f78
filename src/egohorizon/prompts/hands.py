"""The hands prompt (``hands.txt``): the clip's frames with their times and the size of the image the
model sees (its boxes are in those pixels: ``egohorizon.backbones.boxes``); the answer is the hands
text format of ``egohorizon.formats.hands``."""

from __future__ import annotations

from collections.abc import Sequence

HANDS_PROMPT_NAME = "hands"
IMAGE_MARK = "<|vision_start|><|image_pad|><|vision_end|>"


def render_hands_prompt(frame_times: Sequence[float], duration: float, image_size: tuple[int, int],
                        prompt: str | None = None, image_mark: str = IMAGE_MARK) -> str:
    """``frame_times``: seconds from the clip's start, one ``image_mark`` each; ``image_size``:
    (height, width) of the image the model is given."""
    from egohorizon.prompts import load_prompt

    frames = "".join(f"{t:g}s {image_mark}\n" for t in frame_times)
    return load_prompt(prompt or HANDS_PROMPT_NAME).render(
        n_frames=len(frame_times), duration=f"{duration:g}", frames=frames,
        width=image_size[1], height=image_size[0])
