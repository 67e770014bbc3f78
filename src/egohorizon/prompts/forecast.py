"""The forecasting prompt (``forecast.txt``) rendered for one point, and the answer a model must emit.

The prompt shows the context events oldest first with their clock times (with seconds when some
event or window shown is shorter than a minute) and durations, a line ``gap 2 h 05 min`` wherever a
minute or more passes between events or between target windows, a ``Tue 2024-03-05`` line whenever
the calendar day changes, the prediction time, the K target windows (start, end, duration: how long
a span the forecast must cover) and the requested output: ``{"candidates": [[K strings], ...]}``,
which ``egohorizon.metrics.parsing.parse_forecast_output`` reads and ``render_forecast_answer`` writes.
The prompt's version covers this layout as well as the template text.

Clock times and dates are those of the timestamps read as UTC: the demo world and the converted data
sets store local clock time as Unix seconds (SPEC §5). Times before 2001-09-09 (1e9 s) are taken to
be relative (seconds since the participant's first recording, SPEC §5): their days are shown as
``day 1``, ``day 2``, ... and their clock as the time since the start of that day.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from egohorizon.prompts import Prompt, load_prompt
from egohorizon.schema import ForecastPoint

FORECAST_PROMPT_NAME = "forecast"
RELATIVE_TIMES_BELOW_S = 1e9  # 2001-09-09: no egocentric recording with real clock times is older
GAP_SHOWN_FROM_S = 60.0  # shorter pauses are visible in the clock times and would only cost tokens
LEVEL_NAMES = {1: "atomic actions", 2: "short steps", 3: "activities", 4: "activity blocks",
               5: "broad routines"}


def forecast_prompt(prompt: Prompt | str | None = None) -> Prompt:
    """The bundled forecasting prompt, a prompt loaded by name or path, or ``prompt`` itself."""
    if isinstance(prompt, Prompt):
        return prompt
    return load_prompt(prompt or FORECAST_PROMPT_NAME)


def prompt_identity(prompt: Prompt | str | None = None) -> dict[str, str]:
    """``{"prompt": name, "prompt_version": version}``, the fields every prediction record carries."""
    loaded = forecast_prompt(prompt)
    return {"prompt": loaded.name, "prompt_version": loaded.version}


def render_forecast_prompt(point: ForecastPoint | dict[str, Any], prompt: Prompt | str | None = None,
                           n_candidates: int = 3, max_context: int | None = None) -> str:
    """The prompt text for ``point``; ``max_context`` keeps only the most recent context events."""
    if isinstance(point, dict):
        point = _point_from_dict(point)
    if n_candidates < 1:
        raise ValueError(f"n_candidates={n_candidates}: expected >= 1")
    context = list(point.context)
    if max_context is not None:
        context = context[-max_context:] if max_context > 0 else []
    last_end = max((c["end"] for c in context), default=None)
    shortest = min([c["end"] - c["start"] for c in context] + [end - start for start, end in point.windows],
                   default=60.0)
    clock = "%H:%M:%S" if shortest < 60 else "%H:%M"  # seconds only where some span is that short
    values = {
        "level": point.level,
        "level_name": LEVEL_NAMES.get(point.level, "events"),
        "history": _history(context, clock),
        "now": _now(point.t0, last_end, clock),
        "k": point.k,
        "k_activities": _plural(point.k, "activity", "activities"),
        "k_descriptions": _plural(point.k, "short activity description", "short activity descriptions"),
        "windows": _windows(point.windows, _day(point.t0), clock),
        "n_candidates": n_candidates,
        "n_lists": _plural(n_candidates, "list", "lists"),
    }
    # A user's template may use any subset of these; Prompt.render names any field it uses beyond them.
    return forecast_prompt(prompt).render(**values)


def render_forecast_answer(trajectories: Sequence[Sequence[str]]) -> str:
    """The exact text a fine-tuned forecaster is trained to emit for these candidate trajectories."""
    if isinstance(trajectories, str) or not all(
            not isinstance(t, str) and all(isinstance(a, str) for a in t) for t in trajectories):
        raise ValueError("expected a list of trajectories, each a list of action strings")
    return json.dumps({"candidates": [list(t) for t in trajectories]}, ensure_ascii=False)


def format_duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 05 min``, ``3 d 4 h 00 min`` (rounded to the second or minute)."""
    if seconds < 59.5:
        return f"{max(0, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h {minutes:02d} min"


def _utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


def _day(t: float) -> str:
    if t < RELATIVE_TIMES_BELOW_S:
        return f"day {int(t // 86400) + 1}"
    return _utc(t).strftime("%a %Y-%m-%d")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _span(start: float, end: float, clock: str) -> str:
    return f"{_utc(start).strftime(clock)}-{_utc(end).strftime(clock)} ({format_duration(end - start)})"


def _history(context: list[dict[str, Any]], clock: str) -> str:
    if not context:
        return "(nothing recorded before now)"
    lines: list[str] = []
    day, latest_end = None, None
    for event in context:
        if latest_end is not None and event["start"] - latest_end >= GAP_SHOWN_FROM_S:
            lines.append(f"gap {format_duration(event['start'] - latest_end)}")
        if _day(event["start"]) != day:
            day = _day(event["start"])
            lines.append(day)
        lines.append(f"{_span(event['start'], event['end'], clock)} {event['text']}")
        # Overlapping events: measure the next gap from the latest end seen, not the last line's end.
        latest_end = event["end"] if latest_end is None else max(latest_end, event["end"])
    return "\n".join(lines)


def _now(t0: float, last_end: float | None, clock: str) -> str:
    text = f"{_day(t0)} {_utc(t0).strftime(clock)}"
    if last_end is not None and t0 - last_end >= GAP_SHOWN_FROM_S:
        text += f", {format_duration(t0 - last_end)} after the last activity"
    return text


def _windows(windows: Sequence[Sequence[float]], now_day: str, clock: str) -> str:
    """Numbered windows with gap lines; a date line only where a window starts on another day than "now"."""
    lines: list[str] = []
    day, latest_end = now_day, None
    for i, (start, end) in enumerate(windows, start=1):
        if latest_end is not None and start - latest_end >= GAP_SHOWN_FROM_S:
            lines.append(f"gap {format_duration(start - latest_end)}")
        latest_end = end if latest_end is None else max(latest_end, end)
        if _day(start) != day:
            day = _day(start)
            lines.append(day)
        lines.append(f"{i}. {_span(start, end, clock)}")
    return "\n".join(lines)


def _point_from_dict(obj: dict[str, Any]) -> ForecastPoint:
    point, problems = ForecastPoint.from_dict(obj)
    if point is None:
        details = "; ".join(f"{f}: {p}" for f, p in problems)
        raise ValueError(f"not a forecast point ({obj.get('id', '?')}): {details}")
    return point
