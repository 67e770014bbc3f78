"""EgoHome hand boxes: the centroid hit fraction (SPEC §4, §6).

Gold: one box per hand per annotated frame (frame indices at 30 fps). Predictions: boxes at times
``t`` (seconds); a box belongs to frame ``round(30 * t)`` (halves round up). For each (clip, hand)
the model "has a box" on every frame from its first to its last box frame, linearly interpolated
by frame index in between (interpolating the corners moves the centroid linearly too); outside that
span it has none, so annotated frames there are misses.

    hits = annotated hand-frames whose model-box centroid lies inside the gold box (edges count)
    CHF  = hits / (annotated hand-frames + frames where the model has a box for a hand the gold lacks)

Sparse gold (SPEC §4): a clip's gold records may carry ``"grid": N``, annotation on frames 0, N,
2N, ... only. Just the frames on that grid are scored: a model-covered frame off the grid is neither
a hit nor a false positive, so dense predictions are not punished for the frames nobody annotated.
The records of one clip that give a grid must agree, and every gold frame must lie on it.

Out of range (SPEC §4): a predicted box at ``t < 0`` or more than 1 s past the clip's last gold frame
(either hand) is one false-positive frame, counted in ``out_of_range``, and takes no part in the
interpolated track, so one stray box at t = 1e7 s cannot add 300 million frames.

Choices the SPEC leaves open: several predicted boxes on one frame are averaged (and counted in
``duplicate_pred_frames``); each out-of-range box counts once, even several on one frame; clips with
predictions but no gold are listed in ``unknown_clips`` and not scored; the overall CHF pools all
clips (the per-clip values and their mean are reported too). Nothing here grows with the number of
frames a track spans: false-positive frames are counted arithmetically.
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


def _grid_frames(first: int, last: int, grid: int) -> int:
    """How many of the frames 0, grid, 2 grid, ... lie in [first, last] (first >= 0)."""
    return max(0, last // grid - (first + grid - 1) // grid + 1)


def _score_hand(
    gold: dict[int, list[float]],
    predictions: Sequence[BoxPrediction],
    fps: float,
    grid: int,
    last_gold_frame: int,
) -> dict:
    """hits / annotated / false-positive frames / out-of-range boxes for one clip and hand."""
    annotated = len(gold)
    # fps * t in floating point: a huge t stays comparable (inf) instead of overflowing frame_of
    in_range = [p for p in predictions if p.t >= 0 and fps * p.t <= last_gold_frame + fps]
    out_of_range = len(predictions) - len(in_range)
    result = {
        "hits": 0,
        "annotated": annotated,
        "false_positive_frames": out_of_range,
        "out_of_range": out_of_range,
        "duplicates": 0,
    }
    if not in_range:
        return result
    frames, boxes, result["duplicates"] = _model_track(in_range, fps)
    first, last = int(frames[0]), int(frames[-1])
    gold_frames = np.array(sorted(gold), dtype=np.int64)
    covered = gold_frames[(gold_frames >= first) & (gold_frames <= last)]
    if covered.size:
        model = np.stack([np.interp(covered, frames, boxes[:, c]) for c in range(4)], axis=1)
        cx, cy = (model[:, 0] + model[:, 2]) / 2, (model[:, 1] + model[:, 3]) / 2
        truth = np.array([gold[int(f)] for f in covered])
        inside = (truth[:, 0] <= cx) & (cx <= truth[:, 2]) & (truth[:, 1] <= cy) & (cy <= truth[:, 3])
        result["hits"] = int(inside.sum())
    # gold frames all lie on the grid, so the covered grid frames without gold are the false positives
    result["false_positive_frames"] += _grid_frames(first, last, grid) - int(covered.size)
    return result


def clip_grids(gold: Sequence[HandBox]) -> dict[str, int]:
    """Annotation grid of each gold clip (1 where no record gives one); ValueError on a conflict."""
    given: dict[str, int] = {}
    for box in gold:
        if box.grid is not None and given.setdefault(box.clip, box.grid) != box.grid:
            raise ValueError(
                f"gold clip {box.clip!r} gives two annotation grids, {given[box.clip]} and {box.grid}"
            )
    grids = {box.clip: given.get(box.clip, 1) for box in gold}
    for box in gold:
        if box.frame % grids[box.clip]:
            raise ValueError(
                f"gold clip {box.clip!r}, hand {box.hand!r}: frame {box.frame} is not on the clip's "
                f"annotation grid of {grids[box.clip]} (frames 0, {grids[box.clip]}, ...)"
            )
    return grids


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

    Returns ``chf`` (pooled, in [0, 1]), ``hits``, ``annotated`` (hand-frames on the grid),
    ``false_positive_frames`` (out-of-range boxes included), ``out_of_range`` (boxes),
    ``per_clip`` [{clip, chf, hits, annotated, false_positive_frames, out_of_range, grid}],
    ``chf_clip_mean``, ``duplicate_pred_frames``, ``unknown_clips``.
    """
    gold_index = _gold_index(gold)
    grids = clip_grids(gold)
    predicted: dict[str, dict[str, list[BoxPrediction]]] = defaultdict(lambda: defaultdict(list))
    for prediction in predictions:
        predicted[prediction.clip][prediction.hand].append(prediction)
    keys = ("hits", "annotated", "false_positive_frames", "out_of_range", "duplicates")
    per_clip = []
    totals = dict.fromkeys(keys, 0)
    for clip in sorted(gold_index):
        clip_totals = dict.fromkeys(keys, 0)
        last_gold_frame = max(max(frames) for frames in gold_index[clip].values())
        for hand in ("left", "right"):
            result = _score_hand(
                gold_index[clip].get(hand, {}),
                predicted[clip].get(hand, []),
                fps,
                grids[clip],
                last_gold_frame,
            )
            for key in clip_totals:
                clip_totals[key] += result[key]
        denominator = clip_totals["annotated"] + clip_totals["false_positive_frames"]
        per_clip.append(
            {
                "clip": clip,
                "chf": clip_totals["hits"] / denominator if denominator else None,
                **{key: clip_totals[key] for key in keys if key != "duplicates"},
                "grid": grids[clip],
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
        "out_of_range": totals["out_of_range"],
        "per_clip": per_clip,
        "chf_clip_mean": sum(clip_values) / len(clip_values) if clip_values else None,
        "n_clips": len(per_clip),
        "duplicate_pred_frames": totals["duplicates"],
        "unknown_clips": sorted(set(predicted) - set(gold_index)),
    }


def image_box_hits(
    predictions: Sequence[Sequence[float]], gold: Sequence[Sequence[float]]
) -> dict[str, int]:
    """Hand-agnostic scoring of one image's boxes (issue 14: EgoHands has no left/right labels).

    Boxes are [x1, y1, x2, y2] in the image's pixels. A gold box is hit when some predicted box's
    centroid lies inside it (edges count); a predicted box whose centroid lies in no gold box is a
    false positive. Returns ``hits``, ``misses`` (gold boxes not hit) and ``false_positives``."""
    centroids = [((p[0] + p[2]) / 2, (p[1] + p[3]) / 2) for p in predictions]

    def inside(point: tuple[float, float], box: Sequence[float]) -> bool:
        return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]

    hits = sum(any(inside(c, g) for c in centroids) for g in gold)
    false_positives = sum(not any(inside(c, g) for g in gold) for c in centroids)
    return {"hits": hits, "misses": len(gold) - hits, "false_positives": false_positives}
