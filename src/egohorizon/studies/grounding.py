"""The grounding study (issue 15, item 4): text-only, +frames, +memory, +both on the same held-out points.

Input: the run folders of forecasters trained with ``experiment=forecast_l3_visual`` and its variants
(``data.frames=0 data.gaze_crop=false`` = text-only, ``data.memory=true`` ...). Each run wrote its
per-point scores (``reports/<split>.json``: S and the random baseline S_rand of every point, SPEC §1)
and its held-out points (``points/points_<split>.jsonl``). The study checks that every run scored the
same points, marks the cue-driven ones (``meta.cue_driven``, or the cues of the run's demo world),
and reports per level, K and subset (all points, cue-driven points):

- S_norm = (mean S - mean S_rand) / (1 - mean S_rand) over the subset, with a percentile bootstrap
  confidence interval over points (``n_boot`` resamples, seeded);
- for every variant other than the baseline (``text``), the paired difference of S_norm against the
  baseline on the same resampled points, with its interval: "beats" means the interval is above zero.

Plain functions: ``s_norm``, ``bootstrap``, ``study_rows``; ``run_grounding_study`` reads the runs and
writes the table (CSV, Markdown, JSON) and the PNG.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from egohorizon.errors import ConfigError
from egohorizon.metrics.bootstrap import bootstrap as paired_bootstrap
from egohorizon.metrics.bootstrap import s_norm  # noqa: F401 - part of this module's face (run.studies, tests)

log = logging.getLogger(__name__)

BASELINE = "text"
ORDER = ("text", "frames", "memory", "both")
# The repeat-last-K baseline on the same points (scored here, with the runs' own embedder), as a reference column.
REPEAT_LAST = "repeat_last"


def bootstrap(s: Mapping[str, np.ndarray], s_rand: np.ndarray, n_boot: int, seed: int,
              baseline: str | None = BASELINE, level: float = 0.95) -> dict[str, dict[str, float]]:
    """``metrics.bootstrap.bootstrap`` with the study's baseline (the text-only run) by default."""
    return paired_bootstrap(s, s_rand, n_boot, seed, baseline=baseline, level=level)


def _read_run(folder: Path, split: str) -> tuple[dict[str, dict], dict[str, Any], dict]:
    report_path, points_path = folder / "reports" / f"{split}.json", folder / "points" / f"points_{split}.jsonl"
    for path in (report_path, points_path):
        if not path.is_file():
            raise ConfigError(f"grounding study: {path} is missing (a finished train.py run folder is needed)")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    from egohorizon.schema import ForecastPoint, load_jsonl

    points = {p.id: p for p in load_jsonl(points_path, ForecastPoint)}
    per_point = {row["id"]: row for row in report["per_point"]}
    config = {}
    if (folder / "config.yaml").is_file():  # written resolved by the run: plain YAML, no config to compose
        import yaml

        config = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8")) or {}
    return per_point, config, points


def _cue_flags(points: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, bool]:
    """``meta.cue_driven`` of the saved points, completed from the run's demo world cues when present."""
    flags = {pid: bool(p.meta.get("cue_driven")) for pid, p in points.items()}
    demo_dir = (config.get("data") or {}).get("demo_dir")
    if demo_dir and isinstance(demo_dir, str) and "${" not in demo_dir:
        from egohorizon.data.demo.cues.switches import cues_beside, mark_cue_points

        index = cues_beside(demo_dir)
        if index is not None:
            marked = list(points.values())
            mark_cue_points(marked, index)
            flags = {p.id: bool(p.meta["cue_driven"]) for p in marked}
    return flags


def repeat_last_scores(points: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, dict]:
    """Per-point S of the repeat-last-K baseline (the last K context events as the one candidate), scored
    with the embedder the baseline run was scored with (its ``score_options``)."""
    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.metrics.forecast import score_forecasts
    from egohorizon.tasks.forecast import repeat_last_predictions

    # Runs since the callbacks were unified record score_options at the top; older ones in forecast_eval.
    legacy = ((config.get("callbacks") or {}).get("forecast_eval") or {}).get("score_options")
    options = config.get("score_options") or legacy or {}
    ordered = list(points.values())
    report = score_forecasts(ordered, repeat_last_predictions(ordered), get_embedder(options.get("embedder", "minilm")),
                             n_random_draws=int(options.get("n_random_draws", 5)), seed=int(options.get("seed", 0)))
    return {row["id"]: row for row in report["per_point"]}


def study_rows(runs: Mapping[str, Mapping[str, dict]], points: Mapping[str, Any], cue: Mapping[str, bool],
               n_boot: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """Rows per (level, K, subset): n, and per variant S_norm [lo, hi] and the paired difference to text."""
    ids = sorted(set.intersection(*(set(r) for r in runs.values())))
    groups: dict[tuple[int, int], list[str]] = {}
    for pid in ids:
        groups.setdefault((points[pid].level, points[pid].k), []).append(pid)
    rows = []
    for (level, k), members in sorted(groups.items()):
        for subset, chosen in (("all", members), ("cue_driven", [p for p in members if cue.get(p)])):
            if not chosen:
                continue
            s_rand = np.array([runs[BASELINE if BASELINE in runs else next(iter(runs))][p]["S_rand"] for p in chosen])
            s = {name: np.array([run[p]["S"] for p in chosen]) for name, run in runs.items()}
            stats = bootstrap(s, s_rand, n_boot, seed)
            row: dict[str, Any] = {"level": level, "k": k, "subset": subset, "n": len(chosen)}
            for name, values in stats.items():
                row.update({f"{name}_{key}": round(v, 4) for key, v in values.items()})
            rows.append(row)
    return rows


def format_markdown(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    head = "| level | K | points | n | " + " | ".join(
        f"{n} S_norm [95% CI]" + ("" if n == BASELINE else f" | {n} - text [95% CI]") for n in names) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [f"L{r['level']}", str(r["k"]), r["subset"], str(r["n"])]
        for n in names:
            cells.append(f"{r[f'{n}_S_norm']:.3f} [{r[f'{n}_lo']:.3f}, {r[f'{n}_hi']:.3f}]")
            if n != BASELINE:
                cells.append(f"{r[f'{n}_diff']:+.3f} [{r[f'{n}_diff_lo']:+.3f}, {r[f'{n}_diff_hi']:+.3f}]")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[Mapping[str, Any]], names: Sequence[str], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"L{r['level']} K{r['k']}\n{r['subset']} (n={r['n']})" for r in rows]
    fig, ax = plt.subplots(figsize=(max(5, 1.8 * len(rows)), 3.6))
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        x = np.arange(len(rows)) + (j - (len(names) - 1) / 2) * width
        y = np.array([r[f"{name}_S_norm"] for r in rows])
        err = np.array([[y[i] - r[f"{name}_lo"], r[f"{name}_hi"] - y[i]] for i, r in enumerate(rows)]).T
        ax.bar(x, y, width, yerr=err, capsize=3, label=name)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(rows)), labels, fontsize=8)
    ax.set_ylabel("S_norm (95% bootstrap CI)")
    ax.set_title("Frames / memory vs text only (held-out points)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run_grounding_study(runs: Mapping[str, str | None], out: Path, split: str = "test", n_boot: int = 2000,
                        seed: int = 0, repeat_last: bool = False) -> dict[str, Any]:
    """Reads the given run folders (variant -> folder; unset variants are left out), writes
    ``out.csv``, ``out.md``, ``out.json`` and ``out.png``; returns the rows and paths. ``repeat_last``:
    the repeat-last-K baseline on the same points is scored too and reported as one more column."""
    given = {name: Path(folder) for name, folder in runs.items() if folder}
    if BASELINE not in given:
        raise ConfigError("sweep.runs.text: the text-only run folder is needed (the baseline of every difference)")
    unknown = set(given) - set(ORDER)
    if unknown:
        raise ConfigError(f"sweep.runs: unknown variant(s) {sorted(unknown)}; expected some of {ORDER}")
    scores, points, cue, configs = {}, {}, {}, {}
    for name, folder in given.items():
        per_point, configs[name], run_points = _read_run(folder, split)
        scores[name] = per_point
        points.update(run_points)
        cue.update(_cue_flags(run_points, configs[name]))
    ids = [set(s) for s in scores.values()]
    if any(i != ids[0] for i in ids):
        raise ConfigError("grounding study: the runs scored different points; train them on the same data settings "
                          "(same demo_dir, levels, ks, caps and seed) so every variant answers the same points")
    names = [n for n in ORDER if n in given]
    if repeat_last:
        scores[REPEAT_LAST] = repeat_last_scores({pid: points[pid] for pid in scores[BASELINE]}, configs[BASELINE])
        names.append(REPEAT_LAST)
    rows = study_rows({n: scores[n] for n in names}, points, cue, n_boot=n_boot, seed=seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out.with_suffix(".md").write_text(format_markdown(rows, names), encoding="utf-8")
    result = {"sweep": "grounding", "split": split, "runs": {n: str(p) for n, p in given.items()}, "rows": rows,
              "n_boot": n_boot, "seed": seed, "table": str(out.with_suffix(".csv")),
              "plot": str(plot(rows, names, out.with_suffix(".png")))}
    out.with_suffix(".json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result
