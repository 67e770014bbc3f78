"""MemoryIndex: a person's past as retrievable entries, queried strictly before a given time.

Entries are of two kinds, both with the participant, a start and an end:
- ``event``: an event of any level (L1-L5) with its description, what the event hierarchy gives
  (``schema.Event``; on real data the captioning and abstraction pipelines write them);
- ``window``: a stored 30 s window (``FrameCatalog``) with its captions, which points at frames.

Each entry has a text vector (the embedder's, unit length) and, for windows, an optional image vector
(the mean of its frames' vectors from a ``frame_embedder``). ``search(participant, t, ...)`` scores only
entries that *end strictly before* ``t`` -- selected by bisection on the end times before any scoring, so
an entry at or after ``t`` is never even compared -- and returns the best ``k`` (score, then later
first). Nothing in here knows about questions or forecasts: the caller turns its query into text
(QA: the question and options; forecasting: the recent context) and decides how hits fill a budget
(``egohorizon.memory.sampling``).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from egohorizon.memory.frames import FrameCatalog


@dataclass(frozen=True)
class Entry:
    kind: str  # "event" | "window"
    participant: str
    start: float
    end: float
    text: str
    ref: str  # event id or window key
    level: int | None = None  # events: their level


@dataclass(frozen=True)
class Hit:
    entry: Entry
    score: float


class _Store:
    """One participant's entries sorted by end, with their vectors in the same order."""

    def __init__(self, entries: list[Entry], text: np.ndarray, image: np.ndarray | None):
        order = sorted(range(len(entries)), key=lambda i: (entries[i].end, entries[i].start, entries[i].ref))
        self.entries = [entries[i] for i in order]
        self.ends = [e.end for e in self.entries]
        self.text = text[order]
        self.image = None if image is None else image[order]
        self.kinds = np.array([e.kind for e in self.entries])

    def stop(self, t: float) -> int:
        """Number of entries that end strictly before ``t``."""
        return bisect.bisect_left(self.ends, t)


class MemoryIndex:
    def __init__(self, entries: Sequence[Entry], embed: Callable[[list[str]], np.ndarray],
                 image_vectors: dict[str, np.ndarray] | None = None):
        """``embed``: texts -> unit vectors [n, d] (e.g. ``backbones.embedders.get_embedder('minilm').embed``);
        each distinct text is embedded once. ``image_vectors``: window key -> image vector."""
        self.embed = embed
        texts = sorted({e.text for e in entries})
        vectors = embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
        row = {t: i for i, t in enumerate(texts)}
        by_participant: dict[str, list[Entry]] = defaultdict(list)
        for e in entries:
            by_participant[e.participant].append(e)
        self._stores = {}
        for participant, mine in by_participant.items():
            text = vectors[[row[e.text] for e in mine]] if mine else vectors[:0]
            image = None
            if image_vectors:
                dim = len(next(iter(image_vectors.values())))
                image = np.stack([image_vectors.get(e.ref, np.zeros(dim, dtype=np.float32)) for e in mine])
            self._stores[participant] = _Store(mine, text, image)

    @classmethod
    def from_sources(cls, events: Iterable = (), catalog: FrameCatalog | None = None, *,
                     embed: Callable[[list[str]], np.ndarray], levels: Sequence[int] = (1, 2, 3, 4, 5),
                     frame_embedder: Callable[[list[np.ndarray]], np.ndarray] | None = None,
                     frames_per_window: int = 2) -> MemoryIndex:
        """Entries from events (of ``levels``) and the catalog's windows; with ``frame_embedder``
        (images -> vectors [n, d]), each window's image vector is the mean over ``frames_per_window``
        of its frames."""
        entries = [Entry("event", e.participant, float(e.start), float(e.end), e.text, e.id, e.level)
                   for e in events if e.level in levels]
        image_vectors = None
        if catalog is not None:
            image_vectors = {} if frame_embedder is not None else None
            for participant in catalog.participants():
                for window in catalog.windows_before(participant, float("inf")):
                    text = "; ".join(window.captions) or "(no caption)"
                    entries.append(Entry("window", participant, window.start, window.end, text, window.key))
                    if frame_embedder is not None and window.n_frames:
                        rows = window.first_frame + np.linspace(0, window.n_frames - 1, frames_per_window).astype(int)
                        image_vectors[window.key] = frame_embedder(catalog.read(participant, np.unique(rows))).mean(0)
        return cls(entries, embed, image_vectors)

    def size(self, participant: str | None = None) -> int:
        stores = [self._stores[participant]] if participant else self._stores.values()
        return sum(len(s.entries) for s in stores if s)

    def before(self, participant: str, t: float) -> list[Entry]:
        """Every entry of the participant that ends strictly before ``t``, in end order."""
        store = self._stores.get(participant)
        return [] if store is None else store.entries[: store.stop(t)]

    def search(self, participant: str, t: float, query: str | None = None, *, k: int = 10,
               kinds: Sequence[str] | None = None, levels: Sequence[int] | None = None,
               query_image: np.ndarray | None = None) -> list[Hit]:
        """The ``k`` entries ending strictly before ``t`` most similar to ``query`` (text cosine) plus,
        for windows with an image vector, ``query_image`` (image cosine); ties go to later entries."""
        store = self._stores.get(participant)
        if store is None or k <= 0:
            return []
        stop = store.stop(t)
        if stop == 0:
            return []
        scores = np.zeros(stop, dtype=np.float32)
        if query is not None:
            scores += store.text[:stop] @ self.embed([query])[0]
        if query_image is not None and store.image is not None:
            scores += store.image[:stop] @ query_image
        keep = np.ones(stop, dtype=bool)
        if kinds is not None:
            keep &= np.isin(store.kinds[:stop], list(kinds))
        if levels is not None:
            keep &= np.array([e.level in levels for e in store.entries[:stop]])
        candidates = np.flatnonzero(keep)
        if candidates.size == 0:
            return []
        # Highest score first; among equals the most recent (larger row = later end).
        order = np.lexsort((-candidates, -scores[candidates]))[:k]
        return [Hit(store.entries[i], float(scores[i])) for i in candidates[order]]
