"""Caption windows and the captioner's predictions (SPEC §6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema import checks
from egohorizon.schema.record import Record, declared


@dataclass
class CaptionWindow(Record):
    """The gold caption of one window (issue 11): its timed actions (seconds from the window's start)
    and scene. ``session`` and ``start`` (the window's start, seconds since the epoch or the dataset's
    origin) order the windows of a session for the repeat-previous baseline; ``activity`` is the
    window's activity type for the breakdown (``egohorizon.metrics.captions.activity_of``)."""

    id: str = declared(checks.nonempty_text, "")
    window_s: float = declared(checks.number, 30.0)
    actions: list[dict[str, Any]] = declared(checks.list_of(checks.caption_action, "action objects"), factory=list)
    scene: str | None = declared(checks.optional(checks.text), None, required=False)
    source: str = declared(checks.text, "", required=False)
    participant: str = declared(checks.text, "", required=False)
    day: str = declared(checks.text, "", required=False)
    session: str = declared(checks.text, "", required=False)
    start: float | None = declared(checks.optional(checks.number), None, required=False)
    activity: str | None = declared(checks.optional(checks.text), None, required=False)
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

    ONE_OF: ClassVar = (
        ("actions", "text"),
        "expected 'actions' (a list of {start, end, action}) or 'text' (raw model output)",
    )
    id: str = declared(checks.nonempty_text, "")
    actions: list[dict[str, Any]] | None = declared(checks.list_of(checks.caption_action, "action objects"),
                                                    None, required=False)
    scene: str | None = declared(checks.optional(checks.text), None, required=False)
    # null: a model that returned nothing, invalid
    text: str | None = declared(checks.optional(checks.text), None, required=False)
    model: str = declared(checks.text, "", required=False)
    prompt: str = declared(checks.text, "", required=False)
    prompt_version: str = declared(checks.text, "", required=False)
    seed: int | None = declared(checks.optional(checks.integer), None, required=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
