"""Abstraction metrics (issue 12) and the two baselines, as plain functions on index groupings.

A grouping of a run of ``n`` events is a list of ``(first, last)`` index pairs (inclusive, contiguous,
covering ``0..n-1``; ``formats.abstract.Group`` has the same fields). Its boundaries are the indices
where a group starts, 0 left out: ``[(0, 2), (3, 3), (4, 6)] -> [3, 4]``.

- ``boundary_counts``: predicted boundaries matched one-to-one to gold boundaries at most
  ``tolerance`` events away (NextMe-800's "within one event"); ``prf`` turns the summed counts into
  precision, recall and F1 (micro over runs);
- ``description_scores``: for every gold parent, the cosine similarity of its description and the
  description of the predicted group that overlaps it most (ties: the earlier group), mean per run;
- ``compression``: events per group (the adjacent-level compression ratio, count(L_k) / count(L_k+1));
- baselines: ``fixed_chunks`` (groups of the gold mean compression from training days, rounded) and
  ``verb_change`` (a new group where the most frequent verb of the events around changes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

Span = tuple[int, int]


def boundaries(groups: Sequence[Span]) -> list[int]:
    """Indices where a group starts, except the first group: ``[(0, 2), (3, 5)] -> [3]``."""
    return [first for first, _ in groups if first > 0]


def matched_boundaries(predicted: Sequence[int], gold: Sequence[int], tolerance: int = 1) -> int:
    """The most one-to-one pairs with ``|p - g| <= tolerance``. On a line, walking both sorted lists
    and pairing whenever the two heads are close enough is optimal (an exchange argument)."""
    p, g = sorted(predicted), sorted(gold)
    i = j = matched = 0
    while i < len(p) and j < len(g):
        if abs(p[i] - g[j]) <= tolerance:
            matched, i, j = matched + 1, i + 1, j + 1
        elif p[i] < g[j]:
            i += 1
        else:
            j += 1
    return matched


def boundary_counts(predicted: Sequence[Span], gold: Sequence[Span], tolerance: int = 1) -> tuple[int, int, int]:
    """(matched, predicted boundaries, gold boundaries) of one run."""
    pb, gb = boundaries(predicted), boundaries(gold)
    return matched_boundaries(pb, gb, tolerance), len(pb), len(gb)


def prf(matched: int, n_predicted: int, n_gold: int) -> dict[str, float]:
    """Precision, recall, F1 of summed counts; a side with nothing to find scores 1 (both empty: F1 1)."""
    precision = matched / n_predicted if n_predicted else float(n_gold == 0)
    recall = matched / n_gold if n_gold else float(n_predicted == 0)
    f1 = 2 * matched / (n_predicted + n_gold) if n_predicted + n_gold else 1.0
    return {"precision": precision, "recall": recall, "f1": f1}


def overlap(a: Span, b: Span) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]) + 1)


def best_overlaps(predicted: Sequence[Span], gold: Sequence[Span]) -> list[int]:
    """For every gold group, the index of the predicted group overlapping it most (ties: the earlier)."""
    return [max(range(len(predicted)), key=lambda k: (overlap(predicted[k], g), -k)) for g in gold]


def description_scores(predicted: Sequence[Span], predicted_texts: Sequence[str], gold: Sequence[Span],
                       gold_texts: Sequence[str], similarity: Callable[[Sequence[str], Sequence[str]], np.ndarray]
                       ) -> list[float]:
    """Per gold group, ``similarity`` (pairwise texts -> [len(a)] scores in [0, 1]) of its description and
    its best-overlapping predicted group's; an empty prediction scores 0 everywhere."""
    if not predicted:
        return [0.0] * len(gold)
    chosen = [predicted_texts[k] for k in best_overlaps(predicted, gold)]
    return [float(s) for s in similarity(list(gold_texts), chosen)]


def compression(n_events: int, n_groups: int) -> float:
    """Events per group; NaN without groups."""
    return n_events / n_groups if n_groups else float("nan")


# -- baselines ---------------------------------------------------------------------------------------


def fixed_chunks(n: int, size: float) -> list[Span]:
    """Consecutive groups of ``round(size)`` events (at least 1); the last one may be shorter."""
    step = max(1, round(size))
    return [(first, min(n, first + step) - 1) for first in range(0, n, step)]


def verb(text: str) -> str:
    """The first word, lowercased, after a leading "I" (captions may say "I open the fridge")."""
    words = text.lower().split()
    if words and words[0] == "i":
        words = words[1:]
    return words[0] if words else ""


def dominant_verbs(texts: Sequence[str], half_window: int = 2) -> list[str]:
    """Per event, the most frequent verb among the events at most ``half_window`` away (the run's edges
    cut the window); ties go to the event's own verb, then to the verb nearest before it."""
    verbs = [verb(t) for t in texts]
    out = []
    for i, own in enumerate(verbs):
        window = verbs[max(0, i - half_window):i + half_window + 1]
        counts = Counter(window)
        top = max(counts.values())
        if counts[own] == top:
            out.append(own)
            continue
        before = [v for v in reversed(verbs[max(0, i - half_window):i]) if counts[v] == top]
        out.append(before[0] if before else next(v for v in window if counts[v] == top))
    return out


def verb_change(texts: Sequence[str], half_window: int = 2) -> list[Span]:
    """A new group where the most frequent verb around an event (``dominant_verbs``) changes: one odd
    verb inside a run of another does not cut it, a lasting change does."""
    dominant = dominant_verbs(texts, half_window)
    starts = [0] + [i for i in range(1, len(texts)) if dominant[i] != dominant[i - 1]]
    return [(a, b - 1) for a, b in zip(starts, starts[1:] + [len(texts)])] if texts else []


def group_texts(groups: Sequence[Span], texts: Sequence[str]) -> list[str]:
    """A baseline's descriptions: the most frequent child text of each group (ties: the first)."""
    return [Counter(texts[a:b + 1]).most_common(1)[0][0] for a, b in groups]
