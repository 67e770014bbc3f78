"""The tar layout of one window sample, in one place: writing (encode) and reading back (decode).

A sample is the files sharing the key ``<participant>_<day>_<session>_w<window>``:

    <key>.json      the window's metadata (egohorizon.data.windows.WindowSample.meta)
    <key>.f000.jpg  frame 0, downscaled to the long side; f001.jpg, ... one per frame, in time order
    <key>.c000.jpg  the native-resolution gaze crop of frame 0, only for frames with a crop_box

WebDataset splits a member name at the first dot of its basename, so keys carry no dots and the
extensions ``f000.jpg`` etc. become the sample's fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from egohorizon.data.windows import WINDOW_SCHEMA_VERSION, WindowSample

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


def decode_jpeg(data: bytes) -> np.ndarray:
    """RGB uint8 (H, W, 3); raises ValueError for bytes that are not a decodable JPEG."""
    import cv2

    # IMREAD_COLOR_RGB (OpenCV >= 4.11) has libjpeg-turbo write RGB directly: no BGR->RGB pass.
    rgb = getattr(cv2, "IMREAD_COLOR_RGB", None)
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), rgb if rgb is not None else cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError("not a decodable JPEG")
    return image if rgb is not None else cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


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
        wanted = [frame_field(i)] + ([crop_field(i)] if frame.get("crop_box") else [])
        missing = [name for name in wanted if name not in sample]
        if missing:
            raise SampleError(MISSING_FIELD, f"sample {sample.get('__key__')!r}: missing {', '.join(missing)}")


def decode_window(sample: dict[str, Any], *, crops: bool = True) -> DecodedWindow:
    """Checks and decodes one raw tar sample; raises SampleError (with its counter) if unusable."""
    meta = parse_meta(sample)
    check_fields(sample, meta)
    frames, crop_images = [], []
    for i, frame in enumerate(meta["frames"]):
        try:
            frames.append(decode_jpeg(sample[frame_field(i)]))
            has_crop = crops and frame.get("crop_box")
            crop_images.append(decode_jpeg(sample[crop_field(i)]) if has_crop else None)
        except ValueError:
            message = f"sample {sample.get('__key__')!r}: frame {i} image is corrupt"
            raise SampleError(CORRUPT_IMAGE, message) from None
    return DecodedWindow(key=sample.get("__key__", ""), url=sample.get("__url__", ""), meta=meta,
                         frames=frames, crops=crop_images)
