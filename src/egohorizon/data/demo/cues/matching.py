"""Uncued points matched to cue-driven ones (issue 15): a training sample where only the frame tells.

With every cue-driven training point kept and few others, a text-only forecaster learns that the cued
actions (a phone glance, a colleague's chat) come after almost any context, and scores on cue-driven
test points without seeing anything. ``matched_uncued_points`` pairs each cue-driven training point
with up to ``n`` training points of the same kind of context (same level and K, same last context
event) whose next action is *not* a cue-able switch: in such a sample the context alone cannot tell
"the switch comes" from "it does not"; only the frame before ``t0`` can.

Only training points are chosen here, and only from the training days; held-out points stay as the
world gives them. Every variant (text-only, frames) trains on the same chosen points.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence

from egohorizon.data.demo.cues.switches import CUE_OF_KEY
from egohorizon.schema import Event, ForecastPoint


def cueable_switch_times(events: Iterable[Event]) -> set[tuple[str, float]]:
    """(participant, start) of every switch a cue could announce, announced or not."""
    return {(e.participant, float(e.start)) for e in events if e.meta.get("key") in CUE_OF_KEY}


def context_kind(point: ForecastPoint) -> tuple[int, int, str]:
    """What "the same kind of context" means here: level, K and the text of the last context event."""
    last = point.context[-1]["text"] if point.context else ""
    return point.level, point.k, last


def matched_uncued_points(cued: Sequence[ForecastPoint], pool: Sequence[ForecastPoint], events: Iterable[Event],
                          n: int, seed: int, exclude: Iterable[str] = ()) -> list[ForecastPoint]:
    """Up to ``n`` points of ``pool`` per point of ``cued``, of the same ``context_kind``, whose ``t0`` is
    not a cue-able switch and whose id is not in ``exclude`` (already in the sample); each chosen once,
    seeded per cued point. A cued point whose context has no such point gets none (counted by the
    caller from the result)."""
    if n <= 0:
        return []
    switches = cueable_switch_times(events)
    taken = set(exclude)
    candidates: dict[tuple[int, int, str], list[ForecastPoint]] = defaultdict(list)
    for point in pool:
        if (point.participant, float(point.t0)) not in switches and point.id not in taken:
            candidates[context_kind(point)].append(point)
    chosen = []
    for point in sorted(cued, key=lambda p: p.id):
        free = [p for p in candidates.get(context_kind(point), []) if p.id not in taken]
        picked = random.Random(f"{seed}:matched:{point.id}").sample(free, min(n, len(free)))
        taken.update(p.id for p in picked)
        chosen += picked
    return chosen
