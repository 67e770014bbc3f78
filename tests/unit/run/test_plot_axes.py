"""Axes a reader can read (issue 22, item 24): ``data plot-day`` on clock time, and the ``+sweep=levels``
plot with n per bar and bootstrap intervals."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
from event_days import day_hierarchy

from egohorizon.data.events.figures import day_figure
from egohorizon.schema import Event


def _tick_labels(fig) -> list[str]:
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    plt.close(fig)
    return labels


def test_plot_day_reads_clock_time():
    fig = day_figure(day_hierarchy("p1", "2025-03-04"), "2025-03-04")  # 09:00-09:12 UTC
    assert fig.axes[0].get_xlabel() == "time of day, 2025-03-04 (UTC)"
    labels = _tick_labels(fig)
    assert len(labels) >= 3 and all(re.fullmatch(r"09:(0\d|1[0-2])", label) for label in labels), labels


def test_a_short_day_reads_seconds_too():
    # the case: a 30 s recording at 17:10:55 UTC that the old axis labelled 17.182 ... 17.190
    start = 1741108255.0  # 2025-03-04 17:10:55 UTC
    events = [Event(id=f"e{i}", participant="p1", day="2025-03-04", session="s", level=1, start=start + 6 * i,
                    end=start + 6 * i + 5, text=f"step {i}") for i in range(5)]
    labels = _tick_labels(day_figure(events, "2025-03-04"))
    assert labels and all(re.fullmatch(r"17:1[01]:\d\d", label) for label in labels), labels


def test_device_times_stay_minutes_from_the_first_event():
    events = [Event(id=f"e{i}", participant="p1", day="2025-03-04", session="s", level=1, start=60.0 * i,
                    end=60.0 * i + 50, text=f"step {i}") for i in range(5)]
    fig = day_figure(events, "2025-03-04")
    assert fig.axes[0].get_xlabel() == "minutes from the first event"
    assert all(re.fullmatch(r"[\d.−-]+", label) for label in _tick_labels(fig))


@pytest.fixture(scope="module")
def levels_study(tmp_path_factory):
    """``python eval.py +sweep=levels`` on the toy world, baselines only (no model to train)."""
    from conftest import REPO_ROOT
    from forecast_toy_world import write_toy_events
    from hydra import compose, initialize_config_dir
    from run_configs import toy_overrides

    from egohorizon.run import evaluate

    tmp_path = tmp_path_factory.mktemp("levels")
    overrides = [*toy_overrides(write_toy_events(tmp_path), tmp_path, "sweep_levels"), "embedder=exact",
                 "+sweep=levels", "sweep.levels=[3]", "sweep.n_boot=200", "predictors=[repeat_last,random]"]
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("eval", overrides=overrides)
    return evaluate(cfg)


def test_the_levels_study_reports_n_and_a_bootstrap_interval(levels_study):
    rows = levels_study["rows"]
    assert {(r["level"], r["k"]) for r in rows} == {(3, 1), (3, 10)}
    for row in rows:
        assert row["repeat_last_n"] >= 1
        assert row["repeat_last_S_norm_lo"] <= row["repeat_last_S_norm"] <= row["repeat_last_S_norm_hi"]
    header = Path(levels_study["table"]).read_text().splitlines()[0].split(",")
    assert {"repeat_last_n", "repeat_last_S_norm_lo", "repeat_last_S_norm_hi"} <= set(header)


def test_the_levels_plot_draws_the_intervals_and_names_n(levels_study):
    from matplotlib.container import BarContainer

    from egohorizon.run.studies import levels_figure

    rows = levels_study["rows"]
    fig = levels_figure(rows)
    fig.canvas.draw()
    for ax, row in zip(fig.axes, sorted(rows, key=lambda r: r["k"])):
        assert [t.get_text() for t in ax.get_xticklabels()] == [f"L3\nn={int(row['repeat_last_n'])}"]
        (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]  # one predictor: repeat-last
        low, high = bars.errorbar.lines[2][0].get_segments()[0][:, 1]  # the drawn error bar's ends
        assert low == pytest.approx(row["repeat_last_S_norm_lo"]) and high == pytest.approx(row["repeat_last_S_norm_hi"])
    plt.close(fig)


def test_a_baseline_kept_without_per_point_scores_is_rescored_to_the_same_interval(levels_study):
    """The model's run keeps repeat-last's report without per-point rows (tasks.forecast.evaluate); its
    interval is rescored with the report's own settings and comes out the same."""
    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.metrics.forecast import score_forecasts
    from egohorizon.run.studies import add_intervals
    from egohorizon.schema import ForecastPoint, load_jsonl
    from egohorizon.tasks.forecast import repeat_last_predictions

    points = load_jsonl(Path(levels_study["run_dir"]) / "points" / "points_test.jsonl", ForecastPoint)
    report = score_forecasts(points, repeat_last_predictions(points), get_embedder("exact"), n_random_draws=5,
                             seed=0, max_candidates=3)
    rows = [{"source": g["source"], "level": g["level"], "k": g["k"]} for g in report["groups"]]
    full = add_intervals(rows, {"repeat_last": report}, {}, n_boot=200, seed=0)
    kept = {k: v for k, v in report.items() if k != "per_point"}
    rescored = add_intervals(rows, {"repeat_last": kept}, {p.id: p for p in points}, n_boot=200, seed=0)
    assert all("repeat_last_S_norm_lo" in r for r in full) and rescored == full
