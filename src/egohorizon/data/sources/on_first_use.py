"""A data set converted on first use, so an experiment on real data needs no path typed
(``data.convert_from`` of the forecast data module, e.g. experiment=forecast_epic_smollm2).

``ensure_converted(out, source, root)`` returns at once when ``out`` already holds a finished
conversion (its ``metadata.json`` is written last, so a half-written folder is not taken for one);
otherwise it runs the same adapter as ``egohorizon data convert SOURCE --root ROOT --out OUT``.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)


def ensure_converted(out: str | Path, source: str, root: str | Path) -> Path:
    """The folder ``out`` holding ``events.jsonl`` converted from ``root`` by adapter ``source``."""
    from egohorizon.data.sources import ADAPTERS

    out = Path(out)
    if (out / "events.jsonl").is_file() and (out / "metadata.json").is_file():
        return out
    if source not in ADAPTERS:
        raise ConfigError(f"data.convert_from.source: {source!r} is not one of {sorted(ADAPTERS)}")
    if not Path(root).is_dir():
        raise ConfigError(
            f"data.convert_from.root: {root} is not a folder; it should hold the {source} annotation files "
            f"(set EGOHORIZON_SHARED_DATA, or data.convert_from.root=DIR, or convert yourself: egohorizon data "
            f"convert {source} --root DIR --out {out})")
    log.info("converting %s from %s into %s (once; reused after)", source, root, out)
    module = importlib.import_module(f"egohorizon.data.sources.{ADAPTERS[source]}")
    module.convert(root).write(out)  # each file is written atomically, metadata.json last
    return out
