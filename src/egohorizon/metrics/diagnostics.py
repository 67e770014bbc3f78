"""Metric diagnostics (SPEC §1, NextMe-800): does a metric agree with people, and does it spread?

- ``pairwise_accuracy``: for every item, every annotator and every pair of candidates that the
  annotator strictly orders, the metric is right when it scores the preferred candidate strictly
  higher. Accuracy = right / all such pairs. Ties by the annotator are skipped; a tie by the metric
  on a strictly ordered pair is wrong.
- ``h10``: the normalised entropy of the scores' histogram over 10 equal-width bins of [0, 1]
  (1.0 falls into the last bin): 1 when scores spread evenly, 0 when they all share one bin.
- ``annotator_agreement``: the same pairwise accuracy for each annotator against the mean rank of
  the others (leave one out): the human ceiling a metric's accuracy is read against.
- ``score_candidates``: the soft edit score of each candidate against its reference, the scores
  these diagnostics take.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from egohorizon.backbones.embedders import Embedder


def pairwise_accuracy(
    scores: Sequence[Sequence[float]], rankings: Sequence[Sequence[Sequence[float]]]
) -> dict:
    """scores[i][c]: the metric's score of candidate c of item i.
    rankings[i][a][c]: annotator a's rank of candidate c of item i (1 = closest to the reference;
    equal ranks are ties). Returns ``{"accuracy", "right", "pairs"}`` (accuracy None with no pairs).
    """
    if len(scores) != len(rankings):
        raise ValueError(f"{len(scores)} items of scores but {len(rankings)} items of rankings")
    right = pairs = 0
    for item, (item_scores, item_rankings) in enumerate(zip(scores, rankings)):
        for annotator, ranks in enumerate(item_rankings):
            if len(ranks) != len(item_scores):
                raise ValueError(
                    f"item {item}, annotator {annotator}: {len(ranks)} ranks for "
                    f"{len(item_scores)} candidates"
                )
            for a in range(len(ranks)):
                for b in range(a + 1, len(ranks)):
                    if ranks[a] == ranks[b]:
                        continue
                    better, worse = (a, b) if ranks[a] < ranks[b] else (b, a)
                    pairs += 1
                    right += item_scores[better] > item_scores[worse]
    return {"accuracy": right / pairs if pairs else None, "right": right, "pairs": pairs}


def h10(scores: Sequence[float]) -> float | None:
    """Normalised Shannon entropy of the 10-bin histogram of scores in [0, 1]; None for no scores."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return None
    if np.any((values < 0) | (values > 1)) or not np.all(np.isfinite(values)):
        raise ValueError("h10 expects scores in [0, 1]")
    bins = np.minimum((values * 10).astype(int), 9)
    frequencies = np.bincount(bins, minlength=10) / values.size
    nonzero = frequencies[frequencies > 0]
    return float(-(nonzero * np.log(nonzero)).sum() / math.log(10))


def annotator_agreement(rankings: Sequence[Sequence[Sequence[float]]]) -> dict:
    """Leave-one-out agreement between annotators: each annotator's strict preferences judged against
    the others' mean rank (lower rank = closer, so the score is the negated mean rank), pooled over
    annotators and items. Items with a single annotator have no one to agree with and are skipped.
    Returns ``{"accuracy", "right", "pairs", "items"}``."""
    right = pairs = items = 0
    for item_rankings in rankings:
        if len(item_rankings) < 2:
            continue
        items += 1
        for held_out in range(len(item_rankings)):
            others = [r for a, r in enumerate(item_rankings) if a != held_out]
            consensus = [-float(np.mean([r[c] for r in others])) for c in range(len(item_rankings[held_out]))]
            result = pairwise_accuracy([consensus], [[item_rankings[held_out]]])
            right += result["right"]
            pairs += result["pairs"]
    return {"accuracy": right / pairs if pairs else None, "right": right, "pairs": pairs, "items": items}


def histogram10(scores: Sequence[float]) -> list[int]:
    """Counts of the scores in the 10 equal-width bins of [0, 1] that ``h10`` uses."""
    values = np.asarray(scores, dtype=np.float64)
    bins = np.minimum((values * 10).astype(int), 9)
    return np.bincount(bins, minlength=10).astype(int).tolist()


def score_candidates(
    references: Sequence[Sequence[str]], candidates: Sequence[Sequence[Sequence[str]]], embedder: Embedder
) -> list[list[float]]:
    """scores[i][c] = S(references[i], candidates[i][c]); each distinct string embedded once."""
    from egohorizon.backbones.embedders import EmbeddingTable
    from egohorizon.metrics.forecast import _pair_scores

    table = EmbeddingTable(embedder)
    table.add([t for ref in references for t in ref] + [t for cands in candidates for c in cands for t in c])
    pairs = [
        (table.rows(list(ref)), table.rows(list(c)))
        for ref, cands in zip(references, candidates)
        for c in cands
    ]
    flat = iter(_pair_scores(table, pairs).tolist())
    return [[next(flat) for _ in cands] for cands in candidates]
