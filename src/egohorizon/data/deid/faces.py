"""Face detection for de-identification: MediaPipe's BlazeFace, run offline on CPU.

The model files are the ones the ``mediapipe==0.10.14`` wheel bundles
(``mediapipe/modules/face_detection/*.tflite``). mediapipe itself is never imported: it pins
protobuf 4.25 while wandb needs protobuf >= 5, so the Makefile installs it with ``--no-deps`` as a
carrier of the files only, and they run under ``ai-edge-litert`` (Google's TFLite runtime, no
protobuf pin). What MediaPipe's graph does around the network (letterboxing, SSD anchors, box
decoding, weighted non-maximum suppression) is written out here, with the constants of its graphs
``face_detection_full_range.pbtxt`` and ``face_detection_short_range.pbtxt``: no maintained package
decodes raw BlazeFace outputs without a heavy runtime (face-detection-tflite requires the whole
``tensorflow`` package; mediapipe's own decoder is C++ inside its graph runtime).

Measured on real frames (docs/shards.md, ``scripts/face_recall.py``): the full-range model finds
the partner's face on all 33 EgoHands face frames and fires on none of the 23 face-free Aria sample
frames; the short-range model (faces within ~2 m, 128 px input) fires on 2 of those Aria frames at
its default threshold, so ``full`` is the default.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels (exclusive)


# Recorded in the shard build settings: change it when the detector or its thresholds change, so
# shards de-identified by the old one are rebuilt.
FACE_DETECTOR_VERSION = "blazeface-full-range (mediapipe 0.10.14) v1"


@dataclass(frozen=True)
class BlazeFaceModel:
    """One BlazeFace variant: its file and the SSD anchor settings of its MediaPipe graph."""

    filename: str
    input_size: int
    strides: tuple[int, ...]
    min_score: float  # the graph's min_score_thresh


MODELS: dict[str, BlazeFaceModel] = {
    # The wheel ships the full-range model in its sparse (pruned) form only; same outputs.
    "full": BlazeFaceModel("face_detection_full_range_sparse.tflite", 192, (4,), 0.6),
    "short": BlazeFaceModel("face_detection_short_range.tflite", 128, (8, 16, 16, 16), 0.5),
}
MEDIAPIPE_PIN = "mediapipe==0.10.14"


def model_path(variant: str) -> Path:
    """The bundled ``.tflite`` file, found without importing mediapipe (its import needs protobuf 4)."""
    if variant not in MODELS:
        raise ConfigError(f"face model: expected one of {', '.join(MODELS)}, got {variant!r}")
    spec = importlib.util.find_spec("mediapipe")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"face detection needs the BlazeFace model files of {MEDIAPIPE_PIN}: "
                          f"pip install --no-deps {MEDIAPIPE_PIN} (make install does this)")
    path = Path(next(iter(spec.submodule_search_locations))) / "modules" / "face_detection" / MODELS[variant].filename
    if not path.is_file():
        raise ConfigError(f"{path} is missing: the installed mediapipe is not {MEDIAPIPE_PIN} "
                          f"(pip install --no-deps {MEDIAPIPE_PIN})")
    return path


def ssd_anchors(input_size: int, strides: tuple[int, ...]) -> np.ndarray:
    """(N, 2) anchor centres (x, y) in [0, 1], in the order of the model's outputs.

    MediaPipe's SsdAnchorsCalculator with ``aspect_ratios: 1.0``, ``fixed_anchor_size: true`` and
    anchor offset 0.5: consecutive layers with the same stride share one grid, and each layer puts
    2 anchors per cell (ratio 1 and the interpolated scale) unless the graph turns the interpolated
    scale off, which the full-range graph does (``interpolated_scale_aspect_ratio: 0.0``, 1 layer).
    With fixed anchor size every anchor is 1 x 1, so only the centres matter."""
    per_layer = 1 if len(strides) == 1 else 2
    centres, layer = [], 0
    while layer < len(strides):
        stride, repeats = strides[layer], 0
        while layer < len(strides) and strides[layer] == stride:
            repeats += per_layer
            layer += 1
        cells = -(-input_size // stride)  # ceil, as MediaPipe computes the feature map size
        ys, xs = np.mgrid[0:cells, 0:cells]
        grid = np.stack([(xs + 0.5) / cells, (ys + 0.5) / cells], axis=-1).reshape(-1, 1, 2)
        centres.append(np.repeat(grid, repeats, axis=1).reshape(-1, 2))
    return np.concatenate(centres).astype(np.float32)


def decode_boxes(raw: np.ndarray, anchors: np.ndarray, input_size: int) -> np.ndarray:
    """(N, 4) boxes x0, y0, x1, y1 in [0, 1] of the letterboxed input, from the regressors.

    ``raw[:, :4]`` is (dx, dy, w, h) in input pixels relative to the anchor centre (MediaPipe's
    TensorsToDetectionsCalculator with ``reverse_output_order: true`` and all scales = input size);
    the remaining 12 values are 6 keypoints, not needed for blurring."""
    centre = anchors + raw[:, :2] / input_size
    half = raw[:, 2:4] / input_size / 2
    return np.concatenate([centre - half, centre + half], axis=1)


def iou_one_to_many(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    x0 = np.maximum(box[0], boxes[:, 0])
    y0 = np.maximum(box[1], boxes[:, 1])
    x1 = np.minimum(box[2], boxes[:, 2])
    y1 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)


def weighted_nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float = 0.3) -> list[tuple[np.ndarray, float]]:
    """MediaPipe's WEIGHTED non-maximum suppression: the best remaining box and every box overlapping
    it by more than ``iou_threshold`` merge into their score-weighted mean box (with the best score).
    BlazeFace fires on several neighbouring anchors per face; averaging them gives a steadier box
    than keeping the single best one."""
    order = np.argsort(-scores)
    boxes, scores = boxes[order], scores[order]
    merged = []
    while len(boxes):
        overlap = iou_one_to_many(boxes[0], boxes) > iou_threshold
        overlap[0] = True
        weights = scores[overlap][:, None]
        merged.append(((boxes[overlap] * weights).sum(axis=0) / weights.sum(), float(scores[0])))
        boxes, scores = boxes[~overlap], scores[~overlap]
    return merged


class BlazeFaceDetector:
    """``__call__(rgb uint8 image) -> [(x0, y0, x1, y1), ...]`` face boxes in image pixels.

    The whole frame is letterboxed into the model's square input, as MediaPipe does. One instance
    holds one TFLite interpreter, which is not thread-safe: use one detector per thread/process."""

    def __init__(self, variant: str = "full", min_score: float | None = None, nms_iou: float = 0.3,
                 num_threads: int = 1):
        self.path = model_path(variant)
        self.model = MODELS[variant]
        self.variant = variant
        self.min_score = self.model.min_score if min_score is None else min_score
        self.nms_iou = nms_iou
        self.num_threads = num_threads
        self.anchors = ssd_anchors(self.model.input_size, self.model.strides)
        self._interpreter = None

    def _load(self):
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as error:
            raise ConfigError("face detection runs BlazeFace under ai-edge-litert: pip install ai-edge-litert "
                              "(part of egohorizon[data])") from error
        interpreter = Interpreter(model_path=str(self.path), num_threads=self.num_threads)
        interpreter.allocate_tensors()
        outputs = interpreter.get_output_details()
        # Regressors (1, N, 16) and scores (1, N, 1); told apart by shape, their names differ per file.
        self._regressors = next(o["index"] for o in outputs if o["shape"][-1] == 16)
        self._scores = next(o["index"] for o in outputs if o["shape"][-1] == 1)
        self._input = interpreter.get_input_details()[0]["index"]
        if int(interpreter.get_tensor(self._regressors).shape[1]) != len(self.anchors):
            raise ConfigError(f"{self.path}: {interpreter.get_tensor(self._regressors).shape[1]} outputs, "
                              f"expected {len(self.anchors)} anchors; not the BlazeFace file of {MEDIAPIPE_PIN}")
        self._interpreter = interpreter

    def letterbox(self, image: np.ndarray) -> tuple[np.ndarray, float, int, int]:
        """The model input (1, S, S, 3) float32 in [-1, 1], the scale and the x, y padding (pixels of S)."""
        import cv2

        size = self.model.input_size
        height, width = image.shape[:2]
        scale = size / max(height, width)
        new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
        pad_x, pad_y = (size - new_w) // 2, (size - new_h) // 2
        canvas = np.zeros((size, size, 3), np.float32)  # padding: 0 of [-1, 1], mid-grey
        small = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_AREA)
        canvas[pad_y:pad_y + new_h, pad_x:pad_x + new_w] = small.astype(np.float32) / 127.5 - 1.0
        return canvas[None], scale, pad_x, pad_y

    def detect(self, image: np.ndarray) -> list[tuple[Box, float]]:
        """Face boxes with their scores, best first."""
        if image.ndim == 2:
            image = np.repeat(image[..., None], 3, axis=2)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"expected an RGB image (H, W, 3), got shape {image.shape}")
        if self._interpreter is None:
            self._load()
        tensor, scale, pad_x, pad_y = self.letterbox(image)
        self._interpreter.set_tensor(self._input, tensor)
        self._interpreter.invoke()
        raw = self._interpreter.get_tensor(self._regressors)[0]
        logits = np.clip(self._interpreter.get_tensor(self._scores)[0, :, 0], -100.0, 100.0)
        scores = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        keep = scores >= self.min_score
        if not keep.any():
            return []
        size = self.model.input_size
        boxes = decode_boxes(raw[keep], self.anchors[keep], size)
        height, width = image.shape[:2]
        found = []
        for box, score in weighted_nms(boxes, scores[keep], self.nms_iou):
            x0, y0, x1, y1 = ((box * size - [pad_x, pad_y, pad_x, pad_y]) / scale).tolist()
            x0, x1 = (int(np.clip(v, 0, width)) for v in (np.floor(x0), np.ceil(x1)))
            y0, y1 = (int(np.clip(v, 0, height)) for v in (np.floor(y0), np.ceil(y1)))
            if x1 > x0 and y1 > y0:
                found.append(((x0, y0, x1, y1), score))
        return found

    def __call__(self, image: np.ndarray) -> list[Box]:
        return [box for box, _ in self.detect(image)]
