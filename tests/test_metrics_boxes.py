"""Centroid hit fraction (SPEC §4, §6) on hand-computed examples."""

import pytest

from egohorizon.metrics.boxes import centroid_hit_fraction, frame_of
from egohorizon.schema import BoxPrediction, HandBox


def gold(clip, hand, frames, box=(0, 0, 10, 10)):
    return [HandBox(clip=clip, frame=f, hand=hand, box=list(box)) for f in frames]


def pred(clip, hand, frame, box):
    return BoxPrediction(clip=clip, t=frame / 30, hand=hand, box=list(box))


def test_interpolation_misses_outside_the_span_and_false_positive_frames():
    golds = gold("c1", "left", range(7)) + gold("c1", "right", range(5))
    preds = [
        # left: boxes at frames 1 and 5 only. Centroid x = y = 2 at frame 1, 22 at frame 5, so the
        # interpolated centroid moves 5 px per frame: frames 1 (2), 2 (7) hit; 3 (12), 4 (17), 5 (22)
        # miss; frames 0 and 6 lie outside the model's span: misses, not false positives.
        pred("c1", "left", 1, (0, 0, 4, 4)),
        pred("c1", "left", 5, (20, 20, 24, 24)),
        # right: frames 3..7 inside the gold box; gold has the right hand only on 0..4, so frames 5,
        # 6 and 7 are false-positive frames; 3 and 4 hit; 0..2 are uncovered misses.
        pred("c1", "right", 3, (4, 4, 6, 6)),
        pred("c1", "right", 7, (4, 4, 6, 6)),
    ]
    report = centroid_hit_fraction(golds, preds)
    assert report["hits"] == 2 + 2
    assert report["annotated"] == 7 + 5
    assert report["false_positive_frames"] == 3
    assert report["chf"] == pytest.approx(4 / (12 + 3))
    assert report["per_clip"] == [
        {"clip": "c1", "chf": pytest.approx(4 / 15), "hits": 4, "annotated": 12, "false_positive_frames": 3}
    ]


def test_hand_the_gold_lacks_and_clips_without_predictions():
    golds = gold("a", "left", [10, 11]) + gold("b", "right", [0])
    preds = [
        pred("a", "left", 10, (1, 1, 3, 3)),
        pred("a", "left", 11, (1, 1, 3, 3)),
        # the right hand is not in gold for clip a: its whole span (frames 20..29) is false positive
        pred("a", "right", 20, (1, 1, 3, 3)),
        pred("a", "right", 29, (1, 1, 3, 3)),
        pred("zzz", "left", 0, (1, 1, 3, 3)),
    ]
    report = centroid_hit_fraction(golds, preds)
    clips = {c["clip"]: c for c in report["per_clip"]}
    assert clips["a"]["chf"] == pytest.approx(2 / (2 + 10))
    assert clips["b"]["chf"] == 0.0  # annotated but never predicted
    assert report["chf"] == pytest.approx(2 / (3 + 10))
    assert report["chf_clip_mean"] == pytest.approx((2 / 12 + 0) / 2)
    assert report["unknown_clips"] == ["zzz"]


def test_centroid_on_the_edge_counts_and_duplicates_are_averaged():
    golds = gold("c", "left", [0], box=(0, 0, 10, 10))
    # two boxes on frame 0: averaged to (5, 5, 15, 15) -> centroid (10, 10), on the gold edge: a hit
    preds = [pred("c", "left", 0, (0, 0, 10, 10)), pred("c", "left", 0, (10, 10, 20, 20))]
    report = centroid_hit_fraction(golds, preds)
    assert report["hits"] == 1 and report["duplicate_pred_frames"] == 1 and report["chf"] == 1.0


def test_frame_rounding_and_duplicate_gold():
    assert frame_of(0.0) == 0 and frame_of(1 / 30) == 1 and frame_of(0.05) == 2  # 1.5 rounds up
    assert frame_of(0.0499) == 1
    with pytest.raises(ValueError, match="clip 'c', hand 'left', frame 3"):
        centroid_hit_fraction(gold("c", "left", [3, 3]), [])
