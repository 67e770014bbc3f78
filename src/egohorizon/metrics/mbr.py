"""Minimum-Bayes-risk choice of the candidates a forecaster returns (issue 38 item 3).

A forecaster samples N trajectories (8-16) and returns 3, scored best-of-3 (SPEC §1). The 3 are built
greedily: each step adds the sample that maximises the set's expected best-of-set score, estimated on
the other samples as pseudo-references:

    U(C) = mean over the valid samples y not in C of max over c in C of S(c, y)

with S the soft edit-distance score (``metrics.forecast``, the task's own embedder). S is symmetric (the
substitution cost is a cosine, insertions and deletions cost 1), so each distinct pair of samples is
scored once. Ties go to the lower sample index. Invalid samples (nothing parsed) are left out before.
With no more valid samples than wanted, all are returned in sample order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from egohorizon.backbones.embedders import EmbeddingTable
from egohorizon.metrics.forecast import _pair_scores  # the batched soft edit distance, shared on purpose

_TIE = 1e-12  # utilities this close are equal: the lower sample index wins


def pairwise_scores(samples_by_item: Mapping[str, Sequence[Sequence[str]]], embedder) -> dict[str, np.ndarray]:
    """Per item, the symmetric matrix of S between its samples (diagonal 1), every distinct pair of
    every item scored in one batch (each string embedded once)."""
    table = EmbeddingTable(embedder)
    table.add(t for samples in samples_by_item.values() for sample in samples for t in sample)
    pairs, owners = [], []
    for key, samples in samples_by_item.items():
        for i in range(len(samples)):
            for j in range(i + 1, len(samples)):
                pairs.append((table.rows(list(samples[i])), table.rows(list(samples[j]))))
                owners.append((key, i, j))
    scores = _pair_scores(table, pairs) if pairs else np.zeros(0)
    out = {key: np.eye(len(samples)) for key, samples in samples_by_item.items()}
    for (key, i, j), value in zip(owners, scores):
        out[key][i, j] = out[key][j, i] = value
    return out


def greedy_mbr(scores: np.ndarray, n_select: int = 3) -> list[int]:
    """Indices of the greedy set (in the order chosen) for a symmetric score matrix of the valid samples."""
    n = scores.shape[0]
    if n <= n_select:
        return list(range(n))
    chosen: list[int] = []
    for _ in range(n_select):
        best, best_value = -1, -np.inf
        for c in range(n):
            if c in chosen:
                continue
            members = [*chosen, c]
            pool = [y for y in range(n) if y not in members]
            value = float(np.mean(scores[np.ix_(members, pool)].max(axis=0)))
            if value > best_value + _TIE:
                best, best_value = c, value
        chosen.append(best)
    return chosen


def mbr_candidates(samples_by_item: Mapping[str, Sequence[Sequence[str]] | None], embedder, n_select: int = 3
                   ) -> dict[str, list[list[str]] | None]:
    """Item id -> the ``n_select`` samples MBR chooses (None stays None: nothing valid was sampled)."""
    valid = {key: [list(s) for s in samples] for key, samples in samples_by_item.items() if samples}
    matrices = pairwise_scores(valid, embedder)
    return {key: ([valid[key][i] for i in greedy_mbr(matrices[key], n_select)] if key in valid else None)
            for key in samples_by_item}
