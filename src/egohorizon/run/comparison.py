"""Side-by-side comparison of several checkpoints of one task scored on the same held-out items.

Input: one scored evaluation per checkpoint (``egohorizon.tasks``' ``Evaluation``), turned into a
``CompareEntry`` by the checkpoint's task. Output: a table with one row per checkpoint and group plus
the task's baselines, one PNG per figure the task plots, a JSON file, an HTML page, and optionally
one W&B run holding the same.

Nothing here knows a task: the columns, rows, plotted figures, reference lines and the page's reading
guide all come from the task (``Task.compare_rows`` and its neighbours in tasks/base.py). Scoring is
not done here either: this module only arranges numbers the task's evaluation produced.
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
from egohorizon.tasks import Evaluation, Task, get_task

log = logging.getLogger(__name__)

MODEL = "model"  # the predictor name of a checkpoint's own rows in Task.compare_rows


@dataclass
class CompareEntry:
    label: str                 # shown in tables and legends
    path: str                  # the checkpoint (or adapter) it came from
    global_step: int | None
    task: str                  # the egohorizon.tasks name it was evaluated with
    rows: list[dict[str, Any]] = field(default_factory=list)  # Task.compare_rows: model, then baselines
    item_ids: list[str] = field(default_factory=list)         # the items scored (Task.item_ids)
    eval_dir: str | None = None  # its evaluation's folder (predictions, report), when evaluated here


def entry_from_evaluation(label: str, path: str, global_step: int | None, task: Task,
                          evaluation: Evaluation, eval_dir: str | None = None) -> CompareEntry:
    return CompareEntry(label=label, path=path, global_step=global_step, task=task.name,
                        rows=task.compare_rows(evaluation), item_ids=task.item_ids(evaluation), eval_dir=eval_dir)


# -- the table ---------------------------------------------------------------------------------------

def check_comparable(entries: Sequence[CompareEntry]) -> None:
    """One task, and every checkpoint scored on the same items, or the comparison means nothing."""
    if not entries:
        raise DataError("compare: no checkpoints to compare")
    tasks = {entry.task for entry in entries}
    if len(tasks) > 1:
        listed = ", ".join(f"{e.label} ({e.task})" for e in entries)
        raise DataError(f"compare: checkpoints of different tasks ({listed}); compare one task at a time")
    reference = set(entries[0].item_ids)
    for entry in entries[1:]:
        ids = set(entry.item_ids)
        if ids != reference:
            raise DataError(f"compare: {entry.label} was scored on {len(ids)} items, {entries[0].label} on "
                            f"{len(reference)}; {len(ids ^ reference)} differ (evaluate them on the same "
                            "held-out items: one --points file, one data config)")


def table_columns(task: Task) -> list[str]:
    return ["checkpoint", "step", *task.compare_groups, "n", *task.compare_metrics]


def comparison_rows(entries: Sequence[CompareEntry]) -> list[dict[str, Any]]:
    """Every checkpoint's rows, then the baselines' rows (named by the task).

    The baselines come from the first entry: on the same items every entry scores the same baselines
    (``baseline_notes`` says where they do not, e.g. runs trained on different days).
    """
    check_comparable(entries)
    rows = []
    for entry in entries:
        rows += [_row(entry.label, entry.global_step, r, False) for r in entry.rows if r["predictor"] == MODEL]
    rows += [_row(r["predictor"], None, r, True) for r in entries[0].rows if r["predictor"] != MODEL]
    return rows


def _row(checkpoint: str, step: int | None, row: dict[str, Any], baseline: bool) -> dict[str, Any]:
    return {"checkpoint": checkpoint, "step": step, **{k: v for k, v in row.items() if k != "predictor"},
            "baseline": baseline}


def baseline_notes(entries: Sequence[CompareEntry]) -> list[str]:
    """A line per checkpoint whose baselines differ from the first one's (the table shows the first's)."""
    first = [r for r in entries[0].rows if r["predictor"] != MODEL]
    notes = []
    for entry in entries[1:]:
        if [r for r in entry.rows if r["predictor"] != MODEL] != first:
            notes.append(f"The baselines scored beside {entry.label} differ from those beside {entries[0].label} "
                         "(shown): they depend on what the run's data holds, e.g. its training days.")
            log.warning(notes[-1])
    return notes


def is_overall(row: dict[str, Any], task: Task) -> bool:
    return all(row[c] == "all" for c in task.compare_groups)


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

def plot_comparison(rows: Sequence[dict[str, Any]], task: Task, out_dir: str | Path) -> list[Path]:
    """``<figure>.png`` for each of the task's ``plot_metrics`` (see ``comparison_figure``)."""
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for metric in task.plot_metrics:
        fig = comparison_figure(rows, task, metric)
        path = out_dir / f"{metric}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def comparison_figure(rows: Sequence[dict[str, Any]], task: Task, metric: str):
    """A matplotlib figure of ``metric``: one bar per checkpoint and baseline for each value of the
    task's last group column (the x axis), one panel per value of the other group columns. Overall
    rows are left out when the report has groups. The task's reference level for the figure (chance)
    is a dashed line kept inside the plot."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a cluster node
    import matplotlib.pyplot as plt

    if not task.compare_groups:
        raise DataError(f"compare: the {task.name} task names no group columns to plot")
    *panel_keys, x_key = task.compare_groups
    group_rows = [r for r in rows if not is_overall(r, task)] or list(rows)
    if not group_rows:
        raise DataError("compare: no rows to plot")
    reference = task.plot_reference.get(metric)
    series = [c for c in dict.fromkeys(r["checkpoint"] for r in group_rows)
              if not (reference is not None and all(r[metric] == reference[0]
                                                    for r in group_rows if r["checkpoint"] == c))]
    panels = sorted({tuple(r[k] for k in panel_keys) for r in group_rows}, key=str)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels) + 1, 3.8), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        chosen = [r for r in group_rows if tuple(r[k] for k in panel_keys) == panel]
        _bar_panel(ax, chosen, series, metric, x_key, reference)
        ax.set_title(", ".join(f"{k} {v}" for k, v in zip(panel_keys, panel)) or task.name)
    axes[0][0].set_ylabel(metric)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    return fig


def _bar_panel(ax, rows: list[dict[str, Any]], series: list[str], metric: str, x_key: str,
               reference: tuple[float, str] | None) -> None:
    xs_values = sorted({r[x_key] for r in rows}, key=str)
    width = 0.8 / max(len(series), 1)
    for i, name in enumerate(series):
        values = {r[x_key]: r[metric] for r in rows if r["checkpoint"] == name}
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(xs_values))]
        heights = [values.get(x) if values.get(x) is not None else 0.0 for x in xs_values]
        hatch = "//" if any(r["baseline"] for r in rows if r["checkpoint"] == name) else None
        bars = ax.bar(xs, heights, width=width, label=name, hatch=hatch, edgecolor="black", linewidth=0.4)
        ax.bar_label(bars, fmt="%.2f", fontsize=6, padding=1)
    if reference is not None:
        # Bars stick to the reference (0), so autoscaling would put the x axis exactly on its line and
        # hide it: keep it a margin inside the plot, and draw the line above spine and bars.
        level, label = reference
        ax.axhline(level, color="black", linestyle="--", linewidth=0.8, label=label, zorder=3)
        low, high = ax.get_ylim()
        margin = 0.06 * max(high - low, 0.1)
        ax.set_ylim(min(low, level - margin), max(high, level + margin))
    ax.set_xticks(range(len(xs_values)), [f"{x_key}={x}" for x in xs_values])
    ax.grid(axis="y", alpha=0.3)


def page_title(n_checkpoints: int, task: str | None = None) -> str:
    what = f"{task} checkpoint" if task else "checkpoint"
    return f"Checkpoint comparison ({n_checkpoints} {what}{'' if n_checkpoints == 1 else 's'})"


# -- files -------------------------------------------------------------------------------------------

def write_json(entries: Sequence[CompareEntry], rows: Sequence[dict[str, Any]], out_dir: Path,
               extra: dict[str, Any] | None = None) -> Path:
    data = {"task": entries[0].task if entries else None,
            "checkpoints": [{"label": e.label, "path": e.path, "global_step": e.global_step,
                             **({"eval_dir": e.eval_dir} if e.eval_dir else {})} for e in entries],
            "rows": list(rows), **(extra or {})}
    path = out_dir / "comparison.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


def write_html(rows: Sequence[dict[str, Any]], task: Task, plots: Sequence[Path], out_dir: Path, title: str,
               notes: Sequence[str] = ()) -> Path:
    columns = table_columns(task)

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4f}"
        return html.escape("" if value is None else str(value))

    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        kind = "baseline" if row["baseline"] else ""
        body.append(f'<tr class="{kind}">' + "".join(f"<td>{cell(row.get(c))}</td>" for c in columns) + "</tr>")
    images = "".join(f'<figure><img src="{html.escape(p.name)}" alt="{html.escape(p.stem)}">'
                     f"<figcaption>{html.escape(p.stem)} per {html.escape(', '.join(task.compare_groups))}"
                     "</figcaption></figure>" for p in plots)
    guide = f"<p><b>How to read this.</b> {html.escape(task.compare_guide)}</p>" if task.compare_guide else ""
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:80em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}} tr.baseline{{color:#666;font-style:italic}}
img{{max-width:100%}}</style></head><body>
<h1>{html.escape(title)}</h1>
{guide}
{''.join(f'<p>{html.escape(n)}</p>' for n in notes)}
{images}
<h2>Scores</h2>
<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>
</body></html>
"""
    path = out_dir / "index.html"
    path.write_text(page)
    return path


def headline_lines(rows: Sequence[dict[str, Any]], task: Task) -> list[str]:
    """One printed line per checkpoint and baseline: its overall figures."""
    lines = []
    for row in rows:
        if is_overall(row, task):
            figures = "  ".join(f"{m} {_shown(row.get(m))}" for m in task.compare_metrics)
            lines.append(f"{row['checkpoint']:>32}  n {row['n']}  {figures}")
    return lines


def _shown(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


# -- W&B ---------------------------------------------------------------------------------------------

def log_to_wandb(rows: Sequence[dict[str, Any]], task: Task, plots: Sequence[Path], out_dir: Path,
                 project: str | None, name: str, offline: bool, config: dict[str, Any] | None = None) -> str:
    """One W&B run with the table (``compare/table``), a bar chart of the headline figure per group,
    the PNGs and a summary per checkpoint. Offline (files under ``out_dir/wandb``, ``wandb sync``
    later) unless told otherwise. Returns the run's folder."""
    import wandb

    columns = table_columns(task)
    # W&B tables want one type per column: "all" sits beside numbers in group columns, so those are text.
    as_text = {"checkpoint", "step", *task.compare_groups}
    run = wandb.init(project=project or "egohorizon", name=name, job_type="compare", dir=str(out_dir),
                     mode="offline" if offline else "online", config=config or {}, reinit="finish_previous")
    try:
        table = wandb.Table(columns=columns, data=[[_cell(row.get(c), c in as_text) for c in columns] for row in rows])
        logged: dict[str, Any] = {"compare/table": table}
        for path in plots:
            logged[f"compare/{path.stem}"] = wandb.Image(str(path))
        headline = task.plot_metrics[0] if task.plot_metrics else None
        names = group_names(rows, task)
        if headline:
            for key, group in names.items():
                picked = [r for r in rows if _key(r, task) == key and r.get(headline) is not None]
                bars = wandb.Table(columns=["checkpoint", headline],
                                   data=[[r["checkpoint"], r[headline]] for r in picked])
                logged[f"compare/{headline}_{group}"] = wandb.plot.bar(bars, "checkpoint", headline,
                                                                       title=f"{headline}, {group}")
        run.log(logged)
        for row in rows:
            suffix = "" if is_overall(row, task) else f"_{names[_key(row, task)]}"
            for metric in task.compare_metrics:
                if isinstance(row.get(metric), (int, float)):
                    run.summary[f"{row['checkpoint']}/{metric}{suffix}"] = row[metric]
        return str(Path(run.dir).parent)
    finally:
        run.finish()


def group_names(rows: Sequence[dict[str, Any]], task: Task) -> dict[tuple, str]:
    """Each group's short name for W&B keys (``Task.group_prefixes``): forecast "L3_K1" (with the
    source first where the rows hold several), caption the source."""
    keys = list(dict.fromkeys(_key(r, task) for r in rows if not is_overall(r, task)))
    varying = {c for i, c in enumerate(task.compare_groups) if len({k[i] for k in keys}) > 1}
    names = {}
    for key in keys:
        parts = [f"{task.group_prefixes.get(c, '')}{v}" for c, v in zip(task.compare_groups, key)
                 if c in task.group_prefixes or c in varying]
        names[key] = "_".join(parts) or "_".join(str(v) for v in key)
    return names


def _key(row: dict[str, Any], task: Task) -> tuple:
    return tuple(row[c] for c in task.compare_groups)


def _cell(value: Any, as_text: bool) -> Any:
    if as_text:
        return "" if value is None else str(value)
    return None if value is None else float(value)


def task_of(entries: Sequence[CompareEntry]) -> Task:
    """The task the entries share (``check_comparable`` has made sure there is one)."""
    check_comparable(entries)
    return get_task(entries[0].task)
