"""The abstractor's answer format: a run of consecutive level-k events grouped, one line per group.

Each group is one line ``FIRST-LAST: DESCRIPTION`` (event indices of the run, 0-based, inclusive); the
groups must be contiguous, in order and cover the whole run, and every description must say something.
``parse_groups`` is strict: it accepts nothing else and its error says which line is wrong and why,
because that message is shown to the model when it is asked again (``pipelines.abstract.day``).
``render_groups`` writes the same format (the training target). The prompt is ``prompts.abstract``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from egohorizon.errors import EgohorizonError

_LINE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*:\s*(.*?)\s*$")


class ReplyError(EgohorizonError):
    """A reply that is not a valid grouping; the message is shown to the model on the next attempt."""


@dataclass(frozen=True)
class Group:
    """Events ``first``..``last`` (indices into the run, inclusive) and their parent's description."""

    first: int
    last: int
    text: str

    @property
    def size(self) -> int:
        return self.last - self.first + 1


def render_groups(groups: Sequence[Group]) -> str:
    """The answer format: one ``FIRST-LAST: DESCRIPTION`` line per group."""
    return "\n".join(f"{g.first}-{g.last}: {g.text}" for g in groups)


def parse_groups(reply: str, n_events: int) -> list[Group]:
    """The groups of a reply about a run of ``n_events`` events; ``ReplyError`` on anything else."""
    lines = [line for line in reply.strip().splitlines() if line.strip()]
    if not lines:
        raise ReplyError("the reply is empty; expected lines 'FIRST-LAST: DESCRIPTION'")
    groups: list[Group] = []
    expected_first = 0
    for number, line in enumerate(lines, start=1):
        match = _LINE.match(line)
        where = f"line {number} {line.strip()[:80]!r}"
        if not match:
            raise ReplyError(f"{where}: expected 'FIRST-LAST: DESCRIPTION'")
        first, last, text = int(match.group(1)), int(match.group(2)), match.group(3)
        if first != expected_first:
            raise ReplyError(f"{where}: this group should start at event {expected_first} "
                             f"(groups are contiguous, in order, from 0), not {first}")
        if last < first:
            raise ReplyError(f"{where}: LAST {last} is before FIRST {first}")
        if last >= n_events:
            raise ReplyError(f"{where}: there are only events 0 to {n_events - 1}, not {last}")
        if not text:
            raise ReplyError(f"{where}: the description is empty")
        groups.append(Group(first, last, text))
        expected_first = last + 1
    if expected_first != n_events:
        raise ReplyError(f"the groups end at event {expected_first - 1}; they must cover every event up to "
                         f"{n_events - 1}")
    return groups


def retry_message(error: ReplyError, n_events: int) -> str:
    """What the model is told after an invalid reply."""
    return (f"That answer is invalid: {error}. Answer again with only lines 'FIRST-LAST: DESCRIPTION' that "
            f"cover events 0 to {n_events - 1} contiguously, each with a description.")
