"""Forecast points, predictions and ranked candidates (SPEC §1, §3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from egohorizon.schema import checks
from egohorizon.schema.record import Record, declared


@dataclass
class ForecastPoint(Record):
    """A forecasting point (SPEC §2, §6): context before ``t0``, K target texts and their windows."""

    id: str = declared(checks.nonempty_text, "")
    source: str = declared(checks.text, "")
    participant: str = declared(checks.text, "")
    level: int = declared(checks.level, 1)
    k: int = declared(checks.positive_int, 1)
    t0: float = declared(checks.number, 0.0)
    context: list[dict[str, Any]] = declared(checks.list_of(checks.context_event, "events"), factory=list)
    targets: list[str] = declared(checks.list_of(checks.text, "action strings"), factory=list)
    windows: list[list[float]] = declared(checks.list_of(checks.window, "[start, end] windows"), factory=list)
    day: str = declared(checks.text, "", required=False)
    split: str = declared(checks.text, "", required=False)
    meta: dict[str, Any] = declared(checks.mapping, factory=dict, required=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _cross_checks(cls, values):
        problems = []
        if "targets" in values and "windows" in values and len(values["targets"]) != len(values["windows"]):
            n_targets, n_windows = len(values["targets"]), len(values["windows"])
            problems.append(("windows", f"expected one window per target ({n_targets}), got {n_windows}"))
        # a point has exactly K targets (SPEC §2; data/points/build.py drops candidates with fewer): a K=5
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

    ONE_OF: ClassVar = (
        ("candidates", "text"),
        "expected 'candidates' (a list of action lists) or 'text' (raw output)",
    )
    id: str = declared(checks.nonempty_text, "")
    candidates: list[list[str]] | None = declared(checks.list_of(checks.candidate, "candidate trajectories"),
                                                  None, required=False)
    text: str | None = declared(checks.optional(checks.text), None, required=False)  # null: a model that returned nothing, invalid (SPEC §1)
    model: str = declared(checks.text, "", required=False)
    prompt: str = declared(checks.text, "", required=False)
    prompt_version: str = declared(checks.text, "", required=False)
    seed: int | None = declared(checks.optional(checks.integer), None, required=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class RankedCandidates(Record):
    """Human rankings of candidate action sequences against a reference (metric validation, SPEC §1).

    ``rankings[a][c]``: annotator a's rank of candidate c (1 = closest to the reference; equal ranks
    are ties), one list per annotator, each as long as ``candidates``.
    """

    id: str = declared(checks.nonempty_text, "")
    reference: list[str] = declared(checks.list_of(checks.text, "action strings"), factory=list)
    candidates: list[list[str]] = declared(checks.list_of(checks.candidate, "candidate trajectories"), factory=list)
    rankings: list[list[float]] = declared(
        checks.list_of(checks.list_of(checks.number, "ranks"), "one list of ranks per annotator"), factory=list)
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
