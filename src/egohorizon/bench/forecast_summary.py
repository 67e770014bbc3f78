"""A ``bench forecast`` run's ``OUT/summary.json`` and printed table, recomputed from OUT/predictions.jsonl
at the end of every run.

The scores are ``tasks.forecast.evaluate`` (the evaluation callback's, eval.py's and ``egohorizon score
forecast``'s code): ``overall``, ``groups`` (one per source, level and K) and ``per_point`` are the SPEC §6
report that ``score forecast --gold POINTS --pred OUT/predictions.jsonl --out R`` writes for the same
embedder, draws and seed. ``table`` puts each group's model figures next to repeat-last-K and random on
the same points (random's S is the group's S_rand; its S_norm is 0 by definition), with the mean number
of context events the prompts showed; ``per_k`` does the same for each K over all sources and levels,
pooled as ``overall`` is (the columns of NextMe-800's Table 3). Nothing here depends on the time, the machine or OUT's path.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from egohorizon.schema import ForecastPoint


def _context_figures(shown: Sequence[int], asked: int | None) -> dict[str, Any]:
    return {"asked": asked, "mean": sum(shown) / len(shown) if shown else None, "min": min(shown, default=None),
            "max": max(shown, default=None),
            "points_with_fewer": None if asked is None else sum(1 for n in shown if n < asked)}


def summarize(points: Sequence[ForecastPoint], rows: Mapping[str, Mapping[str, Any]], run: Mapping[str, Any],
              embedder, draws: int, history=None) -> dict[str, Any]:
    """The summary of ``points`` (the run's selection, in file order) from their lines; a point without a
    line (its model failed in this run) is scored as invalid and listed in ``unfinished``. ``history``
    (``--history`` and ``--split``): the habit baselines are scored beside it (``habits``, ``vs_strongest``)."""
    from egohorizon.tasks.forecast import evaluate, summary_rows
    from egohorizon.tasks.forecast_habits import habit_summary

    done = [rows[p.id] for p in points if p.id in rows]
    candidates = {r["id"]: r.get("candidates") for r in done}
    evaluation = evaluate(points, candidates, embedder, "test", draws, run["seed"], prefix="model",
                          max_candidates=run["n_candidates"], history=history)
    report = evaluation.report
    shown_by_group: dict[tuple, list[int]] = defaultdict(list)
    for row in done:
        shown_by_group[(row["source"], row["level"], row["k"])].append(row["context_shown"])
    table = []
    for row in summary_rows(evaluation):
        shown = shown_by_group.get((row["source"], row["level"], row["k"]), [])
        table.append({**row, "context_shown_mean": sum(shown) / len(shown) if shown else None})
    per_k = _per_k(points, report, done, embedder, draws, run)
    repeat = evaluation.baselines["repeat_last"]
    return {
        **run,
        "embedder": report["settings"]["embedder"],
        "draws": draws,
        "n_points": len(points),
        "answered": len(done),
        "unfinished": [p.id for p in points if p.id not in rows],
        "context_shown": _context_figures([r["context_shown"] for r in done], run["context_events"]),
        "overall": report["overall"],
        "groups": report["groups"],
        "table": table,
        "per_k": per_k,
        "repeat_last": {"overall": repeat["overall"], "groups": repeat["groups"]},
        "per_point": report["per_point"],
        "settings": report["settings"],
        **habit_summary(evaluation),
    }


def _per_k(points: Sequence[ForecastPoint], report: Mapping[str, Any], done: Sequence[Mapping[str, Any]], embedder,
           draws: int, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per K over all sources and levels (NextMe-800's Table 3 has a column per K), pooled from the
    per-point scores as ``overall`` is; repeat-last-K scored per point with the same options as ``evaluate``."""
    from egohorizon.metrics.forecast import pooled_summary, score_forecasts
    from egohorizon.tasks.forecast import repeat_last_predictions

    repeat = score_forecasts(points, repeat_last_predictions(points), embedder, n_random_draws=draws,
                             seed=run["seed"], max_candidates=run["n_candidates"])["per_point"]
    rows = []
    for k in sorted({p.k for p in points}):
        model = pooled_summary([r for r in report["per_point"] if r["k"] == k])
        baseline = pooled_summary([r for r in repeat if r["k"] == k])
        shown = [r["context_shown"] for r in done if r["k"] == k]
        rows.append({"k": k, "n": model["n"], "model_S": model["S"], "model_S_norm": model["S_norm"],
                     "model_invalid_rate": model["invalid"] / model["n"] if model["n"] else 0.0,
                     "repeat_last_S": baseline["S"], "repeat_last_S_norm": baseline["S_norm"],
                     "random_S": model["S_rand"], "context_shown_mean": sum(shown) / len(shown) if shown else None})
    return rows


def write_summary(path: Path, summary: Mapping[str, Any]) -> Path:
    from egohorizon.atomic_files import write_json_atomic

    write_json_atomic(path, summary)
    return path


def _head(summary: Mapping[str, Any]) -> str:
    from egohorizon.metrics.report import fmt

    context = summary["context_shown"]
    if summary["context_events"] is None:
        shown = f"the points' own context (mean {fmt(context['mean'], 1)} events)"
    else:
        shown = (f"the {summary['context_events']} most recent events (shown: mean {fmt(context['mean'], 1)}; "
                 f"{context['points_with_fewer']} point(s) carry fewer)")
    decoding = "greedy" if not summary["temperature"] else f"temperature {summary['temperature']}"
    return (f"{summary['model']} ({summary['backend']}), protocol {summary['protocol']} (prompt {summary['prompt']} "
            f"v{summary['prompt_version']}): {shown}, {summary['n_candidates']} candidates, {decoding}, "
            f"embedder {summary['embedder']}, {summary['draws']} random draws")


def format_summary(summary: Mapping[str, Any]) -> str:
    """The printed table: per (source, level, K) the model's S, S_norm and invalid share next to
    repeat-last-K and random on the same points, then all points pooled."""
    from egohorizon.metrics.report import table

    rows = [[r["source"], r["level"], r["k"], r["n"], r["model_S"], r["model_S_norm"], r["model_invalid_rate"],
             r["repeat_last_S"], r["repeat_last_S_norm"], r["random_S"], r["context_shown_mean"]]
            for r in summary["table"]]
    ks = [r["k"] for r in summary["table"]]
    if len(ks) > len(set(ks)):  # some K spans several sources or levels
        rows += [["all", "all", r["k"], r["n"], r["model_S"], r["model_S_norm"], r["model_invalid_rate"],
                  r["repeat_last_S"], r["repeat_last_S_norm"], r["random_S"], r["context_shown_mean"]]
                 for r in summary["per_k"]]  # one K over every source and level: Table 3's columns
    overall, repeat = summary["overall"], summary["repeat_last"]["overall"]
    rows.append(["all", "all", "all", overall["n"], overall["S"], overall["S_norm"],
                 overall["invalid"] / overall["n"] if overall["n"] else 0.0, repeat["S"], repeat["S_norm"],
                 overall["S_rand"], summary["context_shown"]["mean"]])
    text = _head(summary) + "\n" + table(
        ["source", "L", "K", "n", "S", "S_norm", "invalid", "repeat-last S", "repeat-last S_norm", "random S",
         "context"], rows)
    text += (f"S_norm = (S - S_rand) / (1 - S_rand): 0 = chance (random trajectories from these points' targets), "
             f"1 = perfect. invalid: {overall['invalid']} of {overall['n']} replies unreadable (scored 0)\n")
    from egohorizon.tasks.forecast_habits import format_habit_summary

    text += "".join(f"{line}\n" for line in format_habit_summary(summary))
    if summary["unfinished"]:
        text += (f"unfinished (model failures, scored invalid): {len(summary['unfinished'])}, first "
                 f"{summary['unfinished'][0]}; rerun the same command to finish\n")
    return text
