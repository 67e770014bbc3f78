"""``egohorizon pipeline``: recordings -> ingested -> shards -> captions (L1) -> hierarchy (L1-L5) -> points,
each stage a library call of the matching command (``pipelines.chain_stages``), in one run folder::

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
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STAGES = ("ingest", "shards", "caption", "abstract", "points")


@dataclass
class ChainSettings:
    """Everything that decides the outputs, per stage (the fingerprints hash these)."""

    recordings: str | None = None  # a folder of .vrs/.mp4 files or a manifest .jsonl; None with demo
    demo: bool = False
    demo_dir: str | None = None
    demo_days: int | None = None
    # only these demo participant-days ("p01/2025-03-04"), e.g. days no trained model of the chain saw
    demo_day_list: list[str] = field(default_factory=list)
    participant: str = "p1"
    shards: dict[str, Any] = field(default_factory=dict)  # window, long_side, crop_size, stride, deid, ...
    captioner: dict[str, Any] = field(default_factory=dict)  # model, base_url, and caption options
    abstractor: dict[str, Any] = field(default_factory=dict)  # model, base_url, levels, max_events, ...
    points: dict[str, Any] = field(default_factory=dict)  # levels, ks, n_context, val_frac, test_frac, ...
    # Not in any fingerprint: it decides whether empty splits are refused, not what is written.
    allow_empty_splits: bool = False


def file_digest(*paths: Path) -> str:
    """SHA-256 over the files' bytes (a missing file hashes as absent)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.name).encode())
        digest.update(path.read_bytes() if path.is_file() else b"\0absent")
    return digest.hexdigest()


def fingerprint(settings: Any, upstream: str) -> str:
    text = json.dumps({"settings": settings, "upstream": upstream}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def write_json_atomic(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass
class Stage:
    """``run(run_dir, settings) -> summary`` does the work; ``digest(run_dir)`` hashes its output."""

    name: str
    settings: Callable[[ChainSettings], Any]
    run: Callable[[Path, ChainSettings], dict[str, Any]]
    digest: Callable[[Path], str]


def run_chain(run_dir: str | Path, settings: ChainSettings, stages: list[Stage] | None = None,
              until: str | None = None) -> dict[str, Any]:
    """Runs (or skips) every stage in order up to ``until``; writes and returns ``RUN/report.json``."""
    from egohorizon.pipelines.chain_stages import default_stages

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
            write_json_atomic(marker_path, {"stage": stage.name, "fingerprint": expected, "digest": upstream,
                                            "summary": summary, "elapsed_s": elapsed})
            entry = {**summary, "status": "ran", "elapsed_s": elapsed}
        report["stages"][stage.name] = entry
        if stage.name == until:
            break
    write_json_atomic(run_dir / "report.json", report)
    return report
