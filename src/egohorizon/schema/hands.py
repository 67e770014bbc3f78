"""Hand segments (subtasks, hand actions, hand captions) and hand boxes (SPEC §5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema import checks
from egohorizon.schema.record import Record, _end_after_start, declared


@dataclass
class Segment(Record):
    """A labelled time span of a clip (SPEC §4, §6); ``hand`` for hand actions and captions."""

    KEY: ClassVar = None
    clip: str = declared(checks.nonempty_text, "")
    kind: str = declared(checks.one_of(*checks.SEGMENT_KINDS), "subtask")
    hand: str | None = declared(checks.optional(checks.one_of(*checks.HANDS)), None, required=False)
    start: float = declared(checks.number, 0.0)
    end: float = declared(checks.number, 0.0)
    label: str = declared(checks.text, "")
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
    clip: str = declared(checks.nonempty_text, "")
    frame: int = declared(checks.non_negative_int, 0)
    hand: str = declared(checks.one_of(*checks.HANDS), "left")
    box: list[float] = declared(checks.box, factory=list)
    grid: int | None = declared(checks.positive_int, None, required=False)
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
    clip: str = declared(checks.nonempty_text, "")
    t: float = declared(checks.number, 0.0)
    hand: str = declared(checks.one_of(*checks.HANDS), "left")
    box: list[float] = declared(checks.box, factory=list)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
