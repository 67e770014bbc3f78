"""A leakage-safe memory of a person's past (issue 13), task-agnostic: QA retrieves with it now and
visual+memory forecasting will reuse it.

- ``frames.FrameCatalog``: where every stored frame of a shard folder lies (random access by time);
- ``index.MemoryIndex``: event descriptions of all levels and windows with their vectors, searched
  only among entries that end strictly before the query time;
- ``sampling``: filling a frame budget before a time, uniformly or from the best windows.
"""

from egohorizon.memory.frames import FrameCatalog, Window
from egohorizon.memory.index import Entry, Hit, MemoryIndex
from egohorizon.memory.sampling import Selection, retrieved, uniform
from egohorizon.memory.text import WordEmbedder, text_embedder

__all__ = ["Entry", "FrameCatalog", "Hit", "MemoryIndex", "Selection", "Window", "WordEmbedder", "retrieved", "text_embedder", "uniform"]
