"""The text a hand model writes for one clip: boxes, subtasks, hand actions and hand captions.

One line per item, times in seconds from the clip's start, boxes ``[x1,y1,x2,y2]`` in whole pixels
of the image the model was shown (Qwen2.5-VL's absolute-pixel convention; ``backbones.boxes``
maps them to and from the original frame)::

    0.5s left [102,310,180,402] right [300,305,372,398]
    1s right [301,306,371,399]
    subtask 0-2.5 wipe the table
    action left 0-1 take the cloth
    action right 0.4-2.5 wipe the table
    caption left 0-1 the left hand picks up a blue cloth

A box line names the frame time and the hands visible in it (a hand left out is not visible). Where
the gold has no sides (real EgoHands frames: one class), a box is the hand-agnostic item
``hand [x1,y1,x2,y2]``, any number of them on a line (``0s hand [10,300,200,460] hand [700,310,900,470]``),
written left to right.
``subtask`` lines carry no hand; ``action`` (an Ego4D verb first, then its object) and ``caption``
lines name one. Lines are sorted: boxes by time, then subtasks, actions, captions by start.

The parser is tolerant and never guesses: every line or box item it cannot read exactly (unknown
hand, end before start, a box whose corners are swapped, stray words) is counted in ``invalid`` and
dropped; the rest is kept. An empty or missing output is no items and no invalid parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

HANDS = ("left", "right")
AGNOSTIC = "hand"  # a box without a side; several may share a frame
BOX_NAMES = (*HANDS, AGNOSTIC)
# text keyword -> SPEC §6 segment kind
SEGMENT_KINDS = {"subtask": "subtask", "action": "hand_action", "caption": "hand_caption"}
KEYWORDS = {kind: word for word, kind in SEGMENT_KINDS.items()}

_NUMBER = r"\d+(?:\.\d+)?"
_BOX_LINE = re.compile(rf"^({_NUMBER})s\s+(.*)$")
_BOX_ITEM = re.compile(r"\s*(\w+)\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*")
_SEGMENT_LINE = re.compile(rf"^(subtask|action|caption)(?:\s+(left|right))?\s+({_NUMBER})\s*-\s*({_NUMBER})\s+(\S.*)$")


@dataclass
class HandParse:
    """What one output held: ``boxes`` (t, hand, [x1, y1, x2, y2] model pixels) and ``segments``
    (SPEC §6 fields less ``clip``), with the count of dropped parts and the lines they came from."""

    boxes: list[tuple[float, str, list[int]]] = field(default_factory=list)
    segments: list[dict] = field(default_factory=list)
    invalid: int = 0
    invalid_lines: list[str] = field(default_factory=list)

    def drop(self, line: str) -> None:
        self.invalid += 1
        self.invalid_lines.append(line)


def _seconds(value: float) -> str:
    """Shortest text for a time: 0.5, 1, 2.33 (two decimals at most)."""
    return f"{round(value, 2):g}"


def render_hand_text(boxes: Sequence[tuple[float, str, Sequence[int]]], segments: Sequence[dict]) -> str:
    """The target text for a clip: ``boxes`` in model pixels, ``segments`` with kind, hand, start,
    end (seconds from the clip's start) and label."""
    by_time: dict[float, dict[str, list[Sequence[int]]]] = {}
    for t, hand, box in boxes:
        named = by_time.setdefault(round(t, 2), {})
        # a side names one box per frame (the last given wins); hand-agnostic boxes all stay
        named[hand] = [*named.get(hand, []), box] if hand == AGNOSTIC else [box]
    lines = []
    for t in sorted(by_time):
        items = " ".join(f"{hand} [{','.join(str(int(v)) for v in box)}]"
                         for hand in BOX_NAMES for box in sorted(by_time[t].get(hand, []), key=lambda b: (b[0], b[1])))
        lines.append(f"{_seconds(t)}s {items}")
    order = {kind: i for i, kind in enumerate(SEGMENT_KINDS.values())}
    for segment in sorted(segments, key=lambda s: (order[s["kind"]], s["start"], s.get("hand") or "")):
        hand = f" {segment['hand']}" if segment["kind"] != "subtask" else ""
        label = " ".join(str(segment["label"]).split())
        lines.append(f"{KEYWORDS[segment['kind']]}{hand} {_seconds(segment['start'])}-{_seconds(segment['end'])} {label}")
    return "\n".join(lines)


def _parse_boxes(line: str, t: float, rest: str, parse: HandParse) -> None:
    position, found = 0, []
    while position < len(rest):
        match = _BOX_ITEM.match(rest, position)
        if not match:
            break
        hand, corners = match.group(1), [int(v) for v in match.groups()[1:]]
        if hand in BOX_NAMES and corners[2] > corners[0] and corners[3] > corners[1] and min(corners) >= 0:
            found.append((t, hand, corners))
        else:
            parse.drop(line)
        position = match.end()
    if position < len(rest) or (not found and not rest.strip()):
        parse.drop(line)  # words after (or instead of) the box items
    parse.boxes += found


def parse_hand_text(text: str | None) -> HandParse:
    """Items of a model's output (format in the module docstring); never raises."""
    parse = HandParse()
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        box_line = _BOX_LINE.match(line)
        if box_line:
            _parse_boxes(line, float(box_line.group(1)), box_line.group(2), parse)
            continue
        segment = _SEGMENT_LINE.match(line)
        if not segment:
            parse.drop(line)
            continue
        word, hand, start, end, label = segment.groups()
        start, end = float(start), float(end)
        if end <= start or (word == "subtask") != (hand is None):
            parse.drop(line)
            continue
        parse.segments.append({"kind": SEGMENT_KINDS[word], "hand": hand, "start": start, "end": end,
                               "label": label.strip()})
    return parse
