"""The records of the caption audit page: the windows sampled (``WindowRef``, then ``AuditWindow`` with
their frames) and the captions shown beside them (``AuditCaption``). Below both ``audit`` (which builds
them) and ``audit_page`` (which renders them), so neither imports the other's way up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from egohorizon.schema import Event


@dataclass
class WindowRef:
    """A window as the first pass sees it: where it is and when, no images."""

    key: str
    shard: str
    participant: str
    day: str
    start: float
    end: float
    captions: list[Event] = field(default_factory=list)


@dataclass
class AuditCaption:
    caption_id: str  # the event id; an opaque "qc-..." id for a planted caption
    window_key: str
    text: str
    start: float  # seconds from the window's start, clipped to the window
    end: float
    before: bool  # the event began before the window
    after: bool  # the event goes on after it
    control: bool = False


@dataclass
class AuditWindow:
    ref: WindowRef
    meta: dict[str, Any]
    frames: list[dict[str, Any]]  # strip frames: {"t", "jpeg", "crop" (bytes or None), "meta"}
    captions: list[AuditCaption]
