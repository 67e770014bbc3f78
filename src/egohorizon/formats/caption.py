"""The captioner's output format and its tolerant parser (never inventing).

A caption of one 30 s window is JSON Lines, one object per line, times in seconds from the window's
start::

    {"start": 0, "end": 7.5, "action": "I open the fridge"}
    {"start": 7.5, "end": 15, "action": "I take out the milk"}
    {"scene": "kitchen; the fridge door is open"}

Action lines come in time order; one optional ``scene`` line describes the environment and the state
changes seen in the window. ``parse_caption_output`` reads model text into a ``CaptionParse``:

- code fences and blank lines are ignored; a line that is not a JSON object (prose, a lone bracket)
  is ``unparsed``; a JSON object with neither ``action`` nor ``scene`` is ``unparsed`` too;
- an action line needs a non-empty ``action`` string and numeric ``start`` < ``end`` inside the window
  (``-tolerance <= start``, ``end <= window_s + tolerance``; times are clipped to the window after
  that check); any other action line is ``dropped`` (counted, never repaired);
- the first non-empty ``scene`` string is kept; later ones are ``unparsed``;
- a reply with no valid action and no scene is ``invalid``: it is scored as an empty caption and
  counted as invalid, never guessed.

``render_caption_lines`` writes the same format; ``render_caption_answer`` is the training target of a
window (its gold level-1 events and scene in this format): the captioner's datamodule, its prompt and
the answer set (``llm.answer_set``) all read it from here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_FENCE_LINE = re.compile(r"^\s*```")


@dataclass(frozen=True)
class CaptionAction:
    start: float
    end: float
    text: str


@dataclass
class CaptionParse:
    actions: list[CaptionAction] = field(default_factory=list)
    scene: str | None = None
    dropped: int = 0  # action lines with bad or missing times or text
    unparsed: int = 0  # lines that are not caption objects

    @property
    def invalid(self) -> bool:
        return not self.actions and self.scene is None


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _action(obj: dict, window_s: float, tolerance: float) -> CaptionAction | None:
    text, start, end = obj.get("action"), _number(obj.get("start")), _number(obj.get("end"))
    if not isinstance(text, str) or not text.strip() or start is None or end is None:
        return None
    if not (-tolerance <= start < end <= window_s + tolerance):
        return None
    return CaptionAction(max(0.0, start), min(window_s, end), " ".join(text.split()))


def parse_caption_output(text: str | None, window_s: float = 30.0, tolerance: float = 0.5) -> CaptionParse:
    """The actions and scene in a captioner's raw text (see the module docstring)."""
    parse = CaptionParse()
    if not isinstance(text, str):
        return parse
    for line in text.splitlines():
        line = line.strip().rstrip(",")
        if not line or _FENCE_LINE.match(line):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            parse.unparsed += 1
            continue
        if not isinstance(obj, dict) or not ({"action", "scene"} & set(obj)):
            parse.unparsed += 1
        elif "action" in obj:
            action = _action(obj, window_s, tolerance)
            if action is None:
                parse.dropped += 1
            else:
                parse.actions.append(action)
        elif isinstance(obj["scene"], str) and obj["scene"].strip() and parse.scene is None:
            parse.scene = " ".join(obj["scene"].split())
        else:
            parse.unparsed += 1
    return parse


def render_caption_lines(actions: Sequence[CaptionAction], scene: str | None = None) -> str:
    """The caption format for ``actions`` (times rounded to 0.1 s) and an optional scene line."""
    lines = [
        json.dumps({"start": round(a.start, 1), "end": round(a.end, 1), "action": a.text}, ensure_ascii=False)
        for a in actions
    ]
    if scene:
        lines.append(json.dumps({"scene": scene}, ensure_ascii=False))
    return "\n".join(lines)


def gold_actions(events: Sequence[dict], window_start: float, window_end: float) -> list[CaptionAction]:
    """A window's level-1 events (the shard sample's ``events``) as caption actions, clipped to the
    window, in time order: what the demo world knows the wearer did."""
    out = []
    for event in sorted((e for e in events if e.get("level") == 1), key=lambda e: (e["start"], e["end"])):
        start, end = max(event["start"], window_start), min(event["end"], window_end)
        if end > start:
            out.append(CaptionAction(start - window_start, end - window_start, event["text"]))
    return out


def gold_scene(events: Sequence[dict], window_start: float, window_end: float) -> str | None:
    """A window's gold scene: the places of its level-1 events (the shard sample's ``events`` carry
    ``place`` where the source knows it; the demo world does) in time order, a change of place as
    "A, then B" (the state change the world knows); None when no event says where it happens."""
    places: list[str] = []
    for event in sorted((e for e in events if e.get("level") == 1), key=lambda e: (e["start"], e["end"])):
        place = event.get("place")
        if (isinstance(place, str) and place.strip() and min(event["end"], window_end) > max(event["start"], window_start)
                and (not places or places[-1] != place.strip())):
            places.append(place.strip())
    return ", then ".join(places) if places else None


def render_caption_answer(events: Sequence[Mapping[str, Any]], start: float, end: float) -> str | None:
    """The target of a window: its level-1 ``events`` (shard meta records) in the caption format,
    clipped to ``[start, end]`` and relative to ``start``, then the gold scene line when the events
    carry their place; None when it has no action (nothing to learn)."""
    actions = gold_actions(events, start, end)
    return render_caption_lines(actions, gold_scene(events, start, end)) if actions else None
