"""Caption metrics (issue 11): a window's predicted timed actions against its gold L1 actions.

Per window (gold ``CaptionWindow``, prediction a ``formats.caption.CaptionParse`` or None):

- **matching**: a predicted and a gold action may pair only if their temporal IoU >= ``iou_threshold``
  (0.5) and the judge accepts the texts (``egohorizon.metrics.judges``: exact, embedding, llm,
  verdicts); pairs are chosen one-to-one by maximum bipartite matching (scipy's
  ``linear_sum_assignment`` on the 0/1 matrix of allowed pairs, as for segments' semantic F1). The
  judge is asked only about pairs that pass the IoU test, each distinct text pair once per split.
- precision = matches / predicted actions, recall = matches / gold actions, F1 their harmonic mean;
  a window with neither gold nor predicted actions scores 1 on all three (nothing to find, nothing
  claimed; the soft edit score's convention for two empty lists), one empty side scores 0.
- **soft edit score** (SPEC §1, ``metrics.forecast``) of the window's predicted action texts in time
  order (by start, then end, then output order) against the gold texts in time order.
- an invalid prediction (None, or a reply with no valid action and no scene) is an empty caption:
  it scores 0 against any gold action and is counted in ``invalid``; ``dropped`` counts action lines
  the parser refused (bad times or text), ``unparsed`` lines that were not caption objects.

- **scene**: a window with a gold ``scene`` (the demo world's place, "A, then B" when it changes;
  ``formats.caption.gold_scene``) scores its predicted scene line with the same judge as the actions
  (exact / embedding / llm): correct or not; a missing scene line is wrong. Windows without a gold
  scene are left out of it. ``scene_accuracy`` = correct / ``scene_n`` (None when no window has one).

Aggregates (``aggregate``): ``precision``, ``recall``, ``f1`` are micro (matches pooled over windows);
``*_macro`` the means of the per-window figures; ``soft_edit`` the mean per-window score. The same
aggregate is reported overall, per source and per activity type.

Activity type (``activity_of``): the text of the level-4 event that overlaps the window the longest
(ties: the earlier one), else of the longest-overlapping event of the highest level below 4; a
window whose shard sample holds no such event has activity None ("(unknown)" in the breakdown). In
the demo world level 4 is the activity ("design screens for the city museum website", "take a
coffee break with colleagues"); level 5 is a part of the day, too coarse to tell activities apart.

Baselines (scored with the same function): ``repeat_previous`` predicts the gold actions of the
previous window of the same participant and session (the latest one that ends at or before this
window's start: nothing later leaks in), with their times kept and clipped to this window;
a window without one gets no prediction (counted invalid); its scene is the previous window's gold
scene. ``most_frequent`` predicts one action over the whole window: the most frequent gold action text
of the training windows (``most_frequent_action``; ties: alphabetical), and their most frequent gold
scene (``most_frequent_scene``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from egohorizon.backbones.embedders import Embedder, EmbeddingTable
from egohorizon.formats.caption import CaptionAction, CaptionParse
from egohorizon.metrics.judges import Judge
from egohorizon.metrics.segments import EPS, temporal_iou
from egohorizon.schema import CaptionWindow

IOU_THRESHOLD = 0.5
UNKNOWN = "(unknown)"

Pair = tuple[str, str]


def gold_of(window: CaptionWindow) -> list[CaptionAction]:
    """The window's gold actions in time order."""
    actions = [CaptionAction(float(a["start"]), float(a["end"]), a["action"]) for a in window.actions]
    return sorted(actions, key=lambda a: (a.start, a.end))


def in_time_order(actions: Sequence[CaptionAction]) -> list[CaptionAction]:
    return sorted(actions, key=lambda a: (a.start, a.end))  # stable: output order breaks ties


def window_prf(matches: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    """(precision, recall, F1) of one window; both sides empty -> (1, 1, 1), one side empty -> 0."""
    if n_pred == 0 and n_gold == 0:
        return 1.0, 1.0, 1.0
    precision = matches / n_pred if n_pred else 0.0
    recall = matches / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def candidate_pairs(
    gold: Sequence[CaptionAction], pred: Sequence[CaptionAction], iou_threshold: float = IOU_THRESHOLD
) -> set[Pair]:
    """(gold text, predicted text) of the pairs whose temporal IoU passes: all the judge is asked."""
    return {(g.text, p.text) for g in gold for p in pred if temporal_iou(g, p) >= iou_threshold - EPS}


def window_matches(
    gold: Sequence[CaptionAction],
    pred: Sequence[CaptionAction],
    verdicts: Mapping[Pair, bool],
    iou_threshold: float = IOU_THRESHOLD,
) -> int:
    """Size of the maximum one-to-one matching of allowed pairs (IoU >= threshold and accepted)."""
    if not gold or not pred:
        return 0
    from scipy.optimize import linear_sum_assignment

    allowed = np.array(
        [
            [
                float(temporal_iou(g, p) >= iou_threshold - EPS and verdicts.get((g.text, p.text), False))
                for g in gold
            ]
            for p in pred
        ]
    )
    if not allowed.any():
        return 0
    rows, cols = linear_sum_assignment(allowed, maximize=True)
    return int(allowed[rows, cols].sum())


def soft_edit_scores(pairs: Sequence[tuple[Sequence[str], Sequence[str]]], embedder: Embedder) -> np.ndarray:
    """The soft edit score S (SPEC §1) of each (reference texts, predicted texts) pair; every
    distinct text is embedded once for all pairs (``metrics.forecast``'s batched dynamic program)."""
    from egohorizon.metrics.forecast import _pair_scores

    table = EmbeddingTable(embedder)
    table.add([t for ref, pred in pairs for t in (*ref, *pred)])
    return _pair_scores(table, [(table.rows(list(ref)), table.rows(list(pred))) for ref, pred in pairs])


def aggregate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Micro and macro figures over per-window rows (``score_captions``' ``per_window``)."""
    n = len(rows)
    totals = {k: int(sum(r[k] for r in rows)) for k in ("matches", "n_gold", "n_pred", "dropped", "unparsed")}
    precision = totals["matches"] / totals["n_pred"] if totals["n_pred"] else 0.0
    recall = totals["matches"] / totals["n_gold"] if totals["n_gold"] else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0

    def mean(key: str) -> float | None:
        return float(np.mean([r[key] for r in rows])) if rows else None

    scene_n = sum(bool(r.get("scene_gold")) for r in rows)
    scene_correct = sum(bool(r.get("scene_correct")) for r in rows)

    return {
        "n": n,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "precision_macro": mean("precision"),
        "recall_macro": mean("recall"),
        "f1_macro": mean("f1"),
        "soft_edit": mean("soft_edit"),
        "invalid": sum(bool(r["invalid"]) for r in rows),
        "scene_n": scene_n,
        "scene_correct": scene_correct,
        "scene_accuracy": scene_correct / scene_n if scene_n else None,
        **totals,
    }


def _grouped(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list] = defaultdict(list)
    for row in rows:
        groups[row[key]].append(row)
    return {name: aggregate(group) for name, group in sorted(groups.items())}


def score_captions(
    windows: Sequence[CaptionWindow],
    predictions: Mapping[str, CaptionParse | None],
    judge: Judge,
    embedder: Embedder,
    iou_threshold: float = IOU_THRESHOLD,
) -> dict[str, Any]:
    """The caption report of a split: ``overall``, ``per_source``, ``per_activity`` (aggregates),
    ``per_window`` rows, and what scored them. ``predictions`` maps window ids to parses; a missing
    id or None is an invalid (empty) prediction."""
    golds = {w.id: gold_of(w) for w in windows}
    preds = {
        w.id: in_time_order(p.actions) if (p := predictions.get(w.id)) is not None and not p.invalid else []
        for w in windows
    }
    pairs = sorted(set().union(*(candidate_pairs(golds[w.id], preds[w.id], iou_threshold) for w in windows)))
    verdicts = dict(zip(pairs, judge.judge_pairs(pairs)))
    scenes = {w.id: (w.scene, p.scene if (p := predictions.get(w.id)) is not None else None) for w in windows}
    scene_pairs = sorted({(g, p) for g, p in scenes.values() if g and p})
    scene_verdicts = dict(zip(scene_pairs, judge.judge_pairs(scene_pairs))) if scene_pairs else {}
    scores = soft_edit_scores(
        [([a.text for a in golds[w.id]], [a.text for a in preds[w.id]]) for w in windows], embedder
    )
    rows = []
    for window, score in zip(windows, scores):
        parse = predictions.get(window.id)
        gold, pred = golds[window.id], preds[window.id]
        matches = window_matches(gold, pred, verdicts, iou_threshold)
        precision, recall, f1 = window_prf(matches, len(pred), len(gold))
        rows.append(
            {
                "id": window.id,
                "source": window.source or "unknown",
                "activity": window.activity or UNKNOWN,
                "n_gold": len(gold),
                "n_pred": len(pred),
                "matches": matches,
                "precision": precision,
                "recall": recall,
                "f1": f1,
                "soft_edit": float(score),
                "invalid": parse is None or parse.invalid,
                "dropped": parse.dropped if parse is not None else 0,
                "unparsed": parse.unparsed if parse is not None else 0,
                "scene_gold": bool(window.scene),
                "scene_correct": bool(window.scene and scenes[window.id][1]
                                      and scene_verdicts.get(scenes[window.id], False)),
            }
        )
    return {
        "overall": aggregate(rows),
        "per_source": _grouped(rows, "source"),
        "per_activity": _grouped(rows, "activity"),
        "per_window": rows,
        "iou_threshold": iou_threshold,
        "judge": judge.describe(),
        "embedder": embedder.name,
        "judged_pairs": len(pairs),
        "judged_scene_pairs": len(scene_pairs),
    }


# -- activity type and baselines ------------------------------------------------------------------


def activity_of(events: Iterable[Mapping[str, Any]], start: float, end: float, level: int = 4) -> str | None:
    """The window's activity type (module docstring): the ``level`` event overlapping [start, end]
    the longest, else the same among the highest level below it; None when no event of levels 2 to
    ``level`` overlaps."""
    best: dict[int, tuple[float, float, str]] = {}
    for event in events:
        lv = event.get("level")
        overlap = min(event["end"], end) - max(event["start"], start)
        if not isinstance(lv, int) or not 2 <= lv <= level or overlap <= 0:
            continue
        key = (-overlap, event["start"], event["text"])
        if lv not in best or key < best[lv]:
            best[lv] = key
    return best[max(best)][2] if best else None


def previous_windows(windows: Sequence[CaptionWindow]) -> dict[str, CaptionWindow | None]:
    """For each window, the latest window of the same participant and session that ends at or before
    its start (None without ``start``, or when there is none)."""
    by_session: dict[tuple[str, str], list[CaptionWindow]] = defaultdict(list)
    for w in windows:
        if w.start is not None:
            by_session[(w.participant, w.session)].append(w)
    out: dict[str, CaptionWindow | None] = {w.id: None for w in windows}
    for group in by_session.values():
        group.sort(key=lambda w: (w.start, w.id))
        for index, w in enumerate(group):
            # walk back past windows that overlap this one (they would show its future)
            out[w.id] = next(
                (p for p in reversed(group[:index]) if p.start + p.window_s <= w.start + EPS), None
            )
    return out


def repeat_previous(windows: Sequence[CaptionWindow]) -> dict[str, CaptionParse | None]:
    """The repeat-previous baseline: the previous window's gold actions, times kept (clipped to this
    window; an action that starts after this window ends is left out); None without a previous one."""
    out: dict[str, CaptionParse | None] = {}
    lengths = {w.id: w.window_s for w in windows}
    for window_id, previous in previous_windows(windows).items():
        if previous is None:
            out[window_id] = None
            continue
        length = lengths[window_id]
        kept = [
            CaptionAction(a.start, min(a.end, length), a.text) for a in gold_of(previous) if a.start < length
        ]
        out[window_id] = CaptionParse(actions=kept, scene=previous.scene)
    return out


def most_frequent_action(training_windows: Iterable[CaptionWindow]) -> str | None:
    """The most frequent gold action text of the training windows (ties: alphabetical); None if none."""
    counts = Counter(a["action"] for w in training_windows for a in w.actions)
    if not counts:
        return None
    return min(counts, key=lambda text: (-counts[text], text))


def most_frequent_scene(training_windows: Iterable[CaptionWindow]) -> str | None:
    """The most frequent gold scene of the training windows (ties: alphabetical); None if none has one."""
    counts = Counter(w.scene for w in training_windows if w.scene)
    if not counts:
        return None
    return min(counts, key=lambda text: (-counts[text], text))


def most_frequent(windows: Sequence[CaptionWindow], action: str | None,
                  scene: str | None = None) -> dict[str, CaptionParse | None]:
    """The most-frequent baseline: ``action`` over each whole window, and ``scene`` as its scene
    (None: no prediction)."""
    if not action:
        return {w.id: None for w in windows}
    return {w.id: CaptionParse(actions=[CaptionAction(0.0, w.window_s, action)], scene=scene) for w in windows}
