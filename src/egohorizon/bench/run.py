"""``egohorizon bench run DIR --model M | --base-url URL --out OUT``: zero-shot answers to imported
benchmark items, one item at a time, each from frames of its own videos.

    DIR/qa.jsonl (data convert egomonth | egoschema) -> the first --limit items, minus those OUT holds
      -> prepare (worker threads): probe and decode the item's videos (bench.video), sampled by the
         protocol's rule (bench.sampling), JPEG data URLs, the protocol's prompt (bench.prompts)
      -> the model (local transformers model or an OpenAI-compatible server), greedy
      -> extraction (metrics.extraction: the chosen mode and strict) -> OUT/items.jsonl, in item order
      -> at the end: OUT/summary.json and the table (metrics.qa.score_qa per task, level, difficulty)

Items leave the workers in their file order, so a killed run's file is a prefix of an uninterrupted
run's and finishing it gives the same bytes. An item whose video is missing is refused before any
model is loaded (every such item named, by field and file); a video that cannot be decoded fails
its item (a ``failed`` line, scored invalid); a model that fails on an item (server down, out of
memory) leaves it unfinished for the next run. More than ``max_failures`` of the items bad fails
the run (SPEC §5), after the summary is written.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.bench.failures import FailureBudget, ask_model
from egohorizon.bench.results import (
    FAILED,
    ITEMS_FILE,
    OK,
    PROVENANCE_KEYS,
    ItemsLog,
    check_provenance,
    is_done,
    read_rows,
    summarize,
    write_summary,
)
from egohorizon.errors import ConfigError, DataError
from egohorizon.schema import QAItem

log = logging.getLogger(__name__)

DEFAULT_EXTRACTION = {"egomonth": "egomonth-cs", "egoschema": "egoschema"}  # --protocol paper, by source
SAMPLING = {"paper": "paper", "egohorizon": "uniform"}  # protocol -> bench.sampling rule


@dataclass
class BenchSettings:
    protocol: str = "paper"
    extraction: str | None = None  # None: the protocol's (and the source's) default
    max_frames: int = 256
    long_side: int | None = 448  # None / 0: frames as decoded
    blind: bool = False  # True: no frames; a local text-only model is blind whatever this says
    max_new_tokens: int = 32  # the script's
    seed: int = 0
    jpeg_quality: int = 90
    videos_root: str | None = None  # overrides the items' meta.videos_root (EgoSchema items have none)
    limit: int | None = None
    max_failures: float = 0.05
    retry_failed: bool = False
    concurrency: int = 2  # requests in flight to a server


@dataclass
class Outcome:
    item: QAItem
    frames: list[dict[str, Any]] = field(default_factory=list)
    text: str | None = None
    failure: dict[str, Any] | None = None  # input: a failed line; model: no line
    model_error: str | None = None


# ------------------------------------------------------------------------------------------------ items


def load_items(dataset: str | Path) -> tuple[list[QAItem], str, Path]:
    """The items of ``dataset`` (a ``data convert`` folder or its qa.jsonl), their source and file."""
    from egohorizon.schema import load_jsonl

    path = Path(dataset)
    qa = path / "qa.jsonl" if path.is_dir() else path
    if not qa.is_file():
        raise DataError(f"{dataset}: no qa.jsonl (expected the --out folder of `egohorizon data convert "
                        "egomonth|egoschema`, or its qa.jsonl)")
    items = load_jsonl(qa, QAItem)
    if not items:
        raise DataError(f"{qa}: holds no items")
    source = ""
    meta = qa.parent / "metadata.json"
    if meta.is_file():
        try:
            source = str(json.loads(meta.read_text(encoding="utf-8")).get("source") or "")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as error:
            raise DataError(f"{meta}: not a JSON object ({error})") from None
    return items, source or items[0].source, qa


def resolve_settings(settings: BenchSettings, source: str) -> str:
    """The extraction mode: strict under --protocol egohorizon; the source's published rule under paper."""
    from egohorizon.bench.prompts import PROTOCOLS
    from egohorizon.metrics.extraction import MODES

    if settings.protocol not in PROTOCOLS:
        raise ConfigError(f"--protocol: expected one of {', '.join(PROTOCOLS)}, got {settings.protocol!r}")
    if settings.extraction is not None and settings.extraction not in MODES:
        raise ConfigError(f"--extraction: expected one of {', '.join(MODES)}, got {settings.extraction!r}")
    if settings.protocol == "egohorizon":
        if settings.extraction not in (None, "strict"):
            raise ConfigError(f"--protocol egohorizon reads answers with strict extraction only, not "
                              f"{settings.extraction!r} (--protocol paper takes --extraction)")
        return "strict"
    return settings.extraction or DEFAULT_EXTRACTION.get(source, "egomonth-cs")


def video_files(item: QAItem, videos_root: str | None) -> list[tuple[str, str, Path, float | None, float | None]]:
    """(field, video as written, path, start, end) of each evidence entry of ``item``."""
    root = videos_root or item.meta.get("videos_root")
    out = []
    for k, entry in enumerate(item.evidence):
        video = str(entry.get("video") or "")
        path = Path(video)
        if not path.is_absolute():
            if not root:
                raise DataError(f"item {item.id!r}: field 'meta.videos_root': missing, so evidence[{k}].video "
                                f"{video!r} has no folder (EgoSchema items carry none: pass --videos FOLDER)")
            path = Path(root) / video
        out.append((f"evidence[{k}].video", video, path, entry.get("start"), entry.get("end")))
    return out


def check_videos(items: Sequence[QAItem], videos_root: str | None, qa: Path) -> None:
    """Every item has evidence and every evidence video exists; else one DataError listing them all."""
    problems = []
    for item in items:
        if not item.evidence:
            problems.append(f"item {item.id!r}: field 'evidence': no video to take frames from (--blind for a "
                            "text-only run)")
            continue
        for name, video, path, _, _ in video_files(item, videos_root):
            if not path.is_file():
                problems.append(f"item {item.id!r}: field '{name}': {video!r} not found ({path})")
    if problems:
        shown = "\n  ".join(problems[:20]) + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise DataError(f"{qa}: {len(problems)} missing video(s):\n  {shown}")


# ------------------------------------------------------------------------------------------------ one item


class Preparer:
    """Item -> frames and prompt (thread-safe; each video probed once per run)."""

    def __init__(self, settings: BenchSettings, blind: bool):
        self.settings, self.blind = settings, blind
        self.rule = SAMPLING[settings.protocol]
        self._probes: dict[Path, Any] = {}

    def _probe(self, path: Path):
        from egohorizon.bench.video import probe

        if path not in self._probes:
            try:
                self._probes[path] = probe(path)
            except DataError as error:
                self._probes[path] = error
        found = self._probes[path]
        if isinstance(found, DataError):
            raise found
        return found

    def __call__(self, item: QAItem) -> tuple[Outcome, Any]:
        """The item's outcome so far (frames, or an input failure) and its prompt (None after a failure)."""
        from egohorizon.bench.prompts import render
        from egohorizon.llm.images import sample_messages

        outcome = Outcome(item)
        if self.blind:  # a plain string: a text-only model's chat template reads no content parts
            return outcome, render(self.settings.protocol, item.question, item.options)
        try:
            frames, labels = self._frames(item, outcome)
            text = render(self.settings.protocol, item.question, item.options, labels)
            return outcome, sample_messages(text, frames, self.settings.jpeg_quality)
        except VideoError as error:
            outcome.failure = {"kind": "input", "field": error.field, "file": error.file, "reason": str(error)}
        except Exception as error:  # noqa: BLE001 - e.g. a frame the JPEG encoder refuses: this item fails
            outcome.failure = {"kind": "input", "field": None, "file": None,
                               "reason": f"{type(error).__name__}: {error}"}
        outcome.frames = []  # nothing was shown
        return outcome, None

    def _frames(self, item: QAItem, outcome: Outcome) -> tuple[list, list[str]]:
        from egohorizon.bench.prompts import frame_label
        from egohorizon.bench.sampling import VideoSpan, frame_plan
        from egohorizon.bench.video import read_frames

        files = video_files(item, self.settings.videos_root)
        infos, spans = [], []
        for name, video, path, start, end in files:
            try:
                info = self._probe(path)
            except DataError as error:
                raise VideoError(error, name, path) from None
            infos.append(info)
            spans.append(VideoSpan.of(info.frames, info.fps, start, end))
        plan = frame_plan(spans, self.rule, self.settings.max_frames)
        frames, labels = [], []
        for (name, video, path, _, _), info, indices in zip(files, infos, plan, strict=True):
            try:
                frames += read_frames(path, indices, info, self.settings.long_side)
            except DataError as error:
                raise VideoError(error, name, path) from None
            times = [round(i / info.fps, 3) for i in indices]
            labels += [frame_label(video, t) for t in times]
            outcome.frames.append({"video": video, "indices": list(indices), "t": times})
        return frames, labels


class VideoError(DataError):
    """A video of an item that cannot be read: its evidence field and file go into the failed line."""

    def __init__(self, error: DataError, field_name: str, path: Path):
        super().__init__(f"field '{field_name}': {error}")
        self.field, self.file = field_name, str(path)


def generate(backend, prompt: Any, settings: BenchSettings) -> str:
    return backend.generate(prompt, max_new_tokens=settings.max_new_tokens, temperature=0.0, seed=settings.seed)[0]


def row_of(outcome: Outcome, mode: str, blind: bool, run: dict[str, Any]) -> dict[str, Any]:
    from egohorizon.metrics.extraction import extract

    item = outcome.item
    text = outcome.text
    chosen = extract(text, item.options, mode) if outcome.failure is None else None
    strict = extract(text, item.options, "strict") if outcome.failure is None else None
    return {
        "id": item.id, "task": item.task, "level": item.level, "difficulty": item.meta.get("difficulty"),
        "gold": item.answer, "prediction": chosen, "correct": chosen == item.answer, "strict": strict,
        "correct_strict": strict == item.answer, "extraction": mode, "text": text,
        "status": OK if outcome.failure is None else FAILED, "failure": outcome.failure, "blind": blind,
        "n_frames": sum(len(f["indices"]) for f in outcome.frames), "frames": outcome.frames,
        **{k: run[k] for k in ("model", "prompt", "prompt_version", "protocol", "seed", "sampling", "max_new_tokens",
                               "dtype", "stop")},
    }


# ------------------------------------------------------------------------------------------------ the run


def in_order(pool: ThreadPoolExecutor, fn, items: Sequence[QAItem], ahead: int) -> Iterator:
    """``fn(item)`` for every item, computed ``ahead`` items in advance, yielded in the items' order."""
    pending: deque = deque()
    for item in items:
        pending.append(pool.submit(fn, item))
        if len(pending) > ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def local_is_text_only(backend) -> bool:
    """Whether a local transformers model has no vision tower (its config has no ``vision_config``)."""
    path = getattr(backend, "path", None)
    if not path:
        return False
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(path, trust_remote_code=getattr(backend, "trust_remote_code", False))
    except Exception:  # noqa: BLE001 - the backend's own load names the problem
        return False
    return getattr(config, "vision_config", None) is None


def outcomes(backend, items: Sequence[QAItem], preparer: Preparer, settings: BenchSettings,
             remote: bool) -> Iterator[Outcome]:
    """Each item's outcome, in order. A server: prepare and ask in ``concurrency`` worker threads; a
    local model: prepare in a thread two items ahead while the model answers here."""

    def ask(prepared: tuple[Outcome, Any]) -> Outcome:
        outcome, prompt = prepared
        if outcome.failure is None:
            outcome.text, outcome.model_error = ask_model(lambda: generate(backend, prompt, settings))
        return outcome

    workers = settings.concurrency if remote else 1
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench") as pool:
        try:
            if remote:
                yield from in_order(pool, lambda item: ask(preparer(item)), items, 2 * workers)
            else:
                for prepared in in_order(pool, preparer, items, 2):
                    yield ask(prepared)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def run_bench(dataset: str | Path, out: str | Path, model: str, *, base_url: str | None = None,
              settings: BenchSettings | None = None, backend_options: dict[str, Any] | None = None,
              progress=None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Answers the items, appends their lines, writes the summary; returns (summary, timing)."""
    from egohorizon.bench.prompts import PROMPT_NAMES
    from egohorizon.llm import make_backend
    from egohorizon.progress import StepProgress
    from egohorizon.prompts import load_prompt

    settings = settings or BenchSettings()
    every, source, qa = load_items(dataset)
    mode = resolve_settings(settings, source)
    items = every[: settings.limit] if settings.limit else every
    options = dict(backend_options or {})
    if base_url:
        options.setdefault("max_concurrency", settings.concurrency)
    backend = make_backend(model, base_url=base_url, **options)
    blind = settings.blind
    if not base_url and not blind and local_is_text_only(backend):
        log.info("%s is a text-only model: a blind run (no frames)", backend.model_id)
        blind = True
    if not blind:
        check_videos(items, settings.videos_root, qa)
    prompt = load_prompt(PROMPT_NAMES[settings.protocol])
    run = {"dataset": str(qa.resolve()), "source": source, "model": backend.model_id, "backend": "http" if base_url else "local",
           "protocol": settings.protocol, "prompt": prompt.name, "prompt_version": prompt.version, "extraction": mode,
           "blind": blind, "seed": settings.seed, "max_new_tokens": settings.max_new_tokens,
           "sampling": {"rule": None if blind else SAMPLING[settings.protocol], "max_frames": settings.max_frames,
                        "long_side": settings.long_side or None},
           "dtype": None, "stop": None, **backend.generation_record()}  # a local model's (issue 37)
    out = Path(out)
    if not base_url and any(not is_done(r, settings.retry_failed) for r in
                            (read_rows(out / ITEMS_FILE)[0].get(i.id) for i in items)):
        # Load the local model before OUT is touched: a wrong --model ends here, with nothing written.
        generate(backend, "Hello", BenchSettings(max_new_tokens=1))
    started = time.perf_counter()
    budget = FailureBudget(settings.max_failures, "items")
    with ItemsLog(out / ITEMS_FILE) as results:
        rows = results.open()
        check_provenance(rows, {k: run[k] for k in PROVENANCE_KEYS}, out)
        todo = [i for i in items if not is_done(rows.get(i.id), settings.retry_failed)]
        log.info("%s: %d items, %d already answered in %s, %d to go (%s, protocol %s%s)", qa, len(items),
                 len(items) - len(todo), out, len(todo), backend.model_id, settings.protocol, ", blind" if blind else "")
        try:
            _answer(backend, todo, Preparer(settings, blind), settings, bool(base_url), results, rows,
                    lambda outcome: row_of(outcome, mode, blind, run), budget, progress or StepProgress())
        finally:  # also when stopped early or interrupted: the summary of what is finished
            summary = summarize(items, rows, run)
            write_summary(out, summary)
    wall = time.perf_counter() - started
    timing = {"tried": budget.tried, "wall_s": round(wall, 3),
              "items_per_s": round(budget.tried / wall, 4) if wall > 0 and budget.tried else None}
    return summary, timing


def _answer(backend, todo: Sequence[QAItem], preparer: Preparer, settings: BenchSettings, remote: bool,
            results: ItemsLog, rows: dict[str, dict[str, Any]], make_row, budget: FailureBudget, progress) -> None:
    with progress.step("bench run", total=len(todo), unit="items") as advance:
        for outcome in outcomes(backend, todo, preparer, settings, remote):
            input_error = (outcome.failure or {}).get("reason") if outcome.model_error is None else None
            budget.record(model_error=outcome.model_error, input_error=input_error, where=f"item {outcome.item.id!r}")
            if outcome.model_error is not None:
                log.warning("item %s: the model failed (%s); it stays unfinished", outcome.item.id, outcome.model_error)
            else:
                if input_error:
                    log.warning("item %s: %s", outcome.item.id, input_error)
                row = make_row(outcome)
                results.append(row)
                rows[row["id"]] = row
            advance(1)
            budget.check()


def check_failures(summary: dict[str, Any], max_failures: float) -> None:
    """More than ``max_failures`` of the run's items bad (input failures and unfinished): a DataError."""
    bad = len(summary["input_failures"]) + len(summary["unfinished"])
    if summary["items"] and bad / summary["items"] > max_failures:
        first = summary["input_failures"][0]["reason"] if summary["input_failures"] else \
            f"unfinished item {summary['unfinished'][0]!r}"
        raise DataError(f"{bad} of {summary['items']} items failed ({bad / summary['items']:.1%}), above "
                        f"--max-failures {max_failures:.1%}; first: {first}")
