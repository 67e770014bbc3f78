"""Filling a frame budget from a person's past, before a time ``t``: uniformly (the EgoMonth paper's
baselines) or from the memory's best windows (issue 13). Both return catalog rows in time order, and
every row's frame time is < ``t`` (the leakage property test checks it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from egohorizon.memory.frames import FrameCatalog
from egohorizon.memory.index import Entry, MemoryIndex


@dataclass
class Selection:
    rows: np.ndarray  # catalog rows, time order
    times: np.ndarray  # their frame times (Unix s)
    notes: list[Entry]  # retrieved text entries (events), time order; none for uniform sampling


def uniform(catalog: FrameCatalog, participant: str, t: float, budget: int) -> Selection:
    """``budget`` frames spread evenly over every frame recorded before ``t`` (all when fewer)."""
    n = catalog.n_frames_before(participant, t)
    if n == 0 or budget <= 0:
        rows = np.zeros(0, dtype=np.int64)
    elif n <= budget:
        rows = np.arange(n)
    else:  # the middle of each of ``budget`` equal parts: the first and last frames are not favoured
        rows = np.unique(((np.arange(budget) + 0.5) * n / budget).astype(np.int64))
    return Selection(rows, catalog.frame_times(participant, rows) if n else np.zeros(0), [])


def retrieved(catalog: FrameCatalog, memory: MemoryIndex, participant: str, t: float, query: str, budget: int,
              *, frames_per_window: int = 2, notes: int = 8, levels: Sequence[int] | None = None) -> Selection:
    """The windows most similar to ``query`` (ending before ``t``), ``frames_per_window`` evenly spread
    frames of each, best first, until ``budget`` frames; plus the ``notes`` best event entries."""
    chosen: list[int] = []
    for hit in memory.search(participant, t, query, k=max(1, budget), kinds=["window"]):
        window = catalog.window(hit.entry.ref)
        if window is None or window.end > t:
            continue
        rows = catalog.window_frames(participant, window, t)
        if rows.size:
            take = rows[np.unique(np.linspace(0, rows.size - 1, min(frames_per_window, rows.size)).astype(int))]
            chosen.extend(take.tolist()[: budget - len(chosen)])
        if len(chosen) >= budget:
            break
    rows = np.array(sorted(set(chosen)), dtype=np.int64)
    text_hits = memory.search(participant, t, query, k=notes, kinds=["event"], levels=levels) if notes else []
    entries = sorted((h.entry for h in text_hits), key=lambda e: (e.start, e.end))
    return Selection(rows, catalog.frame_times(participant, rows) if rows.size else np.zeros(0), entries)

