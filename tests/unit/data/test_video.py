"""MP4 ingestion with decord and PyAV: the same frames at the same times, 1 fps or a given rate."""

from __future__ import annotations

import numpy as np
import pytest

from egohorizon.data.ingest.ingested import GAZE_NO_SOURCE, IngestedRecording
from egohorizon.data.ingest.video import BACKENDS, DecodeReport, ingest_video, read_video_frames, tick_indices
from egohorizon.errors import DataError

FPS = 10

# Import PyAV before anything loads decord: decord's bundled libvpx otherwise shadows PyAV's and the
# VP9 encoder the tests use refuses to open ("avcodec_open2 ... returned 22").
av = pytest.importorskip("av")


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


# Real first-person clips are VP9, H.264 or HEVC; PyAV's bundled FFmpeg encodes all three (issue 9).
CODECS = {"vp9": "libvpx-vp9", "h264": "libx264", "hevc": "libx265"}
ENCODER_OPTIONS = {"libvpx-vp9": {"deadline": "realtime", "cpu-used": "8"},
                   "libx264": {"preset": "ultrafast"},
                   "libx265": {"preset": "ultrafast", "x265-params": "log-level=none"}}


def encode_clip(path, encoder, *, size=(96, 64), frames=40, faststart=True, keyframe_every=None):
    """``frames`` at 10 fps; frame k is grey level 4 k with a noise patch (so a damaged region has
    real bytes to lose). faststart puts the MP4 index first, as phones and web uploads do."""
    if encoder not in av.codecs_available:
        pytest.skip(f"PyAV's bundled FFmpeg has no {encoder} encoder")
    width, height = size
    rng = np.random.default_rng(0)
    with av.open(str(path), "w", options={"movflags": "faststart"} if faststart else {}) as container:
        stream = container.add_stream(encoder, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = ENCODER_OPTIONS[encoder]
        if keyframe_every:
            stream.codec_context.gop_size = keyframe_every
        for k in range(frames):
            image = np.full((height, width, 3), 4 * k, dtype=np.uint8)
            image[:height // 4, :width // 4] = rng.integers(0, 256, (height // 4, width // 4, 3), dtype=np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        container.mux(stream.encode())
    return path


def truncate_at_half(path):
    data = path.read_bytes()
    damaged = path.with_name(path.stem + "_cut" + path.suffix)
    damaged.write_bytes(data[:len(data) // 2])
    return damaged


def flip_middle_bytes(path, count=256):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + count] = bytes(b ^ 0xFF for b in data[middle:middle + count])
    damaged = path.with_name(path.stem + "_flipped.mp4")
    damaged.write_bytes(bytes(data))
    return damaged


@pytest.fixture(scope="module", params=sorted(CODECS))
def codec_clip(request, tmp_path_factory):
    return encode_clip(tmp_path_factory.mktemp(request.param) / f"{request.param}.mp4", CODECS[request.param])


def grey_levels(frames):
    """The flat part of each frame (below the noise patch): 4 k for frame k."""
    return [float(image[image.shape[0] // 2:].mean()) for _, image in frames]


def test_each_codec_reads_whole_with_default_settings(codec_clip):
    report = DecodeReport()
    frames = list(read_video_frames(codec_clip, 1.0, report=report))
    assert [t for t, _ in frames] == pytest.approx([0, 1, 2, 3])
    assert grey_levels(frames) == pytest.approx([0, 40, 80, 120], abs=6)
    assert report.expected_frames == report.decoded_frames == 40 and report.lost == []
    assert report.backend in ("decord", "pyav")


@pytest.mark.parametrize("damage", [truncate_at_half, flip_middle_bytes])
def test_damaged_video_keeps_the_frames_before_the_damage(codec_clip, damage, caplog):
    damaged = damage(codec_clip)
    report = DecodeReport()
    with caplog.at_level("INFO", logger="egohorizon.data.ingest.video"):
        frames = list(read_video_frames(damaged, 1.0, report=report))
    times = [t for t, _ in frames]
    # Every frame before the damage is kept, at its own time, with its own content.
    assert len(frames) >= 1 and times == pytest.approx(list(range(len(frames))))
    assert grey_levels(frames) == pytest.approx([40.0 * k for k in range(len(frames))], abs=6)
    # What is missing is counted and placed in time: 40 frames at 10 fps span [0, 4) s.
    assert report.expected_frames == 40 and report.decoded_frames < 40
    lost_s = sum(end - start for start, end in report.lost)
    assert lost_s == pytest.approx((40 - report.decoded_frames) / FPS, abs=0.05)
    assert report.lost[-1][1] == pytest.approx(4.0) and report.lost[0][0] >= times[-1]
    assert report.backend == "pyav" and "pyav" in caplog.text.lower() and damaged.name in caplog.text


def test_a_cut_matroska_file_reports_its_gap(tmp_path):
    # Matroska's index has no frame count, only the duration: decord used to return the first half
    # without a word.
    cut = truncate_at_half(encode_clip(tmp_path / "h264.mkv", "libx264", faststart=False))
    report = DecodeReport()
    frames = list(read_video_frames(cut, 1.0, report=report))
    assert [t for t, _ in frames] == pytest.approx(list(range(len(frames))))
    assert report.expected_frames is None and 0 < report.decoded_frames < 40
    assert report.lost[-1][1] == pytest.approx(4.0)
    assert sum(end - start for start, end in report.lost) == pytest.approx((40 - report.decoded_frames) / FPS, abs=0.05)


def test_decoding_resumes_at_the_keyframe_after_the_damage(tmp_path):
    clip = encode_clip(tmp_path / "gop.mp4", "libx264", keyframe_every=10)
    report = DecodeReport()
    # PyAV by name: decord would seek from keyframe to keyframe (every sampled frame is one here)
    # and never touch the damaged packets.
    frames = list(read_video_frames(flip_middle_bytes(clip), 1.0, "pyav", report=report))
    # The damaged group of pictures is lost; the groups after it decode, so the last tick (3 s) is kept.
    assert report.lost and 0 < report.lost[0][0] and report.lost[-1][1] < 4.0
    assert frames[-1][0] == pytest.approx(3.0) and grey_levels(frames[-1:]) == pytest.approx([120], abs=6)
    lost_s = sum(end - start for start, end in report.lost)
    assert lost_s == pytest.approx((40 - report.decoded_frames) / FPS, abs=0.05)


def test_decord_asked_for_by_name_on_a_damaged_file_is_a_data_error(tmp_path):
    damaged = flip_middle_bytes(encode_clip(tmp_path / "h264.mp4", "libx264"))
    with pytest.raises(DataError, match="h264_flipped.mp4"):
        list(read_video_frames(damaged, 1.0, "decord"))


def zero_the_frame_data(path):
    """Keeps the MP4 index (moov, first with faststart) and zeroes every byte of frame data (mdat)."""
    data = bytearray(path.read_bytes())
    start = data.index(b"mdat") + 4
    data[start:] = bytes(len(data) - start)
    damaged = path.with_name(path.stem + "_zeroed.mp4")
    damaged.write_bytes(bytes(data))
    return damaged


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_undecodable_file_is_a_data_error_naming_it(tmp_path, backend):
    # Without faststart the MP4 index (moov) comes last, so the first half holds no readable frame.
    cut = truncate_at_half(encode_clip(tmp_path / "late_index.mp4", "libx264", faststart=False))
    with pytest.raises(DataError, match="late_index_cut.mp4"):
        list(read_video_frames(cut, 1.0, backend))
    # An intact index over frame data that is all zeros: nothing decodes.
    zeroed = zero_the_frame_data(encode_clip(tmp_path / "blank.mp4", "libx264"))
    with pytest.raises(DataError, match="blank_zeroed.mp4"):
        list(read_video_frames(zeroed, 1.0, backend))


def test_vp9_at_first_person_size_ingests_with_default_settings(tmp_path):
    clip = encode_clip(tmp_path / "aria_like.mp4", "libvpx-vp9", size=(1440, 1080), frames=30)
    rec = ingest_video(clip, tmp_path / "rec", participant="p1", day="2024-05-01")
    assert [f.t for f in rec.frames] == pytest.approx([0, 1, 2])
    assert rec.meta["image_size"] == [1440, 1080]
    decode = rec.meta["decode"]
    assert (decode["backend"], decode["expected_frames"], decode["decoded_frames"], decode["lost"]) == ("pyav", 30, 30, [])
    assert "VP9" in decode["reason"]  # decord's bundled FFmpeg fails on real VP9 clips, so auto goes to PyAV


def test_cli_reports_the_gap_of_a_cut_video(tmp_path, capsys):
    import json

    from egohorizon.cli import main

    cut = truncate_at_half(encode_clip(tmp_path / "cut.mp4", "libx264"))
    assert main(["ingest", "video", str(cut), "--participant", "v1", "--start-time", "1700000000",
                 "--out", str(tmp_path / "rec")]) == 0
    summary = json.loads(capsys.readouterr().out)
    decode = summary["decode"]
    assert len(summary["warnings"]) == 1 and "cut_cut.mp4: decoded" in summary["warnings"][0]
    assert decode["expected_frames"] == 40 and 0 < decode["decoded_frames"] < 40
    # Lost time is in the recording's time base, like start and end.
    assert decode["lost"][-1][1] == pytest.approx(1_700_000_004.0)
    stored = json.loads((tmp_path / "rec" / "recording.json").read_text())["meta"]["decode"]
    assert stored == decode


def test_cli_names_an_undecodable_file_without_a_traceback(tmp_path, capsys):
    from egohorizon.cli import main

    zeroed = zero_the_frame_data(encode_clip(tmp_path / "blank.mp4", "libx264"))
    assert main(["ingest", "video", str(zeroed), "--participant", "v1", "--day", "2024-01-01",
                 "--out", str(tmp_path / "rec")]) == 2
    err = capsys.readouterr().err
    assert "blank_zeroed.mp4: no video frame could be decoded" in err and "Traceback" not in err
    assert not (tmp_path / "rec").exists()


# ------------------------------------------------------------------------------------------------
# Start times (issue 22, item 9): 2100, 1969 and milliseconds were accepted or crashed
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, message", [
    ("4102444800", (r"4102444800 is not a plausible start time \(2100-01-01 00:00:00 UTC\); expected epoch "
                    r"seconds from 631152000 \(1990-01-01\) to \d+ \(tomorrow\)$")),
    ("-50", r"-50 is not a plausible start time \(1969-12-31 23:59:10 UTC\)"),
    ("1700000000000", r"it looks like milliseconds: in seconds that is 1700000000\.000"),
    ("1700000000000000", r"it looks like microseconds: in seconds that is 1700000000\.000"),
    ("1700000000000000000", r"it looks like nanoseconds: in seconds that is 1700000000\.000"),
    ("nan", r"nan is not a plausible start time"),
    ("soon", r"expected epoch seconds, got 'soon'"),
])
def test_cli_refuses_implausible_start_time(clip, tmp_path, capsys, value, message):
    import re

    from egohorizon.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["ingest", "video", str(clip), "--participant", "v1", f"--start-time={value}",
              "--out", str(tmp_path / "rec")])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and err.startswith("egohorizon ingest video: error: argument --start-time: ")
    assert re.search(message, err) and "Traceback" not in err
    assert not (tmp_path / "rec").exists()


def test_ingest_video_checks_start_time_too(clip, tmp_path):
    with pytest.raises(DataError, match=r"--start-time: 1700000000000 .* looks like milliseconds"):
        ingest_video(clip, tmp_path / "rec", participant="v1", start_time=1_700_000_000_000.0)
    assert not (tmp_path / "rec").exists()


def test_unset_camera_clock_in_the_container_is_ignored_with_a_warning(clip, tmp_path, caplog):
    """A creation_time before 1990 (a camera whose clock was never set) is not taken as the day."""
    stamped = tmp_path / "stamped.mp4"
    with av.open(str(clip)) as source, av.open(str(stamped), "w") as out:
        out.metadata["creation_time"] = "1980-06-01T00:00:00.000000Z"
        stream = out.add_stream_from_template(source.streams.video[0])
        for packet in source.demux(source.streams.video[0]):
            if packet.dts is not None:
                packet.stream = stream
                out.mux(packet)
    with (caplog.at_level("WARNING", logger="egohorizon.data.ingest.video"),
          pytest.raises(DataError, match="no usable start time in the container; pass --start-time or --day")):
        ingest_video(stamped, tmp_path / "rec", participant="v1")
    assert any("creation_time '1980-06-01T00:00:00.000000Z': 328665600 is not a plausible start time"
               in r.getMessage() for r in caplog.records)
    rec = ingest_video(stamped, tmp_path / "rec", participant="v1", day="2024-01-01")
    assert rec.meta["time_base"] == "relative"


@pytest.mark.parametrize("source", ["aria", "video"])
@pytest.mark.parametrize("day", ["2025-13-45", "2025-3-4", "20250304"])
def test_an_impossible_day_is_refused_before_anything_is_written(tmp_path, capsys, source, day):
    """Bad-input pass: ingest aria --day 2025-13-45 wrote every frame, then failed the recording.json
    check; the folder it left made the corrected rerun ask for --overwrite."""
    from egohorizon.cli import main

    out = tmp_path / "rec"
    with pytest.raises(SystemExit) as exit_:
        main(["ingest", source, str(tmp_path / "in.file"), "--out", str(out), "--participant", "p1", "--day", day])
    assert exit_.value.code == 2 and not out.exists()
    assert f"argument --day: expected a calendar day YYYY-MM-DD, got '{day}'" in capsys.readouterr().err


def test_a_day_that_is_not_the_clocks_leaves_no_folder(clip, tmp_path):
    """Bad-input pass: --day 2025-03-01 on a recording whose clock says 2023-11-14 was refused by the
    check of the written recording.json, leaving the folder (the corrected rerun asked for --overwrite)."""
    out = tmp_path / "rec"
    with pytest.raises(DataError, match=r"recording field 'day': expected the calendar day of the start, 2023-11-14"):
        ingest_video(clip, out, participant="v1", start_time=1_700_000_000.0, day="2025-03-01")
    assert list(tmp_path.iterdir()) == []
    assert ingest_video(clip, out, participant="v1", start_time=1_700_000_000.0).recording.day == "2023-11-14"


def test_an_events_file_of_other_participants_is_refused_by_shards_build(clip, tmp_path):
    """Bad-input pass: shards build --ingested REC --events (the demo world's events, p01/p02, for a
    recording of p1) exited 0 with no event on any window."""
    from egohorizon.data.shards.sources import ingested_sources
    from egohorizon.schema import Event, write_jsonl

    rec = ingest_video(clip, tmp_path / "rec", participant="p1", start_time=1_700_000_000.0)
    event = {"participant": "p01", "day": "2023-11-14", "session": "s1", "level": 1, "start": 1_700_000_000.0,
             "end": 1_700_000_003.0, "text": "typing", "parent": None, "children": []}
    events = tmp_path / "events.jsonl"
    write_jsonl(events, [Event(id="e1", **event), Event(id="e2", **{**event, "participant": "p02"})])
    with pytest.raises(DataError, match=r"events.jsonl: none of its 2 events is of a participant of the "
                                        r"recordings \(events: p01, p02; recordings: p1\)"):
        ingested_sources([rec.root], [events])
    write_jsonl(events, [Event(id="e1", **{**event, "participant": "p1"})])
    assert [e.id for e in ingested_sources([rec.root], [events])[0].events] == ["e1"]
