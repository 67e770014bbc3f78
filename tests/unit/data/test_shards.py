"""Window samples and the shard writer: layout, index, grouping, resumability, CLI."""

from __future__ import annotations

import json
import tarfile

import numpy as np
import pytest
from shard_helpers import DAY0, all_keys, build_toy_shards, make_source

from egohorizon.cli import main
from egohorizon.data.ingest.ingested import Word
from egohorizon.data.shards.encode import decode_window
from egohorizon.data.shards.index import INDEX_FORMAT, ShardIndex
from egohorizon.data.shards.writer import build_shards, plan_shards
from egohorizon.data.windows.sample import (
    WindowConfig,
    assign_to_windows,
    build_window,
    crop_box,
    downscaled_size,
    group_windows,
    scale_point,
    window_count,
    window_key,
)
from egohorizon.errors import ConfigError, DataError
from egohorizon.schema import Event

# ------------------------------------------------------------------------------------------------
# Window arithmetic (hand-computed)
# ------------------------------------------------------------------------------------------------


def test_scale_point_maps_pixel_centres():
    # A 100 px wide image halved: pixel centre 0 -> -0.25, centre 99 -> 49.25, the image edge -0.5 stays.
    assert scale_point((0.0, 0.0), 0.5, 0.5) == (-0.25, -0.25)
    assert scale_point((99.0, -0.5), 0.5, 0.5) == (49.25, -0.5)
    assert scale_point((703.5, 703.5), 448 / 1408, 448 / 1408) == pytest.approx((223.5, 223.5))


def test_downscaled_size_keeps_aspect_and_never_upscales():
    assert downscaled_size(1408, 1408, 448) == (448, 448)
    assert downscaled_size(1920, 1080, 448) == (448, 252)
    assert downscaled_size(320, 240, 448) == (320, 240)


def test_crop_box_centres_and_stays_inside():
    assert crop_box((100.0, 100.0), 20, 300, 200) == (90, 90, 110, 110)  # pixels 90..109, centre 99.5~100
    assert crop_box((2.0, 199.0), 20, 300, 200) == (0, 180, 20, 200)  # shifted inside at the corner
    assert crop_box((5.0, 5.0), 50, 30, 20) == (0, 0, 30, 20)  # image smaller than the crop


def test_window_assignment_by_start_time():
    start = 1000.0
    # 29.999 s is window 0, 30 s is window 1, a time before the start is negative.
    assert assign_to_windows([1000.0, 1029.999, 1030.0, 1089.0, 999.0], start, 30.0) == [0, 0, 1, 2, -1]
    source = make_source(seconds=61)
    assert window_count(source.recording, 30.0) == 3  # 61 s -> windows of 30, 30, 1 s


def test_window_sample_contents():
    words = [Word(DAY0 + 3, DAY0 + 3.5, "hello"), Word(DAY0 + 29.9, DAY0 + 30.4, "edge"),
             Word(DAY0 + 31, DAY0 + 32, "second")]
    events = [Event(id="e1", participant="p1", day="2023-11-14", session="s1", level=1, start=DAY0 - 5,
                    end=DAY0 + 2, text="opening the door"),
              Event(id="e2", participant="p1", day="2023-11-14", session="s1", level=2, start=DAY0 + 10,
                    end=DAY0 + 50, text="going out"),
              Event(id="e3", participant="p2", day="2023-11-14", session="x", level=1, start=DAY0,
                    end=DAY0 + 60, text="someone else")]
    source = make_source(seconds=60, width=200, height=100, words=words, events=events)
    (i0, frames0, words0), (i1, frames1, words1) = group_windows(source.recording, source.frames, source.words, 30.0)
    assert (i0, len(frames0), [w.text for w in words0]) == (0, 30, ["hello", "edge"])  # a word belongs to its start's window
    assert (i1, len(frames1), [w.text for w in words1]) == (1, 30, ["second"])
    config = WindowConfig(long_side=50, crop_size=20, draw_gaze=False)
    sample = build_window(source.recording, 0, frames0, words0, source.events, config)
    assert sample.key == "p1_2023-11-14_s1_w00000"
    assert [e.id for e in sample.events] == ["e1", "e2"]  # p2's event is not this participant's
    meta = sample.meta()
    assert meta["captions"] == ["opening the door"] and meta["transcript"] == "hello edge"
    first = meta["frames"][0]
    assert first["size"] == [50, 25] and first["native_size"] == [200, 100]
    assert first["gaze"] == pytest.approx(list(scale_point((5.0, 50.0), 0.25, 0.25)))
    assert first["crop_box"] == [0, 40, 20, 60]
    assert sample.frames[0].crop.shape == (20, 20, 3)
    assert meta["frames"][9]["gaze"] is None and meta["frames"][9]["crop_box"] is None  # missing gaze is marked


def test_draw_gaze_marks_the_frame():
    source = make_source(seconds=30, width=200, height=100)
    plain = build_window(source.recording, 0, source.frames, [], [], WindowConfig(long_side=100))
    drawn = build_window(source.recording, 0, source.frames, [], [], WindowConfig(long_side=100, draw_gaze=True))
    assert not np.array_equal(plain.frames[0].image, drawn.frames[0].image)
    assert np.array_equal(plain.frames[9].image, drawn.frames[9].image)  # no gaze, nothing drawn
    assert drawn.meta()["gaze_drawn"] is True


# ------------------------------------------------------------------------------------------------
# Writer and index
# ------------------------------------------------------------------------------------------------


def test_shards_grouped_by_participant_and_day(tmp_path):
    index = build_toy_shards(tmp_path / "shards")
    # 2 days x 2 sessions x 3 windows = 6 windows a day, 2 per shard -> 3 shards a day.
    assert [(e["day"], e["samples"]) for e in index.shards] == [("2023-11-14", 2)] * 3 + [("2023-11-15", 2)] * 3
    assert all(e["path"].startswith(f"p1/{e['day']}/") for e in index.shards)
    on_disk = json.loads((tmp_path / "shards" / "index.json").read_text())
    assert on_disk["format"] == INDEX_FORMAT and on_disk["schema_version"] == 1
    assert on_disk["totals"]["samples"] == 12 and on_disk["totals"]["days"] == ["2023-11-14", "2023-11-15"]
    assert on_disk["totals"]["bytes"] == sum((tmp_path / "shards" / e["path"]).stat().st_size for e in index.shards)
    assert on_disk["build"]["long_side"] == 32 and on_disk["build"]["deid"] == "off"
    # Within a day, windows are in time order across sessions.
    first_day = [k for e in index.shards[:3] for k in json.loads(index.path_of(e).with_suffix(".json").read_text())["keys"]]
    assert first_day == [f"p1_2023-11-14_s{s}_w{w:05d}" for s in (0, 1) for w in range(3)]


def test_sample_round_trip(tmp_path):
    index = build_toy_shards(tmp_path / "shards", days=1, sessions=1)
    with tarfile.open(index.path_of(index.shards[0])) as tar:
        names = tar.getnames()
        sample = {"__key__": "p1_2023-11-14_s0_w00000"}
        for member in tar.getmembers():
            key, field = member.name.split(".", 1)
            if key == sample["__key__"]:
                sample[field] = tar.extractfile(member).read()
    assert "p1_2023-11-14_s0_w00000.json" in names and "p1_2023-11-14_s0_w00000.f029.jpg" in names
    assert "p1_2023-11-14_s0_w00000.c009.jpg" not in names  # frame 9 has no gaze, so no crop
    window = decode_window(sample)
    assert len(window.frames) == 30 and window.frames[0].shape == (24, 32, 3)
    # The red channel still tells the frame number after JPEG (frame 3 -> 21).
    assert abs(int(window.frames[3][:, :, 0].mean()) - 21) <= 3
    assert window.crops[0].shape == (16, 16, 3) and window.crops[9] is None


def test_writer_is_idempotent_and_resumable(tmp_path):
    out = tmp_path / "shards"
    first = build_toy_shards(out)
    tars = {e["path"]: index_bytes(out, e) for e in first.shards}
    mtimes = {e["path"]: (out / e["path"]).stat().st_mtime_ns for e in first.shards}
    # Remove one shard: a re-run rewrites exactly that one, byte-identical, and keeps the others.
    victim = first.shards[4]["path"]
    (out / victim).unlink()
    second = build_toy_shards(out)
    assert second.shards == first.shards
    assert {e["path"]: index_bytes(out, e) for e in second.shards} == tars
    assert all((out / p).stat().st_mtime_ns == m for p, m in mtimes.items() if p != victim)


def index_bytes(out, entry) -> bytes:
    return (out / entry["path"]).read_bytes()


def test_crash_mid_shard_leaves_no_half_shard(tmp_path):
    out = tmp_path / "shards"
    calls = {"n": 0}

    def exploding_deid(image):
        calls["n"] += 1
        if calls["n"] == 200:  # inside the 4th shard (2 windows of 30 frames per shard)
            raise RuntimeError("power cut")
        return image, {"faces": 0, "text_boxes": 0}

    sources = [make_source(day="2023-11-14", session=f"s{s}", start=DAY0 + s * 3600) for s in range(3)]
    config = WindowConfig(long_side=32, crop_size=16)
    with pytest.raises(RuntimeError, match="power cut"):
        build_shards(sources, out, config=config, samples_per_shard=2, deidentifier=exploding_deid)
    day = out / "p1" / "2023-11-14"
    assert sorted(p.name for p in day.iterdir()) == [f"p1_2023-11-14_{n:05d}.{ext}" for n in range(3) for ext in ("json", "tar")]
    assert not (out / "index.json").exists()
    index = build_shards(sources, out, config=config, samples_per_shard=2,
                         deidentifier=lambda image: (image, {"faces": 0, "text_boxes": 0}))
    assert [e["samples"] for e in index.shards] == [2, 2, 2, 2, 1]
    assert index.build["deid"] == "custom" and index.totals()["deid"]["frames"] == 9 * 30


def test_changed_settings_are_refused(tmp_path):
    build_toy_shards(tmp_path / "shards")
    with pytest.raises(ConfigError, match="long_side"):
        build_toy_shards(tmp_path / "shards", long_side=48)


def test_min_frames_and_stride(tmp_path):
    sources = [make_source(seconds=95)]  # windows of 30, 30, 30 and 5 frames
    plans, skipped = plan_shards(sources, WindowConfig(min_frames=10), samples_per_shard=10)
    assert skipped == 1 and [w.index for w in plans[0].windows] == [0, 1, 2]
    plans, skipped = plan_shards(sources, WindowConfig(stride=2, min_frames=0), samples_per_shard=10)
    assert skipped == 0 and [w.index for w in plans[0].windows] == [0, 2]
    with pytest.raises(ConfigError, match="given twice"):
        plan_shards(sources * 2, WindowConfig(), samples_per_shard=10)


def test_window_key_is_tar_safe():
    source = make_source(participant="P.01 x", session="a.b/c")
    key = window_key(source.recording, 7)
    assert "." not in key and "/" not in key and key.endswith("_w00007")


def test_index_load_errors(tmp_path):
    with pytest.raises(DataError, match="shard index not found"):
        ShardIndex.load(tmp_path)
    (tmp_path / "index.json").write_text('{"format": "something else"}')
    with pytest.raises(DataError, match="field 'format'"):
        ShardIndex.load(tmp_path)


def test_cli_stats_and_verify(tmp_path, capsys):
    index = build_toy_shards(tmp_path / "shards")
    assert main(["shards", "stats", str(tmp_path / "shards"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["samples"] == 12 and stats["per_day"]["p1 2023-11-14"]["shards"] == 3
    assert main(["shards", "verify", str(tmp_path / "shards")]) == 0
    assert "6 shards, 12 good samples, 0 shard(s) with problems" in capsys.readouterr().out
    # Damage one shard: verify names it and exits 1.
    victim = index.path_of(index.shards[1])
    victim.write_bytes(victim.read_bytes()[:5000])
    assert main(["shards", "verify", str(tmp_path / "shards")]) == 1
    captured = capsys.readouterr()
    assert str(victim) in captured.out and "1 shard(s) with problems" in captured.err
    assert len(all_keys(index)) == 12


def test_an_events_file_given_as_shard_index_is_named(tmp_path):
    """Bad-input pass: `shards stats events.jsonl` said "shard index is not valid JSON (Extra data ...)"."""
    events = tmp_path / "events.jsonl"
    events.write_text('{"id": "e1"}\n{"id": "e2"}\n')
    with pytest.raises(DataError, match=r"events.jsonl: not a shard index; expected a shard folder or its index.json"):
        ShardIndex.load(events)
