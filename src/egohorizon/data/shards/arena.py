"""Decoding straight into the batch: the memory layout of a batch's images, and the arena that gives
the decode stage each window's place in the batch before the batch exists.

Why: decoding 60 JPEGs per window into their own arrays and then copying them into the batch costs
5-10 ms per window more than decoding them where they belong (the copy is memory-bound: the decoded
window no longer sits in cache when the batch is collated, and fresh arrays fault in fresh pages).

Layout of a batch buffer (``BatchLayout``): all frames [B, T, H, W, 3], then all crops [B, T, h, w, 3]
(at the next multiple of 64 bytes); uint8, channels-last, contiguous; H, W (h, w) are the largest frame (crop) of the batch, T its longest
window; a group without any image takes 1 x 1 pixels. The collate (datamodules.caption) pads to
exactly this layout, so a batch whose images are already in place is a view of the buffer.

The arena guesses the layout from the first window of each batch (its length, largest frame, largest
crop). A later window that fits is decoded into its slot; one that does not (longer, larger images)
is decoded into its own arrays and spoils the guess. The batch stage lets the collate claim the buffer
(``collating``): the claim succeeds when the collate's layout equals the guess and every image that
lies in the buffer lies in its own slot. Otherwise the collate copies into a new buffer, as before,
and this one is reused once no decoded image refers to it. Either way the result is the same batch.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from egohorizon.data.shards import buffers

Shape = tuple[int, int]  # (height, width) of an image


@dataclass(frozen=True)
class BatchLayout:
    batch: int
    length: int
    frame: Shape
    crop: Shape | None  # None: the batch has no crops group

    def shapes(self) -> list[tuple[int, ...]]:
        groups = [self.frame] + ([self.crop] if self.crop is not None else [])
        return [(self.batch, self.length, h, w, 3) for h, w in groups]

    def offsets(self) -> list[tuple[int, tuple[int, ...]]]:
        """(byte offset, shape) of each group in the buffer."""
        out, offset = [], 0
        for shape in self.shapes():
            out.append((offset, shape))
            offset = buffers.align(offset + math.prod(shape))
        return out

    @property
    def nbytes(self) -> int:
        offset, shape = self.offsets()[-1]
        return offset + math.prod(shape)

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """The groups' arrays [B, T, h, w, 3] over a flat uint8 array."""
        return [flat[offset:offset + math.prod(shape)].reshape(shape) for offset, shape in self.offsets()]


def largest(shapes: Sequence[Shape | None]) -> Shape:
    present = [s for s in shapes if s is not None]
    return (max((s[0] for s in present), default=1), max((s[1] for s in present), default=1))


class DecodeArena:
    """Hands each decoded window its slot in the batch being assembled (one arena per stream pass)."""

    def __init__(self, batch_size: int):
        self.batch_size = batch_size
        self.layout: BatchLayout | None = None
        self.buffer: buffers.Buffer | None = None
        self.groups: list[np.ndarray] = []  # the layout's views of the buffer
        self.placed = 0  # windows handed a slot in this batch
        self.spoiled = False
        self.claimed_batches = 0  # batches that needed no copy (for tests and diagnostics)

    def place(self, frames: Sequence[Shape], crops: Sequence[Shape | None] | None
              ) -> tuple[list[np.ndarray | None], list[np.ndarray | None]] | None:
        """Where to decode a window's frames (and crops: None when the stream has none), or None when
        the window does not fit this batch's layout. A target is None for an image of another width."""
        if self.spoiled or self.placed >= self.batch_size or not frames:
            return None
        if self.placed == 0:
            self._start(frames, crops)
        layout = self.layout
        fits = len(frames) <= layout.length and _within(frames, layout.frame) and (
            crops is None or _within(crops, layout.crop))
        if not fits:
            self.spoiled = True  # the batch will be larger than guessed: its collate copies anyway
            return None
        slot = self.placed
        self.placed += 1
        frame_targets = [_target(self.groups[0][slot, t], s) for t, s in enumerate(frames)]
        crop_targets = [] if crops is None else [_target(self.groups[1][slot, t], s) for t, s in enumerate(crops)]
        return frame_targets, crop_targets

    def unplace(self) -> None:
        """The window last placed failed to decode: its slot goes to the next window."""
        self.placed -= 1

    def _start(self, frames: Sequence[Shape], crops: Sequence[Shape | None] | None) -> None:
        layout = BatchLayout(self.batch_size, len(frames), largest(frames),
                             None if crops is None else largest(crops))
        # Reuse the last buffer when its batch was copied elsewhere (or its first window failed to
        # decode) and nothing refers to it anymore (references: self.buffer's array, getrefcount's
        # argument; our own views of it are dropped first).
        self.groups = []
        reusable = (self.buffer is not None and self.buffer.nbytes >= layout.nbytes
                    and sys.getrefcount(self.buffer.array) <= 2)
        if not reusable:
            self._drop_buffer()
            self.buffer = buffers.batch_buffer(layout.nbytes)
        self.layout, self.groups = layout, layout.views(self.buffer.array)

    @contextlib.contextmanager
    def collating(self) -> Iterator[None]:
        """The batch stage collates the windows placed so far within this; the next window starts
        a new batch."""
        global _ACTIVE
        _ACTIVE = self
        try:
            yield
        finally:
            _ACTIVE = None
            self.groups, self.placed, self.spoiled = [], 0, False

    def claim(self, layout: BatchLayout, images: Sequence[Sequence[Sequence[np.ndarray | None]]]
              ) -> buffers.Buffer | None:
        """The buffer, if the collate's ``layout`` for ``images`` (per group, per window, per frame)
        is the guessed one and no image of the buffer is out of its slot; it then belongs to the batch."""
        if self.buffer is None or self.spoiled or layout != self.layout:
            return None
        start = _address(self.buffer.array)
        end = start + self.buffer.nbytes
        for group, per_window in zip(self.groups, images):
            for b, window in enumerate(per_window):
                for t, image in enumerate(window):
                    if image is not None and start <= _address(image) < end and not in_slot(image, group[b, t]):
                        return None
        buffer, self.buffer = self.buffer, None
        self.claimed_batches += 1
        return buffer

    def close(self) -> None:
        """End of the pass: a buffer never claimed goes back to the worker's pool."""
        self._drop_buffer()

    def _drop_buffer(self) -> None:
        if self.buffer is not None:
            buffer, self.buffer, self.groups = self.buffer, None, []
            buffers.give_back(buffer)


_ACTIVE: DecodeArena | None = None


def active_arena() -> DecodeArena | None:
    """The arena whose windows are being collated (set by the batch stage), or None."""
    return _ACTIVE


def _within(shapes: Sequence[Shape | None], bound: Shape) -> bool:
    return all(s is None or (s[0] <= bound[0] and s[1] <= bound[1]) for s in shapes)


def _target(slot: np.ndarray, shape: Shape | None) -> np.ndarray | None:
    """The top rows of a [H, W, 3] slot for an image of ``shape``: contiguous only at the full width."""
    if shape is None or shape[1] != slot.shape[1]:
        return None
    return slot[:shape[0]]


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def in_slot(image: np.ndarray, slot: np.ndarray) -> bool:
    """Whether ``image`` is the top-left corner of ``slot`` [H, W, 3] already: nothing to copy."""
    h, w = image.shape[:2]
    return (_address(image) == _address(slot) and h <= slot.shape[0] and w <= slot.shape[1]
            and image.strides == slot[:h, :w].strides)
