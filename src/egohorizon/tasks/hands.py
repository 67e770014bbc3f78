"""The hands task (EgoHome, issue 14): one text per clip holding timestamped left/right boxes, subtasks,
hand actions and hand captions (``formats.hands``), scored with the centroid hit fraction
(``metrics.boxes``) and PSJ + semantic F1 per annotation type (``metrics.segments``), next to the
degenerate baselines (``metrics.segment_baselines``) and, on boxes, a detector's boxes handed in by
the data (the MediaPipe baseline: ``eval_options`` of the hands datamodule).

An item is one clip: its gold boxes and segments (SPEC §6 records), the times of the frames the model
saw and the resize mapping of those frames, so model-pixel boxes go back to the frame's pixels here.

Still frames without sides (EgoHands: ``HandItem.agnostic``, gold boxes named ``hand``) are scored
hand-agnostically (``metrics.hand_agnostic``: hits / (gold boxes + predicted boxes that hit no gold
box), per frame, whatever side a box is given), against the half-frame box prior and the detector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from egohorizon.tasks.base import Evaluation, Task, objective_line

KINDS = ("subtask", "hand_action", "hand_caption")
SHORT = {"subtask": "subtask", "hand_action": "action", "hand_caption": "caption"}
# judge per kind (SPEC §4): exact labels for subtasks and captions offline, the Ego4D verb for actions
DEFAULT_JUDGES = {"subtask": "exact", "hand_action": "verb", "hand_caption": "exact"}


@dataclass
class HandItem:
    """One clip: ``boxes`` (gold HandBox records), ``segments`` (gold Segment records), the frame
    times the model saw (seconds from the clip's start), and the frame and model image sizes."""

    id: str
    boxes: list[dict] = field(default_factory=list)
    segments: list[dict] = field(default_factory=list)
    frame_times: list[float] = field(default_factory=list)
    original: tuple[int, int] = (0, 0)  # (height, width) of the frames
    resized: tuple[int, int] = (0, 0)  # (height, width) of the image the model saw
    letterbox: bool = False  # the frame was letterboxed into that image (backbones.boxes.ResizeMapping)
    agnostic: bool = False  # gold boxes carry no side (``hand``): scored hand-agnostically, per frame


def make_judges(names: Mapping[str, str] | None = None, embedder: str = "minilm", threshold: float = 0.75):
    from egohorizon.metrics.judges import EmbeddingJudge, ExactJudge, VerbJudge

    built = {}
    for kind, name in {**DEFAULT_JUDGES, **dict(names or {})}.items():
        if name == "exact":
            built[kind] = ExactJudge()
        elif name == "verb":
            built[kind] = VerbJudge()
        elif name == "embedding":
            from egohorizon.backbones.embedders import get_embedder

            built[kind] = EmbeddingJudge(get_embedder(embedder), threshold)
        else:
            raise ValueError(f"hands judge for {kind}: expected exact, verb or embedding, got {name!r}")
    return built


def _records(item: HandItem, parse) -> dict[str, Any]:
    from egohorizon.backbones.boxes import ResizeMapping

    mapping = ResizeMapping(tuple(item.original), tuple(item.resized), item.letterbox)
    boxes = [{"clip": item.id, "t": t, "hand": hand, "box": mapping.to_original(box)} for t, hand, box in parse.boxes]
    segments = [{"clip": item.id, **s} for s in parse.segments]
    return {"boxes": boxes, "segments": segments, "invalid": parse.invalid}


def _prior_box_score(items: Sequence[HandItem], prior_boxes: Sequence[dict], gold_boxes) -> dict:
    """CHF of the training-median box per hand, held still over each scored clip's model frames."""
    from egohorizon.metrics.box_baselines import median_relative_boxes, prior_box_predictions
    from egohorizon.metrics.boxes import centroid_hit_fraction
    from egohorizon.schema import BoxPrediction

    scored = {item.id for item in items}
    if any(b["clip"] in scored for b in prior_boxes):
        raise ValueError("the training-prior box baseline must not read the scored clips' own boxes")
    relative = median_relative_boxes([(b["hand"], b["box"], tuple(b["size"])) for b in prior_boxes])
    predicted = [_record(BoxPrediction, b, "train_prior_box")
                 for item in items for b in prior_box_predictions(relative, item.id, item.frame_times,
                                                                  tuple(item.original))]
    return centroid_hit_fraction(gold_boxes, predicted)


def _record(record_type, obj: dict, where: str):
    """A schema record, or ValueError naming where it came from and each bad field."""
    record, problems = record_type.from_dict(obj)
    if problems:
        raise ValueError(f"{where}: bad {record_type.__name__} {obj}: "
                         + "; ".join(f"{name}: {problem}" for name, problem in problems))
    return record


def _segment_blocks(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {kind: {"psj": block["psj"], "semantic_f1": block["semantic_f1"], "n_clips": block["n_clips"]}
            for kind, block in report["kinds"].items()}


class HandsTask(Task):
    name = "hands"

    def parse(self, texts: Sequence[str], item: HandItem | None = None) -> dict[str, Any]:
        """Boxes (frame pixels, SPEC BoxPrediction fields), segments and the invalid count of one clip's
        output; an unreadable output is an empty prediction with its invalid parts counted."""
        from egohorizon.formats.hands import parse_hand_text

        if item is None:
            raise ValueError("the hands task maps boxes back with its item's frame sizes")
        return _records(item, parse_hand_text(texts[0] if texts else None))

    def evaluate(self, items: Sequence[HandItem], predictions: Mapping[str, Any], split: str,
                 judges: Mapping[str, str] | None = None, embedder: str = "minilm", judge_threshold: float = 0.75,
                 baseline_boxes: Sequence[dict] | None = None, baseline_name: str = "mediapipe",
                 prior_segments: Sequence[dict] | None = None, prior_boxes: Sequence[dict] | None = None,
                 **_: Any) -> Evaluation:
        """Scores next to the baselines. ``prior_segments``: the training split's gold segments (with
        ``clip``), for the training-prior baselines; ``prior_boxes``: the training split's gold boxes
        (``clip``, ``hand``, ``box``, ``size`` = frame (height, width)), for the still training-median
        box (``metrics.box_baselines``); never the scored clips' own."""
        from egohorizon.metrics.boxes import centroid_hit_fraction
        from egohorizon.metrics.segment_baselines import score_baselines
        from egohorizon.metrics.segments import score_segments
        from egohorizon.schema import BoxPrediction, HandBox, Segment

        if items and all(item.agnostic for item in items):
            return self._evaluate_agnostic(items, predictions, split, baseline_boxes, baseline_name, prior_boxes)
        gold_boxes = [_record(HandBox, {**b, "clip": item.id}, item.id) for item in items for b in item.boxes]
        gold_segments = [_record(Segment, {**s, "clip": item.id}, item.id) for item in items for s in item.segments]
        predicted = [predictions.get(item.id) or {"boxes": [], "segments": [], "invalid": 0} for item in items]
        boxes = [_record(BoxPrediction, b, "prediction") for p in predicted for b in p["boxes"]]
        segments = [_record(Segment, s, "prediction") for p in predicted for s in p["segments"]]
        judge_set = make_judges(judges, embedder, judge_threshold)
        report = {
            "boxes": centroid_hit_fraction(gold_boxes, boxes),
            **score_segments(gold_segments, segments, judge_set),
            "n": len(items),
            "invalid": sum(p["invalid"] for p in predicted),
            "missing": sum(item.id not in predictions for item in items),
        }
        prior = [_record(Segment, s, "training segments") for s in prior_segments or []]
        scored = {item.id for item in items}
        if any(s.clip in scored for s in prior):
            raise ValueError("the training-prior baselines must not read the scored clips' own segments")
        baselines: dict[str, Any] = {"segments": score_baselines(gold_segments, judge_set, prior=prior)}
        if prior_boxes:
            baselines["boxes"] = {"train_prior_box": _prior_box_score(items, prior_boxes, gold_boxes)}
        if baseline_boxes is not None:
            wanted = {item.id for item in items}
            chosen = [_record(BoxPrediction, b, baseline_name) for b in baseline_boxes if b["clip"] in wanted]
            baselines.setdefault("boxes", {})[baseline_name] = centroid_hit_fraction(gold_boxes, chosen)
        # Every scored clip once, in order (one without output as None), so compare can check the items.
        candidates = {item.id: predictions.get(item.id) for item in items}
        return Evaluation(report=report, baselines=baselines, metrics=self._flat(report, baselines, split),
                          candidates=candidates)

    def _evaluate_agnostic(self, items: Sequence[HandItem], predictions: Mapping[str, Any], split: str,
                           baseline_boxes: Sequence[dict] | None, baseline_name: str,
                           prior_boxes: Sequence[dict] | None) -> Evaluation:
        """Still frames without sides: each frame's boxes, whatever their side, against its gold boxes;
        the box prior from the training frames' boxes (never the scored frames'), and the detector's."""
        from egohorizon.metrics.hand_agnostic import (
            frame_hits,
            half_prior_boxes,
            pooled_fraction,
            prior_predictions,
        )

        gold = {item.id: [b["box"] for b in item.boxes] for item in items}
        predicted = [predictions.get(item.id) or {"boxes": [], "segments": [], "invalid": 0} for item in items]
        rows = frame_hits(gold, {item.id: [b["box"] for b in p["boxes"]] for item, p in zip(items, predicted)})
        report = {"boxes": {**pooled_fraction(rows), "per_frame": rows}, "kinds": {}, "n": len(items),
                  "invalid": sum(p["invalid"] for p in predicted),
                  "missing": sum(item.id not in predictions for item in items)}
        baselines: dict[str, Any] = {}
        if prior_boxes:
            scored = {item.id for item in items}
            if any(b["clip"] in scored for b in prior_boxes):
                raise ValueError("the box prior must not read the scored frames' own boxes")
            relative = half_prior_boxes([(b["box"], tuple(b["size"])) for b in prior_boxes])
            prior = {item.id: prior_predictions(relative, tuple(item.original)) for item in items}
            baselines.setdefault("boxes", {})["train_prior_box"] = pooled_fraction(frame_hits(gold, prior))
        if baseline_boxes is not None:
            found: dict[str, list] = {}
            for b in baseline_boxes:
                found.setdefault(b["clip"], []).append(b["box"])
            baselines.setdefault("boxes", {})[baseline_name] = pooled_fraction(frame_hits(gold, found))
        candidates = {item.id: predictions.get(item.id) for item in items}
        return Evaluation(report=report, baselines=baselines, metrics=self._flat(report, baselines, split),
                          candidates=candidates)

    def _flat(self, report: Mapping[str, Any], baselines: Mapping[str, Any], split: str) -> dict[str, float]:
        out: dict[str, float] = {f"{split}/hands_n": float(report["n"]),
                                 f"{split}/hands_invalid": float(report["invalid"])}
        parts = []
        if report["boxes"]["chf"] is not None:
            out[f"{split}/hands_chf"] = float(report["boxes"]["chf"])
            parts.append(report["boxes"]["chf"])
        for kind, block in _segment_blocks(report).items():
            for metric in ("psj", "semantic_f1"):
                if block[metric] is not None:
                    out[f"{split}/hands_{SHORT[kind]}_{metric}"] = float(block[metric])
            if block["psj"] is not None:
                parts.append(block["psj"])
        for name, kinds in baselines.get("segments", {}).items():
            for kind, block in kinds.items():
                if block["psj"] is not None:
                    out[f"{split}/{name}_hands_{SHORT[kind]}_psj"] = float(block["psj"])
        for name, block in baselines.get("boxes", {}).items():
            if block["chf"] is not None:
                out[f"{split}/{name}_hands_chf"] = float(block["chf"])
        if parts:
            # the objective: boxes and the three annotation types weigh the same
            out[f"{split}/hands_score"] = float(sum(parts) / len(parts))
        return out

    def summary_rows(self, evaluation: Evaluation | None) -> list[dict[str, Any]]:
        from egohorizon.metrics.segment_baselines import ORACLES

        if evaluation is None:
            return []
        report, baselines = evaluation.report, evaluation.baselines
        rows = [{"annotation": "boxes", "predictor": "model", "chf": report["boxes"]["chf"],
                 "hits": report["boxes"]["hits"], "annotated": report["boxes"]["annotated"],
                 "false_positive_frames": report["boxes"]["false_positive_frames"]}]
        for name, block in baselines.get("boxes", {}).items():
            rows.append({"annotation": "boxes", "predictor": name, "chf": block["chf"], "hits": block["hits"],
                         "annotated": block["annotated"], "false_positive_frames": block["false_positive_frames"]})
        for kind, block in _segment_blocks(report).items():
            rows.append({"annotation": kind, "predictor": "model", **block})
            for name, kinds in baselines.get("segments", {}).items():
                if kind in kinds:
                    rows.append({"annotation": kind, "predictor": name, **kinds[kind], "oracle": name in ORACLES})
        return rows

    def format_summary(self, rows: list[dict[str, Any]], objective: Mapping[str, Any] | None = None,
                       title: str = "Held-out test days") -> str:
        if not rows:
            return "(no test scores: was the test split empty?)"

        def num(value):
            return "n/a" if value is None else f"{value:.3f}"

        lines = [f"{title}: hands", f"{'annotation':>13} {'predictor':>18} {'CHF/PSJ':>8} {'F1':>6}  detail"]
        for r in rows:
            if r["annotation"] == "boxes":
                detail = f"hits {r['hits']}/{r['annotated']}, false-positive frames {r['false_positive_frames']}"
                lines.append(f"{'boxes':>13} {r['predictor']:>18} {num(r['chf']):>8} {'':>6}  {detail}")
            else:
                oracle = ", oracle: reads the clip's gold labels" if r.get("oracle") else ""
                lines.append(f"{r['annotation']:>13} {r['predictor']:>18} {num(r['psj']):>8} "
                             f"{num(r['semantic_f1']):>6}  clips {r['n_clips']}{oracle}")
        return "\n".join(lines + objective_line(objective))

    def default_objective(self, data: Mapping[str, Any]) -> str:
        return "val/hands_score"

    def headline(self, evaluation: Evaluation) -> str:
        report = evaluation.report
        blocks = _segment_blocks(report)

        def num(value):
            return "n/a" if value is None else f"{value:.3f}"

        parts = [f"CHF {num(report['boxes']['chf'])}"]
        parts += [f"{SHORT[k]} PSJ {num(b['psj'])}" for k, b in blocks.items()]
        return ", ".join(parts) + f", invalid {report['invalid']} in {report['n']} clips"

    def prediction_fields(self, prediction: Any) -> dict[str, Any] | None:
        if prediction is None:
            return None
        return {"boxes": prediction["boxes"], "segments": prediction["segments"], "invalid": prediction["invalid"]}

    def item_ids(self, evaluation: Evaluation) -> list[str]:
        return list(evaluation.candidates)

    # -- comparing checkpoints (egohorizon compare) -------------------------------------------------

    compare_groups = ("annotation",)
    compare_metrics = ("score", "semantic_f1")
    plot_metrics = ("score",)
    compare_guide = (
        "Every checkpoint annotated the same held-out clips. The score is the centroid hit fraction for boxes "
        "(a gold box counts when the predicted box of the same hand, interpolated to its frame, has its "
        "centre inside it) and the permissible subsegment Jaccard (PSJ) for subtasks, hand actions and hand "
        "captions; semantic F1 is the WGO-style matching of segment texts. The model's overall row averages "
        "its four scores (val/hands_score). A checkpoint is useful where it beats the degenerate baselines "
        "(a generic or the training days' most common label, over the whole clip or in fixed windows) and, on "
        "boxes, the MediaPipe detector. The oracle row (the clip's own most common true label over the whole "
        "clip) reads the scored clip's gold labels: a reference for right labels without timing, not a predictor."
    )

    def compare_rows(self, evaluation: Evaluation) -> list[dict[str, Any]]:
        """The model's overall score (the mean of its four), then per annotation type the model and every
        baseline scored on it; ``n`` is annotated frames for boxes and clips for the segment types."""
        flat = self._flat(evaluation.report, evaluation.baselines, "x")
        rows = [{"predictor": "model", "annotation": "all", "n": evaluation.report["n"],
                 "score": flat.get("x/hands_score"), "semantic_f1": None}]
        for row in self.summary_rows(evaluation):
            boxes = row["annotation"] == "boxes"
            predictor = ("oracle-" if row.get("oracle") else "") + row["predictor"].replace("_", "-")
            rows.append({"predictor": predictor, "annotation": row["annotation"],
                         "n": row["annotated"] if boxes else row["n_clips"],
                         "score": row["chf"] if boxes else row["psj"],
                         "semantic_f1": None if boxes else row["semantic_f1"]})
        return rows
