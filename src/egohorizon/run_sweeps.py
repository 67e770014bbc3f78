"""The two studies of NextMe-800 that ``eval.py`` reproduces, each a table (CSV, Markdown, JSON) and a PNG.

- ``python eval.py +sweep=context``: the same held-out points with 1 to 3,000 context events in
  exponential steps (the paper's Figure 5): S_norm against context length, per level and K.
  The candidate points do not depend on the context length (every point needs one context event),
  so each step scores the same targets. A model whose ``data.max_length`` cannot hold a long context
  sees its oldest events dropped; the table reports the mean context actually shown.
- ``python eval.py +sweep=levels``: S_norm per level L1-L5 at K = 1 and 10 (the score-by-level plot).
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

SWEEPS = ("context", "levels")


def run_sweep(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    name = cfg.sweep.name
    if name == "grounding":  # issue 15: compares finished runs' scores, no model is loaded here
        from omegaconf import OmegaConf

        from egohorizon.pipelines.grounding import run_grounding_study

        runs = OmegaConf.to_container(cfg.sweep.runs, resolve=True)
        return {**run_grounding_study(runs, run_dir / "sweep_grounding", split=cfg.split,
                                      n_boot=cfg.sweep.n_boot, seed=cfg.seed,
                                      repeat_last=bool(cfg.sweep.get("repeat_last", False))),
                "run_dir": str(run_dir)}
    if name not in SWEEPS:
        raise ConfigError(f"sweep.name: expected one of {SWEEPS}, got {name!r}")
    if (cfg.get("eval_task") or "forecast") != "forecast":
        raise ConfigError(f"+sweep={name}: the studies are forecasting's (task=forecast), not {cfg.eval_task}'s")
    rows = _context_rows(cfg, run_dir) if name == "context" else _level_rows(cfg, run_dir)
    out = run_dir / f"sweep_{name}"
    write_table(rows, out)
    plot = (
        plot_context(rows, out.with_suffix(".png"))
        if name == "context"
        else plot_levels(rows, out.with_suffix(".png"))
    )
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
    cfg: DictConfig, run_dir: Path, tag: str, model, **data_overrides
) -> tuple[list[dict], Any]:
    from egohorizon.run_eval import (
        build_eval_datamodule,
        build_eval_model,
        evaluate_predictors,
        prompt_settings,
    )

    datamodule = build_eval_datamodule(cfg, **prompt_settings(cfg), **data_overrides)
    if "model" in cfg.predictors:
        if model is None:
            model = build_eval_model(cfg, datamodule)
        else:  # the same model on new points: its tokenizer
            datamodule.set_tokenizer(model.backbone.load_tokenizer())
    result = evaluate_predictors(cfg, datamodule, model, run_dir / tag, cfg.split)
    kept = datamodule.mean_context_shown("test")
    return [{**row, "context_shown_mean": kept} for row in result["rows"]], model


def _context_rows(cfg: DictConfig, run_dir: Path) -> list[dict[str, Any]]:
    rows, model = [], None
    for n_context in cfg.sweep.n_context:
        log.info("context sweep: %d events", n_context)
        new, model = _evaluate_with(cfg, run_dir, f"context_{n_context:05d}", model, n_context=int(n_context))
        rows += [{"n_context": int(n_context), **row} for row in new]
    return rows


def _level_rows(cfg: DictConfig, run_dir: Path) -> list[dict[str, Any]]:
    rows, model = [], None
    for level in cfg.sweep.levels:
        new, model = _evaluate_with(
            cfg, run_dir, f"level_{level}", model, levels=[int(level)], ks=[int(k) for k in cfg.sweep.ks]
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
    """Grouped bars: S_norm per level, one panel per K, model and repeat-last side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = sorted({row["k"] for row in rows})
    fig, axes = plt.subplots(1, max(1, len(ks)), figsize=(5 * max(1, len(ks)), 4), squeeze=False)
    for ax, k in zip(axes[0], ks):
        chosen = sorted((r for r in rows if r["k"] == k), key=lambda r: r["level"])
        levels = [r["level"] for r in chosen]
        for offset, (key, label) in zip(
            (-0.2, 0.2), (("forecast_S_norm", "model"), ("repeat_last_S_norm", "repeat-last"))
        ):
            values = [r.get(key) for r in chosen]
            if any(v is not None for v in values):
                ax.bar([lv + offset for lv in levels], [v or 0.0 for v in values], width=0.4, label=label)
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_xticks(levels, [f"L{lv}" for lv in levels])
        ax.set_title(f"K = {k}")
        ax.set_ylabel("S_norm (0 = random)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
