"""``egohorizon pipeline``: recordings -> ingested -> shards -> captions (L1) -> hierarchy (L1-L5) -> points,
each stage a library call of the matching command (``pipelines.chain.stages``), in one run folder::

    RUN/ingested/<participant>/<recording>/   egohorizon ingest (skipped with --demo)
    RUN/shards/                                egohorizon shards build
    RUN/captions/                              egohorizon caption        (events.jsonl: L1)
    RUN/hierarchy/                             egohorizon abstract       (events.jsonl: L1-L5)
    RUN/points/                                egohorizon points         (points_{train,val,test}.jsonl)
    RUN/stages/<stage>.json                    a finished stage: its fingerprint, output digest, summary
    RUN/report.json                            every stage's counts, failures, compression per level

**Idempotent and resumable.** A stage is skipped when its marker's fingerprint equals the one this run
computes: a hash of the stage's settings and of the digests of the outputs it reads (the previous
stage's). A stage that was killed left no marker and runs again; the stages themselves resume where
they stopped (ingest writes a folder atomically per recording, shards build completes a build, caption
and abstract keep per-window and per-day results), so nothing finished is computed twice. Changing a
setting reruns that stage and, where its output changes, the stages after it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from egohorizon.atomic_files import write_json_atomic
from egohorizon.pipelines.chain.settings import ChainSettings, Stage
from egohorizon.pipelines.chain.stages import default_stages

log = logging.getLogger(__name__)


def fingerprint(settings: Any, upstream: str) -> str:
    text = json.dumps({"settings": settings, "upstream": upstream}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def run_chain(run_dir: str | Path, settings: ChainSettings, stages: list[Stage] | None = None,
              until: str | None = None) -> dict[str, Any]:
    """Runs (or skips) every stage in order up to ``until``; writes and returns ``RUN/report.json``."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    stages = stages or default_stages()
    report: dict[str, Any] = {"run": str(run_dir), "stages": {}}
    upstream = ""
    for stage in stages:
        marker_path = run_dir / "stages" / f"{stage.name}.json"
        expected = fingerprint(stage.settings(settings), upstream)
        marker = json.loads(marker_path.read_text()) if marker_path.is_file() else None
        if marker and marker.get("fingerprint") == expected:
            log.info("stage %s: finished earlier with the same inputs and settings, skipped", stage.name)
            entry = {**marker["summary"], "status": "skipped", "elapsed_s": marker.get("elapsed_s")}
            upstream = marker["digest"]
        else:
            log.info("stage %s: running", stage.name)
            started = time.monotonic()
            summary = stage.run(run_dir, settings)
            elapsed = round(time.monotonic() - started, 2)
            upstream = stage.digest(run_dir)
            marker = {"stage": stage.name, "fingerprint": expected, "digest": upstream, "summary": summary,
                      "elapsed_s": elapsed}
            write_json_atomic(marker_path, marker, default=str)
            entry = {**summary, "status": "ran", "elapsed_s": elapsed}
        report["stages"][stage.name] = entry
        if stage.name == until:
            break
    write_json_atomic(run_dir / "report.json", report, default=str)
    return report
