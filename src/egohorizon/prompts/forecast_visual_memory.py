"""Personal memory for forecasting (issue 15, item 3): the person's past moments most like the present
one, each with what they did next, as prompt lines within a token budget.

The memory is ``egohorizon.memory.MemoryIndex`` (issue 13) over the person's events of the point's level.
The query is the text of the last ``query_events`` context events. ``MemoryIndex.search`` only scores
entries that end strictly before ``t0``, and what followed a hit is looked up among the same entries
(``MemoryIndex.before(participant, t0)``), so nothing at or after ``t0`` can come back
(tests/unit/glue/test_forecast_visual_memory.py). Hits that are in the point's own context are skipped: the
context already shows them.

A line reads ``Tue 2025-03-04 09:12 check my messages -> then: reply to Anna's message``; lines are
added best first while the running token count (``count_tokens``; words when no tokenizer is given)
stays within ``budget``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from egohorizon.memory import Entry, MemoryIndex
from egohorizon.schema import ForecastPoint


@dataclass(frozen=True)
class PastSituation:
    then: Entry  # the past event most like the present
    next: Entry  # what the person did next (same level)
    score: float


def past_situations(index: MemoryIndex, point: ForecastPoint, k: int = 4, query_events: int = 3) -> list[PastSituation]:
    """The ``k`` best past situations before ``point.t0`` at the point's level, best first."""
    if k <= 0 or not point.context:
        return []
    query = " ; ".join(c["text"] for c in point.context[-query_events:])
    shown = {c["id"] for c in point.context}
    earlier = sorted((e for e in index.before(point.participant, point.t0) if e.level == point.level),
                     key=lambda e: (e.start, e.end, e.ref))
    starts = [e.start for e in earlier]
    found = []
    for hit in index.search(point.participant, point.t0, query, k=4 * k + len(shown), kinds=("event",),
                            levels=(point.level,)):
        if hit.entry.ref in shown:
            continue
        i = bisect.bisect_left(starts, hit.entry.end)
        if i >= len(earlier):  # what followed is not over before t0: unknown to the forecaster
            continue
        found.append(PastSituation(hit.entry, earlier[i], hit.score))
        if len(found) == k:
            break
    return found


def memory_lines(situations: list[PastSituation], budget: int, count_tokens: Callable[[str], int] | None = None) -> list[str]:
    """Prompt lines for ``situations`` (best first) while their tokens stay within ``budget``."""
    count = count_tokens or (lambda text: len(text.split()))
    lines, used = [], 0
    for s in situations:
        when = datetime.fromtimestamp(s.then.start, UTC).strftime("%a %Y-%m-%d %H:%M")
        line = f"{when} {s.then.text} -> then: {s.next.text}"
        cost = count(line + "\n")
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return lines
