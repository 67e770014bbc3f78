"""The three real Aria sample recordings of ../shared/data (projectaria-tools-testdata) ingested and cut
into shards, for the caption job tests: the module-scoped fixtures ``ingested`` and ``shards``, and
``build`` for shards with other settings. A test module imports the fixtures by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from egohorizon.cli import main

ARIA = "projectaria-tools-testdata/data"


@pytest.fixture(scope="module")
def ingested(shared_data, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("aria")
    data = shared_data / ARIA
    for args in (
        [str(data / "gen1/aria_everyday_activities_test_data/recording.vrs"), "--participant", "aea1"],
        [str(data / "gen1/aria_digital_twin_test_data/video.vrs"), "--participant", "adt", "--day", "2021-01-01",
         "--time-base", "device"],
        [str(data / "gen2/aria_gen2_unit_test_sequence_with_bluetooth.vrs"), "--participant", "g2"],
    ):
        name = args[2]
        assert main(["ingest", "aria", *args, "--rate", "0", "--out", str(root / "ingested" / name)]) == 0
    return root / "ingested"


def build(ingested: Path, out: Path, *extra: str) -> Path:
    assert main(["shards", "build", "--ingested", str(ingested), "--out", str(out), "--deid", "off", *extra]) == 0
    return out


@pytest.fixture(scope="module")
def shards(ingested, tmp_path_factory) -> Path:
    """30 s windows, frameless ones kept: 3 windows with frames (one per recording) and 3 without."""
    return build(ingested, tmp_path_factory.mktemp("shards") / "shards", "--min-frames", "0")
