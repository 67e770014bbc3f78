"""``egohorizon caption``: the offline captioning job over window shards (issue 11, item 4).

    shards (index.json) -> [slice I/N] -> read tar samples, skipping finished windows before decoding
      -> decode + caption_sample (the prompt the captioner was trained on) -> model
      -> parse (formats.caption) -> OUT/captions.jsonl (one line per window, append-only)
      -> at the end: OUT/events.jsonl + OUT/scenes.jsonl, regenerated from all results

Backends (``runners``): an OpenAI-compatible server (images as JPEG data URLs, ``concurrency``
requests in flight, window preparation in the worker threads overlapping the requests), or a local
transformers VLM with or without a trained adapter (batched; a DataLoader worker process reads, decodes
and encodes the next batches while the model generates).

Idempotent and resumable (``results``): a window with a line that counts is not captioned again,
a killed run loses at most the windows in flight, and nothing is written twice. Failures of single
windows are recorded with their reason and never stop the job below ``max_failures`` (a share of the
windows this run tried); above it the job stops with a message naming the first failures.

A window's sample -> the model's input (frames, close-up, prompt, gaze ring) is ``windows``; the run's
settings are ``settings.CaptionSettings``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self

from egohorizon.errors import ConfigError, DataError
from egohorizon.pipelines.caption.results import (
    FAILED,
    INPUT,
    OK,
    OUTPUT,
    SKIPPED,
    ResultsLog,
    check_provenance,
    is_done,
    load_all_results,
    results_file,
)
from egohorizon.pipelines.caption.settings import CaptionSettings
from egohorizon.pipelines.caption.windows import Outcome, ShardReader

log = logging.getLogger(__name__)

MIN_WINDOWS_FOR_CHECK = 20  # the failure share is checked during the run once this many were tried


@dataclass
class RunReport:
    out_dir: str
    results: str
    planned_shards: int
    windows_total: int
    already_done: int
    attempted: int = 0
    counts: Counter = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    shard_problems: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    generation_s: float | None = None
    events: dict[str, int] | None = None

    @property
    def failed(self) -> int:
        return self.counts[FAILED] + sum(p["lost"] for p in self.shard_problems)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["counts"] = dict(self.counts)
        out["windows_per_s"] = self.attempted / self.wall_s if self.wall_s else None
        return out


# ------------------------------------------------------------------------------------------------
# Which shards
# ------------------------------------------------------------------------------------------------


def parse_slice(text: str | None) -> tuple[int, int] | None:
    """``"I/N"`` -> (I, N) with 0 <= I < N."""
    if not text:
        return None
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--shard-slice: expected I/N such as 3/8, got {text!r}") from None
    if not 0 <= index < count:
        raise ConfigError(f"--shard-slice {text}: expected 0 <= I < N")
    return index, count


def slice_entries(entries: list[dict], shard_slice: tuple[int, int] | None) -> list[dict]:
    """The shards of slice I of N: contiguous, balanced ranges of the index's shards sorted by path."""
    ordered = sorted(entries, key=lambda e: e["path"])
    if shard_slice is None:
        return ordered
    index, count = shard_slice
    return ordered[index * len(ordered) // count:(index + 1) * len(ordered) // count]


# ------------------------------------------------------------------------------------------------
# The job
# ------------------------------------------------------------------------------------------------


def make_record(outcome: Outcome, settings: CaptionSettings, provenance: dict[str, Any]) -> dict[str, Any]:
    from egohorizon.formats.caption import parse_caption_output

    record: dict[str, Any] = {**outcome.info, "status": OK, "raw": outcome.raw, "actions": [], "scene": None,
                              "dropped": 0, "unparsed": 0, "failure": None}
    if outcome.skipped:
        record.update(status=SKIPPED, failure={"kind": INPUT, "reason": outcome.skipped})
    elif outcome.failure:
        record.update(status=FAILED, failure={"kind": outcome.failure[0], "reason": outcome.failure[1]})
    else:
        window_s = (record.get("end") or 0) - (record.get("start") or 0)
        parse = parse_caption_output(outcome.raw, window_s=window_s if window_s > 0 else 30.0)
        record.update(actions=[{"start": a.start, "end": a.end, "action": a.text} for a in parse.actions],
                      scene=parse.scene, dropped=parse.dropped, unparsed=parse.unparsed)
        if parse.invalid:
            record.update(status=FAILED, failure={
                "kind": OUTPUT, "reason": f"no parseable action or scene ({parse.unparsed} unparsed lines, "
                                          f"{parse.dropped} actions with bad times)"})
    record.update(provenance, elapsed_s=round(outcome.elapsed_s, 3))
    return record


class CaptionFailures(DataError):
    """More windows failed than --max-failures allows."""


def failure_check(report: RunReport, max_failures: float, final: bool) -> None:
    tried = report.attempted + sum(p["lost"] for p in report.shard_problems)
    if tried == 0 or (not final and tried < MIN_WINDOWS_FOR_CHECK):
        return
    share = report.failed / tried
    if share > max_failures:
        first = "; ".join(f"{f['window']} ({f['kind']}: {f['reason'][:120]})" for f in report.failures[:5])
        shards = "; ".join(f"{p['shard']} ({p['lost']} lost: {'; '.join(p['reasons'][:1])})"
                           for p in report.shard_problems[:3])
        raise CaptionFailures(
            f"{report.failed} of {tried} windows failed ({share:.1%}), above --max-failures {max_failures:.1%}. "
            f"First: {first or shards}. {'Unreadable shards: ' + shards + '. ' if shards and first else ''}"
            f"Every finished window is kept in {report.results}; fix the cause and run the same command again "
            "to continue (model failures are retried; --retry-failed retries every failed window).")


def uses_screen_text(prompt: str) -> bool:
    """Whether the prompt (a bundled name or a .txt path) has the on-screen text line (caption v3 on):
    then shards built before on-screen text was read are refused, not captioned as text-less."""
    from egohorizon.prompts import load_prompt

    return "{screen_text}" in load_prompt(prompt).template


class CaptionJob:
    def __init__(self, shards_dir: str | Path, out_dir: str | Path, runner, settings: CaptionSettings,
                 provenance: dict[str, Any], *, shard_slice: tuple[int, int] | None = None,
                 max_failures: float = 0.05, retry_failed: bool = False, progress: bool | None = None):
        if not 0 <= max_failures <= 1:
            raise ConfigError(f"--max-failures: expected a share in [0, 1], got {max_failures}")
        self.shards_dir, self.out_dir = Path(shards_dir), Path(out_dir)
        self.runner, self.settings, self.provenance = runner, settings, provenance
        self.shard_slice, self.max_failures, self.retry_failed = shard_slice, max_failures, retry_failed
        self.progress = sys.stderr.isatty() if progress is None else progress

    def run(self) -> RunReport:
        from egohorizon.data.shards.index import ShardIndex

        index = ShardIndex.load(self.shards_dir)
        if uses_screen_text(self.settings.prompt):
            index.require_screen_text()  # else every window would read "Text on screen: none"
        entries = slice_entries(index.shards, self.shard_slice)
        log_path = results_file(self.out_dir, self.shard_slice)
        with ResultsLog(log_path) as results:
            mine = results.open()
            everything = {**load_all_results(self.out_dir), **mine}
            check_provenance(everything.values(), self.provenance, self.out_dir)
            done = {w for w, r in everything.items() if is_done(r, self.retry_failed)}
            planned = {e["path"] for e in entries}
            already = sum(1 for w in done if everything[w].get("shard") in planned)
            report = RunReport(str(self.out_dir), str(log_path), len(entries),
                               sum(int(e["samples"]) for e in entries), already)
            reader = ShardReader(index, entries, done)
            start = time.perf_counter()
            with _Progress(report.windows_total - already, self.progress) as bar:
                for outcome in self.runner.run(reader, self.settings):
                    self._record(results, report, make_record(outcome, self.settings, self.provenance))
                    bar.advance(report)
                    failure_check(report, self.max_failures, final=False)
            report.wall_s = time.perf_counter() - start
            report.shard_problems = self.runner.shard_problems(reader)
            report.generation_s = getattr(self.runner, "generation_s", None)
        self._write_report(report)
        failure_check(report, self.max_failures, final=True)
        if self.shard_slice is None:
            from egohorizon.pipelines.caption.events import write_events

            report.events = write_events(self.out_dir)
            self._write_report(report)
        return report

    def _record(self, results: ResultsLog, report: RunReport, record: dict[str, Any]) -> None:
        results.append(record)
        report.counts[record["status"]] += 1
        if record["status"] != SKIPPED:
            report.attempted += 1
        if record["status"] == FAILED:
            report.failures.append({"window": record["window"], "shard": record.get("shard"),
                                    **record["failure"]})
            log.warning("window %s failed (%s): %s", record["window"], record["failure"]["kind"],
                        record["failure"]["reason"][:300])

    def _write_report(self, report: RunReport) -> None:
        from egohorizon.atomic_files import write_json_atomic

        name = "caption_run.json" if self.shard_slice is None else \
            "caption_run.part-{:04d}-of-{:04d}.json".format(*self.shard_slice)
        write_json_atomic(self.out_dir / name, {**report.to_dict(), "settings": asdict(self.settings),
                                                "provenance": self.provenance})


class _Progress:
    """A rich progress bar (windows, windows/s, ETA) on a terminal; a log line every 30 s otherwise."""

    def __init__(self, total: int, live: bool, log_every_s: float = 30.0):
        self.total, self.live, self.log_every_s = total, live, log_every_s
        self.done, self.start, self.last_log = 0, time.perf_counter(), time.perf_counter()

    def __enter__(self) -> Self:
        if self.live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("captioning"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                                TextColumn("{task.fields[rate]} windows/s"), TimeElapsedColumn(), TextColumn("ETA"),
                                TimeRemainingColumn(), TextColumn("{task.fields[failed]} failed"), transient=False)
            self.bar.start()
            self.task = self.bar.add_task("captions", total=self.total, rate="-", failed=0)
        return self

    def advance(self, report: RunReport) -> None:
        self.done += 1
        now = time.perf_counter()
        rate = self.done / max(now - self.start, 1e-9)
        if self.live:
            self.bar.update(self.task, advance=1, rate=f"{rate:.2f}", failed=report.counts[FAILED])
        elif now - self.last_log >= self.log_every_s:
            self.last_log = now
            eta = (self.total - self.done) / rate if rate else float("nan")
            log.info("captioned %d/%d windows, %.2f windows/s, ETA %.0f min, %d failed", self.done, self.total,
                     rate, eta / 60, report.counts[FAILED])

    def __exit__(self, *exc) -> None:
        if self.live:
            self.bar.stop()
