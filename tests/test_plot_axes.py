"""Axes a reader can read (issue 22, item 24): ``data plot-day`` on clock time, and the ``+sweep=levels``
plot with n per bar and bootstrap intervals."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from test_data_figures import day_hierarchy

from egohorizon.data.figures import day_figure
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
