"""The rolling backtest's table and plot (issue 38, item 5), from the runs of ``python train.py -m
+sweep=backtest``: does a person's model get better as their past grows?

Each run folder of the multirun (``d<d>/``) holds ``split.json`` (a ``DaySplit`` whose settings say
``strategy: backtest`` and its ``backtest_day``, ``egohorizon.data.backtest``) and ``metrics.json``
(train.py's test-day summary: the model, repeat-last, random and the habit baselines on the same test
points, ``egohorizon.tasks.forecast.summary_rows``). Nothing is scored again here: the table is what
each run measured. A folder without ``metrics.json`` is a run not finished yet (or still running): it
is listed, not guessed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from egohorizon.data.backtest import STRATEGY
from egohorizon.errors import ConfigError, DataError
from egohorizon.metrics.habits import HABIT_PREDICTORS

log = logging.getLogger(__name__)

PREDICTORS = ("model", "repeat_last", "random", *HABIT_PREDICTORS)
EXTRA_FIELDS = ("no_history", "no_clock", "invalid_rate")  # copied when a predictor's row has them


def gather_backtest(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per (d, predictor, source, level, K) of the finished runs under ``folder``, sorted, and the
    run folders that have no ``metrics.json`` yet."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"sweep.runs: {folder} is not a folder (expected the multirun folder of "
                          "python train.py -m +sweep=backtest)")
    rows, unfinished, seen = [], [], {}
    for run in sorted(p for p in folder.iterdir() if (p / "split.json").is_file()):
        if not (run / "metrics.json").is_file():
            unfinished.append(run.name)
            continue
        d = backtest_day(run / "split.json")
        if d in seen:
            raise DataError(f"{run / 'split.json'}: field 'settings.backtest_day': d={d} again "
                            f"(also {seen[d]}); one run per d")
        seen[d] = run
        rows += _run_rows(run, d)
    if not rows:
        raise DataError(f"{folder}: no finished backtest run (a d<d>/ folder with split.json and metrics.json); "
                        f"unfinished: {unfinished or 'none'}")
    if unfinished:
        log.warning("backtest: %d run(s) not finished, left out: %s", len(unfinished), ", ".join(unfinished))
    order = {name: i for i, name in enumerate(PREDICTORS)}
    rows.sort(key=lambda r: (r["source"], r["level"], r["k"], r["d"], order[r["predictor"]]))
    return rows, unfinished


def backtest_day(path: Path) -> int:
    """d of a backtest run, from its ``split.json``; a run of another split is refused, naming the field."""
    try:
        settings = json.loads(path.read_text()).get("settings") or {}
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as error:
        raise DataError(f"{path}: not a JSON split file ({error})") from None
    if settings.get("strategy") != STRATEGY or not isinstance(settings.get("backtest_day"), int):
        raise DataError(f"{path}: field 'settings.strategy' is {settings.get('strategy')!r} and "
                        f"'settings.backtest_day' {settings.get('backtest_day')!r}: not a run of "
                        "python train.py -m +sweep=backtest")
    return settings["backtest_day"]


def _run_rows(run: Path, d: int) -> list[dict[str, Any]]:
    path = run / "metrics.json"
    try:
        summary = json.loads(path.read_text())["summary"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as error:
        raise DataError(f"{path}: field 'summary': expected train.py's test summary rows ({error!r})") from None
    rows = []
    for group in summary:
        for name in PREDICTORS:
            if f"{name}_S" not in group:
                continue  # not scored in this run (e.g. no habit history)
            row = {"d": d, "predictor": name, "source": group.get("source"), "level": group["level"],
                   "k": group["k"], "n": group["n"], "S": group[f"{name}_S"], "S_norm": group.get(f"{name}_S_norm")}
            row.update({f: group[f"{name}_{f}"] for f in EXTRA_FIELDS if f"{name}_{f}" in group})
            rows.append(row)
    return rows


def plot_backtest(rows: list[dict[str, Any]], path: Path) -> Path:
    """S_norm against d, one panel per (source, level, K), one line per predictor (the model solid)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(r["source"] or "", r["level"], r["k"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (source, level, k) in zip(axes[0], panels):
        chosen = [r for r in rows if ((r["source"] or ""), r["level"], r["k"]) == (source, level, k)]
        for i, name in enumerate(p for p in PREDICTORS if any(r["predictor"] == p for r in chosen)):
            line = sorted((r for r in chosen if r["predictor"] == name and r["S_norm"] is not None),
                          key=lambda r: r["d"])
            ax.plot([r["d"] for r in line], [r["S_norm"] for r in line], "-o" if name == "model" else "--.",
                    color=f"C{i}", linewidth=2.2 if name == "model" else 1.0, label=name.replace("_", "-"))
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_xticks(sorted({r["d"] for r in chosen}))
        ax.set_xlabel("d: days of the person's past (test on day d + 1)")
        ax.set_ylabel("S_norm on the test day (0 = random)")
        ax.set_title(f"{source + ' ' if source else ''}L{level} K = {k}")
        ax.legend(fontsize=7)
    fig.suptitle("Rolling backtest: the model and each baseline against the length of the past", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
