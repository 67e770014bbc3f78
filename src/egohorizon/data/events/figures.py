"""Figures of an event hierarchy: one day's L1-L5 as an icicle chart, and the per-level table + PNG
(count, mean duration, adjacent-level compression ratio against NextMe-800's 1.6x-11x band).

Used by ``egohorizon data plot-day`` / ``data stats --plot`` and written next to the report of
``egohorizon abstract`` (and so of the ``abstract`` stage of ``egohorizon pipeline``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from egohorizon.data.events.hierarchy import level_stats
from egohorizon.data.events.stats import duration_text
from egohorizon.errors import DataError
from egohorizon.schema import EPOCH_CLOCK_FROM, Event

# NextMe-800's adjacent-level compression range (SPEC / issue 12), drawn as a band on the levels PNG.
COMPRESSION_BAND = (1.6, 11.0)


def day_events(events: Iterable[Event], day: str, participant: str | None = None) -> tuple[str, list[Event]]:
    """The events of ``participant`` on ``day``; without a participant, the one participant who has that day.
    Errors name what exists instead of failing later on an empty plot."""
    events = list(events)
    if not events:
        raise DataError("no events to plot")
    participants = sorted({e.participant for e in events})
    if participant is not None and participant not in participants:
        raise DataError(f"--participant {participant!r}: not in the events; participants: {_listing(participants)}")
    pool = [e for e in events if participant is None or e.participant == participant]
    on_day = [e for e in pool if e.day == day]
    if not on_day:
        days = sorted({e.day for e in pool})
        who = f" of participant {participant}" if participant else ""
        raise DataError(f"--day {day!r}: no events{who} on that day; days: {_listing(days)}")
    found = sorted({e.participant for e in on_day})
    if len(found) > 1:
        raise DataError(f"--day {day!r}: {len(found)} participants have that day ({_listing(found)}); pass --participant")
    return found[0], sorted(on_day, key=lambda e: (e.level, e.start, e.end))


def _listing(names: Sequence[str], limit: int = 12) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _time_axis(events: Sequence[Event]) -> tuple[float, float, float, str, bool]:
    """(origin seconds, seconds per unit, x of the origin, axis label, clock): clock times go on a
    matplotlib date axis (days; its ticks read HH:MM, UTC), device times in minutes from the first event
    (recordings without a wall clock)."""
    from matplotlib import dates

    first = min(e.start for e in events)
    if first >= EPOCH_CLOCK_FROM:
        moment = datetime.fromtimestamp(first, UTC)
        return first, 86400.0, float(dates.date2num(moment)), f"time of day, {moment.date().isoformat()} (UTC)", True
    return first, 60.0, 0.0, "minutes from the first event", False


def _clock_ticks(ax, span_seconds: float) -> None:
    """HH:MM ticks (HH:MM:SS when the day drawn is shorter than ten minutes), at round clock times."""
    from matplotlib import dates

    ax.xaxis.set_major_locator(dates.AutoDateLocator(tz=UTC, minticks=4, maxticks=12))
    ax.xaxis.set_major_formatter(dates.DateFormatter("%H:%M" if span_seconds >= 600 else "%H:%M:%S", tz=UTC))


def _ancestor_colours(events: Sequence[Event]) -> dict[str, tuple[float, float, float, float]]:
    """Each event takes the hue of its top ancestor, so a parent and its children read as one block;
    neighbouring top events alternate through a qualitative palette."""
    import matplotlib

    palette = matplotlib.colormaps["tab10"].colors
    by_id = {e.id: e for e in events}

    def top(event: Event) -> str:
        seen = set()
        while event.parent and event.parent in by_id and event.id not in seen:
            seen.add(event.id)
            event = by_id[event.parent]
        return event.id

    tops = sorted({top(e) for e in events}, key=lambda i: (by_id[i].start, by_id[i].level))
    hue = {t: palette[n % len(palette)] for n, t in enumerate(tops)}
    return {e.id: (*hue[top(e)][:3], 0.45 + 0.11 * min(e.level, 5)) for e in events}


def plot_day(events: Iterable[Event], day: str, out: str | Path, participant: str | None = None,
             *, title: str | None = None) -> Path:
    """An icicle (flame) chart of one day (``day_figure``) as a PNG."""
    import matplotlib.pyplot as plt

    fig = day_figure(events, day, participant, title=title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, metadata={"Software": None})  # no version stamp: same events, same bytes
    plt.close(fig)
    return out


def day_figure(events: Iterable[Event], day: str, participant: str | None = None, *, title: str | None = None):
    """One row per level, L5 on top, each event a box over its time span, in its top ancestor's colour,
    with its text where the box is wide enough; the x axis reads clock time (HH:MM, UTC) or minutes."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a cluster node
    import matplotlib.pyplot as plt

    who, chosen = day_events(events, day, participant)
    levels = sorted({e.level for e in chosen}, reverse=True)
    origin, unit, base, xlabel, clock = _time_axis(chosen)
    colours = _ancestor_colours(chosen)
    x0 = base + (min(e.start for e in chosen) - origin) / unit
    x1 = base + (max(e.end for e in chosen) - origin) / unit
    span = max(x1 - x0, 1e-9)
    width_in = 16.0
    fig, ax = plt.subplots(figsize=(width_in, 0.9 * len(levels) + 1.4))
    chars_per_unit = width_in * 0.85 * 72 / 5.2 / span  # ~5.2 pt per character at font size 7
    for row, level in enumerate(levels):
        y = len(levels) - 1 - row
        for event in (e for e in chosen if e.level == level):
            left, width = base + (event.start - origin) / unit, max(event.duration / unit, span * 2e-4)
            ax.barh(y, width, left=left, height=0.9, color=colours[event.id], edgecolor="white", linewidth=0.4)
            room = int(width * chars_per_unit)
            if room >= 4 and event.text:
                label = event.text if len(event.text) <= room else event.text[: room - 1] + "…"
                ax.text(left + width / 2, y, label, ha="center", va="center", fontsize=7, clip_on=True)
    ax.set_yticks(range(len(levels)), [f"L{lv}" for lv in reversed(levels)])
    ax.set_ylim(-0.6, len(levels) - 0.4)
    ax.set_xlim(x0 - span * 0.005, x1 + span * 0.005)
    if clock:
        _clock_ticks(ax, span * unit)
    ax.set_xlabel(xlabel)
    counts = ", ".join(f"L{lv} {sum(1 for e in chosen if e.level == lv)}" for lv in sorted(levels))
    ax.set_title(title or f"{who} {day}: {counts} events")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def level_rows(events: Iterable[Event]) -> list[dict]:
    """Per level: count, mean duration (s) and the compression ratio from the level below (None at L1)."""
    stats, compression = level_stats(events)
    return [{"level": f"L{lv}", "count": s.count, "mean_duration_s": s.mean_duration_s,
             "compression": compression.get(f"L{lv - 1}/L{lv}")} for lv, s in sorted(stats.items())]


def format_level_table(rows: Sequence[dict]) -> str:
    """A Markdown table of ``level_rows`` (the README's and reports' form)."""
    lines = ["| level | events | mean duration | compression (from the level below) |",
             "|---|---|---|---|"]
    for row in rows:
        ratio = row["compression"]
        low, high = COMPRESSION_BAND
        mark = "" if ratio is None or low <= ratio <= high else " (outside 1.6-11x)"
        ratio_text = "-" if ratio is None else f"{ratio:.2f}x{mark}"
        lines.append(f"| {row['level']} | {row['count']} | {duration_text(row['mean_duration_s'])} | {ratio_text} |")
    return "\n".join(lines) + "\n"


def plot_levels(rows: Sequence[dict], out: str | Path, *, title: str = "") -> Path:
    """Two panels: the adjacent-level compression ratios against the 1.6x-11x band, and the mean duration
    per level (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not rows:
        raise DataError("no levels to plot (no events)")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    pairs = [(f"L{int(r['level'][1:]) - 1}->{r['level']}", r["compression"]) for r in rows if r["compression"]]
    low, high = COMPRESSION_BAND
    left.axhspan(low, high, color="tab:green", alpha=0.12, label=f"NextMe-800 range {low}-{high:g}x")
    if pairs:
        bars = left.bar([p for p, _ in pairs], [r for _, r in pairs], color="tab:blue")
        left.bar_label(bars, fmt="%.2fx", fontsize=8)
    left.set_yscale("log")
    left.set_ylim(1, max([high * 1.2] + [r * 1.3 for _, r in pairs]))
    ticks = [1, low, 2, 3, 5, high]
    left.set_yticks(ticks, [f"{t:g}x" for t in ticks])
    left.minorticks_off()
    left.set_ylabel("compression (events per parent)")
    left.set_title("adjacent-level compression")
    left.legend(fontsize=8, loc="upper right")
    minutes = [r["mean_duration_s"] / 60 for r in rows]
    bars = right.bar([r["level"] for r in rows], minutes, color="tab:orange")
    right.bar_label(bars, labels=[duration_text(r["mean_duration_s"]) for r in rows], fontsize=8)
    right.set_yscale("log")
    right.set_ylabel("mean duration (minutes)")
    right.set_title("mean event duration per level")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


def write_level_figures(events: Iterable[Event], out_dir: str | Path, *, title: str = "") -> dict[str, str]:
    """``levels.md`` (the table) and ``levels.png`` in ``out_dir``; returns their paths (nothing without events)."""
    rows = level_rows(events)
    if not rows:
        return {}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = out_dir / "levels.md"
    table.write_text(format_level_table(rows), encoding="utf-8")
    png = plot_levels(rows, out_dir / "levels.png", title=title)
    return {"levels_table": str(table), "levels_png": str(png)}

