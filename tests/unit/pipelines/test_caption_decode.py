"""The offline caption job decodes a frame no larger than the local model's processor needs
(egohorizon.pipelines.caption.windows.LazyImages with ``fit``), and the gaze ring still lands on the gaze point."""

from __future__ import annotations

import numpy as np
import pytest
import simplejpeg

from egohorizon.data.shards.encode import SampleError
from egohorizon.pipelines.caption.windows import LazyImages
from egohorizon.prompts.caption import caption_sample


def jpeg(image: np.ndarray) -> bytes:
    return simplejpeg.encode_jpeg(np.ascontiguousarray(image), quality=95, colorspace="RGB")


def frame(size: int = 448) -> np.ndarray:
    image = np.full((size, size, 3), 200, np.uint8)
    image[: size // 2] = (40, 90, 200)  # a blue top half: the decoded pixels keep it at any scale
    return image


def test_decodes_at_the_smallest_dct_scale_that_is_large_enough():
    raw = {"__key__": "w", "frame_000.jpg": jpeg(frame())}
    asked = []

    def fit(height, width):
        asked.append((height, width))
        return 128, 128

    image = LazyImages(raw, ["frame_000.jpg"], fit)[0]
    assert asked == [(448, 448)]
    assert 128 <= image.shape[0] < 448 and image.shape[:2] == (image.shape[1], image.shape[1])
    assert image[: image.shape[0] // 2 - 4].mean(axis=(0, 1)) == pytest.approx((40, 90, 200), abs=3)
    full = LazyImages(raw, ["frame_000.jpg"])[0]
    assert full.shape == (448, 448, 3)
    assert LazyImages(raw, ["frame_000.jpg"], lambda h, w: None)[0].shape == (448, 448, 3)  # no size: as stored


def test_corrupt_image_is_a_sample_error_at_any_scale():
    raw = {"__key__": "w", "frame_000.jpg": jpeg(frame())[:500]}
    with pytest.raises(SampleError, match="corrupt"):
        LazyImages(raw, ["frame_000.jpg"], lambda h, w: (128, 128))[0]


def ring_centre(image: np.ndarray) -> tuple[float, float]:
    red = (image[..., 0] > 180) & (image[..., 1] < 90) & (image[..., 2] < 90)
    ys, xs = np.nonzero(red)
    assert len(xs), "no ring drawn"
    return float(xs.mean()), float(ys.mean())


def test_gaze_ring_is_scaled_to_a_reduced_decode():
    gaze = (300.0, 340.0)  # in the stored 448-px frame's pixels
    meta = {"key": "w", "start": 0.0, "end": 30.0, "transcript": "", "events": [],
            "frames": [{"t": 0.0, "gaze": list(gaze), "size": [448, 448]}]}
    raw = {"__key__": "w", "frame_000.jpg": jpeg(np.full((448, 448, 3), 230, np.uint8))}
    small = LazyImages(raw, ["frame_000.jpg"], lambda h, w: (128, 128))
    full = LazyImages(raw, ["frame_000.jpg"])
    x_small, y_small = ring_centre(caption_sample(meta, small, None, with_crop=False)["images"][0])
    x_full, y_full = ring_centre(caption_sample(meta, full, None, with_crop=False)["images"][0])
    scale = small[0].shape[1] / 448
    assert (x_full, y_full) == pytest.approx(gaze, abs=1.5)
    assert (x_small, y_small) == pytest.approx((gaze[0] * scale, gaze[1] * scale), abs=1.5)
