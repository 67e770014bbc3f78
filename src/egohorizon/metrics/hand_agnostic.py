"""Hand-agnostic box scores over still frames (EgoHands: one class, no left/right), as docs/hands.md
scores the EgoHands frames, and the box prior that is its degenerate baseline.

A frame is scored by ``metrics.boxes.image_box_hits``: a gold box is hit when some predicted box's
centroid lies inside it; a predicted box whose centroid lies in no gold box is a false positive. Pooled
over frames::

    hit fraction = hits / (gold boxes + false positives)

(the centroid hit fraction's denominator, with false-positive *boxes* in place of false-positive
hand-frames: a still frame has no track to interpolate). Each frame's counts are kept, so a study can
resample frames (``bootstrap_fraction``).

The box prior ignores the pixels: the training frames' boxes, relative to their frame, split by which
half of the frame their centre lies in, each half's mean box; both are predicted on every frame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from egohorizon.metrics.boxes import image_box_hits


def frame_hits(gold: Mapping[str, Sequence[Sequence[float]]],
               predicted: Mapping[str, Sequence[Sequence[float]]]) -> list[dict]:
    """Per gold frame (sorted by name): ``frame``, ``gold``, ``predicted``, ``hits``, ``false_positives``.
    Frames a prediction names but the gold does not are not scored (they are not annotated frames)."""
    rows = []
    for frame in sorted(gold):
        boxes = list(predicted.get(frame, []))
        counts = image_box_hits(boxes, gold[frame])
        rows.append({"frame": frame, "gold": len(gold[frame]), "predicted": len(boxes), "hits": counts["hits"],
                     "false_positives": counts["false_positives"]})
    return rows


def pooled_fraction(rows: Sequence[Mapping]) -> dict:
    """``chf`` (hits / (gold + false positives), None without either), ``hits``, ``annotated`` (gold
    boxes), ``false_positive_frames`` (here: false-positive boxes, the key the hands tables read),
    ``predicted`` and ``n_frames``."""
    hits = sum(r["hits"] for r in rows)
    annotated = sum(r["gold"] for r in rows)
    false_positives = sum(r["false_positives"] for r in rows)
    denominator = annotated + false_positives
    return {"chf": hits / denominator if denominator else None, "hits": hits, "annotated": annotated,
            "false_positive_frames": false_positives, "predicted": sum(r["predicted"] for r in rows),
            "n_frames": len(rows)}


def bootstrap_fraction(rows: Sequence[Mapping], n_boot: int = 2000, seed: int = 0,
                       level: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile interval of the pooled fraction, resampling frames with replacement (``n_boot`` times,
    seeded): the frame is the unit, so a frame's hands go together."""
    if not rows:
        return None, None
    hits = np.array([r["hits"] for r in rows], dtype=float)
    denominators = np.array([r["gold"] + r["false_positives"] for r in rows], dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(rows), size=(n_boot, len(rows)))
    totals = denominators[picks].sum(axis=1)
    values = np.divide(hits[picks].sum(axis=1), totals, out=np.zeros(n_boot), where=totals > 0)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_difference(rows: Sequence[Mapping], baseline: Sequence[Mapping], n_boot: int = 2000, seed: int = 0,
                         level: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile interval of (pooled fraction of ``rows``) - (that of ``baseline``) on the same frames,
    resampled together (paired): the interval says whether the difference is more than the frames' luck."""
    if [r["frame"] for r in rows] != [r["frame"] for r in baseline]:
        raise ValueError("bootstrap_difference: the two predictors were scored on different frames")
    if not rows:
        return None, None
    picks = np.random.default_rng(seed).integers(0, len(rows), size=(n_boot, len(rows)))

    def fractions(scored):
        hits = np.array([r["hits"] for r in scored], dtype=float)[picks].sum(axis=1)
        totals = np.array([r["gold"] + r["false_positives"] for r in scored], dtype=float)[picks].sum(axis=1)
        return np.divide(hits, totals, out=np.zeros(n_boot), where=totals > 0)

    tail = (1 - level) / 2 * 100
    low, high = np.percentile(fractions(rows) - fractions(baseline), [tail, 100 - tail])
    return float(low), float(high)


def half_prior_boxes(boxes: Sequence[tuple[Sequence[float], tuple[int, int]]]) -> list[list[float]]:
    """The box prior's relative boxes: of ``boxes`` ([x1, y1, x2, y2] pixels, (height, width) of their
    frame), those centred in the left half and those in the right half, each half's mean box in
    fractions of the frame (a half without boxes gives none)."""
    halves: dict[str, list[list[float]]] = {"left": [], "right": []}
    for box, (height, width) in boxes:
        relative = [box[0] / width, box[1] / height, box[2] / width, box[3] / height]
        halves["left" if (relative[0] + relative[2]) / 2 < 0.5 else "right"].append(relative)
    return [np.mean(found, axis=0).tolist() for found in halves.values() if found]


def prior_predictions(relative: Sequence[Sequence[float]], size: tuple[int, int]) -> list[list[float]]:
    """The prior's boxes in the pixels of a frame of ``size`` (height, width)."""
    height, width = size
    return [[b[0] * width, b[1] * height, b[2] * width, b[3] * height] for b in relative]
