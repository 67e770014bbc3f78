"""The demo world becomes shards: frames rendered on the fly, their gaze, transcript words and events."""

from __future__ import annotations

import pytest

from egohorizon.data.shards.index import ShardIndex
from egohorizon.data.shards.sources import demo_sources
from egohorizon.data.shards.stream import WindowStream, make_loader
from egohorizon.data.shards.writer import build_shards
from egohorizon.data.windows.sample import WindowConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world():
    from egohorizon.data.demo import ensure_demo_world, load_demo_world

    return load_demo_world(ensure_demo_world())


def test_demo_world_to_shards_to_stream(world, tmp_path):
    # The two recordings of the first day with the most speech, every 8th window.
    first_day = min(r.day for r in world.recordings)
    talk = {r.session: sum(u["session"] == r.session for u in world.transcript) for r in world.recordings}
    recordings = sorted((r for r in world.recordings if r.day == first_day), key=lambda r: -talk[r.session])[:2]
    config = WindowConfig(long_side=128, crop_size=32, stride=8)
    index = build_shards(demo_sources(world, frame_size=128, recordings=recordings), tmp_path / "shards",
                         config=config, samples_per_shard=4)
    assert index.build["deid"] == "off"  # auto: nobody to hide in a rendered world
    assert {(e["participant"], e["day"]) for e in index.shards} == {(r.participant, r.day) for r in recordings}
    assert index.totals()["words"] > 0
    index = ShardIndex.load(tmp_path / "shards")
    loader = make_loader(WindowStream(index.urls(), expected_samples=index.expected_samples(), batch_size=4,
                                      shuffle=False), num_workers=2)
    windows = [w for batch in loader for w in batch["samples"]]
    assert len(windows) == index.totals()["samples"] > 0 and loader.monitor.counters()["samples_bad"] == 0

    by_session = {r.session: r for r in recordings}
    checked_gaze = checked_words = 0
    for window in windows:
        meta = window.meta
        recording = by_session[meta["session"]]
        assert meta["start"] == pytest.approx(recording.start + 30 * meta["window"])
        for frame in meta["frames"][::10]:  # the stored gaze is the world's gaze for that frame
            _, gaze, confidence = world.render_frame(meta["session"], frame["t"], size=128)
            if frame["gaze_status"] == "ok":
                assert frame["gaze"] == pytest.approx([gaze[0], gaze[1]])
                assert frame["gaze_confidence"] == pytest.approx(confidence)
                checked_gaze += 1
            else:
                assert gaze is None or not (0 <= gaze[0] < 128 and 0 <= gaze[1] < 128)
        # Word times are seconds from their utterance's start; a word belongs to the window it starts in.
        spoken = [w[0] for u in world.utterances(meta["session"], meta["start"] - 60, meta["end"] + 60)
                  for w in u["words"] if meta["start"] <= u["start"] + w[1] < meta["end"]]
        assert [w["text"] for w in meta["words"]] == spoken
        checked_words += len(spoken)
        expected_events = {e.id for e in world.events if e.participant == recording.participant
                           and e.start < meta["end"] and e.end > meta["start"]}
        assert {e["id"] for e in meta["events"]} == expected_events
        assert meta["captions"] and all(isinstance(c, str) for c in meta["captions"])
    assert checked_gaze > 0 and checked_words > 0


def test_events_files_with_demo_are_refused_not_ignored(tmp_path, capsys):
    """Bad-input pass: `shards build --demo --events boxes.csv` exited 0, the file never read."""
    from egohorizon.cli import main

    events = tmp_path / "mine.jsonl"
    events.write_text("")
    assert main(["shards", "build", "--demo", "--demo-dir", str(tmp_path / "demo"), "--out",
                 str(tmp_path / "shards"), "--events", str(events)]) == 2
    err = capsys.readouterr().err
    assert f"--events {events}: --demo attaches the demo world's own events" in err
    assert not (tmp_path / "shards").exists() and not (tmp_path / "demo").exists()
