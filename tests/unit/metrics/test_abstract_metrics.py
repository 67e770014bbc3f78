"""Abstraction metrics and baselines on hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from egohorizon.metrics.abstraction import (
    boundaries,
    boundary_counts,
    compression,
    description_scores,
    dominant_verbs,
    fixed_chunks,
    group_texts,
    matched_boundaries,
    prf,
    verb,
    verb_change,
)


def exact(a, b):
    return np.array([float(x == y) for x, y in zip(a, b)])


def test_boundaries_and_tolerant_matching():
    assert boundaries([(0, 2), (3, 3), (4, 6)]) == [3, 4]
    # gold 3, 7; predicted 4 (1 away: match), 9 (2 away from 7: no)
    assert matched_boundaries([4, 9], [3, 7]) == 1
    # one-to-one: two predictions next to one gold boundary match it once
    assert matched_boundaries([2, 4], [3]) == 1
    # the greedy walk must not waste 2 on 3 when 3 can take 4: gold [1, 3], predicted [2, 4] -> 2 matches
    assert matched_boundaries([2, 4], [1, 3]) == 2
    assert matched_boundaries([5], [3], tolerance=2) == 1 and matched_boundaries([5], [3], tolerance=1) == 0
    assert boundary_counts([(0, 3), (4, 9)], [(0, 2), (3, 6), (7, 9)]) == (1, 1, 2)


def test_prf():
    assert prf(1, 1, 2) == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3)}
    assert prf(0, 0, 0) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert prf(0, 3, 0) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert prf(0, 0, 4)["f1"] == 0.0 and prf(0, 0, 4)["precision"] == 0.0


def test_description_scores_use_the_most_overlapping_group():
    gold, gold_texts = [(0, 2), (3, 5)], ["make tea", "read"]
    # predicted (0,3) overlaps gold (0,2) by 3 and gold (3,5) by 1; (4,5) overlaps (3,5) by 2
    predicted, texts = [(0, 3), (4, 5)], ["make tea", "write"]
    assert description_scores(predicted, texts, gold, gold_texts, exact) == [1.0, 0.0]
    # a tie in overlap goes to the earlier group: (0,1) and (2,3) both overlap (0,3) by 2
    assert description_scores([(0, 1), (2, 3)], ["a", "b"], [(0, 3)], ["a"], exact) == [1.0]
    assert description_scores([], [], gold, gold_texts, exact) == [0.0, 0.0]


def test_compression():
    assert compression(10, 4) == 2.5 and math.isnan(compression(3, 0))


def test_fixed_chunks():
    assert fixed_chunks(7, 3) == [(0, 2), (3, 5), (6, 6)]
    assert fixed_chunks(4, 2.4) == [(0, 1), (2, 3)]
    assert fixed_chunks(2, 0.2) == [(0, 0), (1, 1)]
    assert fixed_chunks(0, 3) == []


def test_verb_change():
    assert verb("I open the fridge") == "open" and verb("Wash the cup") == "wash" and verb("") == ""
    # windows of +-2: event 2 (pour) sees open, open, pour, open, open -> open: no cut for one odd verb
    texts = ["open the door", "open the box", "pour milk", "open the lid", "open the jar",
             "stir", "stir", "stir", "stir"]
    assert dominant_verbs(texts) == ["open"] * 5 + ["stir"] * 4
    # event 4 sees pour, open, open, stir, stir: open (2) ties stir (2), own verb open wins
    assert verb_change(texts) == [(0, 4), (5, 8)]
    # a tie without the own verb: event 1 (b) sees a, b, c, c... counts a1 b1 c2 -> c
    assert dominant_verbs(["a x", "b x", "c x", "c x"], half_window=2) == ["a", "c", "c", "c"]
    # half window 0: every change of verb cuts
    assert verb_change(["cut a", "cut b", "wash c", "cut d"], half_window=0) == [(0, 1), (2, 2), (3, 3)]
    assert verb_change([]) == []
    assert group_texts([(0, 1), (2, 4)], ["a", "b", "c", "c", "d"]) == ["a", "c"]
