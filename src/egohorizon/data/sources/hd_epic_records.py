"""HD-EPIC's videos and high-level activities as the adapter reads them, and the meta an activity's event
carries: below both ``hd_epic`` (the adapter) and ``hd_epic_narrations`` (the two narration levels),
which use them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from egohorizon.data.sources._common import LOCAL_CLOCK_AS_UTC, day_of


@dataclass
class Video:
    """A recording: its id, participant, local start time (as UTC seconds) and duration."""

    id: str
    person: str
    start: float
    duration: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def participant(self) -> str:
        return f"hd-{self.person}"

    @property
    def day(self) -> str:
        return day_of(self.start)


@dataclass
class Activity:
    """A high-level activity, times in seconds from the start of its video."""

    id: str
    video: str
    start: float
    end: float
    label: str
    recipe_ids: list[str]
    meta: dict[str, Any] = field(default_factory=dict)


def activity_meta(activity: Activity) -> dict[str, Any]:
    return {"kind": "high_level_activity", "video_id": activity.video, "recipe_ids": activity.recipe_ids,
            "offset_s": [activity.start, activity.end], "time_basis": LOCAL_CLOCK_AS_UTC, **activity.meta}
