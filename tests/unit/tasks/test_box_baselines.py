"""The still training-median box baseline for hand boxes (metrics.box_baselines), checked by hand."""

from __future__ import annotations

import pytest

from egohorizon.metrics.box_baselines import median_relative_boxes, prior_box_predictions
from egohorizon.tasks import get_task
from egohorizon.tasks.hands import HandItem


def test_median_is_taken_per_hand_in_frame_relative_coordinates():
    training = [
        ("left", [10, 20, 30, 40], (100, 200)),  # (height, width): x / 200, y / 100
        ("left", [20, 20, 40, 40], (100, 200)),
        ("left", [60, 40, 100, 80], (200, 400)),  # the same relative box as the second one
        ("right", [100, 50, 150, 100], (100, 200)),
    ]
    relative = median_relative_boxes(training)
    assert relative["left"] == pytest.approx([0.1, 0.2, 0.2, 0.4])
    assert relative["right"] == pytest.approx([0.5, 0.5, 0.75, 1.0])


def test_a_hand_without_training_boxes_is_never_predicted_and_bad_sizes_are_refused():
    assert set(median_relative_boxes([("right", [0, 0, 1, 1], (10, 10))])) == {"right"}
    with pytest.raises(ValueError, match="frame size"):
        median_relative_boxes([("left", [0, 0, 1, 1], (0, 10))])


def test_predictions_hold_the_box_still_over_the_model_frames():
    predictions = prior_box_predictions({"left": [0.1, 0.2, 0.2, 0.4]}, "c1", [0.0, 1.0, 2.0], (100, 200))
    assert predictions == [
        {"clip": "c1", "t": 0.0, "hand": "left", "box": pytest.approx([20.0, 20.0, 40.0, 40.0])},
        {"clip": "c1", "t": 2.0, "hand": "left", "box": pytest.approx([20.0, 20.0, 40.0, 40.0])},
    ]
    assert prior_box_predictions({"left": [0, 0, 1, 1]}, "c1", [], (100, 200)) == []


def test_the_hands_task_scores_it_and_refuses_the_scored_clips_own_boxes():
    # Scored clip: 2 s at 30 fps annotated every 30th frame, model frames at 0 and 2 s (frames 0 and
    # 60). Gold left hand on
    # frames 0, 30, 60: inside the prior box (centroid (30, 30)) on 0 and 30, elsewhere on 60.
    # Gold right hand on frame 30 only: the prior's right box (centroid (150, 75)) misses it, and
    # frames 0 and 60 are right-hand false positives. CHF = 2 hits / (4 annotated + 2 FP) = 1/3.
    item = HandItem(id="test-clip", frame_times=[0.0, 2.0], original=(100, 200), resized=(100, 200),
                    boxes=[{"frame": 0, "hand": "left", "box": [10, 10, 50, 50], "grid": 30},
                           {"frame": 30, "hand": "left", "box": [20, 20, 40, 40], "grid": 30},
                           {"frame": 60, "hand": "left", "box": [100, 10, 120, 30], "grid": 30},
                           {"frame": 30, "hand": "right", "box": [0, 0, 10, 10], "grid": 30}])
    prior = [{"clip": "train-clip", "hand": "left", "box": [20, 20, 40, 40], "size": [100, 200]},
             {"clip": "train-clip", "hand": "right", "box": [100, 50, 200, 100], "size": [100, 200]}]
    task = get_task("hands")
    evaluation = task.evaluate([item], {}, "test", prior_boxes=prior)
    block = evaluation.baselines["boxes"]["train_prior_box"]
    assert (block["hits"], block["annotated"], block["false_positive_frames"]) == (2, 4, 2)
    assert block["chf"] == pytest.approx(1 / 3)
    assert evaluation.metrics["test/train_prior_box_hands_chf"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="scored clips' own boxes"):
        task.evaluate([item], {}, "test", prior_boxes=[{**prior[0], "clip": "test-clip"}])
