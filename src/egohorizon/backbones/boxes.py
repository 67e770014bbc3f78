"""Boxes between an original frame and the image a Qwen-VL model sees.

Qwen2.5-VL was trained to ground objects with boxes in **absolute pixels of the image it was given
after the processor's resize** (its ``smart_resize``: both sides rounded to multiples of
``patch_size * merge_size`` = 28, the area kept inside ``[min_pixels, max_pixels]``, aspect ratio
kept as closely as that allows) -- not of the original frame, and not normalised to 0-1000 as
Qwen2-VL and Qwen3-VL were. The hands task writes every box in that convention for all three
families, so one text format serves them all, and maps it back here:

    model (x, y) = original (x, y) * (resized_w / original_w, resized_h / original_h)
    original     = model / those scales

Each axis has its own scale: the rounding to multiples of 28 changes the aspect ratio slightly
(1280 x 720 -> 1288 x 728 at Qwen2.5-VL's defaults: sx = 1.00625, sy = 1.0111), and using one
scale for both axes moves boxes by up to a patch -- the classic place grounding code breaks. The
resized size comes from ``processor_size`` (transformers' own ``smart_resize`` with the processor's
patch, merge and pixel settings); the round trip is tested against what the
processors really produce (``image_grid_thw`` x patch size) at several aspect ratios
(tests/unit/formats/test_hands_format.py).

Model boxes are whole pixels (what the model writes); mapping back gives floats in the original
frame, within half a model pixel / scale of the original box.

A letterboxing processor (``backbone=effnet_smollm2``: its image processor says ``letterbox = True``)
scales the frame so its longer side fills a square and centres it; the mapping then has one scale per
axis (the rounded content size over the original) and an offset (the grey band above or left of it):

    model (x, y) = original (x, y) * (content_w / original_w, content_h / original_h) + (left, top)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from egohorizon.errors import ConfigError


@dataclass(frozen=True)
class ResizeMapping:
    """The original frame's size and the size the processor resizes it to, (height, width) each."""

    original: tuple[int, int]
    resized: tuple[int, int]
    letterbox: bool = False  # the frame is scaled into ``resized`` keeping its aspect ratio, and centred

    @classmethod
    def for_processor(cls, processor, height: int, width: int) -> ResizeMapping:
        """The mapping of a ``height`` x ``width`` frame for a Qwen-VL processor (or its image
        processor), or for a letterboxing one (it declares ``letterbox`` and its square ``image_size``)."""
        image_processor = getattr(processor, "image_processor", processor)
        if getattr(image_processor, "letterbox", False):
            side = int(image_processor.image_size)
            return cls((height, width), (side, side), letterbox=True)
        resized = processor_size(image_processor, height, width)
        if resized is None:
            raise ConfigError(f"{type(image_processor).__name__} does not say how it resizes images "
                              "(no patch_size, merge_size and size.shortest_edge/longest_edge): boxes cannot "
                              "be put in its pixels")
        return cls((height, width), (int(resized[0]), int(resized[1])))

    @property
    def content(self) -> tuple[int, int]:
        """(height, width) of the frame inside the model image: all of it, or the letterbox's scaled frame
        (``composite_processor.LetterboxImageProcessor.content_size``: the longer side fills the square)."""
        if not self.letterbox:
            return self.resized
        height, width = self.original
        scale = min(self.resized[0] / height, self.resized[1] / width)
        return max(1, round(height * scale)), max(1, round(width * scale))

    @property
    def offset(self) -> tuple[int, int]:
        """(left, top): where the frame starts in the model image (0, 0 without a letterbox)."""
        (height, width), (side_h, side_w) = self.content, self.resized
        return (side_w - width) // 2, (side_h - height) // 2

    @property
    def scale(self) -> tuple[float, float]:
        """(sx, sy): model pixels per original pixel along x and y."""
        return self.content[1] / self.original[1], self.content[0] / self.original[0]

    def to_model(self, box: Sequence[float]) -> list[int]:
        """An original-frame box [x1, y1, x2, y2] -> whole model-image pixels, clipped to the image."""
        (sx, sy), (left, top) = self.scale, self.offset
        height, width = self.resized
        x1, y1, x2, y2 = box
        return [_clip(round(x1 * sx + left), width), _clip(round(y1 * sy + top), height),
                _clip(round(x2 * sx + left), width), _clip(round(y2 * sy + top), height)]

    def to_original(self, box: Sequence[float]) -> list[float]:
        """A model-image box -> the original frame's pixels (floats, 0.1 px), clipped to the frame."""
        (sx, sy), (left, top) = self.scale, self.offset
        height, width = self.original
        x1, y1, x2, y2 = box
        return [round(min(max((x1 - left) / sx, 0.0), width), 1), round(min(max((y1 - top) / sy, 0.0), height), 1),
                round(min(max((x2 - left) / sx, 0.0), width), 1), round(min(max((y2 - top) / sy, 0.0), height), 1)]


def processor_size(image_processor, height: int, width: int) -> tuple[int, int] | None:
    """The (height, width) a Qwen-VL image processor resizes a ``height`` x ``width`` image to: its
    ``smart_resize`` (multiples of patch x merge size within its pixel budget); None for a processor
    that does not say."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    size = getattr(image_processor, "size", None)
    patch, merge = getattr(image_processor, "patch_size", None), getattr(image_processor, "merge_size", None)
    low = getattr(size, "shortest_edge", None) or getattr(image_processor, "min_pixels", None)
    high = getattr(size, "longest_edge", None) or getattr(image_processor, "max_pixels", None)
    if not (patch and merge and low and high):
        return None
    return smart_resize(height, width, factor=patch * merge, min_pixels=low, max_pixels=high)


def _clip(value: int, limit: int) -> int:
    return min(max(value, 0), limit)
