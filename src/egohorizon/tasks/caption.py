"""The caption task (issue 11): raw captioner outputs -> timed actions, scored against each window's
gold L1 actions with one-to-one matching (IoU + judge) and the soft edit score, next to the
repeat-previous and most-frequent baselines, flat log keys and the summary table.

The metrics are ``egohorizon.metrics.captions``; the format and parser
``egohorizon.formats.caption``. Shared by the evaluation callback and ``egohorizon score
captions``, so both report the same figures.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from egohorizon.formats.caption import CaptionAction, CaptionParse, parse_caption_output
from egohorizon.schema import CaptionPrediction, CaptionWindow
from egohorizon.tasks.base import Evaluation, Task, objective_line

BASELINES = ("repeat_previous", "most_frequent")
FIGURES = ("f1", "precision", "recall", "f1_macro", "soft_edit")
TOLERANCE = 0.5  # seconds past the window's end still accepted (and clipped), as the parser does


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def flat_metrics(report: Mapping[str, Any], split: str, prefix: str) -> dict[str, float]:
    """``{split}/{prefix}_f1`` (micro), ``_precision``, ``_recall``, ``_f1_macro``, ``_soft_edit``,
    ``_invalid_rate``, ``_dropped``, ``_n``; ``_scene_accuracy`` when some window has a gold scene; per
    source (``..._f1_<source>``, ``..._soft_edit_<source>``) when the report holds more than one."""
    overall = report["overall"]
    out = {f"{split}/{prefix}_{name}": float(overall[name] or 0.0) for name in FIGURES}
    out[f"{split}/{prefix}_invalid_rate"] = overall["invalid"] / overall["n"] if overall["n"] else 0.0
    out[f"{split}/{prefix}_dropped"] = float(overall["dropped"])
    out[f"{split}/{prefix}_n"] = float(overall["n"])
    if overall.get("scene_accuracy") is not None:
        out[f"{split}/{prefix}_scene_accuracy"] = float(overall["scene_accuracy"])
    if len(report["per_source"]) > 1:
        for source, row in report["per_source"].items():
            for name in ("f1", "soft_edit"):
                out[f"{split}/{prefix}_{name}_{_key(source)}"] = float(row[name] or 0.0)
    return out


def _strip(report: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "per_window"}


def _actions(parse: CaptionParse | None) -> list[dict[str, Any]]:
    return (
        [] if parse is None else [{"start": a.start, "end": a.end, "action": a.text} for a in parse.actions]
    )


class CaptionTask(Task):
    """Captioning: timed first-person actions per 30 s window (F1 by IoU + judge, soft edit score)."""

    name = "caption"
    prediction_field = "actions"

    def parse(self, texts: Sequence[str], item: CaptionWindow | None = None) -> CaptionParse:
        """The parse of the first output (one caption per window); an invalid parse is kept, not
        replaced by None, so its dropped and unparsed lines are counted."""
        window_s = item.window_s if item is not None else 30.0
        return parse_caption_output(texts[0] if texts else None, window_s=window_s)

    def parse_record(self, record: CaptionPrediction, item: CaptionWindow | None = None) -> CaptionParse:
        """A prediction file's row: its raw ``text`` through the parser, or its ``actions`` under the
        parser's rules (an action outside the window, beyond the parser's tolerance, is dropped)."""
        if record.actions is None:
            return self.parse([record.text] if record.text is not None else [], item)
        window_s = item.window_s if item is not None else 30.0
        parse = CaptionParse(scene=record.scene)
        for a in record.actions:
            if a["end"] > window_s + TOLERANCE:
                parse.dropped += 1
            else:
                parse.actions.append(
                    CaptionAction(a["start"], min(a["end"], window_s), " ".join(a["action"].split()))
                )
        return parse

    def evaluate(
        self,
        items: Sequence[CaptionWindow],
        predictions: Mapping[str, CaptionParse | None],
        split: str,
        judge: Any = "exact",
        embedder: Any = "minilm",
        iou_threshold: float = 0.5,
        judge_threshold: float = 0.75,
        most_frequent_action: str | None = None,
        most_frequent_scene: str | None = None,
        prefix: str = "caption",
    ) -> Evaluation:
        """``judge``: a ``metrics.judges`` judge or ``exact`` | ``embedding`` (with ``embedder`` and
        ``judge_threshold``); ``embedder``: for the soft edit score, an embedder or its name;
        ``most_frequent_action``: the training days' most frequent action (the baseline; None leaves
        that baseline without predictions); ``most_frequent_scene``: the training days' most frequent
        gold scene (that baseline's scene line)."""
        from egohorizon.metrics import captions

        embedder = _named_embedder(embedder) if isinstance(embedder, str) else embedder
        judge = make_judge(judge, embedder, judge_threshold) if isinstance(judge, str) else judge
        options = {"judge": judge, "embedder": embedder, "iou_threshold": iou_threshold}
        report = captions.score_captions(items, predictions, **options)
        baselines = {
            "repeat_previous": captions.score_captions(items, captions.repeat_previous(items), **options),
            "most_frequent": captions.score_captions(
                items, captions.most_frequent(items, most_frequent_action, most_frequent_scene), **options
            ),
        }
        baselines["most_frequent"]["action"] = most_frequent_action
        baselines["most_frequent"]["scene"] = most_frequent_scene
        metrics = flat_metrics(report, split, prefix)
        for name, baseline in baselines.items():
            metrics.update(flat_metrics(baseline, split, f"{name}_{prefix}"))
        return Evaluation(
            report=report,
            baselines={name: _strip(b) for name, b in baselines.items()},
            metrics=metrics,
            candidates=dict(predictions),
        )

    def prediction_fields(self, prediction) -> dict[str, Any] | None:
        """``CaptionPrediction`` fields: ``actions`` and ``scene`` with the parser's counts when the
        output parsed (the raw ``text`` otherwise, kept by ``prediction_records``)."""
        if prediction is None or prediction.invalid:
            return None
        return {
            "actions": _actions(prediction),
            "scene": prediction.scene,
            "dropped": prediction.dropped,
            "unparsed": prediction.unparsed,
        }

    def example_rows(self, items, evaluation: Evaluation, n: int):
        columns = ["id", "activity", "gold", "predicted", "f1", "soft_edit"]
        ordered = sorted(items, key=lambda item: item.id)
        if n <= 0 or not ordered:
            return columns, []
        per_window = {row["id"]: row for row in evaluation.report["per_window"]}

        def shown(actions) -> str:
            return " | ".join(f"{a['start']:g}-{a['end']:g} {a['action']}" for a in actions) or "(none)"

        rows = []
        for item in ordered[:: max(1, len(ordered) // n)][:n]:
            row = per_window[item.id]
            parse = evaluation.candidates.get(item.id)
            predicted = "(invalid)" if parse is None or parse.invalid else shown(_actions(parse))
            rows.append(
                [
                    item.id,
                    row["activity"],
                    shown(item.actions),
                    predicted,
                    round(row["f1"], 3),
                    round(row["soft_edit"], 3),
                ]
            )
        return columns, rows

    def summary_rows(self, evaluation: Evaluation | None) -> list[dict[str, Any]]:
        """One row per source and one overall: model next to both baselines."""
        if evaluation is None:
            return []
        report, baselines = evaluation.report, evaluation.baselines
        groups = [
            (
                source,
                report["per_source"][source],
                {n: b["per_source"].get(source, {}) for n, b in baselines.items()},
            )
            for source in report["per_source"]
        ]
        if len(groups) != 1:
            groups.append(("all", report["overall"], {n: b["overall"] for n, b in baselines.items()}))
        rows = []
        for source, row, base in groups:
            out = {
                "source": source,
                "n": row["n"],
                "model_f1": row["f1"],
                "model_soft_edit": row["soft_edit"],
                "model_f1_macro": row["f1_macro"],
                "model_invalid_rate": row["invalid"] / row["n"] if row["n"] else 0.0,
                "model_dropped": row["dropped"],
                "scene_n": row.get("scene_n", 0),
                "model_scene_accuracy": row.get("scene_accuracy"),
            }
            for name in BASELINES:
                out[f"{name}_f1"] = base[name].get("f1")
                out[f"{name}_soft_edit"] = base[name].get("soft_edit")
                out[f"{name}_scene_accuracy"] = base[name].get("scene_accuracy")
            rows.append(out)
        return rows

    def format_summary(
        self,
        rows: list[dict[str, Any]],
        objective: Mapping[str, Any] | None = None,
        title: str = "Held-out test days",
    ) -> str:
        if not rows:
            return "(no test scores: was the test split empty?)"

        def num(value: float | None) -> str:
            return "  n/a" if value is None else f"{value:5.3f}"

        width = max(6, *(len(str(r["source"])) for r in rows))
        lines = [
            f"{title}: caption F1 (IoU + judge, micro) and soft edit score (SE); 1 = perfect",
            f"{'source':>{width}} {'n':>5}  {'trained model':>27}  {'repeat previous':>15}  {'most frequent':>13}",
            (
                f"{'':>{width}} {'':>5}  {'F1':>5} {'SE':>5} {'inv':>4} {'drop':>5}    "
                f"{'F1':>5} {'SE':>5}      {'F1':>5} {'SE':>5}"
            ),
        ]
        for r in rows:
            lines.append(
                f"{r['source']:>{width}} {r['n']:>5}  {num(r['model_f1'])} {num(r['model_soft_edit'])} "
                f"{r['model_invalid_rate']:4.0%} {r['model_dropped']:>5}    "
                f"{num(r['repeat_previous_f1'])} {num(r['repeat_previous_soft_edit'])}      "
                f"{num(r['most_frequent_f1'])} {num(r['most_frequent_soft_edit'])}"
            )
        scened = [r for r in rows if r.get("scene_n")]
        if scened:
            lines.append("scene accuracy (windows with a gold scene; same judge): "
                         + "; ".join(f"{r['source']} n={r['scene_n']} trained model "
                                     f"{num(r['model_scene_accuracy'])}, repeat previous "
                                     f"{num(r['repeat_previous_scene_accuracy'])}, most frequent "
                                     f"{num(r['most_frequent_scene_accuracy'])}" for r in scened))
        return "\n".join(lines + objective_line(objective))

    # -- egohorizon compare --------------------------------------------------------------------
    compare_groups = ("source",)
    compare_metrics = ("f1", "soft_edit", "precision", "recall", "f1_macro", "invalid", "dropped",
                       "scene_accuracy")
    plot_metrics = ("f1", "soft_edit")
    compare_guide = (
        "Every checkpoint captioned the same held-out 30 s windows. F1 (micro) matches predicted and gold "
        "actions one to one where their times overlap by IoU >= 0.5 and the judge accepts the wording; "
        "soft edit (SE) compares the action sequences in order by meaning, ignoring times. Both run from "
        "0 to 1 (perfect). A checkpoint is useful where it beats repeat-previous (the previous window's "
        "gold actions) and most-frequent (the training days' most frequent action over the whole window). "
        '"invalid" counts windows whose output held no parseable action; "dropped" counts action lines '
        "outside the window."
    )

    def item_ids(self, evaluation: Evaluation) -> list[str]:
        return [row["id"] for row in evaluation.report["per_window"]]

    def compare_rows(self, evaluation: Evaluation) -> list[dict[str, Any]]:
        """The model, then each baseline: overall (source "all") and per source."""
        rows = []
        for predictor, report in (("model", evaluation.report), *evaluation.baselines.items()):
            groups = [("all", report["overall"]), *report["per_source"].items()]
            for source, row in groups:
                rows.append(
                    {
                        "predictor": predictor.replace("_", "-"),
                        "source": source,
                        "n": row["n"],
                        **{name: row.get(name) for name in self.compare_metrics},
                    }
                )
        return rows

    def default_objective(self, data: Mapping[str, Any]) -> str:
        return "val/caption_f1"

    def headline(self, evaluation: Evaluation) -> str:
        overall = evaluation.report["overall"]
        base = evaluation.baselines
        return (
            f"F1 {overall['f1']:.4f}, soft edit {overall['soft_edit'] or 0.0:.4f}, invalid "
            f"{overall['invalid']}/{overall['n']}, dropped lines {overall['dropped']} (repeat previous F1 "
            f"{base['repeat_previous']['overall']['f1']:.4f}, most frequent F1 "
            f"{base['most_frequent']['overall']['f1']:.4f})"
        )


def make_judge(spec: str, embedder=None, threshold: float = 0.75):
    """``exact`` or ``embedding`` (cosine >= ``threshold`` with ``embedder``) by name; the CLI builds
    the others (llm, verdicts:FILE)."""
    from egohorizon.metrics import judges

    if spec == "exact":
        return judges.ExactJudge()
    if spec == "embedding":
        return judges.EmbeddingJudge(
            embedder if embedder is not None else _named_embedder("minilm"), threshold
        )
    raise ValueError(
        f"judge: expected 'exact' or 'embedding' here (llm and verdicts:FILE through "
        f"`egohorizon score captions`), got {spec!r}"
    )


@functools.lru_cache(maxsize=4)
def _named_embedder(name: str):
    """Embedders by name, loaded once per process."""
    from egohorizon.backbones.embedders import get_embedder

    return get_embedder(name)


def caption_window(meta: dict[str, Any]):
    """A shard sample's JSON -> the ``CaptionWindow`` gold record the caption task scores."""
    from egohorizon.formats.caption import gold_actions, gold_scene
    from egohorizon.metrics.captions import activity_of

    start, end = meta["start"], meta["end"]
    return CaptionWindow(
        id=meta["key"],
        window_s=end - start,
        actions=[{"start": a.start, "end": a.end, "action": a.text}
                 for a in gold_actions(meta.get("events", []), start, end)],
        scene=gold_scene(meta.get("events", []), start, end),
        source=meta.get("source") or "",
        participant=meta["participant"],
        day=meta["day"],
        session=meta["session"],
        start=start,
        activity=activity_of(meta.get("events", []), start, end),
    )
