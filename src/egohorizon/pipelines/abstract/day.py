"""One day, L1 -> L5: the same prompt at every level, the model chooses the boundaries.

Per participant and day, level by level, each run of consecutive events goes to the model
(``prompts.abstract``), which answers with groups (contiguous index ranges) and one description each;
every group becomes a parent one level up. A run is a recording session's events: sessions are hard
boundaries, because a parent spanning a pause would describe time nobody saw (docs/demo-world.md, "No
event crosses a session boundary").

- **Long runs** go in overlapping chunks of ``max_events``. Groups of a chunk that end before its last
  ``overlap`` events are kept; the next chunk starts at the first group not kept, so the groups near a
  chunk's edge are decided again with the events that follow them (boundary reconciliation).
- **The last chunk of a long run is full**: it holds the run's last ``max_events`` events, starting before
  the kept groups end, because a model trained on runs of ``max_events`` events fails on a short
  remainder (docs/abstraction.md). The overlap is reconciled at the latest boundary both answers share:
  the kept groups before it stay, the last chunk's groups from it on are added, so no event is grouped
  twice. When the two answers share no boundary in the overlap, the last chunk is asked again, sampled,
  up to ``retries`` times; if none agrees, the events from the first kept boundary inside the last chunk
  are asked on their own (a shorter request, counted in ``short_tails``).
- **Invalid replies** (``parse_groups``) are asked again with the error shown to the model (a trained
  adapter, which only learned single prompts, is asked the same prompt again), up to ``retries`` times,
  sampled at ``retry_temperature`` with a new seed each time (seeded, so cached and
  repeatable); then the day fails (``DayFailed``) and is left out, never patched.
- The built day is checked against the hierarchy invariants (``data.events.hierarchy``) before it counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.errors import EgohorizonError
from egohorizon.formats.abstract import Group, ReplyError, parse_groups, retry_message
from egohorizon.llm.base import LLMBackend, LLMError, Message
from egohorizon.prompts.abstract import render_abstract_prompt
from egohorizon.schema import Event


class DayFailed(EgohorizonError):
    """A day that could not be abstracted (invalid replies after every retry, or a backend error)."""

    def __init__(self, kind: str, reason: str, raw: str | None = None):
        super().__init__(reason)
        self.kind, self.reason, self.raw = kind, reason, raw


@dataclass(frozen=True)
class AbstractSettings:
    top_level: int = 5
    max_events: int = 40
    overlap: int = 8
    retries: int = 2
    max_new_tokens: int = 512
    temperature: float = 0.0
    # A retry samples (seed + attempt): greedy decoding of a model that ignores the error would repeat itself.
    retry_temperature: float = 0.7
    # False for a trained adapter: it learned single prompts, and a conversation holding its bad reply and
    # the error made it write nonsense (docs/abstraction.md); its retries sample the same prompt again.
    show_error: bool = True
    # Constrained decoding (a trained adapter only): the model can write only valid groupings of the run
    # (llm/constraints.py), so no reply is refused; the model still chooses every boundary.
    constrained: bool = False
    seed: int = 0
    prompt: str | None = None  # a prompt name or .txt path; None: the bundled "abstract"

    def __post_init__(self) -> None:
        if not 2 <= self.top_level <= 5:
            raise ValueError(f"levels: expected 2 to 5, got {self.top_level}")
        if self.max_events < 2 or not 0 <= self.overlap < self.max_events:
            raise ValueError(f"chunks: need max_events >= 2 and 0 <= overlap < max_events, got "
                             f"{self.max_events} and {self.overlap}")


@dataclass
class Counts:
    """What abstracting cost: model calls, invalid replies (each retried) and chunks."""

    calls: int = 0
    invalid: int = 0
    chunks: int = 0
    disagreements: int = 0  # full last chunks whose groups shared no boundary with the kept groups
    short_tails: int = 0  # shorter last chunks: no full one shared a boundary with the kept groups
    errors: list[str] = field(default_factory=list)  # the invalid replies' messages, for the report

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "invalid": self.invalid, "chunks": self.chunks,
                "disagreements": self.disagreements, "short_tails": self.short_tails,
                "errors": self.errors[:20]}


# ask(events, first_attempt=0): attempts from first_attempt on sample (seed + attempt), so a later call with
# a higher first_attempt asks for a different answer to the same events.
Ask = Callable[..., list[Group]]


def ask_model(backend: LLMBackend, settings: AbstractSettings, counts: Counts) -> Ask:
    """A function from a run of events to its validated groups, asking again after an invalid reply."""

    def ask(events: Sequence[Event], first_attempt: int = 0) -> list[Group]:
        messages: list[Message] = [{"role": "user", "content": render_abstract_prompt(events, settings.prompt)}]
        reply = ""
        for attempt in range(first_attempt, first_attempt + settings.retries + 1):
            counts.calls += 1
            temperature = settings.temperature if attempt == 0 else max(settings.temperature,
                                                                         settings.retry_temperature)
            try:
                constraint = {"grouping_events": len(events)} if settings.constrained else {}
                reply = backend.generate(messages, max_new_tokens=settings.max_new_tokens,
                                         temperature=temperature, seed=settings.seed + attempt, **constraint)[0]
            except LLMError as error:
                raise DayFailed("model", str(error)) from error
            try:
                return parse_groups(reply, len(events))
            except ReplyError as error:
                counts.invalid += 1
                counts.errors.append(str(error))
                if settings.show_error:
                    messages += [{"role": "assistant", "content": reply},
                                 {"role": "user", "content": retry_message(error, len(events))}]
        raise DayFailed("output", f"L{events[0].level} run of {len(events)} events from {events[0].id}: "
                                  f"{settings.retries + 1} invalid replies; last: {counts.errors[-1]}", raw=reply)

    return ask


def group_run(events: Sequence[Event], ask: Ask, settings: AbstractSettings, counts: Counts) -> list[Group]:
    """The groups of one run (indices into ``events``), chunked when the run is long."""
    n, position, groups = len(events), 0, []
    while position < n:
        if position > 0 and n - position < settings.max_events:  # a short remainder: ask a full last chunk
            return reconcile_last_chunk(events, groups, ask, settings, counts)
        end = min(n, position + settings.max_events)
        counts.chunks += 1
        chunk = ask(events[position:end])
        if end < n:  # keep what ends before the overlap; at least one group, so the loop advances
            chunk = [g for g in chunk if position + g.last < end - settings.overlap] or chunk[:1]
        groups += [Group(position + g.first, position + g.last, g.text) for g in chunk]
        position += chunk[-1].last + 1
    return groups


def reconcile_last_chunk(events: Sequence[Event], kept: list[Group], ask: Ask, settings: AbstractSettings,
                         counts: Counts) -> list[Group]:
    """The run's groups: ``kept`` (from event 0 to where they end, ``position``) joined to the groups of
    the run's last ``max_events`` events, cut at the latest boundary both share.

    The kept groups were decided with the events after them in view; the last chunk's first groups were
    not (the chunk starts wherever ``n - max_events`` falls), so the kept groups win up to the cut and the
    last chunk decides from it on. When no boundary is shared, the last chunk is asked again, sampled (up to
    ``retries`` times, as after an invalid reply); when none shares one, the remainder from the first kept
    boundary inside the last chunk is asked alone (as long as it can be while starting at a kept group).
    """
    n, position = len(events), kept[-1].last + 1
    start = n - settings.max_events
    kept_bounds = {g.first for g in kept} | {position}
    for round_ in range(settings.retries + 1):  # a disagreement is asked again, sampled, like a bad reply
        counts.chunks += 1
        try:
            answer = ask(events[start:], first_attempt=round_ * (settings.retries + 1))
        except DayFailed as failure:
            if round_ == 0 or failure.kind != "output":
                raise
            break  # no valid resample: the fallback below
        last = [Group(start + g.first, start + g.last, g.text) for g in answer]
        cuts = [g.first for g in last if g.first in kept_bounds and g.first <= position]
        if cuts:
            cut = max(cuts)
            return [g for g in kept if g.last < cut] + [g for g in last if g.first >= cut]
        counts.disagreements += 1
    # No agreement: the longest remainder that starts where a kept group starts, asked alone (not patched:
    # joining the two answers would cut a group one of them made).
    tail = min(b for b in kept_bounds if b >= start)
    counts.short_tails += 1
    counts.chunks += 1
    return [g for g in kept if g.last < tail] + [Group(tail + g.first, tail + g.last, g.text)
                                                  for g in ask(events[tail:])]


def runs(events: Sequence[Event]) -> list[list[Event]]:
    """A day's events of one level in time order, cut where the session changes."""
    ordered = sorted(events, key=lambda e: (e.start, e.end, e.id))
    return [list(run) for _, run in itertools.groupby(ordered, key=lambda e: e.session)]


def parents(events: Sequence[Event], groups: Sequence[Group], number: itertools.count,
            provenance: dict[str, Any]) -> list[Event]:
    """One parent per group, one level up, ids ``<participant>-<day>-L<k>-<n>``."""
    made = []
    for group in groups:
        children = events[group.first:group.last + 1]
        first = children[0]
        made.append(Event(
            id=f"{first.participant}-{first.day}-L{first.level + 1}-{next(number):04d}",
            participant=first.participant, day=first.day, session=first.session, level=first.level + 1,
            start=first.start, end=children[-1].end, text=group.text, parent=None,
            children=[c.id for c in children], source=first.source, meta=dict(provenance)))
    return made


def abstract_day(l1: Sequence[Event], ask: Ask, settings: AbstractSettings, counts: Counts,
                 provenance: dict[str, Any] | None = None) -> list[Event]:
    """The day's hierarchy: its L1 events (parents set) and the built L2..top levels."""
    if not l1:
        raise ValueError("a day without level-1 events")
    day = [replace(e, parent=None, children=[], meta=dict(e.meta)) for e in l1]
    level_events = day
    for _level in range(2, settings.top_level + 1):
        built: list[Event] = []
        number = itertools.count(1)
        for run in runs(level_events):
            made = parents(run, group_run(run, ask, settings, counts), number, provenance or {})
            by_id = {e.id: e for e in run}
            for parent in made:
                for child in parent.children:
                    by_id[child].parent = parent.id
            built += made
        day += built
        level_events = built
    report = check_hierarchy(day)
    if not report.ok:  # never expected: the construction keeps the invariants; a bug must not pass quietly
        raise DayFailed("invariant", "; ".join(report.problems[:5]))
    return day
