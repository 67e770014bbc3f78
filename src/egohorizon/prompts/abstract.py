"""The abstractor's prompt: a run of consecutive level-k events in (their answer format is
``formats.abstract``: the groups, one ``FIRST-LAST: DESCRIPTION`` line each).

``render_abstract_prompt`` is the one place a run of events becomes a model input: the offline
``egohorizon abstract`` job and the training datamodule (``datamodules.abstract``) both call it. It is
torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence

from egohorizon.clock import minute_clock
from egohorizon.prompts import load_prompt
from egohorizon.schema import Event

ABSTRACT_PROMPT_NAME = "abstract"


def render_events(events: Sequence[Event]) -> str:
    return "\n".join(f"{i}. {minute_clock(e.start)}-{minute_clock(e.end)} {e.text}" for i, e in enumerate(events))


def render_abstract_prompt(events: Sequence[Event], prompt: str | None = None) -> str:
    """The prompt for one run of same-level events (its level is the first event's)."""
    if not events:
        raise ValueError("an abstraction prompt needs at least one event")
    level = events[0].level
    return load_prompt(prompt or ABSTRACT_PROMPT_NAME).render(
        n_events=len(events), level=level, parent_level=level + 1, events=render_events(events),
        last_index=len(events) - 1)
