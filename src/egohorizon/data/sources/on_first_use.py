"""A data set converted on first use, so an experiment on real data needs no path typed
(``data.convert_from`` of the forecast data module, e.g. experiment=forecast_epic_smollm2).

``ensure_converted(out, source, root)`` returns at once when ``out`` already holds a finished
conversion (its ``metadata.json`` is written last, so a half-written folder is not taken for one);
otherwise it runs the same adapter as ``egohorizon data convert SOURCE --root ROOT --out OUT``. Without
``root``, the files are looked up in the data homes (``egohorizon.data.fetch``: the first whose files
all match the manifest); when none holds them, the error names ``egohorizon data fetch``.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

# Adapter -> (the data sets `egohorizon data fetch` names for it, its --root below the data home).
FETCHED = {"epic-kitchens": (("epic-kitchens",), ""), "hd-epic": (("hd-epic",), "hd-epic-annotations")}


def ensure_converted(out: str | Path, source: str, root: str | Path | None = None) -> Path:
    """The folder ``out`` holding ``events.jsonl`` converted from ``root`` (default: the data home) by
    adapter ``source``."""
    from egohorizon.data.sources import ADAPTERS

    out = Path(out)
    if (out / "events.jsonl").is_file() and (out / "metadata.json").is_file():
        return out
    if source not in ADAPTERS:
        raise ConfigError(f"data.convert_from.source: {source!r} is not one of {sorted(ADAPTERS)}")
    if root is None:
        root = data_home_root(source)
    if not Path(root).is_dir():
        raise ConfigError(
            f"data.convert_from.root: {root} is not a folder; it should hold the {source} annotation files "
            f"(data.convert_from.root=DIR, or leave it out to use the data home, or convert yourself: egohorizon data "
            f"convert {source} --root DIR --out {out})")
    log.info("converting %s from %s into %s (once; reused after)", source, root, out)
    module = importlib.import_module(f"egohorizon.data.sources.{ADAPTERS[source]}")
    module.convert(root).write(out)  # each file is written atomically, metadata.json last
    return out


def data_home_root(source: str) -> Path:
    """The adapter's --root in the first data home holding its fetched files (ConfigError naming
    `egohorizon data fetch` when none does)."""
    from egohorizon.data.fetch import find_home

    if source not in FETCHED:
        raise ConfigError(f"data.convert_from.root: {source} has no fetched data home; set data.convert_from.root=DIR "
                          f"(a folder holding its files)")
    names, below = FETCHED[source]
    return find_home(names) / below
