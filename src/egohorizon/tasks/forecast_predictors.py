"""Forecasting's predictors beside a trained adapter (``python eval.py``): the repeat-last and random
baselines alone, an untrained backbone or any chat model (``llm``) prompted in context, and the table
that puts them side by side per (source, level, K).

Only forecasting scores predictors without a trained adapter, so this lives with the task, not in
``egohorizon.run``: the run hands over plain settings, the datamodule (its points and prompts) and the
``model`` predictor's evaluation when there is one (``tasks.PREDICTOR_SCORERS`` names this module)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError
from egohorizon.schema import write_jsonl
from egohorizon.tasks import PREDICTORS
from egohorizon.tasks.forecast import (
    candidates_from_texts,
    evaluate,
    flat_metrics,
    group_suffix,
    prediction_records,
    repeat_last_predictions,
)


def score_predictors(settings: Mapping[str, Any], datamodule, model_evaluation, out_dir: Path,
                     split: str) -> dict[str, Any]:
    """Scores ``settings["predictors"]`` on the datamodule's test slot; returns the report dict.

    ``settings``: predictors, embedder, n_random_draws, seed and the ``llm`` block of eval.yaml.
    ``model_evaluation``: the ``model`` predictor's ``Evaluation`` (its repeat-last baseline inside),
    or None when ``model`` is not among the predictors."""
    from egohorizon.metrics.embedders import get_embedder

    predictors = list(settings["predictors"])
    unknown = set(predictors) - set(PREDICTORS)
    if unknown:
        raise ConfigError(f"predictors: unknown {sorted(unknown)}; choose from {list(PREDICTORS)}")
    points = datamodule.points["test"]
    if model_evaluation is not None:
        metrics = dict(model_evaluation.metrics)
        report = {"model": model_evaluation.report, **model_evaluation.baselines}
        by_prefix = {"forecast": model_evaluation.report, "repeat_last": model_evaluation.baselines["repeat_last"]}
    else:  # the baselines need no model
        baseline = evaluate(points, repeat_last_predictions(points), get_embedder(settings["embedder"]), split,
                            settings["n_random_draws"], settings["seed"], prefix="repeat_last")
        metrics = flat_metrics(baseline.report, split, "repeat_last")
        report = {"repeat_last": baseline.report}
        by_prefix = {"repeat_last": baseline.report}
        write_jsonl(out_dir / "predictions" / "repeat_last.jsonl",
                    [{"id": pid, "candidates": c} for pid, c in baseline.candidates.items() if c])
    if "llm" in predictors:
        llm = llm_evaluation(settings, datamodule, out_dir, split)
        metrics.update(llm.metrics)
        report["llm"] = by_prefix["llm"] = llm.report
    if "repeat_last" not in predictors:
        report.pop("repeat_last", None)
        by_prefix.pop("repeat_last", None)
        metrics = {k: v for k, v in metrics.items() if "/repeat_last_" not in k}
    if "random" not in predictors:
        metrics = {k: v for k, v in metrics.items() if "/random_" not in k}
    rows = group_rows(by_prefix, with_random="random" in predictors)
    return {
        "task": "forecast",
        "split": split,
        "n_points": len(points),
        "predictors": predictors,
        "metrics": metrics,
        "reports": report,
        "rows": rows,
        "text": format_rows(rows),
        "evaluation": model_evaluation,  # the model's, for egohorizon compare; not written to report.json
    }


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

    names = [(p, label) for p, label in (("forecast", "model"), ("llm", "llm"), ("repeat_last", "repeat-last"))
             if any(f"{p}_S" in r for r in rows)]
    header = f"{'group':>18} {'n':>5}" + "".join(f" | {label + ' S_norm (S) inv':>26}" for _, label in names)
    lines = [header + f" | {'random S':>8}"]
    for r in rows:
        n = next((r[f"{p}_n"] for p, _ in names if f"{p}_n" in r), 0)
        line = f"{r['group']:>18} {int(n):>5}"
        for p, _ in names:
            inv = r.get(f"{p}_invalid_rate")
            rate = "" if inv is None else f"{inv:4.0%}"
            line += f" | {num(r.get(f'{p}_S_norm'))} ({num(r.get(f'{p}_S'))}) {rate:>5}"
        lines.append(line + f" | {num(r.get('random_S')):>8}")
    return "\n".join(lines)
