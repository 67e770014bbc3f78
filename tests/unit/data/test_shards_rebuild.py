"""Rebuilding shards into an existing folder equals a fresh build; verify catches a stale index (issue 9).

Recordings are written by the real ingest writer (RecordingWriter, as `egohorizon ingest` does); shards
are built and verified through the CLI. Every rebuild is compared file by file (tars, sidecars,
index.json) with a fresh build of the same inputs into another folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from shard_helpers import DAY0, numbered_frame

from egohorizon.cli import main
from egohorizon.data.ingest.ingested import GAZE_NO_SOURCE, RecordingWriter

MORNING = DAY0 - 12 * 3600  # 2023-11-14 10:13:20 UTC, so every session lies inside the day
SESSION_START = {"s1": MORNING, "s2": MORNING + 3600, "s3": MORNING + 7200}  # s2 lies between s1 and s3


def ingest(root: Path, session: str, *, shade: int = 0, seconds: int = 90) -> Path:
    """A 90 s recording (3 windows) of numbered frames; ``shade`` changes every frame's pixels."""
    out = root / session
    writer = RecordingWriter(out, overwrite=True)
    start = SESSION_START[session]
    for k in range(seconds):
        writer.add_frame(numbered_frame(k + shade, 64, 48), t=start + k, gaze=None, gaze_status=GAZE_NO_SOURCE)
    recording = writer.make_recording([], participant="p1", day="2023-11-14", session=session, source="test",
                                      frame_period_s=1.0)
    writer.commit(recording, [])
    return out


def build(ingested: Path, out: Path) -> int:
    return main(["shards", "build", "--ingested", str(ingested), "--out", str(out), "--samples-per-shard", "2",
                 "--long-side", "32", "--crop-size", "16", "--deid", "off"])


def snapshot(out: Path) -> dict[str, bytes]:
    """Every file of a shard folder (tars, sidecars, index.json) by relative path."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def shard_keys(out: Path) -> list[str]:
    index = json.loads((out / "index.json").read_text())
    return [k for e in index["shards"] for k in json.loads((out / e["path"]).with_suffix(".json").read_text())["keys"]]


def assert_equals_fresh_build(ingested: Path, out: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    shutil.rmtree(fresh, ignore_errors=True)
    assert build(ingested, fresh) == 0
    assert shard_keys(out) == shard_keys(fresh)
    rebuilt, expected = snapshot(out), snapshot(fresh)
    assert sorted(rebuilt) == sorted(expected)  # no tar or sidecar left over, none missing
    assert [name for name in expected if rebuilt[name] != expected[name]] == []


@pytest.fixture
def built(tmp_path):
    """s1 and s3 ingested and built into ``shards``."""
    ingested = tmp_path / "ingested"
    ingest(ingested, "s1")
    ingest(ingested, "s3")
    assert build(ingested, tmp_path / "shards") == 0
    return ingested, tmp_path / "shards"


def test_rebuild_after_adding_a_session_between(built, tmp_path):
    ingested, out = built
    ingest(ingested, "s2")
    assert build(ingested, out) == 0
    keys = shard_keys(out)
    assert len(keys) == 9 and len(set(keys)) == 9
    assert_equals_fresh_build(ingested, out, tmp_path)


def test_rebuild_after_reingesting_a_session_with_other_frames(built, tmp_path):
    ingested, out = built
    before = snapshot(out)
    ingest(ingested, "s1", shade=5)
    assert build(ingested, out) == 0
    changed = {name for name in before if snapshot(out).get(name) != before[name]}
    assert "p1/2023-11-14/p1_2023-11-14_00000.tar" in changed  # s1's first two windows
    assert_equals_fresh_build(ingested, out, tmp_path)


def test_rebuild_after_removing_a_session(built, tmp_path):
    ingested, out = built
    shutil.rmtree(ingested / "s3")
    assert build(ingested, out) == 0
    assert all("_s3_" not in key for key in shard_keys(out))
    assert_equals_fresh_build(ingested, out, tmp_path)


def test_unchanged_rebuild_rewrites_nothing(built):
    ingested, out = built
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*.tar")}
    assert build(ingested, out) == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.tar")} == mtimes


def test_verify_passes_on_a_current_index(built, capsys):
    _, out = built
    assert main(["shards", "verify", str(out)]) == 0
    assert "0 shard(s) with problems" in capsys.readouterr().out


def test_verify_names_a_session_added_since_the_build(built, capsys):
    ingested, out = built
    ingest(ingested, "s2")
    assert main(["shards", "verify", str(out)]) == 1
    captured = capsys.readouterr()
    assert "p1/2023-11-14/s2" in captured.out and "not in the index" in captured.out


def test_verify_names_the_shard_and_the_changed_session(built, capsys):
    ingested, out = built
    ingest(ingested, "s1", shade=5)
    assert main(["shards", "verify", str(out)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if "p1/2023-11-14/s1" in line]
    assert any("p1_2023-11-14_00000.tar" in line and "changed since the build" in line for line in lines)


def test_verify_names_a_removed_session(built, capsys):
    ingested, out = built
    shutil.rmtree(ingested / "s3")
    assert main(["shards", "verify", str(out)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if "p1/2023-11-14/s3" in line]
    assert any("p1_2023-11-14_00002.tar" in line and "no longer ingested" in line for line in lines)


def test_verify_without_the_inputs(built, capsys):
    ingested, out = built
    shutil.move(ingested, ingested.with_name("moved"))  # e.g. shards copied to a cluster without them
    assert main(["shards", "verify", str(out)]) == 1
    assert f"{ingested}: no such folder" in capsys.readouterr().out
    assert main(["shards", "verify", str(out), "--no-inputs"]) == 0
