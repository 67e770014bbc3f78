"""``egohorizon abstract``: L1 events -> an L1-L5 hierarchy, per participant and day, idempotent and
resumable (``pipelines.abstract.day`` does one day; ``pipelines.abstract.results`` keeps the finished ones).

Outputs in ``OUT``: ``days.jsonl`` (one line per finished day), ``events.jsonl`` (every level of the
days that succeeded, regenerated from ``days.jsonl`` at the end; failed days are left out),
``report.json`` (days, failures, model calls and invalid replies, per-level counts, durations and
compression ratios, the hierarchy check), ``levels.md`` + ``levels.png`` (the per-level table and figure
of the written hierarchy) and ``cache/<prompt>-v<version>/`` (the model's replies keyed
by model and input, so a rerun costs nothing and a changed prompt starts a new cache).
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from egohorizon.data.events.figures import write_level_figures
from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.errors import ConfigError
from egohorizon.llm.base import LLMBackend
from egohorizon.pipelines.abstract.day import AbstractSettings, Counts, DayFailed, abstract_day, ask_model
from egohorizon.pipelines.abstract.results import FAILED, OK, RESULTS_FILE, DaysLog, check_provenance, is_done
from egohorizon.schema import Event, read_jsonl, write_jsonl

log = logging.getLogger(__name__)


@dataclass
class ModelSetup:
    backend: LLMBackend
    adapter: str | None
    prompt_path: str
    prompt_name: str
    prompt_version: str


def make_backend(model: str, *, base_url: str | None = None, cache: Path | None = None,
                 prompt: str | None = None, device: str | None = None, dtype: str | None = None,
                 **http: Any) -> ModelSetup:
    """A trained adapter (``*.adapter``, ``.ckpt`` or run folder: raw prompts, its own prompt file), any
    local model (hub id or folder) or, with ``base_url``, an OpenAI-compatible server; cached in
    ``cache/<prompt>-v<version>`` when ``cache`` is given."""
    from egohorizon.llm import make_backend as make_llm
    from egohorizon.pipelines.caption.setup import choose_model
    from egohorizon.prompts import load_prompt
    from egohorizon.prompts.abstract import ABSTRACT_PROMPT_NAME

    choice = choose_model(model, base_url, task="abstract")
    if choice.adapter is not None:
        from egohorizon.llm.vision_local import LocalVLMBackend

        own = choice.adapter / f"{(choice.adapter_meta.get('prompt') or {}).get('name', ABSTRACT_PROMPT_NAME)}.txt"
        if prompt is None and not own.is_file():
            raise ConfigError(f"{choice.adapter}: the adapter's prompt file {own.name} is missing; pass --prompt")
        prompt = prompt or str(own)
        backend: LLMBackend = LocalVLMBackend(adapter=str(choice.adapter), device=device, dtype=dtype)
    else:
        options = http if base_url else {k: v for k, v in {"device": device, "dtype": dtype}.items() if v}
        backend = make_llm(model, base_url=base_url, **options)
    loaded = load_prompt(prompt or ABSTRACT_PROMPT_NAME)
    if cache is not None:
        from egohorizon.llm.cache import CachedBackend

        backend = CachedBackend(backend, Path(cache) / f"{loaded.name}-v{loaded.version}")
    return ModelSetup(backend, str(choice.adapter) if choice.adapter else None, loaded.path, loaded.name,
                      loaded.version)


def read_l1(path: str | Path) -> tuple[dict[str, list[Event]], dict[str, Any]]:
    """``participant/day`` -> its L1 events; bad lines and events above L1 are counted, not used."""
    result = read_jsonl(path, Event)
    for defect in result.defects[:20]:
        log.warning("%s", defect)
    days: dict[str, list[Event]] = defaultdict(list)
    above = 0
    for event in result.records:
        if event.level == 1:
            days[f"{event.participant}/{event.day}"].append(event)
        else:
            above += 1
    if not days:
        problem = f"; first defect: {result.defects[0]}" if result.defects else ""
        raise ConfigError(f"{path}: no valid level-1 events to abstract{problem}")
    return dict(sorted(days.items())), {"bad_lines": len({d.line for d in result.defects}), "events_above_l1_ignored": above,
                                        "defects": [str(d) for d in result.defects[:20]]}


class AbstractJob:
    def __init__(self, events: str | Path, out: str | Path, setup: ModelSetup, settings: AbstractSettings, *,
                 workers: int = 1, retry_failed: bool = False) -> None:
        self.events_path, self.out = Path(events), Path(out)
        self.setup, self.workers, self.retry_failed = setup, max(1, workers), retry_failed
        if settings.constrained and setup.adapter is None:
            raise ConfigError("constrained decoding (--constrained) masks a local model's tokens: it needs a "
                              "trained adapter as --model, not a server or another model")
        self.settings = AbstractSettings(**{**asdict(settings), "prompt": setup.prompt_path,
                                            "show_error": setup.adapter is None})
        public = {k: v for k, v in asdict(self.settings).items() if k != "prompt"}
        self.provenance = {"model": setup.backend.model_id, "adapter": setup.adapter,
                           "prompt": {"name": setup.prompt_name, "version": setup.prompt_version},
                           "settings": public, "dtype": setup.backend.generation_record().get("dtype")}

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        days, input_counts = read_l1(self.events_path)
        with DaysLog(self.out / RESULTS_FILE) as results:
            done = results.open()
            check_provenance(done, self.provenance, self.out)
            todo = [day for day in days if not (day in done and is_done(done[day], self.retry_failed))]
            log.info("%d days, %d already done, %d to abstract", len(days), len(days) - len(todo), len(todo))
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                for record in pool.map(lambda d: self._one_day(d, days[d]), todo):
                    results.append(record)
                    done[record["day"]] = record
                    log.info("%s: %s", record["day"], record["status"])
        report = self._write_outputs(days, done)
        report.update(input=input_counts, days_done_now=len(todo), elapsed_s=round(time.monotonic() - started, 2),
                      **self._cache_counts())
        (self.out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        return report

    def _one_day(self, day: str, l1: Sequence[Event]) -> dict[str, Any]:
        counts, started = Counts(), time.monotonic()
        record: dict[str, Any] = {"day": day, "participant": l1[0].participant, **self.provenance}
        meta = {k: self.provenance[k] for k in ("model", "adapter", "prompt")}
        try:
            built = abstract_day(l1, ask_model(self.setup.backend, self.settings, counts), self.settings, counts,
                                 provenance=meta)
            record.update(status=OK, failure=None, events=[e.to_dict() for e in built if e.level > 1],
                          parents={e.id: e.parent for e in built if e.level == 1})
        except DayFailed as failure:
            record.update(status=FAILED, failure={"kind": failure.kind, "reason": failure.reason, "raw": failure.raw})
        record.update(counts=counts.to_dict(), elapsed_s=round(time.monotonic() - started, 3))
        return record

    def _write_outputs(self, days: dict[str, list[Event]], done: dict[str, dict[str, Any]]) -> dict[str, Any]:
        events: list[Event] = []
        failures, calls, invalid = [], 0, 0
        for day, l1 in days.items():
            record = done.get(day)
            if record is None:
                continue
            calls += record["counts"]["calls"]
            invalid += record["counts"]["invalid"]
            if record["status"] != OK:
                failures.append({"day": day, **record["failure"]})
                continue
            parents = record["parents"]
            events += [replace(e, parent=parents[e.id]) for e in l1]
            events += [Event.from_dict(e)[0] for e in record["events"]]
        write_jsonl(self.out / "events.jsonl", events)
        check = check_hierarchy(events)
        summary = check.to_dict()
        figures = write_level_figures(events, self.out, title=f"{len({(e.participant, e.day) for e in events})} days built")
        missing = [d for d in days if d not in done]
        return {"out": str(self.out), "events_file": str(self.out / "events.jsonl"), "days": len(days),
                "days_ok": sum(1 for d in days if (done.get(d) or {}).get("status") == OK),
                "days_failed": len(failures), "days_missing": len(missing),
                "failed_days": [f"{f['day']}: {f['kind']}: {f['reason']}" for f in failures] + [
                    f"{d}: missing: not abstracted (the run stopped before it)" for d in missing],
                "failures": failures, "model_calls": calls, "invalid_replies": invalid,
                # ok: the written events hold the invariants *and* every input day is in them; a
                # hierarchy without its failed days is valid but not the one asked for
                "hierarchy_ok": summary["ok"] and not failures and not missing,
                "hierarchy_valid": summary["ok"], "hierarchy_problems": summary["problems"],
                "levels": summary["levels"], "compression": summary["compression"], "figures": figures,
                **self.provenance}

    def _cache_counts(self) -> dict[str, Any]:
        backend = self.setup.backend
        if hasattr(backend, "hits"):
            return {"cache_hits": backend.hits, "cache_misses": backend.misses}
        return {}
