"""Side-by-side comparison of several checkpoints scored on the same held-out points.

Input: one scored evaluation per checkpoint (the SPEC §6 forecast report and its repeat-last baseline,
as ``egohorizon.tasks.forecast.evaluate`` returns them). Output: a table with one row per
checkpoint and (source, level, K) group plus the baselines (repeat-last-K, random), PNG plots of S_norm
and S per level and K, a JSON file, an HTML page, and optionally one W&B run holding the same.

Scoring is not done here: this module only arranges numbers that ``score_forecasts`` produced.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.errors import DataError

log = logging.getLogger(__name__)

REPEAT_LAST, RANDOM = "repeat-last-K", "random"
COLUMNS = ["checkpoint", "step", "source", "level", "k", "n", "S", "S_norm", "invalid", "S_rand"]


@dataclass
class CompareEntry:
    label: str                 # shown in tables and legends
    path: str                  # the checkpoint (or run folder) it came from
    global_step: int | None
    report: dict[str, Any]     # SPEC §6 forecast report: overall, groups, per_point
    baselines: dict[str, Any] = field(default_factory=dict)  # {"repeat_last": report without per_point}


# -- the table ---------------------------------------------------------------------------------------

def check_same_points(entries: Sequence[CompareEntry]) -> None:
    """Every checkpoint must have been scored on the same points, or the comparison means nothing."""
    if not entries:
        raise DataError("compare: no checkpoints to compare")
    reference = _point_ids(entries[0])
    for entry in entries[1:]:
        ids = _point_ids(entry)
        if ids != reference:
            raise DataError(f"compare: {entry.label} was scored on {len(ids)} points, {entries[0].label} on "
                            f"{len(reference)}; {len(ids ^ reference)} differ (evaluate them on one --points file)")


def _point_ids(entry: CompareEntry) -> set[str]:
    return {row["id"] for row in entry.report.get("per_point", [])}


def comparison_rows(entries: Sequence[CompareEntry]) -> list[dict[str, Any]]:
    """One row per checkpoint and group ("overall" first), then the two baselines' rows.

    The baselines come from the first entry: with the same points and seed every entry has the same
    repeat-last score and the same random draws (``check_same_points`` has made sure of the points).
    """
    check_same_points(entries)
    rows = []
    for entry in entries:
        rows += _report_rows(entry.label, entry.global_step, entry.report)
    first = entries[0]
    repeat = first.baselines.get("repeat_last")
    if repeat:
        rows += _report_rows(REPEAT_LAST, None, repeat)
    for row in _report_rows(RANDOM, None, first.report):
        # The random baseline's S is S_rand and, by the definition of S_norm, its S_norm is 0.
        rows.append({**row, "S": row["S_rand"], "S_norm": 0.0 if row["S_rand"] is not None else None,
                     "invalid": 0})
    return rows


def _report_rows(label: str, step: int | None, report: dict[str, Any]) -> list[dict[str, Any]]:
    groups = [{"source": "all", "level": "all", "k": "all", **report["overall"]}] + list(report["groups"])
    return [{"checkpoint": label, "step": step, "source": g["source"], "level": g["level"], "k": g["k"],
             "n": g["n"], "S": g.get("S"), "S_norm": g.get("S_norm"), "invalid": g.get("invalid"),
             "S_rand": g.get("S_rand")} for g in groups]


def checkpoint_labels(paths: Sequence[str | Path]) -> list[str]:
    """Short unique labels: the run folder's name with the checkpoint's stem (``run-a/last``)."""
    labels = []
    for raw in paths:
        path = Path(raw)
        if path.name == "adapter" or path.suffix in (".ckpt", ".adapter"):
            run = path.parent.parent.name if path.parent.name == "checkpoints" else path.parent.name
            labels.append(f"{run}/{path.stem}")
        else:
            labels.append(path.name)
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return unique


# -- plots -------------------------------------------------------------------------------------------

def plot_comparison(rows: Sequence[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """``S_norm.png`` and ``S.png`` (see ``comparison_figure``). Returns the files written."""
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for metric in ("S_norm", "S"):
        fig = comparison_figure(rows, metric)
        path = out_dir / f"{metric}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def comparison_figure(rows: Sequence[dict[str, Any]], metric: str):
    """A matplotlib figure of ``metric`` ("S_norm" or "S"): per level one panel, K on the x axis, one
    bar per checkpoint and baseline; on S_norm panels the random baseline (0) is a dashed line."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a cluster node
    import matplotlib.pyplot as plt

    group_rows = [r for r in rows if r["level"] != "all"]
    if not group_rows:
        raise DataError("compare: the reports hold no (level, K) groups to plot")
    series = [c for c in dict.fromkeys(r["checkpoint"] for r in group_rows)
              if not (metric == "S_norm" and c == RANDOM)]  # random's S_norm is 0: drawn as a line
    panels = sorted({(r["source"], r["level"]) for r in group_rows}, key=str)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels) + 1, 3.8), squeeze=False)
    for ax, (source, level) in zip(axes[0], panels):
        _bar_panel(ax, [r for r in group_rows if (r["source"], r["level"]) == (source, level)], series, metric)
        ax.set_title(f"level {level}" + (f" ({source})" if len({p[0] for p in panels}) > 1 else ""))
    axes[0][0].set_ylabel(metric + (" (0 = chance, 1 = perfect)" if metric == "S_norm" else " (raw)"))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    return fig


def _bar_panel(ax, rows: list[dict[str, Any]], series: list[str], metric: str) -> None:
    ks = sorted({r["k"] for r in rows})
    width = 0.8 / max(len(series), 1)
    for i, name in enumerate(series):
        values = {r["k"]: r[metric] for r in rows if r["checkpoint"] == name}
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(ks))]
        heights = [values.get(k) if values.get(k) is not None else 0.0 for k in ks]
        hatch = "//" if name in (REPEAT_LAST, RANDOM) else None
        bars = ax.bar(xs, heights, width=width, label=name, hatch=hatch, edgecolor="black", linewidth=0.4)
        ax.bar_label(bars, fmt="%.2f", fontsize=6, padding=1)
    if metric == "S_norm":
        # Bars stick to 0, so with every S_norm >= 0 autoscaling puts the x axis exactly on the random
        # line and hides it: keep 0 a margin inside the plot, and draw the line above spine and bars.
        ax.axhline(0.0, color="black", linestyle="--", linewidth=0.8, label="random (chance)", zorder=3)
        low, high = ax.get_ylim()
        margin = 0.06 * max(high - low, 0.1)
        ax.set_ylim(min(low, -margin), max(high, margin))
    ax.set_xticks(range(len(ks)), [f"K={k}" for k in ks])
    ax.grid(axis="y", alpha=0.3)


def page_title(n_checkpoints: int) -> str:
    return f"Checkpoint comparison ({n_checkpoints} checkpoint{'' if n_checkpoints == 1 else 's'})"


# -- files -------------------------------------------------------------------------------------------

def write_json(entries: Sequence[CompareEntry], rows: Sequence[dict[str, Any]], out_dir: Path,
               extra: dict[str, Any] | None = None) -> Path:
    data = {"checkpoints": [{"label": e.label, "path": e.path, "global_step": e.global_step} for e in entries],
            "rows": list(rows), **(extra or {})}
    path = out_dir / "comparison.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


READING_GUIDE = """
<p><b>How to read this.</b> Every checkpoint was scored on the same held-out points: S is the soft
edit-distance score of the best of N candidate trajectories (1 = the K predicted actions match the K
true ones in meaning and order). S_norm = (S &minus; S_rand) / (1 &minus; S_rand), where S_rand is the mean
S of random guesses (K events drawn at random from the evaluated events of the same source and level):
0 is chance (the dashed line), 1 is perfect, below 0 is worse than chance. A checkpoint is useful
where its S_norm is clearly above 0 and above repeat-last-K (the last K events of the context, a strong
baseline for routines). "invalid" counts points whose output could not be parsed (scored 0); a rising
invalid count explains a falling S. Compare rows with the same level and K only: longer horizons
(larger K) and coarser levels score differently by nature.</p>
"""


def write_html(rows: Sequence[dict[str, Any]], plots: Sequence[Path], out_dir: Path, title: str,
               notes: Sequence[str] = ()) -> Path:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4f}"
        return html.escape("" if value is None else str(value))

    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = []
    for row in rows:
        kind = "baseline" if row["checkpoint"] in (REPEAT_LAST, RANDOM) else ""
        body.append(f'<tr class="{kind}">' + "".join(f"<td>{cell(row[c])}</td>" for c in COLUMNS) + "</tr>")
    images = "".join(f'<figure><img src="{html.escape(p.name)}" alt="{html.escape(p.stem)}">'
                     f"<figcaption>{html.escape(p.stem)} per level and K</figcaption></figure>" for p in plots)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:80em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}} tr.baseline{{color:#666;font-style:italic}}
img{{max-width:100%}}</style></head><body>
<h1>{html.escape(title)}</h1>
{READING_GUIDE}
{''.join(f'<p>{html.escape(n)}</p>' for n in notes)}
{images}
<h2>Scores</h2>
<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>
</body></html>
"""
    path = out_dir / "index.html"
    path.write_text(page)
    return path


# -- W&B ---------------------------------------------------------------------------------------------

def log_to_wandb(rows: Sequence[dict[str, Any]], plots: Sequence[Path], out_dir: Path, project: str | None,
                 name: str, offline: bool, config: dict[str, Any] | None = None) -> str:
    """One W&B run with the table, a bar chart of S_norm per (level, K), the PNGs and a summary per
    checkpoint. Offline (files under ``out_dir/wandb``, ``wandb sync`` later) unless told otherwise.
    Returns the run's folder."""
    import wandb

    run = wandb.init(project=project or "egohorizon", name=name, job_type="compare", dir=str(out_dir),
                     mode="offline" if offline else "online", config=config or {}, reinit="finish_previous")
    try:
        # W&B tables want one type per column: "all" sits beside numbers in level/k, so those are text.
        as_text = {"checkpoint", "step", "source", "level", "k"}
        table = wandb.Table(columns=COLUMNS, data=[[_cell(row[c], c in as_text) for c in COLUMNS] for row in rows])
        logged: dict[str, Any] = {"compare/table": table}
        for path in plots:
            logged[f"compare/{path.stem}"] = wandb.Image(str(path))
        for (level, k) in sorted({(r["level"], r["k"]) for r in rows if r["level"] != "all"}, key=str):
            picked = [r for r in rows if (r["level"], r["k"]) == (level, k) and r["S_norm"] is not None]
            bars = wandb.Table(columns=["checkpoint", "S_norm"],
                               data=[[f"{r['checkpoint']} [{r['source']}]", r["S_norm"]] for r in picked])
            logged[f"compare/S_norm_L{level}_K{k}"] = wandb.plot.bar(bars, "checkpoint", "S_norm",
                                                                     title=f"S_norm, level {level}, K={k}")
        run.log(logged)
        for row in rows:
            suffix = "" if row["level"] == "all" else f"_L{row['level']}_K{row['k']}"
            for metric in ("S", "S_norm"):
                if row[metric] is not None:
                    run.summary[f"{row['checkpoint']}/{metric}{suffix}"] = row[metric]
        return str(Path(run.dir).parent)
    finally:
        run.finish()


def _cell(value: Any, as_text: bool) -> Any:
    if as_text:
        return "" if value is None else str(value)
    return None if value is None else float(value)
