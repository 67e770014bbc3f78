"""EgoHome hand boxes: the centroid hit fraction (SPEC §4, §6).

Gold: one box per hand per annotated frame (frame indices at 30 fps). Predictions: boxes at times
``t`` (seconds); a box belongs to frame ``round(30 * t)`` (halves round up). For each (clip, hand)
the model "has a box" on every frame from its first to its last box frame, linearly interpolated
by frame index in between (interpolating the corners moves the centroid linearly too); outside that
span it has none, so annotated frames there are misses.

    hits = annotated hand-frames whose model-box centroid lies inside the gold box (edges count)
    CHF  = hits / (annotated hand-frames + frames where the model has a box for a hand the gold lacks)

Choices the SPEC leaves open: several predicted boxes on one frame are averaged (and counted in
``duplicate_pred_frames``); clips with predictions but no gold are listed in ``unknown_clips`` and
not scored; the overall CHF pools all clips (the per-clip values and their mean are reported too).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from egohorizon.schema import BoxPrediction, HandBox

FPS = 30


def frame_of(t: float, fps: float = FPS) -> int:
    """The frame a prediction at ``t`` seconds belongs to: round(fps * t), halves up."""
    return math.floor(fps * t + 0.5)


def _model_track(predictions: Sequence[BoxPrediction], fps: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Sorted distinct frames [n], their boxes [n, 4] (duplicates averaged), duplicate count."""
    by_frame: dict[int, list[list[float]]] = defaultdict(list)
    for prediction in predictions:
        by_frame[frame_of(prediction.t, fps)].append(prediction.box)
    frames = np.array(sorted(by_frame), dtype=np.int64)
    boxes = np.array([np.mean(by_frame[f], axis=0) for f in frames], dtype=np.float64).reshape(-1, 4)
    duplicates = sum(len(v) - 1 for v in by_frame.values())
    return frames, boxes, duplicates


def _score_hand(gold: dict[int, list[float]], predictions: Sequence[BoxPrediction], fps: float) -> dict:
    """hits / annotated / false-positive frames for one clip and hand."""
    annotated = len(gold)
    if not predictions:
        return {"hits": 0, "annotated": annotated, "false_positive_frames": 0, "duplicates": 0}
    frames, boxes, duplicates = _model_track(predictions, fps)
    first, last = int(frames[0]), int(frames[-1])
    gold_frames = np.array(sorted(gold), dtype=np.int64)
    covered = gold_frames[(gold_frames >= first) & (gold_frames <= last)]
    hits = 0
    if covered.size:
        model = np.stack([np.interp(covered, frames, boxes[:, c]) for c in range(4)], axis=1)
        cx, cy = (model[:, 0] + model[:, 2]) / 2, (model[:, 1] + model[:, 3]) / 2
        truth = np.array([gold[int(f)] for f in covered])
        inside = (truth[:, 0] <= cx) & (cx <= truth[:, 2]) & (truth[:, 1] <= cy) & (cy <= truth[:, 3])
        hits = int(inside.sum())
    false_positive = (last - first + 1) - int(covered.size)
    return {
        "hits": hits,
        "annotated": annotated,
        "false_positive_frames": false_positive,
        "duplicates": duplicates,
    }


def _gold_index(gold: Sequence[HandBox]) -> dict[str, dict[str, dict[int, list[float]]]]:
    index: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(dict))
    for box in gold:
        frames = index[box.clip][box.hand]
        if box.frame in frames:
            raise ValueError(
                f"gold has two boxes for clip {box.clip!r}, hand {box.hand!r}, frame {box.frame}"
            )
        frames[box.frame] = box.box
    return index


def centroid_hit_fraction(
    gold: Sequence[HandBox], predictions: Sequence[BoxPrediction], fps: float = FPS
) -> dict:
    """CHF over all clips of ``gold`` (SPEC §6 report).

    Returns ``chf`` (pooled, in [0, 1]), ``hits``, ``annotated`` (hand-frames),
    ``false_positive_frames``, ``per_clip`` [{clip, chf, hits, annotated, false_positive_frames}],
    ``chf_clip_mean``, ``duplicate_pred_frames``, ``unknown_clips``.
    """
    gold_index = _gold_index(gold)
    predicted: dict[str, dict[str, list[BoxPrediction]]] = defaultdict(lambda: defaultdict(list))
    for prediction in predictions:
        predicted[prediction.clip][prediction.hand].append(prediction)
    per_clip = []
    totals = {"hits": 0, "annotated": 0, "false_positive_frames": 0, "duplicates": 0}
    for clip in sorted(gold_index):
        clip_totals = {"hits": 0, "annotated": 0, "false_positive_frames": 0, "duplicates": 0}
        for hand in ("left", "right"):
            result = _score_hand(gold_index[clip].get(hand, {}), predicted[clip].get(hand, []), fps)
            for key in clip_totals:
                clip_totals[key] += result[key]
        denominator = clip_totals["annotated"] + clip_totals["false_positive_frames"]
        per_clip.append(
            {
                "clip": clip,
                "chf": clip_totals["hits"] / denominator if denominator else None,
                "hits": clip_totals["hits"],
                "annotated": clip_totals["annotated"],
                "false_positive_frames": clip_totals["false_positive_frames"],
            }
        )
        for key in totals:
            totals[key] += clip_totals[key]
    denominator = totals["annotated"] + totals["false_positive_frames"]
    clip_values = [c["chf"] for c in per_clip if c["chf"] is not None]
    return {
        "chf": totals["hits"] / denominator if denominator else None,
        "hits": totals["hits"],
        "annotated": totals["annotated"],
        "false_positive_frames": totals["false_positive_frames"],
        "per_clip": per_clip,
        "chf_clip_mean": sum(clip_values) / len(clip_values) if clip_values else None,
        "n_clips": len(per_clip),
        "duplicate_pred_frames": totals["duplicates"],
        "unknown_clips": sorted(set(predicted) - set(gold_index)),
    }
