"""What the chain is told (``ChainSettings``), what a stage is (``Stage``), and the digest of a stage's
output files: the lowest module of the chain, imported by ``stages`` and ``runner``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass
class Stage:
    """``run(run_dir, settings) -> summary`` does the work; ``digest(run_dir)`` hashes its output."""

    name: str
    settings: Callable[[ChainSettings], Any]
    run: Callable[[Path, ChainSettings], dict[str, Any]]
    digest: Callable[[Path], str]
