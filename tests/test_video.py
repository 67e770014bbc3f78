"""MP4 ingestion with decord and PyAV: the same frames at the same times, 1 fps or a given rate."""

from __future__ import annotations

import numpy as np
import pytest

from egohorizon.data.ingested import GAZE_NO_SOURCE, IngestedRecording
from egohorizon.data.video import ingest_video, read_video_frames, tick_indices
from egohorizon.errors import DataError

FPS = 10


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """5.5 s at 10 fps, 64 x 48; frame k is flat grey level 4 k (so the level tells the frame)."""
    cv2 = pytest.importorskip("cv2")
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (64, 48))
    for k in range(55):
        writer.write(np.full((48, 64, 3), 4 * k, dtype=np.uint8))
    writer.release()
    return path


def test_tick_indices_hand_computed():
    times = np.arange(0, 55) / FPS
    assert tick_indices(times, 1.0).tolist() == [0, 10, 20, 30, 40, 50]
    assert tick_indices(times, 3.0).tolist() == [0, 3, 7, 10, 13, 17, 20, 23, 27, 30, 33, 37, 40, 43, 47, 50, 53]
    assert tick_indices(np.array([0.0, 0.25, 0.75]), 2.0).tolist() == [0, 1]  # tick 0.5: a tie goes to the earlier frame
    assert tick_indices(times, None).tolist() == list(range(55))


@pytest.mark.parametrize("backend", ["decord", "pyav"])
def test_backends_sample_the_same_frames(clip, backend):
    frames = list(read_video_frames(clip, 1.0, backend))
    assert [t for t, _ in frames] == pytest.approx([0, 1, 2, 3, 4, 5])
    levels = [float(image.mean()) for _, image in frames]
    # Frame 10 k has level 40 k; mp4v's lossy coding moves flat levels by a few units.
    assert levels == pytest.approx([40.0 * k for k in range(6)], abs=6)
    assert frames[0][1].shape == (48, 64, 3) and frames[0][1].dtype == np.uint8


def test_ingest_video(clip, tmp_path):
    rec = ingest_video(clip, tmp_path / "rec", participant="v1", start_time=1_700_000_000.0, rate_hz=2.0)
    loaded = IngestedRecording.load(rec.root)
    assert loaded.recording.day == "2023-11-14" and loaded.meta["time_base"] == "epoch"
    assert [f.t - 1_700_000_000.0 for f in loaded.frames] == pytest.approx([k / 2 for k in range(11)])
    assert {f.gaze_status for f in loaded.frames} == {GAZE_NO_SOURCE}
    assert loaded.recording.end == pytest.approx(1_700_000_000.0 + 5.5)
    assert loaded.load_image(loaded.frames[2]).shape == (48, 64, 3)


def test_ingest_video_needs_a_day_without_a_clock(clip, tmp_path):
    with pytest.raises(DataError, match="pass --start-time or --day"):
        ingest_video(clip, tmp_path / "rec", participant="v1")
    rec = ingest_video(clip, tmp_path / "rec", participant="v1", day="2024-01-01")
    assert rec.meta["time_base"] == "relative" and rec.frames[0].t == 0.0
    with pytest.raises(DataError, match="already exists"):
        ingest_video(clip, tmp_path / "rec", participant="v1", day="2024-01-01")


def test_unreadable_video_is_a_data_error(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00" * 1000)
    with pytest.raises(DataError, match="bad.mp4"):
        list(read_video_frames(bad, 1.0))
    with pytest.raises(DataError, match="not found"):
        list(read_video_frames(tmp_path / "missing.mp4"))


def test_cli_ingest_video_then_shards(clip, tmp_path, capsys):
    import json

    from egohorizon.cli import main
    from egohorizon.data.shards.index import ShardIndex

    assert main(["ingest", "video", str(clip), "--participant", "v1", "--start-time", "1700000000",
                 "--out", str(tmp_path / "rec")]) == 0
    assert json.loads(capsys.readouterr().out)["frames"] == 6
    assert main(["shards", "build", "--ingested", str(tmp_path), "--out", str(tmp_path / "shards"),
                 "--deid", "off", "--long-side", "32"]) == 0
    index = ShardIndex.load(tmp_path / "shards")
    assert index.totals()["samples"] == 1 and index.shards[0]["gaze_status_counts"]["no_source"] == 6
