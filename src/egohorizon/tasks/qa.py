"""The QA task (EgoMonth): letter answers extracted without guessing, Avg (macro over task types) and
Acc (micro), per task type and per cognitive level, next to the chance baseline (SPEC §3)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from egohorizon.schema import QAItem
from egohorizon.tasks.base import Evaluation, Task, objective_line


def _key(text: str) -> str:
    """A log-key-safe task name: 'Event Counting' -> 'event_counting'."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def flat_metrics(report: Mapping[str, Any], split: str, prefix: str = "qa") -> dict[str, float]:
    """``{split}/qa_avg``, ``_acc``, ``_invalid_rate``, ``_n``, ``_chance``, per task type
    ``{split}/qa_acc_<task>``, per level ``{split}/qa_avg_level<L>`` and per category (HD-EPIC's)
    ``{split}/qa_avg_category_<name>``; absent values are left out."""
    out: dict[str, float] = {}
    for name, value in (("avg", report["Avg"]), ("acc", report["Acc"]), ("chance", report["chance"])):
        if value is not None:
            out[f"{split}/{prefix}_{name}"] = float(value)
    out[f"{split}/{prefix}_n"] = float(report["n"])
    out[f"{split}/{prefix}_invalid_rate"] = report["invalid"] / report["n"] if report["n"] else 0.0
    for task, row in report["per_task"].items():
        out[f"{split}/{prefix}_acc_{_key(task)}"] = float(row["acc"])
    for level, row in report["per_level"].items():
        out[f"{split}/{prefix}_avg_level{level}"] = float(row["avg"])
    for category, row in report.get("per_category", {}).items():
        out[f"{split}/{prefix}_avg_category_{_key(category)}"] = float(row["avg"])
    return out


class QATask(Task):
    """Multiple-choice QA: one letter per item; an ambiguous or unparseable answer is invalid."""

    name = "qa"
    prediction_field = "answer"  # SPEC §6: {"id", "answer"} or {"id", "text"}

    def parse(self, texts: Sequence[str], item: QAItem | None = None) -> str | None:
        from egohorizon.metrics.qa import extract_answer

        if item is None:
            raise ValueError("the qa task parses an answer against its item's options")
        return extract_answer(texts[0] if texts else None, item.options)

    def evaluate(
        self,
        items: Sequence[QAItem],
        predictions: Mapping[str, str | None],
        split: str,
        task_levels: Mapping[str, int] | None = None,
        prefix: str = "qa",
        majority_letter: str | None = None,
        answer_prior: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Evaluation:
        """``majority_letter``: the most frequent answer position of the training items; when given,
        the majority-position baseline (that letter for every item) is scored and logged beside the
        model as ``{split}/majority_position_{prefix}_avg``, ``_acc``, per task and per level.
        ``answer_prior``: ``metrics.qa.answer_prior`` of the training items; when given, the
        answer-prior baseline (each item's option most often right in training, options only) is
        scored and logged the same way as ``{split}/answer_prior_{prefix}_*``."""
        from egohorizon.metrics.qa import prior_answers, score_qa

        report = score_qa(items, predictions, task_levels)
        baselines: dict[str, Any] = {"chance": report["chance"]}
        metrics = flat_metrics(report, split, prefix)
        if majority_letter:
            majority = score_qa(items, {item.id: majority_letter for item in items}, task_levels)
            baselines["majority_position"] = {"letter": majority_letter, **majority}
            metrics.update(flat_metrics(majority, split, f"majority_position_{prefix}"))
        if answer_prior:
            prior = score_qa(items, prior_answers(items, answer_prior, majority_letter), task_levels)
            baselines["answer_prior"] = prior
            metrics.update(flat_metrics(prior, split, f"answer_prior_{prefix}"))
        # Every scored item once, in order (an unanswered one as None), so compare can check the items.
        candidates = {item.id: predictions.get(item.id) for item in items}
        return Evaluation(report=report, baselines=baselines, metrics=metrics, candidates=candidates)

    def summary_rows(self, evaluation: Evaluation | None) -> list[dict[str, Any]]:
        if evaluation is None:
            return []
        report = evaluation.report
        rows = [
            {"task": task, "level": row["level"], "n": row["n"], "acc": row["acc"], "invalid": row["invalid"]}
            for task, row in report["per_task"].items()
        ]
        overall = {
            "task": "Avg (macro)",
            "level": None,
            "n": report["n"],
            "acc": report["Avg"],
            "invalid": report["invalid"],
        }
        micro = {
            "task": "Acc (micro)",
            "level": None,
            "n": report["n"],
            "acc": report["Acc"],
            "invalid": report["invalid"],
        }
        return rows + [
            overall,
            micro,
            {"task": "chance", "level": None, "n": report["n"], "acc": report["chance"], "invalid": 0},
        ]

    def format_summary(self, rows: list[dict[str, Any]], objective: Mapping[str, Any] | None = None,
                       title: str = "Held-out test days") -> str:
        if not rows:
            return "(no test scores: was the test split empty?)"
        lines = [
            f"{title}: multiple-choice accuracy",
            f"{'task':>30} {'level':>5} {'n':>5} {'accuracy':>8} {'invalid':>7}",
        ]
        for r in rows:
            acc = "n/a" if r["acc"] is None else f"{r['acc']:.3f}"
            level = "" if r["level"] is None else str(r["level"])
            lines.append(f"{r['task']:>30} {level:>5} {r['n']:>5} {acc:>8} {r['invalid']:>7}")
        return "\n".join(lines + objective_line(objective))

    # -- comparing checkpoints (egohorizon compare) -------------------------------------------------

    compare_groups = ("level",)
    compare_metrics = ("avg", "acc", "invalid")
    plot_metrics = ("avg", "acc")
    group_prefixes: ClassVar[dict[str, str]] = {"level": "level"}
    plot_reference: ClassVar[dict[str, tuple[float, str]]] = {"avg": (0.25, "chance (4 options)"), "acc": (0.25, "chance (4 options)")}
    compare_guide = (
        "Every checkpoint answered the same held-out multiple-choice questions. Avg is the accuracy "
        "averaged over task types (macro, the paper's headline), Acc the accuracy over all items (micro); "
        "per cognitive level (1 Schema Consolidation, 2 Episodic Indexing, 3 Cascading Reasoning) Avg "
        "averages that level's task types. An answer that names no option or several is invalid and wrong, "
        "never guessed. A checkpoint is useful where it beats chance and majority-position (the training "
        "items' most frequent answer letter for every question); answer-prior (each question's option most "
        "often right among the training items of its type, without frames, memory or question) shows how "
        "much the options' wording alone gives away."
    )

    def item_ids(self, evaluation: Evaluation) -> list[str]:
        return list(evaluation.candidates)

    def compare_rows(self, evaluation: Evaluation) -> list[dict[str, Any]]:
        """The model, then the majority-position baseline where it was scored: overall, then per level."""
        reports = [("model", evaluation.report)]
        for name in ("majority_position", "answer_prior"):
            if isinstance(evaluation.baselines.get(name), Mapping):
                reports.append((name.replace("_", "-"), evaluation.baselines[name]))
        rows = []
        for predictor, report in reports:
            invalid_by_level: dict[str, int] = {}
            for row in report["per_task"].values():
                if row["level"] is not None:
                    key = str(row["level"])
                    invalid_by_level[key] = invalid_by_level.get(key, 0) + row["invalid"]
            rows.append({"predictor": predictor, "level": "all", "n": report["n"], "avg": report["Avg"],
                         "acc": report["Acc"], "invalid": report["invalid"]})
            for level, row in report["per_level"].items():
                rows.append({"predictor": predictor, "level": level, "n": row["n"], "avg": row["avg"],
                             "acc": row["acc"], "invalid": invalid_by_level.get(level, 0)})
        return rows

    def default_objective(self, data: Mapping[str, Any]) -> str:
        return "val/qa_avg"

    def headline(self, evaluation: Evaluation) -> str:
        report = evaluation.report

        def pct(value):
            return "n/a" if value is None else f"{value:.1%}"

        return (
            f"Avg {pct(report['Avg'])}, Acc {pct(report['Acc'])}, invalid {report['invalid']}/{report['n']}"
        )
