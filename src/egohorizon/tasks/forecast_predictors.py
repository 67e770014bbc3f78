"""Forecasting's predictors beside a trained adapter (``python eval.py``): the repeat-last and random
baselines alone, an untrained backbone or any chat model (``llm``) prompted in context, and the table
that puts them side by side per (source, level, K).

Only forecasting scores predictors without a trained adapter, so this lives with the task, not in
``egohorizon.run``: the run hands over plain settings, the datamodule (its points and prompts) and the
``model`` predictor's evaluation when there is one (``ForecastTask.predictor_scorer`` names this module)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError
from egohorizon.schema import write_jsonl
from egohorizon.tasks import HABIT_PREDICTORS, PREDICTORS
from egohorizon.tasks.forecast import (
    candidates_from_texts,
    evaluate,
    group_suffix,
    prediction_records,
    repeat_last_predictions,
)


def score_predictors(settings: Mapping[str, Any], datamodule, model_evaluation, out_dir: Path,
                     split: str) -> dict[str, Any]:
    """Scores ``settings["predictors"]`` on the datamodule's test slot; returns the report dict.

    ``settings``: predictors, embedder, n_random_draws, seed and the ``llm`` block of eval.yaml.
    ``model_evaluation``: the ``model`` predictor's ``Evaluation`` (its repeat-last and, where the
    datamodule has the training days, habit baselines inside), or None when ``model`` is not among the
    predictors."""
    from egohorizon.metrics.embedders import get_embedder

    predictors = list(settings["predictors"])
    unknown = set(predictors) - set(PREDICTORS)
    if unknown:
        raise ConfigError(f"predictors: unknown {sorted(unknown)}; choose from {list(PREDICTORS)}")
    points = datamodule.points["test"]
    history = datamodule.eval_options("test").get("history")
    if model_evaluation is not None:
        metrics = dict(model_evaluation.metrics)
        report = {"model": model_evaluation.report, **model_evaluation.baselines}
        by_prefix = {"forecast": model_evaluation.report, **model_evaluation.baselines}
    else:  # the baselines need no model
        embedder = get_embedder(settings["embedder"])
        baseline = evaluate(points, repeat_last_predictions(points), embedder, split, settings["n_random_draws"],
                            settings["seed"], prefix="repeat_last", history=history)
        metrics = dict(baseline.metrics)  # repeat-last's keys with random's, and the habit baselines'
        report = {**baseline.baselines, "repeat_last": baseline.report}
        by_prefix = dict(report)
        write_jsonl(out_dir / "predictions" / "repeat_last.jsonl",
                    [{"id": pid, "candidates": c} for pid, c in baseline.candidates.items() if c])
    if "llm" in predictors:
        llm = llm_evaluation(settings, datamodule, out_dir, split)
        metrics.update(llm.metrics)
        report["llm"] = by_prefix["llm"] = llm.report
    if history is not None:
        write_habit_predictions(points, history, [p for p in predictors if p in HABIT_PREDICTORS], out_dir)
    for name in ("repeat_last", *HABIT_PREDICTORS):
        if name not in predictors:
            report.pop(name, None)
            by_prefix.pop(name, None)
            metrics = {k: v for k, v in metrics.items() if _predictor_of(k) != name}
    if "random" not in predictors:
        metrics = {k: v for k, v in metrics.items() if "/random_" not in k}
    rows = group_rows(by_prefix, with_random="random" in predictors)
    text = format_rows(rows)
    if any(p in HABIT_PREDICTORS for p in predictors):
        text += "\n" + _habit_notes(history, model_evaluation)
    return {
        "task": "forecast",
        "split": split,
        "n_points": len(points),
        "predictors": predictors,
        "metrics": metrics,
        "reports": report,
        "rows": rows,
        "text": text,
        "evaluation": model_evaluation,  # the model's, for egohorizon compare; not written to report.json
    }


def _predictor_of(key: str) -> str:
    """The predictor a log key belongs to (``test/markov_all_S_L3_K1`` -> ``markov_all``, not ``markov``)."""
    name = key.split("/", 1)[-1]
    known = sorted(("repeat_last", "random", "forecast", "llm", *HABIT_PREDICTORS), key=len, reverse=True)
    return next((p for p in known if name.startswith(f"{p}_")), "")


def _habit_notes(history, model_evaluation) -> str:
    from egohorizon.tasks.forecast_habits import format_versus

    if history is None:
        return "habit baselines: not computed (no day split and events at hand: points read from a file)"
    versus = (model_evaluation.report.get("vs_strongest") or []) if model_evaluation is not None else []
    return "\n".join(format_versus(versus)) or "habit baselines: learned from the split's training days only"


def write_habit_predictions(points, history, names, out_dir: Path) -> None:
    """``predictions/<name>.jsonl`` of each habit baseline (SPEC §6 rows; a point without history has none)."""
    from egohorizon.tasks.forecast_habits import habit_candidates

    for name in names:
        candidates, _ = habit_candidates(name, points, history)
        write_jsonl(out_dir / "predictions" / f"{name}.jsonl",
                    [{"id": pid, "candidates": c, "model": name} for pid, c in candidates.items() if c])


def llm_evaluation(settings: Mapping[str, Any], datamodule, out_dir: Path, split: str):
    """The ``llm`` predictor: each point's prompt (asking for ``num_candidates`` trajectories) sent to an
    ``egohorizon.llm`` backend; each answer parsed into candidates and scored like the model's."""
    from egohorizon.llm import make_backend
    from egohorizon.metrics.embedders import get_embedder

    conf = dict(settings["llm"])
    if not conf.get("model"):
        raise ConfigError("predictor llm: set llm.model (a model name on the server, or a hub id / local path)")
    backend = make_backend(conf["model"], base_url=conf.get("base_url"), cache_dir=conf.get("cache_dir"),
                           **(conf.get("options") or {}))
    n = int(conf["num_candidates"])
    seed = int(settings["seed"])
    points = datamodule.points["test"]
    prompts = [datamodule.render_prompt(point, n_candidates=n) for point in points]
    answers = backend.generate_many(prompts, max_new_tokens=int(conf["max_new_tokens"]),
                                    temperature=float(conf["temperature"]), seed=seed, n=1)
    texts = {point.id: list(answer) for point, answer in zip(points, answers)}
    candidates = {pid: candidates_from_texts(t, "in_prompt", n) for pid, t in texts.items()}
    evaluation = evaluate(points, candidates, get_embedder(settings["embedder"]), split,
                          settings["n_random_draws"], seed, prefix="llm", max_candidates=n)
    prompt = datamodule.prompt
    rows = prediction_records(points, texts, candidates, backend.model_id, prompt.name, prompt.version, seed)
    made = backend.generation_record()  # a local model's dtype and stop rule
    write_jsonl(out_dir / "predictions" / "llm.jsonl", [{**row, **made} for row in rows])
    return evaluation


def group_rows(reports: dict[str, dict[str, Any]], with_random: bool = True) -> list[dict[str, Any]]:
    """One row per (source, level, K), every predictor side by side, from the structured reports
    (``{"forecast" | "llm" | "repeat_last": report}``): ``<predictor>_S``, ``_S_norm``,
    ``_invalid_rate``, ``_n``, and the random baseline's ``random_S`` (its S_rand)."""
    rows: dict[tuple, dict[str, Any]] = {}
    for report in reports.values():
        several = len({g["source"] for g in report["groups"]}) > 1
        for g in report["groups"]:
            rows.setdefault(
                (g["source"], g["level"], g["k"]),
                {"group": group_suffix(g, several), "source": g["source"], "level": g["level"], "k": g["k"]},
            )
    for prefix, report in reports.items():
        for g in report["groups"]:
            row = rows[(g["source"], g["level"], g["k"])]
            row.update({
                f"{prefix}_S": g["S"],
                f"{prefix}_S_norm": g["S_norm"],
                f"{prefix}_invalid_rate": g["invalid"] / g["n"] if g["n"] else 0.0,
                f"{prefix}_n": float(g["n"]),
            })
            if with_random and g.get("S_rand") is not None:
                row["random_S"] = g["S_rand"]
    return [rows[key] for key in sorted(rows)]


def format_rows(rows: list[dict[str, Any]]) -> str:
    """One line per group: each predictor's S_norm with its raw S (and invalid rate), random's S."""

    def num(value: Any) -> str:
        return "   n/a" if value is None else f"{value:6.3f}"

    known = (("forecast", "model"), ("llm", "llm"), ("repeat_last", "repeat-last"), *((h, h) for h in HABIT_PREDICTORS))
    names = [(p, label) for p, label in known if any(f"{p}_S" in r for r in rows)]
    widths = {p: max(22, len(label + " S_norm (S) inv")) for p, label in names}
    header = f"{'group':>18} {'n':>5}" + "".join(f" | {label + ' S_norm (S) inv':>{widths[p]}}" for p, label in names)
    lines = [header + f" | {'random S':>8}"]
    for r in rows:
        n = next((r[f"{p}_n"] for p, _ in names if f"{p}_n" in r), 0)
        line = f"{r['group']:>18} {int(n):>5}"
        for p, _ in names:
            inv = r.get(f"{p}_invalid_rate")
            rate = "" if inv is None else f"{inv:4.0%}"
            cell = f"{num(r.get(f'{p}_S_norm'))} ({num(r.get(f'{p}_S'))}) {rate:>5}"
            line += f" | {cell:>{widths[p]}}"
        lines.append(line + f" | {num(r.get('random_S')):>8}")
    return "\n".join(lines)
