"""The forecast task: raw forecaster outputs to candidates, scores, baselines, prediction records,
flat log keys and the summary table.

Shared by the evaluation callback (during training), ``eval.py`` (checkpoints, in-context backbones,
baselines) and ``egohorizon compare``, so all report exactly the same figures. The scoring itself is
``egohorizon.metrics.forecast.score_forecasts`` (SPEC §1); nothing here re-implements it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from egohorizon.metrics.habits import HABIT_PREDICTORS
from egohorizon.metrics.parsing import close_stopped_reply, parse_forecast_output
from egohorizon.schema import ForecastPoint
from egohorizon.schema.forecast_groups import metric_key
from egohorizon.tasks.base import Evaluation, Task, objective_line

MODES = ("sequences", "in_prompt")
# What becomes of a candidate's length (model.generation.actions): scored as written, its first K actions
# kept, or written under the constraint that no list closes before K actions (models.forecast) and then cut
# to K. A point asks for exactly K actions (SPEC §2); cutting is the forecaster's choice, made on validation.
ACTIONS = ("as_written", "first_k", "exactly_k")


def candidates_from_texts(
    texts: Sequence[str], mode: str = "sequences", num_candidates: int = 3
) -> list[list[str]] | None:
    """Candidates of one point from its raw outputs; None when nothing parsed (an invalid prediction).

    ``sequences``: each output is one sampled answer; its first parsed trajectory is one candidate.
    ``in_prompt``: one output that lists the candidates itself (in-context prompting).
    """
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    if mode == "in_prompt":
        parsed = parse_forecast_output(texts[0]) if texts else None
        return parsed[:num_candidates] if parsed else None
    candidates = []
    for text in texts:
        parsed = parse_forecast_output(text)
        if parsed:
            candidates.append(parsed[0])
    return candidates[:num_candidates] or None


def repeat_last_predictions(points: Sequence[ForecastPoint]) -> dict[str, list[list[str]] | None]:
    """The repeat-last-K baseline as predictions (one candidate each; None when the context is empty)."""
    from egohorizon.metrics.forecast import repeat_last_k

    return {p.id: ([repeat_last_k(p)] if p.context else None) for p in points}


def evaluate(
    points: Sequence[ForecastPoint],
    candidates: Mapping[str, list[list[str]] | None],
    embedder,
    split: str,
    n_random_draws: int = 5,
    seed: int = 0,
    prefix: str = "forecast",
    max_candidates: int = 3,
    history=None,
    validation_points: Sequence[ForecastPoint] | None = None,
) -> Evaluation:
    """Scores ``candidates`` and the repeat-last baseline on ``points``; the random baseline is the
    report's ``S_rand`` (same seeded draws for all, so they share one chance level).

    ``max_candidates``: how many candidates the predictor was asked for (best-of-N); the random
    baseline draws as many, so a predictor asked for 5 is compared with a random best-of-5.
    ``history``: a ``metrics.habits.HabitHistory`` of the run's training days; with it the habit
    baselines are scored too, and with ``validation_points`` the report's ``vs_strongest`` holds the
    paired difference to the strongest rival of each group, chosen on those validation points.
    """
    from egohorizon.metrics.forecast import score_forecasts
    from egohorizon.tasks.forecast_habits import score_habits, slim, versus_strongest_on

    options = {"n_random_draws": n_random_draws, "seed": seed, "max_candidates": max_candidates}
    report = score_forecasts(points, candidates, embedder, **options)
    repeat = score_forecasts(points, repeat_last_predictions(points), embedder, **options)
    metrics = flat_metrics(report, split, prefix)
    metrics.update(flat_metrics(repeat, split, "repeat_last", with_random=False))
    baselines = {"repeat_last": slim(repeat)}
    if history is not None:
        habits, _ = score_habits(points, history, embedder, **options)
        baselines.update(habits)
        for name, habit in habits.items():  # keys as repeat-last's, plus the counts SPEC §1 reports beside them
            metrics.update(flat_metrics(habit, split, name, with_random=False))
            metrics.update({f"{split}/{name}_{f}": float(habit["overall"][f]) for f in ("no_history", "no_clock")})
        if validation_points:
            report["vs_strongest"] = versus_strongest_on(validation_points, report, baselines, history, embedder,
                                                         options)
    return Evaluation(report=report, baselines=baselines, metrics=metrics, candidates=dict(candidates))


def group_suffix(group: Mapping[str, Any], several_sources: bool) -> str:
    base = metric_key(group["level"], group["k"])
    return f"{group['source']}_{base}" if several_sources else base


def flat_metrics(
    report: Mapping[str, Any], split: str, prefix: str, with_random: bool = True
) -> dict[str, float]:
    """``{split}/{prefix}_S_L3_K10``-style keys for every (source, level, K) group, plus overall.

    Keys: ``_S`` (raw), ``_S_norm`` (0 = chance, 1 = perfect), ``_invalid_rate``, ``_n``, and with
    ``with_random`` the random baseline ``{split}/random_S_...``. The source appears in the key only
    when the report holds more than one source.
    """
    groups = report["groups"]
    several = len({g["source"] for g in groups}) > 1
    out: dict[str, float] = {}
    rows = [("", report["overall"])] + [("_" + group_suffix(g, several), g) for g in groups]
    for suffix, row in rows:
        for name in ("S", "S_norm"):
            if row.get(name) is not None:
                out[f"{split}/{prefix}_{name}{suffix}"] = float(row[name])
        out[f"{split}/{prefix}_invalid_rate{suffix}"] = row["invalid"] / row["n"] if row["n"] else 0.0
        out[f"{split}/{prefix}_n{suffix}"] = float(row["n"])
        if with_random and row.get("S_rand") is not None:
            out[f"{split}/random_S{suffix}"] = float(row["S_rand"])
    return out


def prediction_records(
    points: Sequence[ForecastPoint],
    texts: Mapping[str, Sequence[str]],
    candidates: Mapping[str, list[list[str]] | None],
    model_id: str,
    prompt_name: str,
    prompt_version: str,
    seed: int | None,
) -> list[dict[str, Any]]:
    """JSONL rows in the SPEC §6 prediction format, with the raw texts, model, prompt and seed.

    A valid prediction carries ``candidates``; an invalid one carries only ``text`` (its first raw
    output), so re-scoring the file with ``egohorizon score`` counts it invalid again.
    """
    return ForecastTask().prediction_records(
        points, texts, candidates, model_id, prompt_name, prompt_version, seed
    )


def example_rows(
    points: Sequence[ForecastPoint], evaluation: Evaluation, n: int, context_tail: int = 3
) -> tuple[list[str], list[list[Any]]]:
    """``n`` examples spread evenly over the points (sorted by id): what the logger's table shows."""
    columns = ["id", "level", "k", "context_tail", "targets", "candidates", "S", "repeat_last"]
    if n <= 0 or not points:
        return columns, []
    ordered = sorted(points, key=lambda p: p.id)
    step = max(1, len(ordered) // n)
    per_point = {row["id"]: row for row in evaluation.report["per_point"]}
    repeat = repeat_last_predictions(ordered)
    rows = []
    for point in ordered[::step][:n]:
        tail = " | ".join(e["text"] for e in point.context[-context_tail:])
        rows.append(
            [
                point.id,
                point.level,
                point.k,
                tail,
                " | ".join(point.targets),
                " || ".join(" | ".join(c) for c in (evaluation.candidates.get(point.id) or []))
                or "(invalid)",
                round(per_point[point.id]["S"], 4),
                " | ".join((repeat[point.id] or [[]])[0]),
            ]
        )
    return columns, rows


def summary_rows(evaluation: Evaluation | None) -> list[dict[str, Any]]:
    """One row per (source, level, K) the evaluation holds: model vs repeat-last vs random, each
    as S and S_norm (random's S_norm is 0 by definition), the habit baselines (``<name>_S`` ...) when
    they were scored and ``vs_strongest`` (the model minus the strongest rival), from the report."""
    if evaluation is None:
        return []
    from egohorizon.tasks.forecast_habits import habit_columns

    repeat = {(g["source"], g["level"], g["k"]): g for g in evaluation.baselines["repeat_last"]["groups"]}
    versus = {(r["source"], r["level"], r["k"]): r for r in evaluation.report.get("vs_strongest", [])}
    rows = []
    for group in evaluation.report["groups"]:
        key = (group["source"], group["level"], group["k"])
        baseline = repeat.get(key, {})
        rows.append(
            {
                "source": group["source"],
                "level": group["level"],
                "k": group["k"],
                "n": group["n"],
                "model_S": group["S"],
                "model_S_norm": group["S_norm"],
                "model_invalid_rate": group["invalid"] / group["n"] if group["n"] else 0.0,
                "repeat_last_S": baseline.get("S"),
                "repeat_last_S_norm": baseline.get("S_norm"),
                "random_S": group["S_rand"],
                "random_S_norm": 0.0 if group["S_rand"] is not None else None,
                **habit_columns(evaluation.baselines, key),
                **({"vs_strongest": versus[key]} if key in versus else {}),
            }
        )
    return rows


def format_summary(rows: list[dict[str, Any]], objective: Mapping[str, Any] | None = None,
                   title: str = "Held-out test days") -> str:
    """The table ``make demo`` ends with: every (source, level, K) of the held-out test days, and the
    validation objective that chose the checkpoint."""
    if not rows:
        return "(no test scores: was the test split empty?)"

    def num(value: float | None) -> str:
        return "   n/a" if value is None else f"{value:6.3f}"

    width = max(6, *(len(str(r["source"])) for r in rows))
    lines = [
        f"{title}: normalised score S_norm (raw S in brackets); 0 = chance, 1 = perfect",
        f"{'source':>{width}} {'L':>2} {'K':>3} {'n':>5}  {'trained model':>22}  {'repeat-last':>17}  {'random':>17}",
    ]
    for r in rows:
        lines.append(
            f"{r['source']:>{width}} {r['level']:>2} {r['k']:>3} {r['n']:>5}  "
            f"{num(r['model_S_norm'])} ({num(r['model_S'])}) inv {r['model_invalid_rate']:4.0%}  "
            f"{num(r['repeat_last_S_norm'])} ({num(r['repeat_last_S'])})  "
            f"{num(r['random_S_norm'])} ({num(r['random_S'])})"
        )
    from egohorizon.tasks.forecast_habits import format_habit_rows, format_versus

    versus = format_versus([r["vs_strongest"] for r in rows if r.get("vs_strongest")])
    return "\n".join(lines + [""] + format_habit_rows(rows) + versus + objective_line(objective))


REPEAT_LAST, RANDOM = "repeat-last-K", "random"  # the baselines' names in compare's tables and plots

COMPARE_GUIDE = (
    "Every checkpoint was scored on the same held-out points: S is the soft edit-distance score of the "
    "best of N candidate trajectories (1 = the K predicted actions match the K true ones in meaning and "
    "order). S_norm = (S \u2212 S_rand) / (1 \u2212 S_rand), where S_rand is the mean S of random guesses "
    "(K events drawn at random from the evaluated events of the same source and level): 0 is chance, 1 "
    "is perfect, below 0 is worse than chance. A checkpoint is useful where its S_norm is clearly above 0 "
    "and above repeat-last-K (the last K events of the context, a strong baseline for routines) and the "
    "habit baselines (frequency, markov, time_of_day: the person's own training days; frequency_all and "
    "markov_all: everyone's). "
    '"invalid" counts points whose output could not be parsed (scored 0); a rising invalid count '
    "explains a falling S. Compare rows with the same level and K only: longer horizons (larger K) and "
    "coarser levels score differently by nature."
)


def _report_rows(predictor: str, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    groups = [{"source": "all", "level": "all", "k": "all", **report["overall"]}, *report["groups"]]
    return [
        {
            "predictor": predictor,
            "source": g["source"],
            "level": g["level"],
            "k": g["k"],
            "n": g["n"],
            "S": g.get("S"),
            "S_norm": g.get("S_norm"),
            "invalid": g.get("invalid"),
            "S_rand": g.get("S_rand"),
        }
        for g in groups
    ]


class ForecastTask(Task):
    """NextMe-800 forecasting: best-of-N soft edit distance, normalised against random (SPEC §1)."""

    name = "forecast"
    prediction_field = "candidates"
    # eval.py: the baselines, an in-context backbone (one answer lists every candidate) and an llm side by side
    predictor_scorer = "egohorizon.tasks.forecast_predictors:score_predictors"
    in_context_mode = "in_prompt"

    def __init__(self, mode: str = "sequences", num_candidates: int = 3, actions: str = "as_written",
                 mbr_samples: int | None = None):
        """``mbr_samples``: N sampled outputs of which the ``num_candidates`` returned are chosen by minimum
        Bayes risk (``metrics.mbr``) at scoring time, with the scoring embedder; None: the first ones."""
        if mode not in MODES:
            raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
        if actions not in ACTIONS:
            raise ValueError(f"actions: expected one of {ACTIONS}, got {actions!r}")
        if mbr_samples is not None and (mode != "sequences" or int(mbr_samples) <= num_candidates):
            raise ValueError(f"mbr_samples: needs mode 'sequences' and more samples than num_candidates "
                             f"({num_candidates}), got {mbr_samples!r} with mode {mode!r}")
        self.mode, self.num_candidates, self.actions = mode, num_candidates, actions
        self.mbr_samples = None if mbr_samples is None else int(mbr_samples)

    @classmethod
    def from_generation(cls, generation: Mapping[str, Any]) -> ForecastTask:
        return cls(mode=generation["mode"], num_candidates=int(generation["num_candidates"]),
                   actions=generation.get("actions", "as_written"), mbr_samples=generation.get("mbr_samples"))

    def parse(self, texts: Sequence[str], item: Any = None) -> list[list[str]] | None:
        n = self.mbr_samples or self.num_candidates  # with MBR, every sample is read; the task keeps 3
        if self.actions == "as_written":
            return candidates_from_texts(texts, self.mode, n)
        if item is None:
            raise ValueError(f"actions={self.actions!r} cuts a candidate to its point's K: parse needs the point")
        # Generation stopped each candidate once its list held K actions, inside the open list.
        closed = [close_stopped_reply(text, item.k) for text in texts]
        candidates = candidates_from_texts(closed, self.mode, n)
        return None if candidates is None else [candidate[: item.k] for candidate in candidates]

    def evaluate(
        self,
        items: Sequence[ForecastPoint],
        predictions: Mapping[str, list[list[str]] | None],
        split: str,
        embedder="minilm",
        n_random_draws: int = 5,
        seed: int = 0,
        prefix: str = "forecast",
        history=None,
        validation_points: Sequence[ForecastPoint] | None = None,
    ) -> Evaluation:
        """``embedder``: an ``egohorizon.backbones.embedders`` embedder or its name (loaded once);
        ``history`` and ``validation_points``: the habit baselines' training days and the points that
        choose the strongest rival (``ForecastDataModule.eval_options``)."""
        if isinstance(embedder, str):
            embedder = _named_embedder(embedder)
        if self.mbr_samples:  # the parsed samples (up to mbr_samples) -> the num_candidates MBR keeps
            from egohorizon.metrics.mbr import mbr_candidates

            predictions = mbr_candidates(predictions, embedder, self.num_candidates)
        return evaluate(items, predictions, embedder, split, n_random_draws, seed, prefix, self.num_candidates,
                        history=history, validation_points=validation_points)

    def summary_rows(self, evaluation: Evaluation | None) -> list[dict[str, Any]]:
        return summary_rows(evaluation)

    def format_summary(self, rows: list[dict[str, Any]], objective: Mapping[str, Any] | None = None,
                       title: str = "Held-out test days") -> str:
        return format_summary(rows, objective, title)

    def headline(self, evaluation: Evaluation) -> str:
        overall = evaluation.report["overall"]
        s_norm = "n/a" if overall["S_norm"] is None else f"{overall['S_norm']:.4f}"
        return f"S {overall['S'] or 0.0:.4f}, S_norm {s_norm}, invalid {overall['invalid']}/{overall['n']}"

    def prediction_fields(self, prediction) -> dict[str, Any] | None:
        return {"candidates": prediction} if prediction else None  # no candidate left: invalid

    def example_rows(self, items, evaluation: Evaluation, n: int):
        return example_rows(items, evaluation, n)

    def parse_record(self, record, item: Any = None) -> list[list[str]] | None:
        """A prediction file's row (SPEC §6): its ``candidates``, else every trajectory its raw
        ``text`` lists. Not cut to ``num_candidates`` here: scoring keeps the first N and counts the
        predictions that offered more (``truncated``)."""
        return record.candidates if record.candidates is not None else parse_forecast_output(record.text)

    # -- egohorizon compare --------------------------------------------------------------------
    compare_groups = ("source", "level", "k")
    compare_metrics = ("S", "S_norm", "invalid", "S_rand")
    plot_metrics = ("S_norm", "S")
    compare_guide = COMPARE_GUIDE
    group_prefixes: ClassVar[dict[str, str]] = {"level": "L", "k": "K"}
    plot_reference: ClassVar[dict[str, tuple[float, str]]] = {"S_norm": (0.0, "random (chance)")}

    def item_ids(self, evaluation: Evaluation) -> list[str]:
        return [row["id"] for row in evaluation.report["per_point"]]

    def compare_rows(self, evaluation: Evaluation) -> list[dict[str, Any]]:
        """The model, repeat-last-K, the habit baselines and random, each overall and per (source, level, K). The random
        baseline's S is the report's S_rand and its S_norm is 0 by the definition of S_norm."""
        rows = _report_rows("model", evaluation.report)
        repeat = evaluation.baselines.get("repeat_last")
        if repeat:
            rows += _report_rows(REPEAT_LAST, repeat)
        for name in HABIT_PREDICTORS:  # the habit baselines, where the run had its training days at hand
            if name in evaluation.baselines:
                rows += _report_rows(name, evaluation.baselines[name])
        for row in _report_rows(RANDOM, evaluation.report):
            chance = row["S_rand"]
            rows.append({**row, "S": chance, "S_norm": 0.0 if chance is not None else None, "invalid": 0})
        return rows

    def default_objective(self, data: Mapping[str, Any]) -> str:
        levels, ks = list(data.get("levels") or []), list(data.get("ks") or [])
        if not levels or not ks:
            raise ValueError("the forecast objective needs data.levels and data.ks")
        return f"val/forecast_S_norm_{metric_key(levels[0], ks[0])}"


@functools.lru_cache(maxsize=4)
def _named_embedder(name: str):
    """Embedders by name, loaded once per process (MiniLM takes a second to load)."""
    from egohorizon.backbones.embedders import get_embedder

    return get_embedder(name)
