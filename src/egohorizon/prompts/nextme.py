"""NextMe-800's in-context forecasting prompt (``nextme.txt``; ``egohorizon bench forecast --protocol nextme``).

What the paper fixes (NextMe-800, "Benchmark" section, the paragraphs on the 1,500 evaluation points,
context scaling and in-context baselines): the model is prompted with the **50 most recent events**
before the prediction time ("all subsequent in-context experiments use 50 events by default"), each
point **specifies the recorded time windows of its target events**, and each predictor returns
**three candidate trajectories**, of which only the best is scored (SPEC §1). The paper does not
print its forecasting prompt (the text has no prompt for it; its Appendix E only names the smaller
models), so ``nextme.txt`` is this project's wording of that protocol, version 1. Its layout (clock
times, durations, ``gap`` and day lines, numbered target windows, the JSON answer) is the forecast
prompt's (``prompts/forecast.py``): the answer is read by the same parser, and a difference between
the two protocols comes from the context length and the words, not from the answer format.

Leakage (SPEC §2): ``recent_context`` keeps only the events of a point's context that end at or before
``t0`` and start before it (the point builder's rule, ``data/points/build.py``: the event that ends exactly at
``t0`` is the most recent one, and the one that starts there is a target), and of those the ``n`` most
recent by (end, start), shown oldest first. ``check_no_future`` then refuses any event shown that
starts at or after ``t0`` or ends after it; it runs on every prompt rendered here, so a bug in the
selection raises instead of reaching a model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from egohorizon.errors import LeakageError
from egohorizon.prompts.forecast import render_forecast_prompt
from egohorizon.schema import ForecastPoint

NEXTME_PROMPT_NAME = "nextme"
NEXTME_CONTEXT = 50  # "the 50 most recent events in context"
NEXTME_CANDIDATES = 3  # "each returning three candidate trajectories"


def _shown_before(event: dict[str, Any], t0: float) -> bool:
    return event["end"] <= t0 and event["start"] < t0


def recent_context(point: ForecastPoint, n: int | None = NEXTME_CONTEXT) -> list[dict[str, Any]]:
    """The ``n`` most recent context events of ``point`` before its ``t0`` (all of them for None), oldest
    first; events the point carries that end after ``t0`` or start at or after it are never shown."""
    past = [e for e in point.context if _shown_before(e, point.t0)]
    # Recency as the point builder ranks it (end, start, id); without ids ties keep the file's order.
    past.sort(key=lambda e: (e["end"], e["start"], str(e.get("id", ""))))
    if n is not None:
        past = past[-n:] if n > 0 else []
    shown = sorted(past, key=lambda e: (e["start"], e["end"], str(e.get("id", ""))))
    check_no_future(point.id, point.t0, shown)
    return shown


def check_no_future(point_id: str, t0: float, events: Sequence[dict[str, Any]]) -> None:
    """LeakageError when an event to be shown starts at or after ``t0`` or ends after it."""
    late = [i for i, e in enumerate(events) if not _shown_before(e, t0)]
    if late:
        first = events[late[0]]
        message = (f"point {point_id!r}: {len(late)} event(s) to be shown are not before t0={t0}, first "
                   f"{first.get('text')!r} ({first['start']}-{first['end']})")
        raise LeakageError([message])


def render_with_context(point: ForecastPoint, context: Sequence[dict[str, Any]], prompt: str,
                        n_candidates: int) -> str:
    """``prompt`` (a bundled name or a file) for ``point`` showing exactly ``context``, checked again."""
    check_no_future(point.id, point.t0, context)
    return render_forecast_prompt(dataclasses.replace(point, context=list(context)), prompt=prompt,
                                  n_candidates=n_candidates)


def render_nextme_prompt(point: ForecastPoint, n_context: int = NEXTME_CONTEXT,
                         n_candidates: int = NEXTME_CANDIDATES) -> tuple[str, int]:
    """The NextMe prompt of ``point`` and how many context events it shows (fewer than 50 when the
    point carries fewer)."""
    context = recent_context(point, n_context)
    return render_with_context(point, context, NEXTME_PROMPT_NAME, n_candidates), len(context)
