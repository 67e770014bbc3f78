"""The tar layout of one window sample, in one place: writing (encode) and reading back (decode).

A sample is the files sharing the key ``<participant>_<day>_<session>_w<window>``:

    <key>.json      the window's metadata (egohorizon.data.windows.sample.WindowSample.meta)
    <key>.f000.jpg  frame 0, downscaled to the long side; f001.jpg, ... one per frame, in time order
    <key>.c000.jpg  the native-resolution gaze crop of frame 0, only for frames with a crop_box

WebDataset splits a member name at the first dot of its basename, so keys carry no dots and the
extensions ``f000.jpg`` etc. become the sample's fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from egohorizon.data.windows.sample import WINDOW_SCHEMA_VERSION, WindowSample

if TYPE_CHECKING:
    from egohorizon.data.shards.arena import DecodeArena

JSON_FIELD = "json"


def frame_field(i: int) -> str:
    return f"f{i:03d}.jpg"


def crop_field(i: int) -> str:
    return f"c{i:03d}.jpg"


def encode_jpeg(image: np.ndarray, quality: int) -> bytes:
    import cv2

    ok, data = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return data.tobytes()


def jpeg_shape(data: bytes) -> tuple[int, int]:
    """(height, width) from a JPEG's header, without decoding it; ValueError if it has none."""
    import simplejpeg

    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    return height, width


def decode_jpeg(data: bytes, into: np.ndarray | None = None) -> np.ndarray:
    """RGB uint8 (H, W, 3), written into ``into`` (a contiguous (H, W, 3) array) when given; raises
    ValueError for bytes that are not a complete, decodable JPEG."""
    import simplejpeg

    # simplejpeg drives libjpeg-turbo's TurboJPEG API straight to RGB: the same pixels as cv2.imdecode
    # (both use the accurate integer DCT and smooth upsampling), in about half of its CPU time here
    # (cv2 faults in a fresh output array for every image). strict: a truncated file is an error
    # (cv2 fills the missing rows with grey).
    return simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True, buffer=into)


def encode_window(sample: WindowSample, *, jpeg_quality: int = 90, crop_quality: int = 95) -> dict[str, Any]:
    """The sample as a WebDataset dict of bytes, ready for ``TarWriter.write``."""
    out: dict[str, Any] = {"__key__": sample.key,
                           JSON_FIELD: json.dumps(sample.meta(), ensure_ascii=False).encode("utf-8")}
    for i, frame in enumerate(sample.frames):
        out[frame_field(i)] = encode_jpeg(frame.image, jpeg_quality)
        if frame.crop is not None:
            out[crop_field(i)] = encode_jpeg(frame.crop, crop_quality)
    return out


class SampleError(ValueError):
    """A sample that cannot be used; ``reason`` is the counter it goes to."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


# Counter names for skipped samples (also used by the stream's statistics).
MISSING_FIELD = "missing_field"
CORRUPT_IMAGE = "corrupt_image"
BAD_METADATA = "bad_metadata"


@dataclass
class DecodedWindow:
    key: str
    url: str
    meta: dict[str, Any]
    frames: list[np.ndarray]
    crops: list[np.ndarray | None]


def parse_meta(sample: dict[str, Any]) -> dict[str, Any]:
    if JSON_FIELD not in sample:
        raise SampleError(MISSING_FIELD, f"sample {sample.get('__key__')!r}: no '{JSON_FIELD}' file")
    try:
        meta = json.loads(sample[JSON_FIELD])
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise SampleError(BAD_METADATA, f"sample {sample.get('__key__')!r}: metadata is not JSON ({error})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("frames"), list):
        raise SampleError(BAD_METADATA, f"sample {sample.get('__key__')!r}: metadata has no 'frames' list")
    if meta.get("schema_version") != WINDOW_SCHEMA_VERSION:
        raise SampleError(BAD_METADATA, f"sample {sample.get('__key__')!r}: schema_version "
                                        f"{meta.get('schema_version')!r}, expected {WINDOW_SCHEMA_VERSION}")
    return meta


def check_fields(sample: dict[str, Any], meta: dict[str, Any]) -> None:
    """Every frame (and crop) the metadata promises must be present: a truncated tar drops them."""
    for i, frame in enumerate(meta["frames"]):
        if not isinstance(frame, dict):
            raise SampleError(BAD_METADATA, f"sample {sample.get('__key__')!r}: frame {i} is not an object")
        wanted = [frame_field(i)] + ([crop_field(i)] if frame.get("crop_box") else [])
        missing = [name for name in wanted if name not in sample]
        if missing:
            raise SampleError(MISSING_FIELD, f"sample {sample.get('__key__')!r}: missing {', '.join(missing)}")


def decode_window(sample: dict[str, Any], *, crops: bool = True, arena: DecodeArena | None = None) -> DecodedWindow:
    """Checks and decodes one raw tar sample; raises SampleError (with its counter) if unusable.

    With an ``arena`` (egohorizon.data.shards.arena), images are decoded straight into their place in
    the batch being assembled; the headers are read first, so the arena knows every image's size."""
    meta = parse_meta(sample)
    check_fields(sample, meta)
    frame_data = [sample[frame_field(i)] for i in range(len(meta["frames"]))]
    crop_data = [sample[crop_field(i)] if crops and frame.get("crop_box") else None
                 for i, frame in enumerate(meta["frames"])]
    frame_shapes = [_shape(sample, i, data) for i, data in enumerate(frame_data)]
    crop_shapes = [None if data is None else _shape(sample, i, data) for i, data in enumerate(crop_data)]
    targets = arena.place(frame_shapes, crop_shapes if crops else None) if arena is not None else None
    frame_targets, crop_targets = targets or ([None] * len(frame_data), [None] * len(crop_data))
    try:
        frames = [_decode(sample, i, data, frame_targets[i]) for i, data in enumerate(frame_data)]
        crop_images = [None if data is None else _decode(sample, i, data, crop_targets[i])
                       for i, data in enumerate(crop_data)]
    except SampleError:
        if targets is not None:
            arena.unplace()
        raise
    return DecodedWindow(key=sample.get("__key__", ""), url=sample.get("__url__", ""), meta=meta,
                         frames=frames, crops=crop_images)


def _corrupt(sample: dict[str, Any], i: int) -> SampleError:
    return SampleError(CORRUPT_IMAGE, f"sample {sample.get('__key__')!r}: frame {i} image is corrupt")


def _shape(sample: dict[str, Any], i: int, data: bytes) -> tuple[int, int]:
    try:
        return jpeg_shape(data)
    except ValueError:
        raise _corrupt(sample, i) from None


def _decode(sample: dict[str, Any], i: int, data: bytes, into: np.ndarray | None) -> np.ndarray:
    try:
        return decode_jpeg(data, into)
    except ValueError:
        raise _corrupt(sample, i) from None
