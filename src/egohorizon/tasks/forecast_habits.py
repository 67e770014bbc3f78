"""The habit baselines (``metrics.habits``, SPEC §1) beside a forecaster: scored like any predictor, their
``no_history`` and ``no_clock`` counts per (source, level, K), the strongest rival chosen per group on
validation days, and the forecaster's paired difference to it with a 95 % bootstrap interval.

"Strongest" is the one of ``repeat_last, frequency, markov, time_of_day`` with the highest S_norm on the
validation points of that (source, level, K) (ties: that order); the difference is then taken on the
evaluated points, resampling both on the same draws (``metrics.bootstrap``). Torch-free.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from egohorizon.metrics.habits import HABIT_PREDICTORS, STRONGEST_AMONG, HabitHistory, habit_predictions
from egohorizon.schema import ForecastPoint

RULE_VALIDATION = "highest S_norm on the validation days"
RULE_SAME_POINTS = "highest S_norm on these same points (no validation figures given: favours the baseline)"
N_BOOT = 2000
NOT_COMPUTED = "habit baselines: not computed (no --history)"  # the commands that read only points files


def _group_key(row: Mapping[str, Any]) -> tuple[str, int, int]:
    return (row["source"], row["level"], row["k"])


def habit_candidates(name: str, points: Sequence[ForecastPoint], history: HabitHistory
                     ) -> tuple[dict[str, list[list[str]] | None], dict[tuple, dict[str, int]]]:
    """The baseline's candidates for every point and its counts per (source, level, K)."""
    groups: dict[tuple, list[ForecastPoint]] = defaultdict(list)
    for point in points:
        groups[(point.source, point.level, point.k)].append(point)
    predictions, counts = {}, {}
    for key, members in groups.items():
        answered, counts[key] = habit_predictions(name, members, history)
        predictions.update(answered)
    return predictions, counts


def score_habits(points: Sequence[ForecastPoint], history: HabitHistory, embedder, names=HABIT_PREDICTORS,
                 **options: Any) -> tuple[dict[str, dict], dict[str, dict]]:
    """``score_forecasts`` reports of the habit baselines on ``points`` (each group and ``overall`` with
    ``no_history`` and ``no_clock``; ``per_point`` kept to ``id, S, S_rand`` and the group for paired intervals), and
    their candidates (name -> point id -> candidates or None)."""
    from egohorizon.metrics.forecast import score_forecasts

    reports, candidates = {}, {}
    for name in names:
        predictions, counts = habit_candidates(name, points, history)
        report = slim(score_forecasts(points, predictions, embedder, **options))
        for group in report["groups"]:
            group.update(counts.get(_group_key(group), {"no_history": 0, "no_clock": 0}))
        for field in ("no_history", "no_clock"):
            report["overall"][field] = sum(c[field] for c in counts.values())
        reports[name], candidates[name] = report, predictions
    return reports, candidates


def slim(report: dict[str, Any]) -> dict[str, Any]:
    """A baseline's report with per-point rows cut to what a paired interval needs."""
    keep = ("id", "S", "S_rand", "source", "level", "k")
    rows = [{f: r[f] for f in keep if f in r} for r in report.get("per_point", [])]
    return {**report, "per_point": rows}


def strongest_by_group(reports: Mapping[str, Mapping[str, Any]]) -> dict[tuple, tuple[str, float]]:
    """(source, level, K) -> (name, S_norm) of the best of ``STRONGEST_AMONG`` in ``reports`` (name ->
    report); a group's None S_norm (no random pool) is passed over; ties go to the earlier name."""
    best: dict[tuple, tuple[str, float]] = {}
    for name in STRONGEST_AMONG:
        for group in (reports.get(name) or {}).get("groups", []):
            key, value = _group_key(group), group.get("S_norm")
            if value is not None and (key not in best or value > best[key][1]):
                best[key] = (name, float(value))
    return best


def versus_strongest(model_report: Mapping[str, Any], reports: Mapping[str, Mapping[str, Any]],
                     strongest: Mapping[tuple, tuple[str, float]], rule: str = RULE_VALIDATION,
                     n_boot: int = N_BOOT, seed: int = 0) -> list[dict[str, Any]]:
    """Per group: the strongest rival (chosen by ``rule``, its S_norm there as ``chosen_S_norm``), the
    model's and its S_norm on these points, and the paired difference with a 95 % percentile interval."""
    from egohorizon.metrics.bootstrap import bootstrap

    model = {r["id"]: r for r in model_report["per_point"]}
    rows = []
    for group in model_report["groups"]:
        key = _group_key(group)
        if key not in strongest:
            continue
        name, chosen = strongest[key]
        rival = {r["id"]: r for r in reports[name]["per_point"]}
        ids = [i for i, r in model.items() if _group_key(r) == key and r["S_rand"] is not None and i in rival]
        if not ids:
            continue
        s_rand = np.array([model[i]["S_rand"] for i in ids])
        s = {"model": np.array([model[i]["S"] for i in ids]), name: np.array([rival[i]["S"] for i in ids])}
        stats = bootstrap(s, s_rand, n_boot, seed, baseline=name)
        rows.append({"source": key[0], "level": key[1], "k": key[2], "n": len(ids), "strongest": name,
                     "rule": rule, "chosen_S_norm": chosen, "model_S_norm": stats["model"]["S_norm"],
                     "strongest_S_norm": stats[name]["S_norm"], "diff": stats["model"]["diff"],
                     "diff_lo": stats["model"]["diff_lo"], "diff_hi": stats["model"]["diff_hi"]})
    return rows


def versus_strongest_on(validation_points: Sequence[ForecastPoint], report: Mapping[str, Any],
                        baselines: Mapping[str, Mapping[str, Any]], history: HabitHistory, embedder,
                        options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The strongest rival of each group chosen on ``validation_points`` (repeat-last and the personal
    habits scored there with ``options``), and the model's paired difference to it on ``report``'s points."""
    from egohorizon.metrics.forecast import repeat_last_k, score_forecasts
    from egohorizon.metrics.habits import PERSONAL

    rivals, _ = score_habits(validation_points, history, embedder, names=PERSONAL, **options)
    repeat = {p.id: ([repeat_last_k(p)] if p.context else None) for p in validation_points}
    rivals["repeat_last"] = score_forecasts(validation_points, repeat, embedder, **options)
    return versus_strongest(report, baselines, strongest_by_group(rivals), seed=options["seed"])


def format_versus(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Lines under a summary table: per group, trained minus the strongest rival [95 % CI]."""
    if not rows:
        return []
    rivals = ", ".join(STRONGEST_AMONG)
    lines = [f"Trained model minus the strongest of {rivals} (chosen by {rows[0]['rule']}; paired bootstrap 95% CI):"]
    for r in rows:
        verdict = "wins" if r["diff_lo"] > 0 else "loses" if r["diff_hi"] < 0 else "not separable"
        lines.append(f"  {r['source']} L{r['level']} K={r['k']} (n {r['n']}): minus {r['strongest']} "
                     f"{r['diff']:+.3f} [{r['diff_lo']:+.3f}, {r['diff_hi']:+.3f}] ({verdict})")
    return lines


def habit_columns(evaluation_baselines: Mapping[str, Mapping[str, Any]], key: tuple) -> dict[str, Any]:
    """A summary row's habit columns for group ``key``: ``<name>_S``, ``_S_norm``, ``_no_history``, ``_no_clock``."""
    out: dict[str, Any] = {}
    for name in HABIT_PREDICTORS:
        for group in (evaluation_baselines.get(name) or {}).get("groups", []):
            if _group_key(group) == key:
                out.update({f"{name}_{f}": group.get(f) for f in ("S", "S_norm", "no_history", "no_clock")})
    return out


def format_habit_rows(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Lines under the summary table: per group, each habit baseline's S_norm (S) and, after the slash,
    its ``no_history`` points and ``no_clock`` slots; or why there are none."""
    names = [n for n in HABIT_PREDICTORS if any(f"{n}_S" in r for r in rows)]
    if not names:
        return ["habit baselines: not computed (no training-day events at hand)"]

    def cell(row: Mapping[str, Any], name: str) -> str:
        if row.get(f"{name}_S") is None:
            return f"{'n/a':>26}"
        norm = "   n/a" if row[f"{name}_S_norm"] is None else f"{row[f'{name}_S_norm']:6.3f}"
        counts = f"{row[f'{name}_no_history']}/{row[f'{name}_no_clock']}"
        return f"{norm} ({row[f'{name}_S']:6.3f}) {counts:>10}"

    lines = ["Habit baselines, learned from the training days only: S_norm (S) no_history/no_clock",
             f"{'group':>18}" + "".join(f" | {name:>26}" for name in names)]
    for row in rows:
        group = f"{row['source']} L{row['level']} K{row['k']}"
        lines.append(f"{group:>18}" + "".join(f" | {cell(row, name)}" for name in names))
    return lines


def habit_summary(evaluation) -> dict[str, Any]:
    """For a command that scores points files only (``bench forecast``): the habit baselines' ``overall``
    and ``groups`` and the model's difference to the strongest, chosen on these same points (no validation
    figures at hand, said in each row's ``rule``)."""
    reports = {name: evaluation.baselines[name] for name in HABIT_PREDICTORS if name in evaluation.baselines}
    if not reports:
        return {"habits": None, "vs_strongest": []}
    versus = versus_strongest(evaluation.report, evaluation.baselines, strongest_by_group(evaluation.baselines),
                              rule=RULE_SAME_POINTS)
    return {"habits": {n: {"overall": r["overall"], "groups": r["groups"]} for n, r in reports.items()},
            "vs_strongest": versus}


def format_habit_summary(summary: Mapping[str, Any]) -> list[str]:
    """``habit_summary``'s lines: one per habit baseline and group, then the difference to the strongest."""
    if not summary.get("habits"):
        return [NOT_COMPUTED]
    lines = ["habit baselines (training days of --split only): S_norm (S), no_history points, no_clock slots"]
    for name, report in summary["habits"].items():
        for g in report["groups"]:
            norm = "n/a" if g["S_norm"] is None else f"{g['S_norm']:.3f}"
            lines.append(f"  {name:>13} {g['source']} L{g['level']} K={g['k']}: {norm} ({g['S']:.3f}), "
                         f"{g['no_history']}, {g['no_clock']}")
    return lines + format_versus(summary["vs_strongest"])
