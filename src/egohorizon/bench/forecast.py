"""``egohorizon bench forecast POINTS --model M | --base-url URL --out OUT``: NextMe-800's in-context
forecasting protocol (or the project's own prompt) for any model, one point at a time, scored as eval.py
scores its in-context ``llm`` predictor (issue 25 item 5).

    POINTS (ForecastPoint JSONL: ``egohorizon points``, a run's points/points_test.jsonl) -> the first
      --limit points, minus those OUT holds
      -> the protocol's prompt: nextme = the 50 most recent context events before t0 and the target
         windows, three candidate trajectories asked for (prompts/nextme.py); egohorizon = the forecast
         prompt (prompts/forecast.txt) with all of the point's context, three candidates
      -> the model (a local transformers model, llm/local_model.py, or an OpenAI-compatible server), one
         user turn, greedy unless --temperature
      -> tasks.forecast.candidates_from_texts(..., "in_prompt", 3) -> OUT/predictions.jsonl, in point order
      -> at the end: tasks.forecast.evaluate (SPEC §1: best of 3, S_norm against random trajectories
         drawn from these points' targets, repeat-last-K) -> OUT/summary.json and the table

A reply the parser cannot read is a prediction of nothing: its line carries the raw ``text`` and no
``candidates``, it is scored 0 and counted invalid (never asked again, never guessed). A model failure
(server down after the client's retries) leaves the point without a line for the next run; it is
scored invalid in this run's summary and listed as unfinished. Points leave the worker threads in file
order, so a killed run's file is a prefix of an uninterrupted run's, a torn last line is cut off, and
finishing it gives the same bytes; neither file holds a time or OUT's path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from egohorizon.bench.failures import FailureBudget, ask_model
from egohorizon.errors import ConfigError, DataError
from egohorizon.schema import ForecastPoint

log = logging.getLogger(__name__)

PROTOCOLS = ("nextme", "egohorizon")
PREDICTIONS_FILE = "predictions.jsonl"
SUMMARY_FILE = "summary.json"
N_CANDIDATES = 3  # both protocols ask for the paper's three trajectories
# What a line was made with: a rerun with another of these into the same OUT is refused.
# dtype: a local model's weights (issue 37; None for a server): a folder does not mix float32 and bf16 lines.
PROVENANCE_KEYS = ("model", "protocol", "prompt", "prompt_version", "context_events", "n_candidates", "seed",
                   "temperature", "max_new_tokens", "dtype", "stop")


@dataclass
class ForecastBenchSettings:
    protocol: str = "nextme"
    limit: int | None = None
    embedder: str = "minilm"  # scoring only: a rerun with another embedder rescores, asks nothing
    draws: int = 5  # random-baseline draws per point
    seed: int = 0  # the backend's and the random draws' (eval.py's cfg.seed for both)
    temperature: float = 0.0  # greedy: the paper gives no decoding settings
    max_new_tokens: int = 1024  # eval.py's llm.max_new_tokens
    concurrency: int = 2  # requests in flight to a server
    max_failures: float = 0.05


@dataclass
class Outcome:
    point: ForecastPoint
    shown: int
    text: str | None = None
    error: str | None = None


# ------------------------------------------------------------------------------------------------ input


def load_points(path: str | Path) -> list[ForecastPoint]:
    """The points of a ForecastPoint JSONL file; every defect named by file, line and field (RecordError)."""
    from egohorizon.schema import load_jsonl

    points = load_jsonl(path, ForecastPoint)
    if not points:
        raise DataError(f"{path}: holds no forecast points")
    return points


def protocol_prompt(protocol: str) -> str:
    from egohorizon.prompts.forecast import FORECAST_PROMPT_NAME
    from egohorizon.prompts.nextme import NEXTME_PROMPT_NAME

    if protocol not in PROTOCOLS:
        raise ConfigError(f"--protocol: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    return NEXTME_PROMPT_NAME if protocol == "nextme" else FORECAST_PROMPT_NAME


def context_limit(protocol: str) -> int | None:
    from egohorizon.prompts.nextme import NEXTME_CONTEXT

    return NEXTME_CONTEXT if protocol == "nextme" else None  # egohorizon: the point's own context


def render(point: ForecastPoint, protocol: str) -> tuple[str, int]:
    """The prompt of ``point`` under ``protocol`` and how many context events it shows; nothing that
    starts at or after t0 or ends after it (``prompts.nextme.recent_context`` checks every prompt)."""
    from egohorizon.prompts.nextme import recent_context, render_with_context

    context = recent_context(point, context_limit(protocol))
    return render_with_context(point, context, protocol_prompt(protocol), N_CANDIDATES), len(context)


# ------------------------------------------------------------------------------------------------ lines


def row_of(outcome: Outcome, run: Mapping[str, Any]) -> dict[str, Any]:
    """The SPEC §6 prediction record (``candidates``, or the raw ``text`` when nothing parsed), plus the
    point's group, how much context it showed and the run's settings."""
    from egohorizon.tasks.forecast import candidates_from_texts, prediction_records

    point = outcome.point
    texts = {point.id: [outcome.text or ""]}
    candidates = {point.id: candidates_from_texts(texts[point.id], "in_prompt", N_CANDIDATES)}
    row = prediction_records([point], texts, candidates, run["model"], run["prompt"], run["prompt_version"],
                             run["seed"])[0]
    row.update(source=point.source, level=point.level, k=point.k, context_shown=outcome.shown,
               context_available=len(point.context),
               **{k: run[k] for k in PROVENANCE_KEYS if k not in row})
    return row


def check_provenance(rows: Mapping[str, Mapping[str, Any]], run: Mapping[str, Any], out: Path) -> None:
    """One folder, one run: lines made with another model, protocol, prompt or decoding are refused."""
    for point_id, row in rows.items():
        differ = [k for k in PROVENANCE_KEYS if row.get(k) != run[k]]
        if differ:
            shown = "; ".join(f"{k}: {row.get(k)!r} there, {run[k]!r} now" for k in differ)
            raise ConfigError(f"{out / PREDICTIONS_FILE}: point {point_id!r} was answered with other settings "
                              f"({shown}). Use another --out for another model or protocol (or delete the folder)")


# ------------------------------------------------------------------------------------------------ the run


def generate(backend, prompt: str, settings: ForecastBenchSettings) -> str:
    return backend.generate(prompt, max_new_tokens=settings.max_new_tokens, temperature=settings.temperature,
                            seed=settings.seed, n=1)[0]


def outcomes(backend, points: Sequence[ForecastPoint], settings: ForecastBenchSettings,
             remote: bool) -> Iterator[Outcome]:
    """Each point's outcome, in order: a server is asked ``concurrency`` points at a time, a local model one."""
    from egohorizon.bench.run import in_order

    def ask(point: ForecastPoint) -> Outcome:
        prompt, shown = render(point, settings.protocol)
        outcome = Outcome(point, shown)
        outcome.text, outcome.error = ask_model(lambda: generate(backend, prompt, settings))
        return outcome

    if not remote:
        yield from map(ask, points)
        return
    with ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="bench-forecast") as pool:
        try:
            yield from in_order(pool, ask, points, 2 * settings.concurrency)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def run_forecast_bench(points_file: str | Path, out: str | Path, model: str, *, base_url: str | None = None,
                       settings: ForecastBenchSettings | None = None,
                       backend_options: dict[str, Any] | None = None, progress=None, history=None
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Asks the model for every point OUT lacks, appends their lines, scores all; returns (summary, timing).
    ``history``: a ``metrics.habits.HabitHistory`` (``--history``/``--split``) to score the habit baselines."""
    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.bench.results import ItemsLog, read_rows
    from egohorizon.llm import make_backend
    from egohorizon.progress import StepProgress
    from egohorizon.prompts import load_prompt

    settings = settings or ForecastBenchSettings()
    prompt = load_prompt(protocol_prompt(settings.protocol))
    every = load_points(points_file)
    points = every[: settings.limit] if settings.limit else every
    embedder = get_embedder(settings.embedder)  # a missing embedder package fails before any request
    options = dict(backend_options or {})
    if base_url:
        options.setdefault("max_concurrency", settings.concurrency)
    backend = make_backend(model, base_url=base_url, **options)
    run = {"points": str(Path(points_file).resolve()), "model": backend.model_id,
           "backend": "http" if base_url else "local", "protocol": settings.protocol, "prompt": prompt.name,
           "prompt_version": prompt.version, "context_events": context_limit(settings.protocol),
           "n_candidates": N_CANDIDATES, "seed": settings.seed, "temperature": settings.temperature,
           "max_new_tokens": settings.max_new_tokens,
           "dtype": None, "stop": None, **backend.generation_record()}
    out = Path(out)
    done = read_rows(out / PREDICTIONS_FILE)[0]
    if not base_url and any(p.id not in done for p in points):
        # Load a local model before OUT is touched: a wrong --model ends here, with nothing written.
        backend.generate("Hello", max_new_tokens=1, temperature=0.0, seed=0)
    started = time.perf_counter()
    budget = FailureBudget(settings.max_failures, "points")
    with ItemsLog(out / PREDICTIONS_FILE) as results:
        rows = results.open()
        check_provenance(rows, run, out)
        todo = [p for p in points if p.id not in rows]
        log.info("%s: %d points, %d already answered in %s, %d to go (%s, protocol %s)", points_file, len(points),
                 len(points) - len(todo), out, len(todo), backend.model_id, settings.protocol)
        try:
            _answer(outcomes(backend, todo, settings, bool(base_url)), len(todo), results, rows, run, budget,
                    progress or StepProgress())
        finally:  # also when stopped early or interrupted: the summary of what is finished
            from egohorizon.bench.forecast_summary import summarize, write_summary

            summary = summarize(points, rows, run, embedder, settings.draws, history=history)
            write_summary(out / SUMMARY_FILE, summary)
    wall = time.perf_counter() - started
    timing = {"tried": budget.tried, "wall_s": round(wall, 3),
              "points_per_s": round(budget.tried / wall, 4) if wall > 0 and budget.tried else None}
    return summary, timing


def _answer(stream: Iterator[Outcome], total: int, results, rows: dict[str, dict[str, Any]],
            run: Mapping[str, Any], budget: FailureBudget, progress) -> None:
    with progress.step("bench forecast", total=total, unit="points") as advance:
        for outcome in stream:
            budget.record(model_error=outcome.error, where=f"point {outcome.point.id!r}")
            if outcome.error is not None:
                log.warning("point %s: the model failed (%s); it stays unfinished", outcome.point.id, outcome.error)
            else:
                row = row_of(outcome, run)
                results.append(row)
                rows[row["id"]] = row
            advance(1)
            budget.check()
