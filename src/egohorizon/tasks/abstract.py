"""The abstraction task (issue 12): a run of level-L events -> groups and descriptions (level L+1),
scored per level on held-out days by boundary F1 (within one event), the description score against
the gold parents, and compression (events per group) against the gold, next to the fixed-chunks and
verb-change baselines (``egohorizon.metrics.abstraction``).

Level keys name the level built: ``L2`` groups L1 events into L2. An invalid output (the strict
parser of ``formats.abstract`` refuses it) predicts no boundary and no description, and is left out
of the model's compression (the invalid rate says how many).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from egohorizon.data.events.abstract_items import AbstractItem
from egohorizon.formats.abstract import Group, ReplyError, parse_groups
from egohorizon.metrics import abstraction as M
from egohorizon.tasks.base import Evaluation, Task, objective_line

BASELINES = ("fixed_chunks", "verb_change")
PREFIX = "abstract"


def _spans(groups: Sequence[Group]) -> list[tuple[int, int]]:
    return [(g.first, g.last) for g in groups]


@functools.lru_cache(maxsize=4)
def _named_embedder(name: str):
    from egohorizon.backbones.embedders import get_embedder

    return get_embedder(name)


def pairwise_similarity(embedder) -> Any:
    """Row-wise cosine of two equally long text lists, clipped to [0, 1]."""

    def similarity(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        if not a:
            return np.zeros(0)
        va, vb = embedder.vectors(list(a)), embedder.vectors(list(b))
        return np.clip(np.array([embedder.similarity(x[None], y[None])[0, 0] for x, y in zip(va, vb)]), 0, 1)

    return similarity


def score_groupings(items: Sequence[AbstractItem], predictions: Mapping[str, list[Group] | None],
                    similarity, tolerance: int = 1) -> dict[str, Any]:
    """``{"overall": row, "per_level": {"L2": row, ...}}``; a row holds ``n``, ``invalid``, boundary
    ``precision/recall/f1``, ``description`` (mean over gold parents), ``compression`` (model, valid
    items) and ``gold_compression``."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    descriptions: dict[str, list[float]] = defaultdict(list)
    for item in items:
        predicted = predictions.get(item.id)
        spans = _spans(predicted) if predicted else []
        gold = _spans(item.gold)
        matched, n_pred, n_gold = M.boundary_counts(spans, gold, tolerance)
        scores = M.description_scores(spans, [g.text for g in predicted or []], gold,
                                      [g.text for g in item.gold], similarity)
        for key in (f"L{item.level + 1}", "all"):
            row = sums[key]
            row["n"] += 1
            row["invalid"] += predicted is None
            row["matched"] += matched
            row["predicted"] += n_pred
            row["gold"] += n_gold
            row["events"] += len(item.events)
            row["gold_groups"] += len(item.gold)
            if predicted is not None:
                row["valid_events"] += len(item.events)
                row["groups"] += len(predicted)
            descriptions[key] += scores
    rows = {}
    for key, row in sums.items():
        rows[key] = {"n": int(row["n"]), "invalid": int(row["invalid"]),
                     **M.prf(int(row["matched"]), int(row["predicted"]), int(row["gold"])),
                     "description": float(np.mean(descriptions[key])) if descriptions[key] else 0.0,
                     "compression": M.compression(int(row["valid_events"]), int(row["groups"])),
                     "gold_compression": M.compression(int(row["events"]), int(row["gold_groups"]))}
    overall = rows.pop("all", {"n": 0, "invalid": 0, "f1": 0.0, "description": 0.0})
    return {"overall": overall, "per_level": dict(sorted(rows.items()))}


def baseline_predictions(items: Sequence[AbstractItem], train_compression: Mapping[int, float] | None
                         ) -> dict[str, dict[str, list[Group] | None]]:
    """Both baselines' groups (descriptions: each group's most frequent child text). Fixed chunks need
    the training days' gold compression per level; without it that baseline predicts nothing."""
    out: dict[str, dict[str, list[Group] | None]] = {"fixed_chunks": {}, "verb_change": {}}
    for item in items:
        texts = item.texts
        for name, spans in (("fixed_chunks", M.fixed_chunks(len(texts), (train_compression or {}).get(item.level, 0))
                             if train_compression and item.level in train_compression else None),
                            ("verb_change", M.verb_change(texts))):
            out[name][item.id] = None if spans is None else [
                Group(a, b, t) for (a, b), t in zip(spans, M.group_texts(spans, texts))]
    return out


def flat_metrics(report: Mapping[str, Any], split: str, prefix: str) -> dict[str, float]:
    """``{split}/{prefix}_boundary_f1``, ``_boundary_precision``, ``_boundary_recall``, ``_description``,
    ``_invalid_rate``, ``_n`` overall; per level ``..._boundary_f1_L2``, ``_description_L2``,
    ``_compression_L2`` (model) and ``_gold_compression_L2``."""
    overall = report["overall"]
    out = {f"{split}/{prefix}_boundary_{k}": float(overall.get(k, 0.0)) for k in ("f1", "precision", "recall")}
    out[f"{split}/{prefix}_description"] = float(overall.get("description", 0.0))
    out[f"{split}/{prefix}_invalid_rate"] = overall["invalid"] / overall["n"] if overall["n"] else 0.0
    out[f"{split}/{prefix}_n"] = float(overall["n"])
    for level, row in report["per_level"].items():
        out[f"{split}/{prefix}_boundary_f1_{level}"] = float(row["f1"])
        out[f"{split}/{prefix}_description_{level}"] = float(row["description"])
        out[f"{split}/{prefix}_compression_{level}"] = float(row["compression"])
        out[f"{split}/{prefix}_gold_compression_{level}"] = float(row["gold_compression"])
    return out


class AbstractTask(Task):
    """Abstraction: consecutive events -> groups with one description each (boundary F1 within one event)."""

    name = "abstract"
    prediction_field = "groups"

    def parse(self, texts: Sequence[str], item: AbstractItem | None = None) -> list[Group] | None:
        if not texts or item is None:
            return None
        try:
            return parse_groups(texts[0], len(item.events))
        except ReplyError:
            return None

    def evaluate(self, items: Sequence[AbstractItem], predictions: Mapping[str, list[Group] | None], split: str,
                 embedder: Any = "minilm", tolerance: int = 1, train_compression: Mapping[int, float] | None = None,
                 prefix: str = PREFIX) -> Evaluation:
        """``embedder``: the description score's (an embedder or its name); ``train_compression``: level ->
        the training days' gold events per group (the fixed-chunks baseline; from the datamodule)."""
        embedder = _named_embedder(embedder) if isinstance(embedder, str) else embedder
        similarity = pairwise_similarity(embedder)
        report = score_groupings(items, predictions, similarity, tolerance)
        baselines = {name: score_groupings(items, preds, similarity, tolerance)
                     for name, preds in baseline_predictions(items, train_compression).items()}
        baselines["fixed_chunks"]["sizes"] = {f"L{k + 1}": v for k, v in (train_compression or {}).items()}
        metrics = flat_metrics(report, split, prefix)
        for name, baseline in baselines.items():
            metrics.update(flat_metrics(baseline, split, f"{name}_{prefix}"))
        # Every scored item once, in order (an unanswered one as None), so compare can check the items.
        candidates = {item.id: predictions.get(item.id) for item in items}
        return Evaluation(report=report, baselines=baselines, metrics=metrics, candidates=candidates)

    # -- comparing checkpoints (egohorizon compare) -------------------------------------------------

    compare_groups = ("level",)
    compare_metrics = ("f1", "precision", "recall", "description", "compression", "gold_compression", "invalid")
    plot_metrics = ("f1", "description")
    compare_guide = (
        "Every checkpoint grouped the same held-out runs of consecutive events. Boundary F1 matches predicted "
        "and gold group boundaries one to one within one event; the description score compares each gold "
        "parent's text with the predicted group overlapping it most (embedding similarity, 1 = same meaning); "
        "compression is events per group (the gold's beside it). Level L2 means L1 events grouped into L2. A "
        "checkpoint is useful where it beats fixed chunks (the training days' gold compression) and verb change "
        "(a cut where the most frequent verb changes). An unparseable reply is invalid and scores no boundary."
    )

    def item_ids(self, evaluation: Evaluation) -> list[str]:
        return list(evaluation.candidates)

    def compare_rows(self, evaluation: Evaluation) -> list[dict[str, Any]]:
        """The model, then each baseline: overall (level "all"), then per level."""
        rows = []
        for predictor, report in (("model", evaluation.report), *evaluation.baselines.items()):
            for level, row in [("all", report["overall"]), *report["per_level"].items()]:
                rows.append({"predictor": predictor.replace("_", "-"), "level": level, "n": row.get("n", 0),
                             **{name: row.get(name) for name in self.compare_metrics}})
        return rows

    def prediction_fields(self, prediction: list[Group] | None) -> dict[str, Any] | None:
        if prediction is None:
            return None
        return {"groups": [{"first": g.first, "last": g.last, "text": g.text} for g in prediction]}

    def example_rows(self, items, evaluation: Evaluation, n: int):
        columns = ["id", "gold", "predicted"]
        ordered = sorted(items, key=lambda item: item.id)
        if n <= 0 or not ordered:
            return columns, []

        def shown(groups) -> str:
            return "(invalid)" if groups is None else " | ".join(f"{g.first}-{g.last} {g.text}" for g in groups)

        return columns, [[item.id, shown(item.gold), shown(evaluation.candidates.get(item.id))]
                         for item in ordered[:: max(1, len(ordered) // n)][:n]]

    def summary_rows(self, evaluation: Evaluation | None) -> list[dict[str, Any]]:
        if evaluation is None:
            return []
        report, baselines = evaluation.report, evaluation.baselines
        keys = [*report["per_level"], "all"]
        rows = []
        for key in keys:
            row = report["overall"] if key == "all" else report["per_level"][key]
            out = {"level": key, "n": row["n"], "model_f1": row["f1"], "model_description": row["description"],
                   "model_compression": row.get("compression"), "gold_compression": row.get("gold_compression"),
                   "model_invalid_rate": row["invalid"] / row["n"] if row["n"] else 0.0}
            for name in BASELINES:
                base = baselines[name]["overall"] if key == "all" else baselines[name]["per_level"].get(key, {})
                out[f"{name}_f1"] = base.get("f1")
                out[f"{name}_compression"] = base.get("compression")
            rows.append(out)
        return rows

    def format_summary(self, rows: list[dict[str, Any]], objective: Mapping[str, Any] | None = None,
                       title: str = "Held-out test days") -> str:
        if not rows:
            return "(no test scores: was the test split empty?)"

        def num(value: float | None, width: int = 5) -> str:
            return f"{'n/a':>{width}}" if value is None or math.isnan(value) else f"{value:{width}.3f}"

        lines = [(f"{title}: boundary F1 (within one event), description score (desc), compression (events "
                  "per group; gold in brackets)"),
                 f"{'level':>5} {'n':>5}  {'trained model':>31}  {'fixed chunks':>12}  {'verb change':>12}",
                 (f"{'':>5} {'':>5}  {'F1':>5} {'desc':>5} {'compr':>6} {'(gold)':>7} {'inv':>4}  "
                  f"{'F1':>5} {'compr':>6}  {'F1':>5} {'compr':>6}")]
        for r in rows:
            lines.append(
                f"{r['level']:>5} {r['n']:>5}  {num(r['model_f1'])} {num(r['model_description'])} "
                f"{num(r['model_compression'], 6)} ({num(r['gold_compression'])}) {r['model_invalid_rate']:4.0%}  "
                f"{num(r['fixed_chunks_f1'])} {num(r['fixed_chunks_compression'], 6)}  "
                f"{num(r['verb_change_f1'])} {num(r['verb_change_compression'], 6)}")
        return "\n".join(lines + objective_line(objective))

    def default_objective(self, data: Mapping[str, Any]) -> str:
        return "val/abstract_boundary_f1"

    def headline(self, evaluation: Evaluation) -> str:
        o, b = evaluation.report["overall"], evaluation.baselines
        return (f"boundary F1 {o['f1']:.4f}, description {o['description']:.4f}, invalid {o['invalid']}/{o['n']} "
                f"(fixed chunks F1 {b['fixed_chunks']['overall']['f1']:.4f}, verb change F1 "
                f"{b['verb_change']['overall']['f1']:.4f})")
