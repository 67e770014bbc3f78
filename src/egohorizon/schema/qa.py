"""Month-scale QA items and answers (SPEC §4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema.checks import (
    answer_letter,
    integer,
    list_of,
    mapping,
    nonempty_text,
    number,
    optional,
    text,
)
from egohorizon.schema.record import Record


@dataclass
class Evidence(Record):
    """Where a QA answer can be seen: a video/session and a time range."""

    KEY: ClassVar = None
    FIELDS: ClassVar = {
        "video": (text, True),
        "start": (optional(number), False),
        "end": (optional(number), False),
    }
    video: str = ""
    start: float | None = None
    end: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


def evidence_item(value: Any) -> tuple[Any, str | None]:
    record, problems = Evidence.from_dict(value)
    if problems:
        return value, "; ".join(f"{f or 'evidence'}: {p}" for f, p in problems)
    return record.to_dict(), None


@dataclass
class QAItem(Record):
    """A multiple-choice question (SPEC §3). ``answer`` is a letter; ``level`` comes from the task."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "participant": (text, True),
        "task": (nonempty_text, True),
        "question": (nonempty_text, True),
        "options": (list_of(text, "option strings"), True),
        "answer": (answer_letter, True),
        "level": (optional(integer), False),
        "evidence": (list_of(evidence_item, "evidence objects"), False),
        "source": (text, False),
        "meta": (mapping, False),
    }
    id: str = ""
    participant: str = ""
    task: str = ""
    question: str = ""
    options: list[str] = field(default_factory=list)
    answer: str = "A"
    level: int | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
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
    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "answer": (optional(text), False),
        "text": (optional(text), False),  # null: a model that returned nothing, invalid (SPEC §3)
        "model": (text, False),
        "prompt": (text, False),
        "prompt_version": (text, False),
        "seed": (optional(integer), False),
    }
    ONE_OF: ClassVar = (("answer", "text"), "expected 'answer' (a letter) or 'text' (raw model output)")
    id: str = ""
    answer: str | None = None
    text: str | None = None
    model: str = ""
    prompt: str = ""
    prompt_version: str = ""
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
