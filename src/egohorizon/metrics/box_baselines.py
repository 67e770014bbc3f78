"""A degenerate baseline for hand boxes: the training days' typical box per hand, held still.

It ignores every pixel of the scored clip: for each hand it predicts the median of the training
split's gold boxes (in coordinates relative to the frame size, so clips of other sizes map the same
place) on the first and the last frame a model sees, so CHF's interpolation holds it still over
exactly the span a model's samples cover. Wearers' hands sit low in an egocentric frame, so this
"hands where they usually are" predictor scores well above zero; a detector that does not beat it
has not learned to find hands.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HANDS = ("left", "right")


def median_relative_boxes(training: Sequence[tuple[str, Sequence[float], tuple[int, int]]]) -> dict[str, list[float]]:
    """{hand: median [x1, y1, x2, y2] / frame (width, height)} over ``(hand, box, (height, width))``
    training boxes; a hand without any training box is left out (it is never predicted)."""
    by_hand: dict[str, list[list[float]]] = {hand: [] for hand in HANDS}
    for hand, box, (height, width) in training:
        if height <= 0 or width <= 0:
            raise ValueError(f"training box {list(box)} of the {hand} hand: frame size {(height, width)} is not positive")
        by_hand[hand].append([box[0] / width, box[1] / height, box[2] / width, box[3] / height])
    return {hand: np.median(np.array(boxes), axis=0).tolist() for hand, boxes in by_hand.items() if boxes}


def prior_box_predictions(relative: dict[str, list[float]], clip: str, frame_times: Sequence[float],
                          size: tuple[int, int]) -> list[dict]:
    """BoxPrediction dicts of one clip: each hand's relative box in the clip's pixels at its first and
    last model frame time (nothing for a clip the model saw no frame of)."""
    if not frame_times:
        return []
    height, width = size
    times = sorted({float(frame_times[0]), float(frame_times[-1])})
    out = []
    for hand, (x1, y1, x2, y2) in relative.items():
        box = [x1 * width, y1 * height, x2 * width, y2 * height]
        out.extend({"clip": clip, "t": t, "hand": hand, "box": box} for t in times)
    return out
