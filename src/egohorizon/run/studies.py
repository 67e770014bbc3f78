"""The two studies of NextMe-800 that ``eval.py`` reproduces, each a table (CSV, Markdown, JSON) and a PNG.

- ``python eval.py +sweep=context``: the same held-out points with 1 to 3,000 context events in
  exponential steps (the paper's Figure 5): S_norm against context length, per level and K.
  The candidate points do not depend on the context length (every point needs one context event),
  so each step scores the same targets. A model whose ``data.max_length`` cannot hold a long context
  sees its oldest events dropped; the table reports the mean context actually shown.
- ``python eval.py +sweep=levels``: S_norm per level L1-L5 at K = 1 and 10 (the score-by-level plot).

Every row carries each predictor's ``_n`` (points scored) and ``_S_norm_lo`` / ``_S_norm_hi``: a
percentile bootstrap interval over the group's points (``sweep.n_boot`` resamples, seeded; the grounding
study's ``bootstrap``). The levels plot draws them as error bars and names n under each level.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

def run_sweep(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """The study that ``conf/sweep/<name>.yaml`` names by ``_target_`` (a function of the config and the
    run folder): a new study is a function and a config file, no edit here."""
    from hydra.utils import get_method

    target = cfg.sweep.get("_target_")
    if not target:
        raise ConfigError(f"sweep {cfg.sweep.get('name')!r}: no _target_ naming its study function "
                          "(conf/sweep/context.yaml has one)")
    try:
        study = get_method(target)
    except (ImportError, AttributeError, ValueError) as error:  # hydra wraps the import error
        raise ConfigError(f"sweep._target_={target}: not a study function ({error})") from None
    return study(cfg, run_dir)


def grounding_study(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Issue 15: compares finished runs' scores (text, frames, memory, both); no model is loaded here."""
    from omegaconf import OmegaConf

    from egohorizon.studies.grounding import run_grounding_study

    runs = OmegaConf.to_container(cfg.sweep.runs, resolve=True)
    return {**run_grounding_study(runs, run_dir / "sweep_grounding", split=cfg.split, n_boot=cfg.sweep.n_boot,
                                  seed=cfg.seed, repeat_last=bool(cfg.sweep.get("repeat_last", False))),
            "run_dir": str(run_dir)}


def backtest_table_study(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Issue 38: the rolling backtest's runs (``sweep.runs``, a multirun folder of ``python train.py -m
    +sweep=backtest``) gathered into a table and a plot of S_norm against d; no model is loaded here."""
    from egohorizon.studies.backtest import gather_backtest, plot_backtest

    if not cfg.sweep.get("runs"):
        raise ConfigError("sweep.runs: not set; give the multirun folder of python train.py -m +sweep=backtest "
                          "(sweep.runs=outputs/backtest/multiruns/<time>)")
    rows, unfinished = gather_backtest(Path(str(cfg.sweep.runs)))
    out = run_dir / "sweep_backtest"
    write_table(rows, out)
    result = {"sweep": "backtest_table", "rows": rows, "unfinished": unfinished, "runs": str(cfg.sweep.runs),
              "table": str(out.with_suffix(".json")), "plot": str(plot_backtest(rows, out.with_suffix(".png"))),
              "run_dir": str(run_dir)}
    (run_dir / "report.json").write_text(json.dumps(result, indent=2, default=str))
    return result


def context_study(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """S_norm against the number of context events (NextMe-800's Figure 5)."""
    _forecasting_only(cfg, "context")
    return _curve_study(cfg, run_dir, "context", _context_rows(cfg, run_dir), plot_context)


def levels_study(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """S_norm per level L1-L5 at K = 1 and 10."""
    _forecasting_only(cfg, "levels")
    return _curve_study(cfg, run_dir, "levels", _level_rows(cfg, run_dir), plot_levels)


def _forecasting_only(cfg: DictConfig, name: str) -> None:
    if cfg.eval_task != "forecast":
        raise ConfigError(f"+sweep={name}: the studies are forecasting's (task=forecast), not {cfg.eval_task}'s")


def _curve_study(cfg: DictConfig, run_dir: Path, name: str, rows: list[dict], plot_rows) -> dict[str, Any]:
    out = run_dir / f"sweep_{name}"
    write_table(rows, out)
    plot = plot_rows(rows, out.with_suffix(".png"))
    result = {
        "sweep": name,
        "rows": rows,
        "table": str(out.with_suffix(".csv")),
        "plot": str(plot),
        "run_dir": str(run_dir),
    }
    (run_dir / "report.json").write_text(json.dumps(result, indent=2, default=str))
    return result


def _evaluate_with(
    cfg: DictConfig, run_dir: Path, tag: str, target, model, **data_overrides
) -> tuple[list[dict], Any]:
    """One step of a study: eval.py's one road (``evaluate_split``) on the data with ``data_overrides``,
    the model built once and reused; its rows with bootstrap intervals and the mean context shown."""
    from egohorizon.run.evaluation import evaluate_split

    result, model, datamodule = evaluate_split(cfg, target, run_dir / tag, model, **data_overrides)
    kept = datamodule.mean_context_shown("test")
    rows = add_intervals(result["rows"], result["reports"], _points_by_id(datamodule),
                         n_boot=int(cfg.sweep.get("n_boot", 1000)), seed=int(cfg.seed))
    return [{**row, "context_shown_mean": kept} for row in rows], model


# report name in the forecast result's "reports" -> the column prefix of its rows
REPORT_PREFIX = {"model": "forecast", "llm": "llm", "repeat_last": "repeat_last"}


def _points_by_id(datamodule) -> dict[str, Any]:
    """The points the forecast predictors scored (the datamodule's test slot, whatever the split's name)."""
    return {p.id: p for p in datamodule.points["test"]}


def add_intervals(rows: list[dict[str, Any]], reports: dict[str, dict], points: dict[str, Any], n_boot: int,
                  seed: int, level: float = 0.95) -> list[dict[str, Any]]:
    """Each predictor's ``<prefix>_S_norm_lo`` / ``_hi`` per (source, level, K) row, from its per-point S
    and S_rand; rows without that predictor's points are left as they are."""
    import numpy as np

    from egohorizon.studies.grounding import bootstrap

    out = [dict(row) for row in rows]
    for name, report in reports.items():
        prefix = REPORT_PREFIX.get(name)
        scored = _per_point(report, points) if prefix else None
        if not scored:
            continue
        groups: dict[tuple, list[dict]] = {}
        for row in scored:
            if row["S_rand"] is not None:  # S_norm is over the points with a random pool (as the report's)
                groups.setdefault((row["source"], row["level"], row["k"]), []).append(row)
        reported = {(g["source"], g["level"], g["k"]): g.get("S_norm") for g in report.get("groups", [])}
        for row in out:
            key = (row["source"], row["level"], row["k"])
            members = groups.get(key)
            if members and not _same_points(members, reported.get(key)):
                log.warning("%s %s: per-point scores do not give the report's S_norm; no interval", prefix, key)
            elif members:
                s = np.array([m["S"] for m in members])
                stats = bootstrap({prefix: s}, np.array([m["S_rand"] for m in members]), n_boot, seed,
                                  baseline=None, level=level)[prefix]
                row[f"{prefix}_S_norm_lo"], row[f"{prefix}_S_norm_hi"] = stats["lo"], stats["hi"]
    return out


def _same_points(members: list[dict], reported: float | None) -> bool:
    """The per-point rows give the report's S_norm (a rescored baseline scored the same points)."""
    from egohorizon.studies.grounding import s_norm

    if reported is None:
        return True
    import numpy as np

    value = s_norm(np.array([m["S"] for m in members]), np.array([m["S_rand"] for m in members]))
    return bool(np.isclose(value, reported, atol=1e-6, equal_nan=True))


def _per_point(report: dict[str, Any], points: dict[str, Any]) -> list[dict] | None:
    """The report's per-point rows; a baseline report kept without them (the model's run: repeat-last's
    were dropped) is rescored with its own settings, so S and S_rand match its S_norm."""
    if report.get("per_point") is not None:
        return report["per_point"]
    settings = report.get("settings")
    if not settings or not points:
        return None
    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.metrics.forecast import score_forecasts
    from egohorizon.tasks.forecast import repeat_last_predictions

    chosen = list(points.values())
    rescored = score_forecasts(chosen, repeat_last_predictions(chosen), get_embedder(settings["embedder"]),
                               n_random_draws=settings["n_random_draws"], seed=settings["seed"],
                               max_candidates=settings["max_candidates"])
    return rescored["per_point"]


def _context_rows(cfg: DictConfig, run_dir: Path) -> list[dict[str, Any]]:
    from egohorizon.run.eval_target import resolve_eval_target

    rows, model, target = [], None, resolve_eval_target(cfg)
    for n_context in cfg.sweep.n_context:
        log.info("context sweep: %d events", n_context)
        new, model = _evaluate_with(cfg, run_dir, f"context_{n_context:05d}", target, model,
                                    n_context=int(n_context))
        rows += [{"n_context": int(n_context), **row} for row in new]
    return rows


def _level_rows(cfg: DictConfig, run_dir: Path) -> list[dict[str, Any]]:
    from egohorizon.run.eval_target import resolve_eval_target

    rows, model, target = [], None, resolve_eval_target(cfg)
    for level in cfg.sweep.levels:
        new, model = _evaluate_with(
            cfg, run_dir, f"level_{level}", target, model, levels=[int(level)], ks=[int(k) for k in cfg.sweep.ks]
        )
        rows += new
    return rows


def write_table(rows: list[dict[str, Any]], stem: Path) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(stem.with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    stem.with_suffix(".json").write_text(json.dumps(rows, indent=2))


def _cell(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else ("" if value is None else str(value))


def _series(rows: list[dict[str, Any]], key: str) -> dict[tuple[str, int, int], list[dict[str, Any]]]:
    series: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get(key) is not None:
            series.setdefault((row["source"], row["level"], row["k"]), []).append(row)
    return series


def plot_context(rows: list[dict[str, Any]], path: Path) -> Path:
    """S_norm against the number of context events (log axis); solid: model, dashed: repeat-last."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = sorted({(r["source"], r["level"], r["k"]) for r in rows})
    colours = {group: f"C{i}" for i, group in enumerate(groups)}  # one colour per group, both predictors
    for key, style, label in (
        ("forecast_S_norm", "-o", "model"),
        ("repeat_last_S_norm", "--", "repeat-last"),
    ):
        for (source, level, k), points in sorted(_series(rows, key).items()):
            points = sorted(points, key=lambda r: r["n_context"])
            name = f"{label} {source + ' ' if source else ''}L{level} K={k}"
            ax.plot(
                [r["n_context"] for r in points],
                [r[key] for r in points],
                style,
                color=colours[(source, level, k)],
                label=name,
            )
    ax.set_xscale("log")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("context events (most recent)")
    ax.set_ylabel("S_norm (0 = random, 1 = perfect)")
    ax.set_title("Forecasting score against context length")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_levels(rows: list[dict[str, Any]], path: Path) -> Path:
    """The levels figure (``levels_figure``) as a PNG."""
    import matplotlib.pyplot as plt

    fig = levels_figure(rows)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


LEVEL_SERIES = (("forecast", "model"), ("llm", "llm"), ("repeat_last", "repeat-last"))


def levels_figure(rows: list[dict[str, Any]]):
    """Grouped bars: S_norm per level, one panel per K, each predictor side by side with its bootstrap
    interval as an error bar (where the row has one), and the points scored (n) under each level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = sorted({row["k"] for row in rows})
    fig, axes = plt.subplots(1, max(1, len(ks)), figsize=(5 * max(1, len(ks)), 4.2), squeeze=False)
    drawn = [(p, label) for p, label in LEVEL_SERIES if any(r.get(f"{p}_S_norm") is not None for r in rows)]
    width = 0.8 / max(1, len(drawn))
    for ax, k in zip(axes[0], ks):
        chosen = sorted((r for r in rows if r["k"] == k), key=lambda r: r["level"])
        levels = [r["level"] for r in chosen]
        for j, (prefix, label) in enumerate(drawn):
            offset = (j - (len(drawn) - 1) / 2) * width
            values = [r.get(f"{prefix}_S_norm") for r in chosen]
            ax.bar([lv + offset for lv in levels], [v or 0.0 for v in values], width=width, label=label,
                   yerr=_error_bars(chosen, prefix), capsize=3)
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.use_sticky_edges = False  # room above and below the error bars, also at S_norm 0
        ax.margins(y=0.08)
        ax.set_xticks(levels, [f"L{r['level']}\nn={_points_scored(r)}" for r in chosen])
        ax.set_title(f"K = {k}")
        ax.set_ylabel("S_norm (0 = random), 95% bootstrap CI")
        ax.legend(fontsize=8)
    fig.suptitle("Forecasting score by level (n: held-out points per level)", fontsize=10)
    fig.tight_layout()
    return fig


def _error_bars(rows: list[dict[str, Any]], prefix: str):
    """matplotlib's (2, n) yerr from the rows' intervals; 0 where a row has none (drawn as no bar)."""
    below, above = [], []
    for row in rows:
        value, lo, hi = (row.get(f"{prefix}_S_norm{s}") for s in ("", "_lo", "_hi"))
        usable = None not in (value, lo, hi) and not (math.isnan(lo) or math.isnan(hi))  # NaN: degenerate
        below.append(max(value - lo, 0.0) if usable else 0.0)
        above.append(max(hi - value, 0.0) if usable else 0.0)
    return [below, above]


def _points_scored(row: dict[str, Any]) -> str:
    counts = {int(row[f"{p}_n"]) for p, _ in LEVEL_SERIES if row.get(f"{p}_n") is not None}
    return "/".join(str(n) for n in sorted(counts)) or "?"
