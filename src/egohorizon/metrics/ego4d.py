"""Ego4D long-term anticipation's official metric: edit distance at Z, best of K, and AUED.

As in ``ego4d_forecasting/evaluation/lta_metrics.py`` (EGO4D/forecasting) and its ``eval_val.py``:

- ``ED@z`` of one point = min over its K candidate sequences of ``edit(candidate[:z], label[:z]) / z``,
  averaged over points; reported at z = Z (Z = 20 in the benchmark), for the verb sequence, the noun
  sequence and the action sequence (an action is the (verb, noun) pair: ``verb * n_nouns + noun``
  there). K = 5 in the benchmark.
- ``AUED`` = the area under ED@z for z = 1..Z by the trapezoid rule, divided by Z - 1
  (``np.trapz(ED) / (Z - 1)``); undefined (None) for Z = 1.
- The edit distance: the code's docstring says Damerau-Levenshtein, but it calls
  ``editdistance.eval``, which is plain Levenshtein (insertions, deletions, substitutions; a swap of
  two neighbours costs 2, not 1). The numbers on the leaderboard are the code's, so this is
  Levenshtein too; tests/unit/metrics/test_metrics_ego4d.py checks it against ``editdistance``.

A point with no parsed prediction counts as one empty candidate: ED 1 at every z. Only the first K
candidates are read, each cut to its first z actions at every z, as the official code slices
``preds[:, :z]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence

Z = 20
K = 5
HEADS = ("verb", "noun", "action")


def levenshtein(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Insertions, deletions and substitutions turning ``a`` into ``b`` (what ``editdistance.eval``
    counts); any hashable items."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def prefix_distances(a: Sequence[Hashable], b: Sequence[Hashable], z: int) -> list[int]:
    """``levenshtein(a[:i], b[:i])`` for i = 1..z from one dynamic-programming table ``D`` over
    ``a[:z]`` and ``b[:z]``: ``D[i][i]``, or ``D[len(a)][i]`` once ``a`` is shorter than i."""
    a, b = list(a[:z]), list(b[:z])
    table = [list(range(len(b) + 1))]
    for i, x in enumerate(a, 1):
        previous, current = table[-1], [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        table.append(current)
    return [table[min(i, len(a))][i] for i in range(1, len(b) + 1)]


def ed_curve(candidates: Sequence[Sequence[Hashable]], label: Sequence[Hashable], k: int = K) -> list[float]:
    """ED@z for z = 1..len(label) of one point: min over the first ``k`` candidates (none: one empty)."""
    z_max = len(label)
    rows = [prefix_distances(c, label, z_max) for c in (list(candidates[:k]) or [[]])]
    return [min(row[z - 1] for row in rows) / z for z in range(1, z_max + 1)]


def aued(curve: Sequence[float]) -> float | None:
    """Trapezoid area under an ED@z curve over z = 1..Z, divided by Z - 1."""
    if len(curve) < 2:
        return None
    return sum((a + b) / 2 for a, b in itertools.pairwise(curve)) / (len(curve) - 1)


def split_action(text: str, verbs: Sequence[str]) -> tuple[str, str]:
    """An action string -> (verb, noun): the longest of ``verbs`` that opens it (followed by a space
    or the end), else its first word."""
    text = " ".join(text.split())
    for verb in sorted(verbs, key=len, reverse=True):
        if text == verb or text.startswith(verb + " "):
            return verb, text[len(verb):].strip()
    head, _, rest = text.partition(" ")
    return head, rest


def ego4d_report(points: Sequence, predictions: Mapping[str, list[list[str]] | None], k: int = K) -> dict:
    """ED@Z and AUED for verb, noun and action per Z (= each point's number of targets), over ``points``
    (``ForecastPoint``s). Verb and noun are reported when every point of a Z carries
    ``meta.target_verbs`` / ``meta.target_nouns`` (the Ego4D LTA converter writes them), else the
    action sequence is the targets' texts and verb/noun are None."""
    vocabulary = sorted({v for p in points for v in p.meta.get("target_verbs") or []}, key=len, reverse=True)
    splits: dict[str, tuple[str, str]] = {}  # the same few hundred action strings recur in every point

    def split(action: str) -> tuple[str, str]:
        if action not in splits:
            splits[action] = split_action(action, vocabulary)
        return splits[action]

    by_z: dict[int, list] = {}
    for point in points:
        by_z.setdefault(len(point.targets), []).append(point)
    groups = []
    for z, group in sorted(by_z.items()):
        structured = all(p.meta.get("target_verbs") and p.meta.get("target_nouns") for p in group)
        curves: dict[str, list[list[float]]] = {head: [] for head in HEADS}
        for point in group:
            candidates = (predictions.get(point.id) or [])[:k]
            if structured:
                parts = [[split(a) for a in c] for c in candidates]
                labels = list(zip(point.meta["target_verbs"], point.meta["target_nouns"], strict=True))
                curves["verb"].append(ed_curve([[v for v, _ in c] for c in parts], [v for v, _ in labels], k))
                curves["noun"].append(ed_curve([[n for _, n in c] for c in parts], [n for _, n in labels], k))
                curves["action"].append(ed_curve(parts, labels, k))
            else:
                curves["action"].append(ed_curve([[" ".join(a.split()) for a in c] for c in candidates],
                                                 [" ".join(t.split()) for t in point.targets], k))
        row: dict = {"Z": z, "n": len(group), "missing": sum(1 for p in group if not predictions.get(p.id))}
        for head in HEADS:
            mean = [sum(c[i] for c in curves[head]) / len(group) for i in range(z)] if curves[head] else None
            row[head] = None if mean is None else {"ED": mean[-1], "AUED": aued(mean), "curve": mean}
        groups.append(row)
    return {"K": k, "edit_distance": "Levenshtein (editdistance.eval, as Ego4D's lta_metrics.py)",
            "groups": groups}
