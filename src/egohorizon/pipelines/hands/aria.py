"""Real, annotation-free hand boxes from an Aria gen2 recording's own hand tracking (issue 14).

The device tracks 21 3D landmarks per hand (left and right, with a confidence) beside its RGB frames
(stream ``handtracking``; projectaria-tools ``get_hand_pose_data_by_index``). Each RGB frame gets the
tracking sample nearest in time (within ``tolerance_ns``); its landmarks, in the device frame, go
through the device calibration into the RGB camera (the same path as gaze: ``data.ingest.aria.projection``)
and their extent, widened by ``margin`` like the detector's landmark boxes, is that hand's box in the
raw (not rotated) RGB image. A landmark behind the camera or outside the lens model does not project
and is left out; a hand with fewer than ``min_points`` projected landmarks gets no box.

``score_hands`` then scores a detector on those frames per hand (hits, misses, false positives, with
the hand-agnostic figures beside them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from egohorizon.errors import DataError

HAND_STREAM = "371-1"


@dataclass
class AriaHandFrame:
    index: int  # RGB frame index in the recording
    t_ns: int  # the frame's capture time (device clock)
    offset_ns: int  # tracking sample time - frame time
    image: np.ndarray  # (H, W, 3) uint8, raw orientation
    boxes: dict[str, list[float]]  # hand -> [x1, y1, x2, y2]
    confidence: dict[str, float]


def _open(vrs: str | Path):
    from projectaria_tools.core import data_provider
    from projectaria_tools.core.stream_id import StreamId

    if not Path(vrs).is_file():  # the library's answer to a typo was "cannot open this VRS file"
        raise DataError(f"{vrs}: VRS file not found")
    provider = data_provider.create_vrs_data_provider(str(vrs))
    if provider is None:
        raise DataError(f"{vrs}: projectaria-tools cannot open this VRS file")
    hands = StreamId(HAND_STREAM)
    if hands not in provider.get_all_streams() or provider.get_num_data(hands) == 0:
        raise DataError(f"{vrs}: no on-device hand tracking (stream {HAND_STREAM}); a gen2 recording carries it")
    calibration = provider.get_device_calibration()
    if calibration is None:
        raise DataError(f"{vrs}: no device calibration, so landmarks cannot be projected into the RGB frames")
    return provider, hands, calibration


def project_landmarks(landmarks_device, camera, transform_camera_device) -> np.ndarray:
    """(n, 2) pixels of the landmarks that project (n <= 21)."""
    pixels = []
    for point in landmarks_device:
        pixel = camera.project(transform_camera_device @ np.asarray(point, dtype=np.float64).reshape(3, 1))
        if pixel is not None:
            pixels.append(np.asarray(pixel, dtype=np.float64).ravel()[:2])
    return np.array(pixels).reshape(-1, 2)


def aria_hand_frames(vrs: str | Path, camera_label: str = "camera-rgb", tolerance_ns: int = 20_000_000,
                     margin: float = 0.1, min_points: int = 5, min_confidence: float = 0.5) -> list[AriaHandFrame]:
    from egohorizon.pipelines.hands.detector import landmark_box

    provider, hands, calibration = _open(vrs)
    camera = calibration.get_camera_calib(camera_label)
    if camera is None:
        raise DataError(f"{vrs}: device calibration has no camera {camera_label!r}")
    transform = calibration.get_transform_device_sensor(camera_label).inverse()
    width, height = (int(v) for v in camera.get_image_size())
    samples = [provider.get_hand_pose_data_by_index(hands, i) for i in range(provider.get_num_data(hands))]
    sample_ns = np.array([int(s.tracking_timestamp.total_seconds() * 1e9) for s in samples], dtype=np.int64)
    rgb = provider.get_stream_id_from_label(camera_label)
    frames = []
    for index in range(provider.get_num_data(rgb)):
        image, record = provider.get_image_data_by_index(rgb, index)
        t_ns = int(record.capture_timestamp_ns)
        nearest = int(np.argmin(np.abs(sample_ns - t_ns)))
        if abs(int(sample_ns[nearest]) - t_ns) > tolerance_ns:
            continue
        boxes, confidence = {}, {}
        for hand in ("left", "right"):
            side = getattr(samples[nearest], f"{hand}_hand")
            if side is None or side.confidence < min_confidence:
                continue
            pixels = project_landmarks(side.landmark_positions_device, camera, transform)
            box = landmark_box(pixels, margin, width, height) if len(pixels) >= min_points else None
            if box is not None:
                boxes[hand], confidence[hand] = list(box), float(side.confidence)
        frames.append(AriaHandFrame(index, t_ns, int(sample_ns[nearest]) - t_ns, image.to_numpy_array(),
                                    boxes, confidence))
    return frames


def score_hands(frames: list[AriaHandFrame], find: Callable[[np.ndarray], list[tuple[str, list[float], float]]]
                ) -> dict[str, Any]:
    """A detector's boxes against the projected ones: per hand (a gold box is hit by the same hand's
    box whose centroid lies inside it) and hand-agnostically (``metrics.boxes.image_box_hits``)."""
    from egohorizon.metrics.boxes import image_box_hits

    same = {"hits": 0, "misses": 0, "false_positives": 0}
    agnostic = dict(same)
    per_frame = []
    for frame in frames:
        found = find(frame.image)
        row = {"index": frame.index, "gold": frame.boxes, "found": [{"hand": h, "box": b} for h, b, _ in found]}
        for hand in ("left", "right"):
            result = image_box_hits([b for h, b, _ in found if h == hand],
                                    [frame.boxes[hand]] if hand in frame.boxes else [])
            for key, value in result.items():
                same[key] += value
        for key, value in image_box_hits([b for _, b, _ in found], list(frame.boxes.values())).items():
            agnostic[key] += value
        per_frame.append(row)
    return {"frames": len(frames), "gold_boxes": sum(len(f.boxes) for f in frames), "same_hand": same,
            "any_hand": agnostic, "per_frame": per_frame}
