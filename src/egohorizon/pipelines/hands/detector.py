"""Hand detection: MediaPipe's palm detector + hand landmark model, run offline on CPU.

The two networks are the ``.tflite`` files the ``mediapipe==0.10.14`` wheel bundles
(``mediapipe/modules/palm_detection/palm_detection_full.tflite`` and
``mediapipe/modules/hand_landmark/hand_landmark_full.tflite``; newer wheels no longer carry them).
As for faces (``data/deid/faces.py``), mediapipe is never imported: its import needs protobuf 4.25
while wandb needs protobuf >= 5, so the files run under ``ai-edge-litert`` and what MediaPipe's
graphs do around the networks is written out here with the constants of
``palm_detection_cpu.pbtxt``, ``palm_detection_detection_to_roi.pbtxt`` and
``hand_landmark_cpu.pbtxt``:

1. palm detection on the whole frame letterboxed into 192 x 192 ([0, 1] input), SSD anchors of
   strides 8, 16, 16, 16, weighted NMS (the same decoder as BlazeFace, 7 keypoints instead of 6);
2. each palm becomes a rotated square hand region: rotated so wrist (keypoint 0) -> middle-finger
   base (keypoint 2) points up, shifted half a palm towards the fingers, 2.6 x the palm's long side;
3. the region is cut out at 224 x 224 and the landmark model gives 21 landmarks, a hand-presence
   score and a handedness score, projected back into the frame;
4. the box is the landmarks' extent, widened by ``margin`` of its size on each side (landmarks sit
   on joints and finger tips, a drawn hand box includes the skin around them).

Handedness: the landmark model reports it as if the image were mirrored (a selfie camera;
MediaPipe's docs: "If it is not the case, please swap the handedness output"). First-person frames
are not mirrored, so the label is swapped (checked on the EgoHands frames: the hands the model calls
the wearer's left sit in the left half of the frame; docs/hands.md).
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egohorizon.data.deid.faces import MEDIAPIPE_PIN, iou_one_to_many, ssd_anchors
from egohorizon.errors import ConfigError

# Recorded with every box written by ``egohorizon hands detect|label``: change it when the detector
# or its default thresholds change.
HAND_DETECTOR_VERSION = "mediapipe-hands-full (mediapipe 0.10.14) v1"

PALM_INPUT = 192
PALM_STRIDES = (8, 16, 16, 16)
LANDMARK_INPUT = 224
# palm_detection_detection_to_roi.pbtxt
ROI_SCALE = 2.6
ROI_SHIFT_Y = -0.5
WRIST, MIDDLE_BASE = 0, 2


@dataclass(frozen=True)
class HandDetectorSettings:
    """The thresholds. Defaults were tuned on the 100 EgoHands frames (docs/hands.md: 192 of 282
    boxes found, 2 false positives; MediaPipe's own settings, ``MEDIAPIPE_DEFAULTS``, find 175)."""

    min_palm_score: float = 0.3  # palm_detection's min_score_thresh; MediaPipe: 0.5
    min_presence: float = 0.3  # hand_landmark's hand presence threshold; MediaPipe: 0.5
    palm_nms_iou: float = 0.3
    max_hands: int = 4  # MediaPipe: num_hands 2; a first-person frame often shows a partner's hands too
    dedup_iou: float = 0.5  # two palms giving the same hand: keep the more confident one
    margin: float = 0.1
    variant: str = "full"  # full | lite
    # Also look in square tiles (the palm detector sees the whole frame at 192 px, where a hand far
    # from the camera is a few pixels wide). 0: whole frame only; 1: + squares of the short side
    # along the long one (2 for 16:9); 2: + squares of half the short side (more hits, many more
    # false positives on EgoHands: 204 hits, 29 false positives).
    tiles: int = 1


MEDIAPIPE_DEFAULTS = HandDetectorSettings(min_palm_score=0.5, min_presence=0.5, max_hands=2, tiles=0)


@dataclass(frozen=True)
class HandDetection:
    hand: str  # "left" | "right" (the wearer's, for first-person frames)
    box: tuple[float, float, float, float]  # x1, y1, x2, y2 in image pixels
    score: float  # hand presence x palm score
    handedness: float  # confidence of ``hand``
    landmarks: np.ndarray  # (21, 2) image pixels


def bundled_model(folder: str, filename: str) -> Path:
    """A ``.tflite`` file of the installed mediapipe wheel, found without importing mediapipe."""
    spec = importlib.util.find_spec("mediapipe")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"hand detection needs the model files of {MEDIAPIPE_PIN}: "
                          f"pip install --no-deps {MEDIAPIPE_PIN} (make install does this)")
    path = Path(next(iter(spec.submodule_search_locations))) / "modules" / folder / filename
    if not path.is_file():
        raise ConfigError(f"{path} is missing: the installed mediapipe is not {MEDIAPIPE_PIN} "
                          f"(pip install --no-deps {MEDIAPIPE_PIN})")
    return path


def _interpreter(path: Path, num_threads: int):
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError as error:
        raise ConfigError("hand detection runs MediaPipe's models under ai-edge-litert: "
                          "pip install ai-edge-litert (part of egohorizon[data])") from error
    interpreter = Interpreter(model_path=str(path), num_threads=num_threads)
    interpreter.allocate_tensors()
    return interpreter


def hand_region(palm_box: np.ndarray, wrist: np.ndarray, middle: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(centre (2,), side, rotation in radians) of the square hand region, all in image pixels.

    DetectionsToRectsCalculator (rotation so wrist -> middle base points up: target angle 90 deg)
    then RectTransformationCalculator (shift_y -0.5, scale 2.6, square_long)."""
    rotation = math.pi / 2 - math.atan2(-(middle[1] - wrist[1]), middle[0] - wrist[0])
    rotation = (rotation + math.pi) % (2 * math.pi) - math.pi
    width, height = palm_box[2] - palm_box[0], palm_box[3] - palm_box[1]
    centre = np.array([(palm_box[0] + palm_box[2]) / 2, (palm_box[1] + palm_box[3]) / 2])
    centre += [-ROI_SHIFT_Y * height * math.sin(rotation), ROI_SHIFT_Y * height * math.cos(rotation)]
    return centre, max(width, height) * ROI_SCALE, rotation


def region_affine(centre: np.ndarray, side: float, rotation: float, size: int) -> np.ndarray:
    """2 x 3 map from region pixels (0..size) to image pixels (rotation as MediaPipe's rects)."""
    cos, sin = math.cos(rotation), math.sin(rotation)
    linear = np.array([[cos, -sin], [sin, cos]]) * (side / size)
    return np.concatenate([linear, (centre - linear @ [size / 2, size / 2])[:, None]], axis=1)


class MediaPipeHands:
    """``detect(rgb uint8 image) -> [HandDetection, ...]``, most confident first.

    One instance holds two TFLite interpreters, which are not thread-safe: one per thread/process."""

    def __init__(self, settings: HandDetectorSettings | None = None, num_threads: int = 1):
        self.settings = settings or HandDetectorSettings()
        if self.settings.variant not in ("full", "lite"):
            raise ConfigError(f"hand model variant: expected full or lite, got {self.settings.variant!r}")
        self.num_threads = num_threads
        self.anchors = ssd_anchors(PALM_INPUT, PALM_STRIDES)
        self._palm = self._landmark = None

    def _load(self) -> None:
        variant = self.settings.variant
        self._palm = _interpreter(bundled_model("palm_detection", f"palm_detection_{variant}.tflite"), self.num_threads)
        self._landmark = _interpreter(bundled_model("hand_landmark", f"hand_landmark_{variant}.tflite"),
                                      self.num_threads)
        outputs = self._palm.get_output_details()
        self._palm_out = (next(o["index"] for o in outputs if o["shape"][-1] == 18),
                          next(o["index"] for o in outputs if o["shape"][-1] == 1))
        if int(self._palm.get_tensor(self._palm_out[0]).shape[1]) != len(self.anchors):
            raise ConfigError(f"palm model: expected {len(self.anchors)} anchors; not the file of {MEDIAPIPE_PIN}")
        # Landmark outputs by name: Identity = 21 x 3 landmarks, _1 = presence, _2 = handedness.
        names = {o["name"]: o["index"] for o in self._landmark.get_output_details()}
        self._landmark_out = (names["Identity"], names["Identity_1"], names["Identity_2"])

    def palms(self, image: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """Palm boxes (4,) and keypoints (7, 2) in image pixels with their scores, best first:
        from the whole frame and, with ``tiles``, from square tiles, merged by the same NMS."""
        found = self._palms_in(image)
        if not self.settings.tiles:
            return found
        for x0, y0, crop in square_tiles(image, self.settings.tiles):
            for box, points, score in self._palms_in(crop):
                found.append((box + [x0, y0, x0, y0], points + [x0, y0], score))
        if not found:
            return []
        rows = np.array([np.concatenate([box, points.reshape(-1)]) for box, points, _ in found])
        merged = _weighted_nms_rows(rows, np.array([score for *_, score in found]), self.settings.palm_nms_iou)
        return [(row[:4], row[4:].reshape(7, 2), score) for row, score in merged]

    def _palms_in(self, image: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, float]]:
        import cv2

        height, width = image.shape[:2]
        scale = PALM_INPUT / max(height, width)
        new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
        pad_x, pad_y = (PALM_INPUT - new_w) // 2, (PALM_INPUT - new_h) // 2
        canvas = np.zeros((PALM_INPUT, PALM_INPUT, 3), np.float32)  # BORDER_ZERO letterbox
        small = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_AREA)
        canvas[pad_y:pad_y + new_h, pad_x:pad_x + new_w] = small.astype(np.float32) / 255.0
        self._palm.set_tensor(self._palm.get_input_details()[0]["index"], canvas[None])
        self._palm.invoke()
        raw = self._palm.get_tensor(self._palm_out[0])[0]
        logits = np.clip(self._palm.get_tensor(self._palm_out[1])[0, :, 0], -100.0, 100.0)
        scores = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        keep = scores >= self.settings.min_palm_score
        if not keep.any():
            return []
        anchors = self.anchors[keep]
        centre = anchors + raw[keep, :2] / PALM_INPUT
        half = raw[keep, 2:4] / PALM_INPUT / 2
        keypoints = anchors[:, None, :] + raw[keep, 4:18].reshape(-1, 7, 2) / PALM_INPUT
        # boxes and keypoints travel together through the weighted NMS as one 18-vector
        stacked = np.concatenate([centre - half, centre + half, keypoints.reshape(-1, 14)], axis=1)
        merged = _weighted_nms_rows(stacked, scores[keep], self.settings.palm_nms_iou)
        offset = np.array([pad_x, pad_y], dtype=np.float64)
        found = []
        for row, score in merged:
            points = (row.reshape(-1, 2) * PALM_INPUT - offset) / scale
            found.append((points[:2].reshape(4), points[2:], score))
        return found

    def landmarks(self, image: np.ndarray, palm_box: np.ndarray, keypoints: np.ndarray) -> tuple[np.ndarray, float, float]:
        """(21, 2) landmarks in image pixels, hand presence, P(model label "Left")."""
        import cv2

        centre, side, rotation = hand_region(palm_box, keypoints[WRIST], keypoints[MIDDLE_BASE])
        to_image = region_affine(centre, side, rotation, LANDMARK_INPUT)
        crop = cv2.warpAffine(image, to_image, (LANDMARK_INPUT, LANDMARK_INPUT),
                              flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_CONSTANT)
        self._landmark.set_tensor(self._landmark.get_input_details()[0]["index"],
                                  (crop.astype(np.float32) / 255.0)[None])
        self._landmark.invoke()
        points = self._landmark.get_tensor(self._landmark_out[0])[0].reshape(21, 3)[:, :2]
        presence = float(self._landmark.get_tensor(self._landmark_out[1]).reshape(-1)[0])
        left = float(self._landmark.get_tensor(self._landmark_out[2]).reshape(-1)[0])
        projected = points @ to_image[:, :2].T + to_image[:, 2]
        return projected, presence, left

    def detect(self, image: np.ndarray) -> list[HandDetection]:
        if image.ndim == 2:
            image = np.repeat(image[..., None], 3, axis=2)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"expected an RGB image (H, W, 3), got shape {image.shape}")
        if self._palm is None:
            self._load()
        settings = self.settings
        height, width = image.shape[:2]
        hands: list[HandDetection] = []
        for palm_box, keypoints, palm_score in self.palms(image):
            points, presence, left = self.landmarks(image, palm_box, keypoints)
            if presence < settings.min_presence:
                continue
            box = landmark_box(points, settings.margin, width, height)
            if box is None:
                continue
            # Swapped: the model assumes a mirrored (selfie) image; first-person frames are not.
            hand, confidence = ("right", left) if left >= 0.5 else ("left", 1.0 - left)
            hands.append(HandDetection(hand, box, presence * palm_score, confidence, points))
        return dedup(sorted(hands, key=lambda h: -h.score), settings.dedup_iou)[: settings.max_hands]


def square_tiles(image: np.ndarray, levels: int) -> list[tuple[int, int, np.ndarray]]:
    """(x0, y0, tile): at level k, squares of side short/k evenly spread (overlapping) over the
    frame, for k = 1..levels; the whole frame itself is not among them."""
    height, width = image.shape[:2]
    tiles = []
    for level in range(1, levels + 1):
        side = min(height, width) // level
        xs = np.linspace(0, width - side, math.ceil(width / side)).round().astype(int)
        ys = np.linspace(0, height - side, math.ceil(height / side)).round().astype(int)
        if len(xs) * len(ys) < 2:
            continue  # a square frame at level 1 is the frame
        tiles += [(int(x), int(y), image[y:y + side, x:x + side]) for y in ys for x in xs]
    return tiles


def landmark_box(points: np.ndarray, margin: float, width: int, height: int) -> tuple[float, float, float, float] | None:
    """The landmarks' extent widened by ``margin`` of its size per side, clipped to the image."""
    x0, y0 = points.min(axis=0)
    x1, y1 = points.max(axis=0)
    dx, dy = (x1 - x0) * margin, (y1 - y0) * margin
    box = (max(0.0, x0 - dx), max(0.0, y0 - dy), min(float(width), x1 + dx), min(float(height), y1 + dy))
    if box[2] <= box[0] or box[3] <= box[1]:
        return None  # the hand lies wholly outside the frame
    return tuple(round(float(v), 1) for v in box)


def dedup(hands: list[HandDetection], iou: float) -> list[HandDetection]:
    """Drop a hand whose box overlaps a more confident one's by more than ``iou``."""
    kept: list[HandDetection] = []
    for hand in hands:
        if kept and iou_one_to_many(np.array(hand.box), np.array([k.box for k in kept])).max() > iou:
            continue
        kept.append(hand)
    return kept


def _weighted_nms_rows(rows: np.ndarray, scores: np.ndarray, iou: float) -> list[tuple[np.ndarray, float]]:
    """faces.weighted_nms on rows whose first 4 values are the box: every value is averaged."""
    order = np.argsort(-scores)
    rows, scores = rows[order], scores[order]
    merged = []
    while len(rows):
        overlap = iou_one_to_many(rows[0, :4], rows[:, :4]) > iou
        overlap[0] = True
        weights = scores[overlap][:, None]
        merged.append(((rows[overlap] * weights).sum(axis=0) / weights.sum(), float(scores[0])))
        rows, scores = rows[~overlap], scores[~overlap]
    return merged


__all__ = ["HAND_DETECTOR_VERSION", "MEDIAPIPE_DEFAULTS", "HandDetection", "HandDetectorSettings", "MediaPipeHands"]
