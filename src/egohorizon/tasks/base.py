"""What every task knows, whatever its model: from raw model output to a scored, logged, printed split.

A task is torch-free, so ``egohorizon score``, the evaluation callback, ``eval.py`` and
``egohorizon compare`` can all share it without the training stack. The metrics themselves live in
``egohorizon.metrics``; a task only chooses them, names their log keys and renders their summary.

``egohorizon compare`` knows nothing of any task: it asks the task for the items an evaluation
scored (``item_ids``), the evaluation as table rows (``compare_rows``: one per predictor and group,
columns ``compare_groups`` + ``n`` + ``compare_metrics``), which figures to plot (``plot_metrics``)
and a paragraph that tells the page's reader how to read them (``compare_guide``). A new task
implements those four to be comparable; without them compare says so and stops.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.errors import ConfigError


@dataclass
class Evaluation:
    """A scored split: the structured report (SPEC §6 shape), the baselines' reports, the flat log
    keys (``{split}/{task}_...``) and the parsed predictions that were scored."""

    report: dict[str, Any]
    baselines: dict[str, Any]
    metrics: dict[str, float]
    candidates: dict[str, Any] = field(default_factory=dict)


class Task(ABC):
    """One task (forecast, qa, caption, ...): parse, score, flatten, summarise, name the objective."""

    name: str

    @classmethod
    def from_generation(cls, generation: Mapping[str, Any]) -> Task:
        """The task set up for a model's generation settings (a task that parses several sampled
        outputs needs to know how many were asked for); by default it needs none."""
        return cls()

    @abstractmethod
    def parse(self, texts: Sequence[str], item: Any = None) -> Any:
        """The prediction in one item's raw outputs, or None when nothing parses (never a guess)."""

    @abstractmethod
    def evaluate(
        self, items: Sequence[Any], predictions: Mapping[str, Any], split: str, **options: Any
    ) -> Evaluation:
        """Scores parsed predictions (item id -> prediction or None) on a split, with baselines."""

    @abstractmethod
    def summary_rows(self, evaluation: Evaluation | None) -> list[dict[str, Any]]:
        """One row per group the evaluation holds, model next to baselines."""

    @abstractmethod
    def format_summary(self, rows: list[dict[str, Any]], objective: Mapping[str, Any] | None = None,
                       title: str = "Held-out test days") -> str:
        """The table printed at the end of a run; ``title`` names the split (eval.py split=val: "Held-out
        val days")."""

    @abstractmethod
    def default_objective(self, data: Mapping[str, Any]) -> str:
        """The validation metric that ranks checkpoints by default, given the data settings."""

    @abstractmethod
    def headline(self, evaluation: Evaluation) -> str:
        """One log line: the split's main figures."""

    # -- eval.py's predictors (egohorizon.run.evaluation, one road for every task) -----------------

    # A task that eval.py can score with no model at all (forecasting: repeat-last, random and the habit
    # baselines on points) names its scorer of predictors, "module:function" with ``score_predictors``'
    # arguments, imported on use; None: the task scores a model (ckpt, or the untrained backbone). On the
    # class, so such a task registers nothing else; a name, not the function, so the task module need not
    # import its scorer (which imports it).
    predictor_scorer: ClassVar[str | None] = None
    # How an untrained backbone prompted in context decodes: the model config's generation with this
    # ``mode`` (forecasting: "in_prompt", one answer that lists every candidate); None: as configured.
    in_context_mode: ClassVar[str | None] = None

    @classmethod
    def scores_baselines_alone(cls) -> bool:
        return cls.predictor_scorer is not None

    @classmethod
    def in_context_generation(cls, generation: dict[str, Any]) -> dict[str, Any]:
        return generation if cls.in_context_mode is None else {**generation, "mode": cls.in_context_mode}

    def score_predictors(self, settings: Mapping[str, Any], datamodule: Any, evaluation: Evaluation | None,
                         out_dir: Any, split: str) -> dict[str, Any]:
        """eval.py's result for the held-out ``split``: ``task``, ``split``, ``n_points``, ``predictors``,
        ``metrics``, ``reports``, ``rows``, ``text`` (the summary) and the model's ``evaluation``.
        ``settings``: eval.yaml's predictors, embedder, n_random_draws, seed and llm block, as plain
        values; ``evaluation``: the ``model`` predictor's, None without one. The task's
        ``predictor_scorer`` where it names one, else the model's evaluation with the task's own
        baselines, as at the end of training."""
        if self.predictor_scorer is not None:
            import importlib

            module, _, function = self.predictor_scorer.partition(":")
            return getattr(importlib.import_module(module), function)(settings, datamodule, evaluation, out_dir, split)
        if evaluation is None:
            raise ConfigError(f"eval_task={self.name}: the task scores only a trained adapter (set ckpt=...)")
        rows = self.summary_rows(evaluation)
        return {
            "task": self.name,
            "split": split,
            "n_points": len(datamodule.eval_items(split)),
            "predictors": ["model", *evaluation.baselines],
            "metrics": dict(evaluation.metrics),
            "reports": {"model": evaluation.report, **evaluation.baselines},
            "rows": rows,
            "text": self.format_summary(rows, title=f"Held-out {split} days"),
            "evaluation": evaluation,
        }

    def prediction_records(
        self,
        items: Sequence[Any],
        texts: Mapping[str, Sequence[str]],
        predictions: Mapping[str, Any],
        model_id: str,
        prompt_name: str,
        prompt_version: str,
        seed: int | None,
    ) -> list[dict[str, Any]]:
        """One JSONL row per item: the parsed prediction's fields (``prediction_fields``), or the raw
        ``text`` when nothing usable parsed (so re-scoring counts it invalid again), the raw texts,
        model, prompt and seed."""
        rows = []
        for item in items:
            raw = list(texts.get(item.id, []))
            row: dict[str, Any] = {"id": item.id}
            fields = self.prediction_fields(predictions.get(item.id))
            if fields is not None:
                row.update(fields)
            else:
                row["text"] = raw[0] if raw else ""
            row.update(
                raw_texts=raw, model=model_id, prompt=prompt_name, prompt_version=prompt_version, seed=seed
            )
            rows.append(row)
        return rows

    prediction_field = "prediction"

    def prediction_fields(self, prediction: Any) -> dict[str, Any] | None:
        """A parsed prediction as record fields; None for an invalid one (its raw text is kept)."""
        return None if prediction is None else {self.prediction_field: prediction}

    def example_rows(
        self, items: Sequence[Any], evaluation: Evaluation, n: int
    ) -> tuple[list[str], list[list[Any]]]:
        """``n`` examples spread evenly over the items (sorted by id): id and what was predicted."""
        columns = ["id", self.prediction_field]
        ordered = sorted(items, key=lambda item: item.id)
        if n <= 0 or not ordered:
            return columns, []
        step = max(1, len(ordered) // n)
        return columns, [[item.id, evaluation.candidates.get(item.id)] for item in ordered[::step][:n]]

    # -- comparing checkpoints (egohorizon compare) -------------------------------------------------

    # Columns that name a group of the report (forecast: source, level, k); an overall row holds "all"
    # in each. The last one is a plot's x axis, the others make its panels.
    compare_groups: ClassVar[tuple[str, ...]] = ()
    # The figures of each row, in table order (numbers or None).
    compare_metrics: ClassVar[tuple[str, ...]] = ()
    # The figures that get one PNG each (the first is the headline: W&B bar charts, printed lines).
    plot_metrics: ClassVar[tuple[str, ...]] = ()
    # One paragraph (plain text) for the comparison page: what the figures mean, what a good one is.
    compare_guide: ClassVar[str] = ""
    # How a group is named in W&B keys (``compare/<figure>_<name>``, ``<checkpoint>/<figure>_<name>``):
    # each group column's value after its prefix (forecast: level "L", k "K" -> "L3_K1"), joined by "_";
    # a column without a prefix is named only where the rows hold several of its values.
    group_prefixes: ClassVar[dict[str, str]] = {}
    # A figure's reference level drawn as a dashed line, e.g. chance (forecast: S_norm 0 = random); a
    # predictor whose every value sits on it is shown by the line alone.
    plot_reference: ClassVar[dict[str, tuple[float, str]]] = {}

    def item_ids(self, evaluation: Evaluation) -> list[str]:
        """The ids of the items ``evaluation`` scored, every item once (scored invalid included):
        compare refuses checkpoints scored on different items."""
        raise ConfigError(
            f"the {self.name} task has no item_ids (tasks/base.py): egohorizon compare cannot check what "
            "was scored"
        )

    def compare_rows(self, evaluation: Evaluation) -> list[dict[str, Any]]:
        """The evaluation as long rows, the model's first: ``predictor`` (``model`` or a baseline's
        display name), each of ``compare_groups`` (overall row first, ``"all"`` in every group
        column), ``n``, and each of ``compare_metrics``. Read from the structured report, never from
        the flat log keys."""
        raise ConfigError(
            f"the {self.name} task has no compare_rows (tasks/base.py): egohorizon compare cannot tabulate it"
        )


def objective_line(objective: Mapping[str, Any] | None) -> list[str]:
    """The summary's last line: which validation metric chose the checkpoint, and its value."""
    if objective is None:
        return []
    value = objective.get("value")
    shown = "n/a" if value is None else f"{value:.4f}"
    return [f"Checkpoint chosen on validation: {objective['name']} = {shown}"]
