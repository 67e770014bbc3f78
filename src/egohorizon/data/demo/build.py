"""Turn recorded sessions of simulated acts into the project's records: the L1-L5 events, one
recording per session, and the transcript.

Why no event crosses a session boundary: a session is one stretch of continuous observation. What
happened in the pause between two sessions was not seen, so a parent that spanned the pause would
claim to describe unobserved time, and its span would no longer be "exactly its children". A
level-5 episode cut by a pause (a work morning with a break in recording) therefore becomes one L5
event per session, each with the episode's goal as its text; ``meta["partial"]`` marks an L5 event
that covers only part of its episode. Long horizons still cross sessions and days in the *sequence*
of events (forecasting contexts span them, SPEC §2), just not inside one event.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from egohorizon.data.demo.recording import Session
from egohorizon.data.demo.simulate import Node, action_details
from egohorizon.schema import Event, Recording

SOURCE = "demo"


@dataclass
class Records:
    events: list[Event] = field(default_factory=list)
    recordings: list[Recording] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)


class _DayBuilder:
    def __init__(self, records: Records, participant: str, date: dt.date):
        self.records, self.participant, self.day = records, participant, date.isoformat()
        self.counters = {level: 0 for level in range(1, 6)}
        self.session = ""
        self.episode_parts: dict[int, int] = {}  # id(episode node) -> parts recorded so far

    def _id(self, level: int) -> str:
        self.counters[level] += 1
        return f"{self.participant}-{self.day}-L{level}-{self.counters[level]:04d}"

    def _event(self, node: Node, level: int, start: int, end: int, meta: dict[str, Any]) -> Event:
        event = Event(id=self._id(level), participant=self.participant, day=self.day, session=self.session,
                      level=level, start=start, end=end, text=node.text, source=SOURCE,
                      meta={"key": node.act.key, "canonical": node.canonical, "place": node.place, **meta})
        self.records.events.append(event)
        return event

    def add_session(self, index: int, session: Session) -> None:
        self.session = f"{self.participant}-{self.day}-s{index}"
        self.records.recordings.append(Recording(
            id=self.session, participant=self.participant, day=self.day, session=self.session,
            start=session.start, end=session.end, source=SOURCE, meta={"index": index}))
        for _, group in groupby(session.parts, key=lambda pair: id(pair[0])):
            group = list(group)
            episode, activities = group[0][0], [activity for _, activity in group]
            partial = len(activities) < len(episode.children)
            # An episode's place is where its first recorded activity happens.
            parent = self._event(episode, 5, activities[0].start, activities[-1].end,
                                 {"partial": partial, "place": activities[0].place})
            part = self.episode_parts[id(episode)] = self.episode_parts.get(id(episode), -1) + 1
            if part:  # a later part of a cut episode is described afresh, in another of its wordings
                parent.text = episode.wordings[(episode.wordings.index(episode.text) + part) % len(episode.wordings)]
            parent.children = [self._subtree(activity, parent.id).id for activity in activities]

    def _subtree(self, node: Node, parent_id: str) -> Event:
        meta: dict[str, Any] = {}
        utterances: list[dict[str, Any]] = []
        if node.level == 1:
            meta["objects"] = list(node.objects)
            screen, utterances = action_details(node)
            if screen:
                meta["screen"] = screen
            if utterances:
                meta["speech"] = True
        event = self._event(node, node.level, node.start, node.end, meta)
        event.parent = parent_id
        if node.level > 1:
            event.children = [self._subtree(child, event.id).id for child in node.children]
        for utterance in utterances:
            self.records.transcript.append({"participant": self.participant, "session": self.session,
                                            "event": event.id, **utterance})
        return event


def add_day(records: Records, participant: str, date: dt.date, sessions: list[Session]) -> None:
    """Appends the records of one recorded day (its sessions numbered from 1 in time order)."""
    builder = _DayBuilder(records, participant, date)
    for index, session in enumerate(sessions, start=1):
        builder.add_session(index, session)
