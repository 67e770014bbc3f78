"""Checks of what ``egohorizon compare`` leaves behind, shared by the forecast and caption compare tests:
the ``compare/table`` of an offline W&B run, and plots that really draw something."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def wandb_table(out_dir: Path) -> dict:
    """The ``compare/table`` an offline W&B run under ``out_dir`` holds (columns, data)."""
    [path] = (out_dir / "wandb").glob("offline-run-*/files/media/table/compare/table_*.table.json")
    return json.loads(path.read_text())


def assert_table_matches(table: dict, rows: list[dict], columns: list[str]) -> None:
    assert table["columns"] == columns
    assert len(table["data"]) == len(rows)
    for logged, row in zip(table["data"], rows):
        for column, value in zip(columns, logged):
            want = row[column]
            if isinstance(want, float):
                assert value == pytest.approx(want), column
            else:
                assert value == ("" if want is None else want if isinstance(want, int) and column not in (
                    "step", "source", "level", "k") else str(want)), column


def assert_png_drawn(path: Path) -> None:
    """A real picture: a PNG of some size whose pixels are not one colour."""
    import numpy as np
    from PIL import Image

    assert path.stat().st_size > 5000, path
    pixels = np.asarray(Image.open(path).convert("L"))
    assert min(pixels.shape) > 200 and len(np.unique(pixels)) > 20, path
