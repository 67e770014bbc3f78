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
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
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

log = logging.getLogger(__name__)

MIN_WINDOWS_FOR_CHECK = 20  # the failure share is checked during the run once this many were tried


@dataclass
class CaptionSettings:
    """What decides the prompt and the answer of each window (the same for every window of a run)."""

    prompt: str  # a bundled prompt name or a .txt path (an adapter's own copy)
    prompt_name: str
    prompt_version: str
    frames_per_window: int | None = 8
    with_crop: bool = True
    max_new_tokens: int = 256
    temperature: float = 0.0
    seed: int = 0
    jpeg_quality: int = 90
    num_beams: int = 1  # beam search width of a local model (an adapter's own when it was scored so)
    # A local adapter's closed answer set (egohorizon.llm.answer_set): file, counts, digest; None: free text.
    answer_set: dict[str, Any] | None = None


@dataclass
class Outcome:
    """One window's result from a runner: the model's text, or why there is none."""

    info: dict[str, Any]  # window, shard, participant, day, session, start, end, frames
    raw: str | None = None
    failure: tuple[str, str] | None = None  # (kind, reason)
    skipped: str | None = None
    elapsed_s: float = 0.0


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
# Windows in, model inputs out
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


def window_info(raw: dict[str, Any], shard: str) -> dict[str, Any]:
    """What a result line says about its window, from the sample's metadata when it parses."""
    info: dict[str, Any] = {"window": raw.get("__key__", ""), "shard": shard}
    try:
        meta = json.loads(raw["json"])
        info.update({k: meta.get(k) for k in ("participant", "day", "session", "start", "end")})
    except (KeyError, ValueError, TypeError, AttributeError):
        pass
    return info


class LazyImages(Sequence):
    """A window's frames (or crops) decoded on first access: a prompt uses a few of its ~30 frames and one
    close-up, and decoding all of them was most of the client's work (scripts/bench_caption.py).

    ``fit``, when given, maps an image's stored (height, width) to the smallest size the model needs (a
    local VLM's processor resizes to it anyway): the JPEG is then decoded straight at the smallest
    DCT scale (1/2, 1/4, ...) that is at least that large, which costs a fraction of a full decode and
    leaves the processor less to resize (a 448-px frame for the tiny backbone: decoded at 224)."""

    def __init__(self, sample: dict[str, Any], fields: list[str | None],
                 fit: Callable[[int, int], tuple[int, int] | None] | None = None):
        self.sample, self.fields, self.fit = sample, fields, fit
        self.decoded: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i):
        from egohorizon.data.shards.encode import CORRUPT_IMAGE, SampleError

        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if self.fields[i] is None:
            return None
        if i not in self.decoded:
            try:
                self.decoded[i] = self._decode(self.sample[self.fields[i]])
            except ValueError:
                raise SampleError(CORRUPT_IMAGE, f"sample {self.sample.get('__key__')!r}: image "
                                                 f"{self.fields[i]} is corrupt") from None
        return self.decoded[i]

    def _decode(self, data: bytes):
        from egohorizon.data.shards.encode import decode_jpeg, jpeg_shape

        if self.fit is None:
            return decode_jpeg(data)
        import simplejpeg

        needed = self.fit(*jpeg_shape(data))
        if needed is None:
            return decode_jpeg(data)
        # The same decoder and strictness as decode_jpeg, at a reduced DCT scale.
        return simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True, min_height=needed[0], min_width=needed[1])


class StoredJPEGs(LazyImages):
    """A window's images as the shard stores them (JPEG bytes), for a server: an image the job draws
    nothing on is sent as it is, neither decoded nor encoded again (``prepare_window(stored=True)``).
    Checked cheaply (a JPEG header, the end-of-image marker), so a corrupt image still fails its window
    as an input failure instead of a server error."""

    def _decode(self, data: bytes):
        from egohorizon.data.shards.encode import jpeg_shape

        jpeg_shape(data)  # ValueError without a JPEG header
        if not data.rstrip(b"\0").endswith(b"\xff\xd9"):
            raise ValueError("truncated JPEG (no end-of-image marker)")
        return bytes(data)


def window_images(raw: dict[str, Any], with_crop: bool,
                  fit: Callable[[int, int], tuple[int, int] | None] | None = None, stored: bool = False
                  ) -> tuple[dict[str, Any], LazyImages, LazyImages]:
    """The window's metadata (checked: every frame and crop it promises is in the sample) and its
    frames and crops, decoded when used (at the size ``fit`` asks for; see LazyImages), or with
    ``stored`` as their JPEG bytes (StoredJPEGs); SampleError for an unusable sample."""
    from egohorizon.data.shards.encode import check_fields, crop_field, frame_field, parse_meta

    meta = parse_meta(raw)
    check_fields(raw, meta)
    images = StoredJPEGs if stored else LazyImages
    frames = images(raw, [frame_field(i) for i in range(len(meta["frames"]))], fit)
    crops = images(raw, [crop_field(i) if with_crop and f.get("crop_box") else None
                         for i, f in enumerate(meta["frames"])], fit)
    return meta, frames, crops


def draw_gaze_on_stored(meta: dict[str, Any], chosen: list[int], images: list[Any]) -> None:
    """The chosen frames (stored JPEG bytes, ``images[:len(chosen)]``) that need the gaze ring, decoded
    and ringed in place, as ``caption_sample`` rings decoded frames (the same condition, the same
    ``draw_gaze``, at the stored size, so at the stored gaze point); the others stay bytes."""
    from egohorizon.data.shards.encode import CORRUPT_IMAGE, SampleError, decode_jpeg
    from egohorizon.data.windows.sample import draw_gaze

    if meta.get("gaze_drawn"):
        return
    for k, i in enumerate(chosen):
        gaze = meta["frames"][i].get("gaze")
        if gaze:
            try:
                frame = decode_jpeg(images[k])
            except ValueError:
                raise SampleError(CORRUPT_IMAGE, f"sample {meta.get('key')!r}: frame {i} is corrupt") from None
            images[k] = draw_gaze(frame, (gaze[0], gaze[1]))


def prepare_window(raw: dict[str, Any], shard: str, settings: CaptionSettings,
                   fit: Callable[[int, int], tuple[int, int] | None] | None = None, stored: bool = False
                   ) -> tuple[dict[str, Any], dict[str, Any] | None, Outcome | None]:
    """A raw tar sample -> (info, ``{text, images}``, None), or (info, None, the outcome that ends it).
    ``fit``: the image size the model needs (LazyImages), for a local model's processor. ``stored``
    (a server): images the job draws nothing on stay the shard's JPEG bytes (the close-up; frames
    without gaze); the others are decoded and ringed (arrays)."""
    from egohorizon.data.shards.encode import SampleError
    from egohorizon.prompts.caption import caption_sample, pick_frames

    info = window_info(raw, shard)
    try:
        meta, frames, crops = window_images(raw, settings.with_crop, fit, stored=stored)
        if not frames:
            return info, None, Outcome(info, skipped="no frames (shards built with --min-frames 0)")
        sample = caption_sample(meta, frames, crops, settings.frames_per_window, with_crop=settings.with_crop,
                                prompt=settings.prompt, draw_gaze=not stored)
        chosen = pick_frames(len(frames), settings.frames_per_window)
        if stored:
            draw_gaze_on_stored(meta, chosen, sample["images"])
        info["frames"] = [round(meta["frames"][i]["t"] - meta["start"], 3) for i in chosen]
        info["crop"] = len(sample["images"]) > len(chosen)  # the gaze close-up went in too
    except SampleError as error:
        return info, None, Outcome(info, failure=(INPUT, f"{error.reason}: {error}"))
    except (ValueError, KeyError, TypeError, IndexError) as error:  # metadata the sample cannot use
        return info, None, Outcome(info, failure=(INPUT, f"bad_metadata: {type(error).__name__}: {error}"))
    return info, sample, None


class ShardReader:
    """Raw samples of the planned shards, in order, minus finished windows (never decoded); counts
    unreadable shards and samples lost in them (``problems``)."""

    def __init__(self, index, entries: list[dict], done: set[str]):
        import webdataset.tariterators  # noqa: F401 - read_shards uses it; it imports torch: at set-up, not mid-run

        from egohorizon.data.shards import stages

        self._stages = stages
        self.urls = [str(index.path_of(e)) for e in entries]
        self.relative = {str(index.path_of(e)): e["path"] for e in entries}
        self.expected = {str(index.path_of(e)): int(e["samples"]) for e in entries}
        self.done = done

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        self.stats = self._stages.StreamStats()
        for raw in self._stages.read_shards(self.stats, self.expected)({"url": u} for u in self.urls):
            if raw.get("__key__") in self.done:
                continue
            yield self.relative[raw["__url__"]], raw

    def problems(self, stats=None) -> list[dict[str, Any]]:
        stats = stats or self.stats
        return [{"shard": self.relative.get(url, url), "lost": int(stats.bad_by_shard.get(url, 0)),
                 "reasons": reasons} for url, reasons in sorted(stats.reasons.items())]


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
