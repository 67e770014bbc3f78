"""How far one segment judge agrees with another (e.g. the LLM judge with the exact one) on label pairs.

``gold_pairs`` makes pairs a scorer would ask about from a gold file alone: each clip's segments of a
kind (and hand) are paired, in time order, with those of another clip drawn at random (seeded), so the
pairs mix equal labels (the same subtask in two clips) and different ones, as predictions against gold
do. ``agreement`` decides every pair with both judges and reports the share they agree on, Cohen's
kappa (agreement beyond what their match rates give by chance), the four counts and the first pairs
they disagree on. Plain functions on plain data; the judges are ``egohorizon.metrics.judges``'."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from egohorizon.metrics.judges import Judge, Pair


def gold_pairs(segments: Sequence[Any], kind: str, max_pairs: int, seed: int = 0) -> list[Pair]:
    """Distinct (label of one clip, label of another) pairs of ``kind``, in first-seen order, at most
    ``max_pairs`` (a seeded sample when there are more)."""
    by_clip: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    for segment in sorted((s for s in segments if s.kind == kind), key=lambda s: (s.clip, s.hand or "", s.start)):
        by_clip[(segment.clip, segment.hand)].append(segment.label)
    keys = sorted(by_clip, key=lambda k: (k[0], k[1] or ""))
    if len(keys) < 2:
        return []
    rng = random.Random(f"judge-pairs:{seed}:{kind}")
    pairs: dict[Pair, None] = {}
    for key in keys:
        same_hand = [k for k in keys if k != key and k[1] == key[1]] or [k for k in keys if k != key]
        partner = rng.choice(same_hand)
        for gold, other in zip(by_clip[key], by_clip[partner]):
            pairs.setdefault((gold, other))
    found = list(pairs)
    return found if len(found) <= max_pairs else sorted(rng.sample(found, max_pairs), key=found.index)


def agreement(pairs: Sequence[Pair], judge: Judge, reference: Judge, n_examples: int = 10) -> dict[str, Any]:
    """``judge`` against ``reference`` on ``pairs``: n, agreement, kappa, counts, disagreements."""
    a = judge.judge_pairs(list(pairs))
    b = reference.judge_pairs(list(pairs))
    n = len(pairs)
    both = sum(x and y for x, y in zip(a, b))
    neither = sum(not x and not y for x, y in zip(a, b))
    judge_only = sum(x and not y for x, y in zip(a, b))
    reference_only = sum(y and not x for x, y in zip(a, b))
    observed = (both + neither) / n if n else None
    kappa = None
    if n:
        p_a, p_b = sum(a) / n, sum(b) / n
        expected = p_a * p_b + (1 - p_a) * (1 - p_b)
        kappa = (observed - expected) / (1 - expected) if expected < 1 else None  # one constant verdict: undefined
    disagreements = [{"gold": g, "pred": p, "judge": x, "reference": y}
                     for (g, p), x, y in zip(pairs, a, b) if x != y][:n_examples]
    return {"n": n, "agreement": observed, "kappa": kappa, "both_match": both, "neither": neither,
            "judge_only": judge_only, "reference_only": reference_only,
            "judge_match_rate": sum(a) / n if n else None, "reference_match_rate": sum(b) / n if n else None,
            "disagreements": disagreements}
