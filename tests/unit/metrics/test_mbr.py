"""MBR choice of 3 of N sampled candidates (issue 38 item 3), by hand with the ``exact`` embedder: at
K = 1 two samples score 1 when equal, else 0."""

from __future__ import annotations

import numpy as np
import pytest

from egohorizon.backbones.embedders import ExactEmbedder
from egohorizon.metrics.mbr import greedy_mbr, mbr_candidates, pairwise_scores


def test_greedy_set_by_hand_with_ties_to_the_lower_index():
    # samples a, a, b, c, a:
    # step 1: U(s0) = U(s1) = U(s4) = 2/4 (two other a's), U(s2) = U(s3) = 0 -> s0 (lowest index)
    # step 2: {s0, s1}: pool s2, s3, s4 -> 1/3; {s0, s2}: pool s1, s3, s4 -> 2/3; {s0, s3}: 2/3; {s0, s4}: 1/3 -> s2
    # step 3: {s0, s2, s1}: pool s3, s4 -> 1/2; {.., s3}: pool s1, s4 -> 1; {.., s4}: pool s1, s3 -> 1/2 -> s3
    samples = {"p": [["a"], ["a"], ["b"], ["c"], ["a"]]}
    assert mbr_candidates(samples, ExactEmbedder()) == {"p": [["a"], ["b"], ["c"]]}
    scores = pairwise_scores(samples, ExactEmbedder())["p"]
    assert greedy_mbr(scores, 3) == [0, 2, 3]
    assert greedy_mbr(scores, 1) == [0]


def test_soft_scores_are_symmetric_each_pair_once_and_few_samples_are_kept_in_order():
    samples = {"p": [["a", "b"], ["a"], ["b", "a"]], "q": [["x"]], "r": None}
    scores = pairwise_scores({k: v for k, v in samples.items() if v}, ExactEmbedder())["p"]
    # S([a, b], [a]) = 1 - 1/2; S([a, b], [b, a]) = 1 - 2/2 = 0; S([a], [b, a]) = 1/2
    assert np.allclose(scores, [[1, 0.5, 0], [0.5, 1, 0.5], [0, 0.5, 1]])
    chosen = mbr_candidates(samples, ExactEmbedder())
    assert chosen == {"p": [["a", "b"], ["a"], ["b", "a"]], "q": [["x"]], "r": None}  # <= 3 valid: all, in order
    # of 4: U({[a]}) = (1/2 + 1/2 + 0) / 3 is the best single choice
    four = {"p": [["a", "b"], ["a"], ["b", "a"], ["z"]]}
    assert mbr_candidates(four, ExactEmbedder(), n_select=1) == {"p": [["a"]]}


def test_counts_every_distinct_pair_once():
    class Counting(ExactEmbedder):
        calls = 0

        def similarity(self, a, b):
            Counting.calls += a.shape[0]
            return super().similarity(a, b)

    pairwise_scores({"p": [["a"]] * 6, "q": [["b"]] * 4}, Counting())
    assert Counting.calls == 6 * 5 // 2 + 4 * 3 // 2


@pytest.mark.parametrize("n", [8, 16])
def test_returns_three_distinct_samples_of_many(n):
    samples = {"p": [[f"t{i % 5}"] for i in range(n)]}
    chosen = mbr_candidates(samples, ExactEmbedder())["p"]
    assert len(chosen) == 3 and len({tuple(c) for c in chosen}) == 3 and chosen[0] == ["t0"]
