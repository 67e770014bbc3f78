"""Month-scale QA items and answers (SPEC §4)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema import checks
from egohorizon.schema.record import Record, declared

# The 14 EgoMonth tasks (Table 1 of the paper) and their cognitive level: a QA item's ``level`` (its
# converter and the demo's items set it) and the level the QA report groups by.
EGOMONTH_TASK_LEVELS: dict[str, int] = {
    "Habit Inference": 1,
    "Personality Inference": 1,
    "Detail Retrieval": 2,
    "Spatial Relation": 2,
    "Self-localization": 2,
    "Temporal Ordering": 2,
    "Event Time": 2,
    "Object Location": 2,
    "Procedure Planning": 3,
    "Event Counting": 3,
    "Object Counting": 3,
    "Route Reasoning": 3,
    "Cross-view Spatial Reasoning": 3,
    "Direction Judgement": 3,
}


def task_key(task: str) -> str:
    """Task names compare case-, space-, hyphen- and underscore-insensitively."""
    return re.sub(r"[\s_\-]+", "", task).casefold()


@dataclass
class Evidence(Record):
    """Where a QA answer can be seen: a video/session and a time range."""

    KEY: ClassVar = None
    video: str = declared(checks.text, "")
    start: float | None = declared(checks.optional(checks.number), None, required=False)
    end: float | None = declared(checks.optional(checks.number), None, required=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


def evidence_item(value: Any) -> tuple[Any, str | None]:
    record, problems = Evidence.from_dict(value)
    if problems:
        return value, "; ".join(f"{f or 'evidence'}: {p}" for f, p in problems)
    return record.to_dict(), None


@dataclass
class QAItem(Record):
    """A multiple-choice question (SPEC §3). ``answer`` is a letter; ``level`` comes from the task."""

    id: str = declared(checks.nonempty_text, "")
    participant: str = declared(checks.text, "")
    task: str = declared(checks.nonempty_text, "")
    question: str = declared(checks.nonempty_text, "")
    options: list[str] = declared(checks.list_of(checks.text, "option strings"), factory=list)
    answer: str = declared(checks.answer_letter, "A")
    level: int | None = declared(checks.optional(checks.integer), None, required=False)
    evidence: list[dict[str, Any]] = declared(checks.list_of(evidence_item, "evidence objects"), factory=list,
                                              required=False)
    source: str = declared(checks.text, "", required=False)
    meta: dict[str, Any] = declared(checks.mapping, factory=dict, required=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        options, answer = values.get("options"), values.get("answer")
        if options is not None and len(options) < 2:
            return [("options", f"expected at least 2 options, got {len(options)}")]
        if options and answer and not 0 <= ord(answer) - ord("A") < len(options):
            return [("answer", f"expected a letter A-{chr(ord('A') + len(options) - 1)}, got {answer!r}")]
        return []


@dataclass
class QAPrediction(Record):
    ONE_OF: ClassVar = (("answer", "text"), "expected 'answer' (a letter) or 'text' (raw model output)")
    id: str = declared(checks.nonempty_text, "")
    answer: str | None = declared(checks.optional(checks.text), None, required=False)
    text: str | None = declared(checks.optional(checks.text), None, required=False)  # null: a model that returned nothing, invalid (SPEC §3)
    model: str = declared(checks.text, "", required=False)
    prompt: str = declared(checks.text, "", required=False)
    prompt_version: str = declared(checks.text, "", required=False)
    seed: int | None = declared(checks.optional(checks.integer), None, required=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
