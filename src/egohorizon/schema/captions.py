"""Caption windows and the captioner's predictions (SPEC §6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema.checks import (
    caption_action,
    integer,
    list_of,
    nonempty_text,
    number,
    optional,
    text,
)
from egohorizon.schema.record import Record


@dataclass
class CaptionWindow(Record):
    """The gold caption of one window (issue 11): its timed actions (seconds from the window's start)
    and scene. ``session`` and ``start`` (the window's start, seconds since the epoch or the dataset's
    origin) order the windows of a session for the repeat-previous baseline; ``activity`` is the
    window's activity type for the breakdown (``egohorizon.metrics.captions.activity_of``)."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "window_s": (number, True),
        "actions": (list_of(caption_action, "action objects"), True),
        "scene": (optional(text), False),
        "source": (text, False),
        "participant": (text, False),
        "day": (text, False),
        "session": (text, False),
        "start": (optional(number), False),
        "activity": (optional(text), False),
    }
    id: str = ""
    window_s: float = 30.0
    actions: list[dict[str, Any]] = field(default_factory=list)
    scene: str | None = None
    source: str = ""
    participant: str = ""
    day: str = ""
    session: str = ""
    start: float | None = None
    activity: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        window_s = values.get("window_s")
        if window_s is None:
            return []
        if window_s <= 0:
            return [("window_s", f"expected a window length > 0 s, got {window_s}")]
        late = [i for i, a in enumerate(values.get("actions") or []) if a["end"] > window_s + 1e-6]
        if late:
            end = values["actions"][late[0]]["end"]
            return [("actions", f"item {late[0]}: ends at {end} s, after the window's end ({window_s:g} s)")]
        return []


@dataclass
class CaptionPrediction(Record):
    """A captioner's answer for one window: parsed ``actions`` (+ ``scene``), or raw ``text`` in the
    caption format (``egohorizon.formats.caption``), which the tolerant parser reads."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "actions": (list_of(caption_action, "action objects"), False),
        "scene": (optional(text), False),
        "text": (optional(text), False),  # null: a model that returned nothing, invalid
        "model": (text, False),
        "prompt": (text, False),
        "prompt_version": (text, False),
        "seed": (optional(integer), False),
    }
    ONE_OF: ClassVar = (
        ("actions", "text"),
        "expected 'actions' (a list of {start, end, action}) or 'text' (raw model output)",
    )
    id: str = ""
    actions: list[dict[str, Any]] | None = None
    scene: str | None = None
    text: str | None = None
    model: str = ""
    prompt: str = ""
    prompt_version: str = ""
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
