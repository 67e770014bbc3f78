"""Several forecasters on the same points: S_norm per group with paired bootstrap intervals.

Every predictor is scored by ``score_forecasts`` with the same random-baseline draws (they depend on
the points and the seed only), so all rows share one chance level S_rand per point; the intervals are
percentile bootstrap intervals over the group's points, and each predictor's difference to the
baseline predictor (repeat-last in the README tables) is resampled on the same draws of points
(``metrics.bootstrap``). "Beats the baseline" means that difference's interval lies above zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from egohorizon.metrics.bootstrap import MIN_BOOT, bootstrap, s_norm
from egohorizon.metrics.forecast import score_forecasts


def compare_forecasters(
    points: Sequence[Any],
    predictions: Mapping[str, Mapping[str, list[list[str]] | None]],
    embedder,
    baseline: str | None = None,
    n_random_draws: int = 5,
    seed: int = 0,
    max_candidates: int = 3,
    n_boot: int = 2000,
    boot_seed: int = 0,
    level: float = 0.95,
    strongest_among: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One row per (source, level, k) group and predictor, in the order ``predictions`` gives.

    Each row: ``predictor, source, level, k, n, invalid, S, S_rand, S_norm, lo, hi, baseline`` and, for
    every predictor but the baseline, ``diff, diff_lo, diff_hi`` (its S_norm minus the baseline's).
    ``strongest_among``: per group the baseline is the one of these predictors with the highest S_norm on
    that group's points (ties: the earlier name), instead of ``baseline``.
    """
    if n_boot < MIN_BOOT:
        raise ValueError(f"n_boot {n_boot}: a percentile interval needs at least {MIN_BOOT} resamples")
    if baseline is not None and baseline not in predictions:
        raise ValueError(f"baseline {baseline!r} is not among the predictors {list(predictions)}")
    per_point = {
        name: {row["id"]: row for row in score_forecasts(points, preds, embedder, n_random_draws=n_random_draws,
                                                          seed=seed, max_candidates=max_candidates)["per_point"]}
        for name, preds in predictions.items()
    }
    groups: dict[tuple[str, int, int], list[str]] = {}
    for point in points:
        groups.setdefault((point.source, point.level, point.k), []).append(point.id)
    rows = []
    for (source, lvl, k), ids in sorted(groups.items()):
        first = per_point[next(iter(per_point))]
        ids = [i for i in ids if first[i]["S_rand"] is not None]  # S_norm needs a random pool
        if not ids:
            continue
        s_rand = np.array([first[i]["S_rand"] for i in ids])
        for name, table in per_point.items():  # one chance level for all: same draws, same points
            if not np.allclose([table[i]["S_rand"] for i in ids], s_rand):
                raise ValueError(f"{name}: its random baseline differs from the others' on the same points")
        s = {name: np.array([table[i]["S"] for i in ids]) for name, table in per_point.items()}
        chosen = baseline
        present = [name for name in strongest_among if name in s]
        if present:
            chosen = max(present, key=lambda name: (s_norm(s[name], s_rand), -present.index(name)))
        stats = bootstrap(s, s_rand, n_boot, boot_seed, baseline=chosen, level=level)
        for name in predictions:
            rows.append({
                "predictor": name, "source": source, "level": lvl, "k": k, "n": len(ids), "baseline": chosen,
                "invalid": int(sum(per_point[name][i]["invalid"] for i in ids)),
                "S": float(np.mean(s[name])), "S_rand": float(np.mean(s_rand)), **stats[name],
            })
    return rows


def format_table(rows: Sequence[Mapping[str, Any]], baseline: str | None = None) -> str:
    """A Markdown table of ``compare_forecasters`` rows (the random baseline's S_norm is 0 by definition)."""
    vs = f" | minus {_cell(baseline)} [95% CI]" if baseline else ""
    lines = [f"| group | predictor | n | invalid | S | S_norm [95% CI]{vs} |",
             "|---|---|---|---|---|---" + ("|---|" if baseline else "|")]
    for row in rows:
        group = _cell(f"{row['source']} L{row['level']} K={row['k']}")
        cell = f"{row['S_norm']:.3f} [{row['lo']:.3f}, {row['hi']:.3f}]"
        diff = ""
        if baseline:
            mark = " | (baseline)" if baseline == row.get("baseline") else f" | ({baseline}: {row['baseline']})"
            diff = (f" | {row['diff']:+.3f} [{row['diff_lo']:+.3f}, {row['diff_hi']:+.3f}]" if "diff" in row
                    else mark)
        lines.append(f"| {group} | {_cell(row['predictor'])} | {row['n']} | {row['invalid']} | {row['S']:.3f} | {cell}{diff} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text for one Markdown table cell: a '|' in a predictor's name would start a new column."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
