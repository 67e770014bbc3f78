"""EgoHome segment metrics (SPEC §4): permissible subsegment Jaccard and one-to-one semantic F1.

Segments are ``egohorizon.schema.Segment`` (clip, kind, hand, start, end, label; seconds). Scoring
runs per kind; within a clip, hand-action and hand-caption segments are compared only with segments
of the same hand (both hands pooled in the clip's figure); subtasks ignore ``hand``. The judge is
asked only about pairs that overlap in time (by more than 1e-9 s), each distinct pair once.

PSJ of a clip: ``(sum_p covered(p) + sum_g covered(g)) / (sum_p |p| + sum_g |g|)`` where covered(p)
is the length of the union of p's overlaps with gold segments the judge accepts for it, and likewise
for g. Semantic F1 of a clip: maximum bipartite matching (scipy's ``linear_sum_assignment`` on the
0/1 matrix of allowed pairs: temporal IoU >= 0.75 and accepted) -> precision, recall, F1.

Choices the SPEC leaves open: the kind's ``psj`` and ``semantic_f1`` are means over the gold clips
of that kind (a clip with no predictions scores 0); ``semantic_f1_micro``, ``precision`` and
``recall`` pool the matches of all clips; predictions for clips absent from the gold file are listed
in ``unknown_clips`` and not scored; zero-length segments add nothing to a sum of lengths.
Length buckets (by gold duration d): ``<0.5s`` d < 0.5, ``0.5-1s`` 0.5 <= d <= 1, ``>1s`` d > 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from egohorizon.metrics.judges import Judge
from egohorizon.schema import Segment

EPS = 1e-9
IOU_THRESHOLD = 0.75
BUCKETS = {"<0.5s": (None, 0.5), "0.5-1s": (0.5, 1.0), ">1s": (1.0, None)}


def overlap(a: Segment, b: Segment) -> float:
    return max(0.0, min(a.end, b.end) - max(a.start, b.start))


def temporal_iou(a: Segment, b: Segment) -> float:
    inter = overlap(a, b)
    union = (a.end - a.start) + (b.end - b.start) - inter
    return inter / union if union > 0 else 0.0


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end] intervals."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def bucket_of(duration: float) -> str:
    if duration < 0.5:
        return "<0.5s"
    return "0.5-1s" if duration <= 1.0 else ">1s"


# A clip's segments of one kind, split by hand: {hand or None: [segments]}
Hands = dict


def _by_clip_and_hand(segments: Sequence[Segment], kind: str) -> dict[str, Hands]:
    out: dict[str, Hands] = defaultdict(lambda: defaultdict(list))
    for segment in segments:
        if segment.kind == kind:
            out[segment.clip][None if kind == "subtask" else segment.hand].append(segment)
    return out


def _covered(segment: Segment, others: list[Segment], accepted) -> float:
    pieces = [
        (max(segment.start, o.start), min(segment.end, o.end))
        for o in others
        if overlap(segment, o) > EPS and accepted(o)
    ]
    return union_length(pieces)


def clip_psj(gold: Hands, pred: Hands, verdicts: Mapping[tuple[str, str], bool]) -> float | None:
    """PSJ of one clip; None when the clip has no length at all (only zero-length segments)."""
    numerator = denominator = 0.0
    for hand in set(gold) | set(pred):
        golds, preds = gold.get(hand, []), pred.get(hand, [])
        for p in preds:
            numerator += _covered(p, golds, lambda g, p=p: verdicts.get((g.label, p.label), False))
            denominator += p.end - p.start
        for g in golds:
            numerator += _covered(g, preds, lambda p, g=g: verdicts.get((g.label, p.label), False))
            denominator += g.end - g.start
    return numerator / denominator if denominator > EPS else None


def clip_matches(
    gold: Hands, pred: Hands, verdicts: Mapping[tuple[str, str], bool], iou_threshold: float = IOU_THRESHOLD
) -> int:
    """Size of the maximum one-to-one matching of allowed (IoU >= threshold, accepted) pairs."""
    from scipy.optimize import linear_sum_assignment

    matches = 0
    for hand in set(gold) & set(pred):
        golds, preds = gold[hand], pred[hand]
        allowed = np.array(
            [
                [
                    float(
                        temporal_iou(p, g) >= iou_threshold - EPS and verdicts.get((g.label, p.label), False)
                    )
                    for g in golds
                ]
                for p in preds
            ]
        )
        if allowed.any():
            rows, cols = linear_sum_assignment(allowed, maximize=True)
            matches += int(allowed[rows, cols].sum())
    return matches


def _f1(matches: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    precision = matches / n_pred if n_pred else 0.0
    recall = matches / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def overlapping_pairs(gold: Hands, pred: Hands) -> set[tuple[str, str]]:
    return {
        (g.label, p.label)
        for hand in set(gold) & set(pred)
        for g in gold[hand]
        for p in pred[hand]
        if overlap(g, p) > EPS
    }


def _bucket_view(gold: Hands, pred: Hands, bucket: str) -> tuple[Hands, Hands]:
    """The clip's gold segments in the bucket and the predictions that overlap them (same hand)."""
    kept_gold = {h: [g for g in gs if bucket_of(g.end - g.start) == bucket] for h, gs in gold.items()}
    kept_pred = {
        h: [p for p in pred.get(h, []) if any(overlap(p, g) > EPS for g in kept_gold[h])] for h in kept_gold
    }
    return kept_gold, kept_pred


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def score_kind(
    gold: Sequence[Segment],
    predictions: Sequence[Segment],
    kind: str,
    judge: Judge,
    iou_threshold: float = IOU_THRESHOLD,
) -> dict:
    """PSJ, semantic F1, per-clip figures and the length breakdown for one kind (SPEC §6 block)."""
    gold_clips = _by_clip_and_hand(gold, kind)
    pred_clips = _by_clip_and_hand(predictions, kind)
    empty: Hands = {}
    pairs = set()
    for clip, hands in gold_clips.items():
        pairs |= overlapping_pairs(hands, pred_clips.get(clip, empty))
    ordered = sorted(pairs)
    verdicts = dict(zip(ordered, judge.judge_pairs(ordered)))

    per_clip, totals = [], {"matches": 0, "n_gold": 0, "n_pred": 0}
    buckets: dict[str, list[float | None]] = {name: [] for name in BUCKETS}
    for clip in sorted(gold_clips):
        g, p = gold_clips[clip], pred_clips.get(clip, empty)
        n_gold, n_pred = sum(map(len, g.values())), sum(map(len, p.values()))
        matches = clip_matches(g, p, verdicts, iou_threshold)
        precision, recall, f1 = _f1(matches, n_pred, n_gold)
        per_clip.append(
            {
                "clip": clip,
                "psj": clip_psj(g, p, verdicts),
                "semantic_f1": f1,
                "precision": precision,
                "recall": recall,
                "matches": matches,
                "n_gold": n_gold,
                "n_pred": n_pred,
            }
        )
        for key, value in (("matches", matches), ("n_gold", n_gold), ("n_pred", n_pred)):
            totals[key] += value
        for name in BUCKETS:
            if any(bucket_of(s.end - s.start) == name for segs in g.values() for s in segs):
                buckets[name].append(clip_psj(*_bucket_view(g, p, name), verdicts))
    precision, recall, f1 = _f1(totals["matches"], totals["n_pred"], totals["n_gold"])
    return {
        "psj": _mean(c["psj"] for c in per_clip),
        "semantic_f1": _mean(c["semantic_f1"] for c in per_clip),
        "semantic_f1_micro": f1,
        "precision": precision,
        "recall": recall,
        "n_clips": len(per_clip),
        "n_gold": totals["n_gold"],
        "n_pred": totals["n_pred"],
        "per_clip": per_clip,
        "by_length": {
            name: {"psj": _mean(values), "n_clips": len(values)} for name, values in buckets.items()
        },
        "unknown_clips": sorted(set(pred_clips) - set(gold_clips)),
        "judge": judge.describe(),
        "judged_pairs": len(ordered),
    }


def score_segments(
    gold: Sequence[Segment],
    predictions: Sequence[Segment],
    judges: Judge | Mapping[str, Judge],
    iou_threshold: float = IOU_THRESHOLD,
) -> dict:
    """``{"kinds": {kind: block}}`` for every kind present in ``gold`` (SPEC §6).

    judges: one judge for all kinds, or kind -> judge (EgoHome: the LLM judge for subtasks and hand
    captions, the verb judge for hand actions).
    """
    kinds = sorted({s.kind for s in gold})
    out = {}
    for kind in kinds:
        judge = judges if isinstance(judges, Judge) else judges[kind]
        out[kind] = score_kind(gold, predictions, kind, judge, iou_threshold)
    return {"kinds": out}
