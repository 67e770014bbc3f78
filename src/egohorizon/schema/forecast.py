"""Forecast points, predictions and ranked candidates (SPEC §1, §3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema.checks import (
    candidate,
    context_event,
    integer,
    level,
    list_of,
    mapping,
    nonempty_text,
    number,
    optional,
    positive_int,
    text,
    window,
)
from egohorizon.schema.record import Record


@dataclass
class ForecastPoint(Record):
    """A forecasting point (SPEC §2, §6): context before ``t0``, K target texts and their windows."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "source": (text, True),
        "participant": (text, True),
        "level": (level, True),
        "k": (positive_int, True),
        "t0": (number, True),
        "context": (list_of(context_event, "events"), True),
        "targets": (list_of(text, "action strings"), True),
        "windows": (list_of(window, "[start, end] windows"), True),
        "day": (text, False),
        "split": (text, False),
        "meta": (mapping, False),
    }
    id: str = ""
    source: str = ""
    participant: str = ""
    level: int = 1
    k: int = 1
    t0: float = 0.0
    context: list[dict[str, Any]] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    windows: list[list[float]] = field(default_factory=list)
    day: str = ""
    split: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        problems = []
        if "targets" in values and "windows" in values and len(values["targets"]) != len(values["windows"]):
            n_targets, n_windows = len(values["targets"]), len(values["windows"])
            problems.append(("windows", f"expected one window per target ({n_targets}), got {n_windows}"))
        # a point has exactly K targets (SPEC §2; points.py drops candidates with fewer): a K=5
        # group must not hold 3-target points, whose scores are not comparable
        if "targets" in values and "k" in values and len(values["targets"]) != values["k"]:
            problems.append(("targets", f"expected k={values['k']} targets, got {len(values['targets'])}"))
        if "context" in values and "t0" in values:
            for i, event in enumerate(values["context"]):
                if event["end"] > values["t0"] + 1e-9:
                    message = f"item {i} ends at {event['end']}, after t0 {values['t0']}: future leaked into the context"
                    problems.append(("context", message))
                    break
        return problems


@dataclass
class ForecastPrediction(Record):
    """A forecaster's answer for one point: parsed candidates, or raw ``text`` for the parser."""

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "candidates": (list_of(candidate, "candidate trajectories"), False),
        "text": (optional(text), False),  # null: a model that returned nothing, invalid (SPEC §1)
        "model": (text, False),
        "prompt": (text, False),
        "prompt_version": (text, False),
        "seed": (optional(integer), False),
    }
    ONE_OF: ClassVar = (
        ("candidates", "text"),
        "expected 'candidates' (a list of action lists) or 'text' (raw output)",
    )
    id: str = ""
    candidates: list[list[str]] | None = None
    text: str | None = None
    model: str = ""
    prompt: str = ""
    prompt_version: str = ""
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class RankedCandidates(Record):
    """Human rankings of candidate action sequences against a reference (metric validation, SPEC §1).

    ``rankings[a][c]``: annotator a's rank of candidate c (1 = closest to the reference; equal ranks
    are ties), one list per annotator, each as long as ``candidates``.
    """

    FIELDS: ClassVar = {
        "id": (nonempty_text, True),
        "reference": (list_of(text, "action strings"), True),
        "candidates": (list_of(candidate, "candidate trajectories"), True),
        "rankings": (list_of(list_of(number, "ranks"), "one list of ranks per annotator"), True),
    }
    id: str = ""
    reference: list[str] = field(default_factory=list)
    candidates: list[list[str]] = field(default_factory=list)
    rankings: list[list[float]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values: dict[str, Any]) -> list[tuple[str, str]]:
        if "candidates" not in values or "rankings" not in values:
            return []
        n = len(values["candidates"])
        problems = []
        if n < 2:
            problems.append(("candidates", f"expected at least 2 candidates to rank, got {n}"))
        if not values["rankings"]:
            problems.append(("rankings", "expected at least one annotator's ranking"))
        for a, ranks in enumerate(values["rankings"]):
            if len(ranks) != n:
                problems.append(("rankings", f"annotator {a}: {len(ranks)} ranks for {n} candidates"))
        return problems
