"""Hand segments (subtasks, hand actions, hand captions) and hand boxes (SPEC §5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema.checks import (
    HANDS,
    SEGMENT_KINDS,
    box,
    non_negative_int,
    nonempty_text,
    number,
    one_of,
    optional,
    positive_int,
    text,
)
from egohorizon.schema.record import Record, _end_after_start


@dataclass
class Segment(Record):
    """A labelled time span of a clip (SPEC §4, §6); ``hand`` for hand actions and captions."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "clip": (nonempty_text, True),
        "kind": (one_of(*SEGMENT_KINDS), True),
        "hand": (optional(one_of(*HANDS)), False),
        "start": (number, True),
        "end": (number, True),
        "label": (text, True),
    }
    clip: str = ""
    kind: str = "subtask"
    hand: str | None = None
    start: float = 0.0
    end: float = 0.0
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        problems = _end_after_start(values)
        if values.get("kind") in ("hand_action", "hand_caption") and values.get("hand") is None:
            problems.append(("hand", f"expected 'left' or 'right' for kind {values['kind']!r}"))
        return problems

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class HandBox(Record):
    """A gold hand box at a 30 fps frame index; ``grid`` N: the clip is annotated on frames 0, N, 2N, ..."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "clip": (nonempty_text, True),
        "frame": (non_negative_int, True),
        "hand": (one_of(*HANDS), True),
        "box": (box, True),
        "grid": (positive_int, False),
    }
    clip: str = ""
    frame: int = 0
    hand: str = "left"
    box: list[float] = field(default_factory=list)
    grid: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        if "frame" in values and values.get("grid") and values["frame"] % values["grid"]:
            grid = values["grid"]
            expected = f"expected a frame on the clip's grid of {grid} (0, {grid}, {2 * grid}, ...)"
            return [("frame", f"{expected}, got {values['frame']}")]
        return []


@dataclass
class BoxPrediction(Record):
    """A model's hand box at time ``t`` seconds; it belongs to frame ``round(30 * t)``."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "clip": (nonempty_text, True),
        "t": (number, True),
        "hand": (one_of(*HANDS), True),
        "box": (box, True),
    }
    clip: str = ""
    t: float = 0.0
    hand: str = "left"
    box: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
