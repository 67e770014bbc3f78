"""Centroid hit fraction (SPEC §4, §6) on hand-computed examples."""

import json
import time

import pytest

from egohorizon.cli import main
from egohorizon.metrics.boxes import centroid_hit_fraction, frame_of
from egohorizon.schema import BoxPrediction, HandBox


def gold(clip, hand, frames, box=(0, 0, 10, 10), grid=None):
    return [HandBox(clip=clip, frame=f, hand=hand, box=list(box), grid=grid) for f in frames]


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
        {
            "clip": "c1",
            "chf": pytest.approx(4 / 15),
            "hits": 4,
            "annotated": 12,
            "false_positive_frames": 3,
            "out_of_range": 0,
            "grid": 1,
        }
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


def test_sparse_gold_scores_only_the_grid():
    # every 30th frame annotated, both hands; perfect predictions on every frame: CHF 1, not 0.04
    golds = gold("dense", "left", range(0, 301, 30), grid=30) + gold("dense", "right", range(0, 301, 30))
    preds = [pred("dense", hand, f, (4, 4, 6, 6)) for f in range(301) for hand in ("left", "right")]
    report = centroid_hit_fraction(golds, preds)
    assert (report["hits"], report["annotated"], report["false_positive_frames"]) == (22, 22, 0)
    assert report["chf"] == 1.0 and report["per_clip"][0]["grid"] == 30

    # grid 10. left: gold 0, 10, 20, 30; model on frames 0..35, all inside: 4 hits, no false positive.
    # right: gold on 10 only; model on frames 5..25 covers grid frames 10 (hit) and 20 (false positive);
    # frames 5..9, 11..19, 21..25 are off the grid: neither.  CHF = 5 / (5 + 1).
    golds = gold("g", "left", [0, 10, 20, 30], grid=10) + gold("g", "right", [10])
    preds = [pred("g", "left", f, (4, 4, 6, 6)) for f in range(36)]
    preds += [pred("g", "right", 5, (4, 4, 6, 6)), pred("g", "right", 25, (4, 4, 6, 6))]
    # clip "b": a track between two grid frames touches no scored frame: 0 hits, 0 false positives
    golds += gold("b", "left", [0, 20], grid=10)
    preds += [pred("b", "left", 11, (4, 4, 6, 6)), pred("b", "left", 19, (4, 4, 6, 6))]
    clips = {c["clip"]: c for c in centroid_hit_fraction(golds, preds)["per_clip"]}
    assert (clips["g"]["hits"], clips["g"]["annotated"], clips["g"]["false_positive_frames"]) == (5, 5, 1)
    assert clips["g"]["chf"] == pytest.approx(5 / 6)
    assert (clips["b"]["hits"], clips["b"]["annotated"], clips["b"]["false_positive_frames"]) == (0, 2, 0)


def test_out_of_range_boxes_are_one_false_positive_each_and_never_interpolated():
    golds = gold("c", "left", range(10))  # last gold frame 9: boxes up to 9 + 30 = frame 39 are in range
    preds = [pred("c", "left", f, (4, 4, 6, 6)) for f in range(5)]  # frames 0..4 hit
    preds += [
        # out of range, left: 100 s away (inside the gold box, yet not interpolated across, so
        # frames 5..9 stay misses), before the clip, and so far that 30 * t overflows an integer
        BoxPrediction(clip="c", t=100.0, hand="left", box=[4, 4, 6, 6]),
        BoxPrediction(clip="c", t=-0.5, hand="left", box=[4, 4, 6, 6]),
        BoxPrediction(clip="c", t=1e308, hand="left", box=[4, 4, 6, 6]),
        # right, which gold lacks: t = 1.2 s (frame 36) is in range, one false-positive frame;
        # t = 1.4 s (frame 42) is out of range
        BoxPrediction(clip="c", t=1.2, hand="right", box=[4, 4, 6, 6]),
        BoxPrediction(clip="c", t=1.4, hand="right", box=[4, 4, 6, 6]),
    ]
    started = time.monotonic()
    report = centroid_hit_fraction(golds, preds)
    assert time.monotonic() - started < 1.0
    assert report["hits"] == 5 and report["annotated"] == 10
    assert report["out_of_range"] == 4 and report["per_clip"][0]["out_of_range"] == 4
    assert report["false_positive_frames"] == 4 + 1
    assert report["chf"] == pytest.approx(5 / 15)


def test_grid_conflicts_and_off_grid_frames_are_errors(tmp_path, capsys):
    _, problems = HandBox.from_dict(
        {"clip": "c", "frame": 15, "hand": "left", "box": [0, 0, 1, 1], "grid": 10}
    )
    assert problems == [("frame", "expected a frame on the clip's grid of 10 (0, 10, 20, ...), got 15")]
    with pytest.raises(ValueError, match="clip 'c' gives two annotation grids, 10 and 5"):
        centroid_hit_fraction(gold("c", "left", [0], grid=10) + gold("c", "right", [0], grid=5), [])
    with pytest.raises(ValueError, match="frame 15 is not on the clip's annotation grid of 10"):
        centroid_hit_fraction(gold("c", "left", [0], grid=10) + gold("c", "right", [15]), [])

    records = [
        {"clip": "c", "frame": 0, "hand": "left", "box": [0, 0, 1, 1], "grid": 30},
        {"clip": "c", "frame": 15, "hand": "left", "box": [0, 0, 1, 1]},
        {"clip": "c", "frame": 60, "hand": "right", "box": [0, 0, 1, 1], "grid": 20},
    ]
    gold_path, pred_path = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold_path.write_text("".join(json.dumps(r) + "\n" for r in records))
    pred_path.write_text(json.dumps({"clip": "c", "t": 0, "hand": "left", "box": [0, 0, 1, 1]}) + "\n")
    assert main(["score", "boxes", "--gold", str(gold_path), "--pred", str(pred_path)]) == 2
    err = capsys.readouterr().err
    assert f"{gold_path}:2: field 'frame': frame 15 is not on the annotation grid of clip 'c'" in err
    assert f"{gold_path}:3: field 'grid': clip 'c' has grid 30 on line 1, here 20" in err
    assert "Traceback" not in err
