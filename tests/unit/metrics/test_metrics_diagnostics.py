"""Pairwise accuracy against human rankings and H10, with hand-computed values."""

import math

import pytest

from egohorizon.backbones.embedders import ExactEmbedder
from egohorizon.metrics.diagnostics import h10, pairwise_accuracy, score_candidates


def test_pairwise_accuracy_hand_computed():
    scores = [[0.9, 0.5, 0.5], [0.2, 0.8]]
    rankings = [
        [
            [1, 2, 3],  # pairs (0>1) right, (0>2) right, (1>2) metric ties -> wrong
            [1, 1, 2],
        ],  # (0,1) tie skipped; (0>2) right; (1>2) metric ties -> wrong
        [[2, 1]],  # (1>0) right
    ]
    result = pairwise_accuracy(scores, rankings)
    assert result == {"accuracy": pytest.approx(4 / 6), "right": 4, "pairs": 6}
    assert pairwise_accuracy([[0.1]], [[[1]]])["accuracy"] is None
    with pytest.raises(ValueError, match="item 0, annotator 0: 2 ranks for 3 candidates"):
        pairwise_accuracy([[1, 2, 3]], [[[1, 2]]])


def test_h10():
    assert h10([0.05] * 7) == 0.0
    assert h10([i / 10 + 0.05 for i in range(10)]) == pytest.approx(1.0)
    # 1.0 goes into the last bin with 0.95: two bins at 1/2 each -> log 2 / log 10
    assert h10([0.0, 1.0, 0.95, 0.01]) == pytest.approx(math.log(2) / math.log(10))
    assert h10([]) is None
    with pytest.raises(ValueError):
        h10([1.5])


def test_score_candidates():
    scores = score_candidates([["a", "b"]], [[["a", "b"], ["a"], ["c", "d"]]], ExactEmbedder())
    assert scores == [[1.0, 0.5, 0.0]]


def test_annotator_agreement_leave_one_out_by_hand():
    from egohorizon.metrics.diagnostics import annotator_agreement, histogram10

    # Item 1: annotators A [1,2,3], B [1,3,2]. A vs B's ranks: (0>1) right, (0>2) right, (1>2) B says
    # 2 closer than 1 -> wrong. B vs A: (0>2) right, (0>1) right, (2>1) wrong. 4 of 6.
    # Item 2 has one annotator: nobody to agree with, skipped.
    result = annotator_agreement([[[1, 2, 3], [1, 3, 2]], [[1, 2]]])
    assert result == {"accuracy": pytest.approx(4 / 6), "right": 4, "pairs": 6, "items": 1}
    assert histogram10([0.0, 0.05, 0.5, 1.0, 0.95]) == [2, 0, 0, 0, 0, 1, 0, 0, 0, 2]
