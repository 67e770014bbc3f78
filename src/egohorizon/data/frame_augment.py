"""Training-time augmentation of hand frames: a horizontal flip and a crop, the boxes moved with them.

One ``FlipCrop`` is drawn per clip and applied to every frame of it and to every gold box, so the target
text describes the pixels the model is shown. The crop keeps the frame's aspect ratio and is resized
back to the frame's size (one frame size per run: ``backbones.boxes.ResizeMapping`` maps every frame
the same way). A box is cut to the crop; one with less than ``min_visible`` of its area left inside is
dropped (a hand mostly cut off is not asked for). A flip swaps ``left`` and ``right``; a hand-agnostic
``hand`` box stays ``hand``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SWAP = {"left": "right", "right": "left"}


@dataclass(frozen=True)
class FlipCrop:
    """``crop`` = (x1, y1, x2, y2) in the frame's pixels; ``size`` = the frame's (height, width)."""

    flip: bool
    crop: tuple[float, float, float, float]
    size: tuple[int, int]
    min_visible: float = 0.4

    def image(self, image: np.ndarray) -> np.ndarray:
        from PIL import Image

        height, width = self.size
        if image.shape[:2] != (height, width):
            raise ValueError(f"FlipCrop for {width} x {height} frames got a {image.shape[1]} x {image.shape[0]} one")
        x1, y1, x2, y2 = (round(v) for v in self.crop)
        out = Image.fromarray(image[y1:y2, x1:x2]).resize((width, height), Image.BILINEAR)
        if self.flip:
            out = out.transpose(Image.FLIP_LEFT_RIGHT)
        return np.array(out)  # writable, as the processor expects

    def box(self, box: Sequence[float]) -> list[float] | None:
        """The box in the augmented frame's pixels, or None when too little of it is left in the crop."""
        height, width = self.size
        cx1, cy1, cx2, cy2 = self.crop
        x1, y1, x2, y2 = max(box[0], cx1), max(box[1], cy1), min(box[2], cx2), min(box[3], cy2)
        area = (box[2] - box[0]) * (box[3] - box[1])
        if x2 <= x1 or y2 <= y1 or (x2 - x1) * (y2 - y1) < self.min_visible * area:
            return None
        sx, sy = width / (cx2 - cx1), height / (cy2 - cy1)
        x1, x2 = (x1 - cx1) * sx, (x2 - cx1) * sx
        y1, y2 = (y1 - cy1) * sy, (y2 - cy1) * sy
        if self.flip:
            x1, x2 = width - x2, width - x1
        return [x1, y1, x2, y2]

    def hand(self, hand: str) -> str:
        return SWAP.get(hand, hand) if self.flip else hand


def draw_flip_crop(rng: np.random.Generator, size: tuple[int, int], min_scale: float = 0.8,
                   flip_probability: float = 0.5) -> FlipCrop:
    """A random flip and a crop of ``scale`` x the frame (scale uniform in [min_scale, 1], the same on
    both axes) at a uniform position."""
    if not 0 < min_scale <= 1:
        raise ValueError(f"data.augment.min_scale: expected a number in (0, 1], got {min_scale}")
    height, width = size
    scale = rng.uniform(min_scale, 1.0)
    # whole pixels, so the image crop and the box arithmetic use the same rectangle
    crop_w, crop_h = round(width * scale), round(height * scale)
    x1, y1 = int(rng.integers(0, width - crop_w + 1)), int(rng.integers(0, height - crop_h + 1))
    return FlipCrop(flip=bool(rng.random() < flip_probability), crop=(x1, y1, x1 + crop_w, y1 + crop_h), size=size)
