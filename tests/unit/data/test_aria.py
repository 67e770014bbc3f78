"""Aria ingestion on the real Project Aria test recordings: gaze projection checked against
projectaria-tools' own functions, rotation, matching, speech windows, and ingest -> shards -> stream."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("projectaria_tools")

from projectaria_tools.core import calibration, data_provider, mps
from projectaria_tools.core.mps.utils import get_gaze_vector_reprojection

from egohorizon.data.ingest.aria import (
    GazeProjector,
    find_gaze_csv,
    gaze_confidence,
    ingest_aria,
    match_nearest,
    read_gaze,
    read_speech,
    rotate_point_cw90,
    sample_frame_indices,
)
from egohorizon.data.ingest.ingested import GAZE_MISSING, GAZE_OK, IngestedRecording
from egohorizon.errors import DataError

GEN1 = "projectaria-tools-testdata/data/gen1"
GEN2 = "projectaria-tools-testdata/data/gen2"


@pytest.fixture(scope="module")
def aea(shared_data):
    folder = shared_data / GEN1 / "aria_everyday_activities_test_data"
    provider = data_provider.create_vrs_data_provider(str(folder / "recording.vrs"))
    return folder, provider, provider.get_device_calibration()


# ------------------------------------------------------------------------------------------------
# Projection against projectaria-tools
# ------------------------------------------------------------------------------------------------


def test_raw_projection_equals_projectaria_reprojection(aea):
    folder, _, device = aea
    camera = device.get_camera_calib("camera-rgb")
    projector = GazeProjector(device, "camera-rgb", upright=False)
    samples = mps.read_eyegaze(str(folder / "mps/eye_gaze/general_eye_gaze.csv"))
    assert len(samples) == 4
    for sample in samples:
        theirs = get_gaze_vector_reprojection(sample, "camera-rgb", device, camera, depth_m=1.0)
        ours = projector.project_raw(sample)
        np.testing.assert_allclose(ours, np.asarray(theirs).ravel(), atol=1e-6)
        (x, y), status = projector.project(sample)
        assert status == GAZE_OK and (x, y) == pytest.approx(tuple(ours))


def test_upright_rotation_matches_projectaria_make_upright(aea):
    """Our clockwise turn of the pixel equals projectaria-tools' make_upright projection through the
    rotated linear calibration (rotate_camera_calib_cw90deg) of the same camera pose."""
    folder, _, device = aea
    camera = device.get_camera_calib("camera-rgb")
    linear = calibration.get_linear_camera_calibration(512, 512, 150.0, "camera-rgb",
                                                       camera.get_transform_device_camera())
    rotated = calibration.rotate_camera_calib_cw90deg(linear)
    for sample in mps.read_eyegaze(str(folder / "mps/eye_gaze/general_eye_gaze.csv")):
        raw = np.asarray(get_gaze_vector_reprojection(sample, "camera-rgb", device, linear)).ravel()
        upright = np.asarray(get_gaze_vector_reprojection(sample, "camera-rgb", device, rotated,
                                                          make_upright=True)).ravel()
        np.testing.assert_allclose(rotate_point_cw90(raw[0], raw[1], 512), upright, atol=1e-6)


def test_rotation_moves_image_pixels_like_points():
    raw = np.zeros((6, 4), dtype=np.uint8)  # height 6, width 4
    raw[1, 3] = 255  # x=3, y=1
    turned = np.rot90(raw, k=-1)  # what ingestion does to Gen1 frames
    x, y = rotate_point_cw90(3, 1, raw_height=6)
    assert turned.shape == (4, 6) and turned[int(y), int(x)] == 255


def test_gen2_vergence_gaze_projects_like_projectaria(shared_data):
    provider = data_provider.create_vrs_data_provider(str(shared_data / GEN2 / "aria_gen2_unit_test_sequence_with_bluetooth.vrs"))
    device = provider.get_device_calibration()
    camera = device.get_camera_calib("camera-rgb")
    projector = GazeProjector(device, "camera-rgb", upright=False)
    projected = 0
    for name in ("general_eye_gaze.csv", "personalized_eye_gaze.csv"):
        samples = mps.read_eyegaze(str(shared_data / GEN2 / "mps_sample/eye_gaze" / name))
        for sample in samples:
            assert sample.spatial_gaze_point_valid
            theirs = get_gaze_vector_reprojection(sample, "camera-rgb", device, camera)
            ours = projector.project_raw(sample)
            if theirs is None:
                assert ours is None
            else:
                np.testing.assert_allclose(ours, np.asarray(theirs).ravel(), atol=1e-6)
                projected += 1
    assert projected == 10  # every sample of both files lands in the 2016 x 1512 image


# ------------------------------------------------------------------------------------------------
# Reading and matching
# ------------------------------------------------------------------------------------------------


def test_read_every_gaze_header(shared_data):
    lengths = {}
    for path in sorted((shared_data / "projectaria-tools-testdata/data").rglob("*gaze*.csv")):
        lengths[f"{path.parent.name}/{path.name}"] = len(read_gaze(path).samples)
    assert lengths["eye_gaze/eyegaze.csv"] == 123  # legacy header (MPS sample)
    assert lengths["aria_digital_twin_test_data/eyegaze.csv"] == 6  # legacy header with depth
    assert lengths["eye_gaze/personalized_eye_gaze.csv"] == 5
    assert lengths["eye_gaze_vergence/generalized_gaze.csv"] == 123


def test_gaze_file_search_order(shared_data):
    assert find_gaze_csv(shared_data / GEN2 / "mps_sample").name == "personalized_eye_gaze.csv"
    assert find_gaze_csv(shared_data / GEN1 / "aria_everyday_activities_test_data/mps").name == "general_eye_gaze.csv"


def test_bad_gaze_and_speech_files_name_file_and_line(tmp_path):
    bad = tmp_path / "gaze.csv"
    bad.write_text("time,yaw\n1,2\n")
    with pytest.raises(DataError, match=r"gaze.csv:1: not an MPS gaze header \(got time, yaw\)"):
        read_gaze(bad)
    speech = tmp_path / "speech.csv"
    speech.write_text("startTime_ns,endTime_ns,written,confidence\n1,2,hi,0.5\nx,3,oops,0.1\n")
    with pytest.raises(DataError, match=r"speech.csv:3: field 'startTime_ns'"):
        read_speech(speech)


def test_match_nearest_hand_computed():
    samples = np.array([100, 200, 300], dtype=np.int64)
    index, offset = match_nearest(samples, np.array([90, 149, 151, 260, 420]), tolerance_ns=50)
    assert index.tolist() == [0, 0, 1, 2, -1]
    assert offset.tolist() == [10, -49, 49, 40, 0]


def test_sample_frame_indices_at_1hz():
    ts = (np.arange(0, 95) * 50_000_000).astype(np.int64)  # 20 Hz for 4.75 s
    assert sample_frame_indices(ts, 1.0).tolist() == [0, 20, 40, 60, 80]
    assert sample_frame_indices(ts, None).tolist() == list(range(95))


def test_gaze_confidence_from_interval():
    class Sample:
        yaw_low, yaw_high, pitch_low, pitch_high = -0.1, 0.0, 0.0, 0.2
    # Widest interval 0.2 rad -> half-width 0.1 -> 1 - 0.1 / 0.2 = 0.5.
    assert gaze_confidence(Sample()) == pytest.approx(0.5)
    Sample.pitch_high = Sample.pitch_low = Sample.yaw_low = Sample.yaw_high = 0.0
    assert gaze_confidence(Sample()) is None


# ------------------------------------------------------------------------------------------------
# Ingest -> shards -> stream on the real AEA sample
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingested(aea, tmp_path_factory):
    folder, _, _ = aea
    out = tmp_path_factory.mktemp("aea") / "rec"
    return ingest_aria(folder / "recording.vrs", out, participant="aea1", gaze_csv=find_gaze_csv(folder / "mps"),
                       speech_csv=folder / "speech.csv", rate_hz=None)


def test_ingested_frames_and_gaze(aea, ingested):
    folder, provider, device = aea
    rec = IngestedRecording.load(ingested.root)
    assert rec.recording.day == "2022-04-06" and rec.meta["rotated_cw90"] is True
    assert len(rec.frames) == 8 and all(f.gaze_status == GAZE_OK for f in rec.frames)
    camera = device.get_camera_calib("camera-rgb")
    gaze = mps.read_eyegaze(str(folder / "mps/eye_gaze/general_eye_gaze.csv"))
    gaze_ns = [int(g.tracking_timestamp.total_seconds() * 1e6) * 1000 for g in gaze]
    for frame in rec.frames:
        nearest = int(np.argmin([abs(t - frame.meta["device_ns"]) for t in gaze_ns]))
        raw = np.asarray(get_gaze_vector_reprojection(gaze[nearest], "camera-rgb", device, camera)).ravel()
        assert frame.gaze == pytest.approx(rotate_point_cw90(raw[0], raw[1], 1408), abs=1e-6)
        assert frame.gaze_dt == pytest.approx((gaze_ns[nearest] - frame.meta["device_ns"]) / 1e9)
    # The stored frame is the VRS image turned upright.
    stream = provider.get_stream_id_from_label("camera-rgb")
    vrs_image = provider.get_image_data_by_index(stream, 3)[0].to_numpy_array()
    stored = rec.load_image(rec.frames[3])
    assert np.abs(stored.astype(int) - np.rot90(vrs_image, k=-1).astype(int)).mean() < 3


def test_gaze_tolerance_marks_frames_missing(aea, tmp_path):
    folder, _, _ = aea
    rec = ingest_aria(folder / "recording.vrs", tmp_path / "rec", participant="aea1",
                      gaze_csv=folder / "mps/eye_gaze/general_eye_gaze.csv", rate_hz=None, gaze_tolerance_s=0.01)
    # Gaze is at 10 Hz and frames at 20 Hz: every other frame is 50 ms from its nearest gaze sample.
    assert [f.gaze_status for f in rec.frames] == [GAZE_MISSING, GAZE_OK] * 4
    assert [f.gaze for f in rec.frames][::2] == [None] * 4
    assert rec.meta["gaze_status_counts"]["missing"] == 4


def test_default_rate_is_1hz(aea, tmp_path):
    folder, _, _ = aea
    rec = ingest_aria(folder / "recording.vrs", tmp_path / "rec", participant="aea1")
    assert len(rec.frames) == 1  # the sample holds 0.35 s of RGB
    assert rec.frames[0].gaze_status == "no_source"


def test_bad_clock_needs_device_time_base(shared_data, tmp_path):
    vrs = shared_data / GEN1 / "aria_digital_twin_test_data/video.vrs"
    with pytest.raises(DataError, match="not a real clock time"):
        ingest_aria(vrs, tmp_path / "adt", participant="adt")
    rec = ingest_aria(vrs, tmp_path / "adt", participant="adt", day="2021-01-01", time_base="device",
                      gaze_csv=vrs.parent / "eyegaze.csv", rate_hz=None)
    assert rec.meta["time_base"] == "device" and len(rec.frames) == 3
    assert rec.frames[0].t == pytest.approx(87551.170813262)


def test_truncated_vrs_is_a_clear_error(shared_data, tmp_path):
    vrs = tmp_path / "truncated.vrs"
    vrs.write_bytes((shared_data / GEN1 / "aria_everyday_activities_test_data/recording.vrs").read_bytes()[:3000])
    with pytest.raises(DataError, match="truncated.vrs: projectaria-tools cannot read this VRS file"):
        ingest_aria(vrs, tmp_path / "out", participant="p1")


def test_gen2_gaze_from_another_time_is_marked_not_dropped(shared_data, tmp_path):
    rec = ingest_aria(shared_data / GEN2 / "aria_gen2_unit_test_sequence_with_bluetooth.vrs", tmp_path / "g2",
                      participant="g2", gaze_csv=shared_data / GEN2 / "mps_sample/eye_gaze/general_eye_gaze.csv",
                      rate_hz=None)
    assert rec.meta["rotated_cw90"] is False and rec.meta["image_size"] == [2016, 1512]
    assert len(rec.frames) == 3 and {f.gaze_status for f in rec.frames} == {GAZE_MISSING}


def test_aria_ingest_to_shards_to_stream(ingested, tmp_path):
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.data.shards.sources import ingested_sources
    from egohorizon.data.shards.stream import WindowStream, make_loader
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig, scale_point

    config = WindowConfig(long_side=352, crop_size=128, min_frames=0)
    build_shards(ingested_sources([ingested.root]), tmp_path / "shards", config=config, deid="off")
    index = ShardIndex.load(tmp_path / "shards")
    stream = WindowStream(index.urls(), expected_samples=index.expected_samples(), batch_size=4, shuffle=False)
    windows = {w.key: w for batch in make_loader(stream, num_workers=0) for w in batch["samples"]}
    assert sorted(windows) == [f"aea1_2022-04-06_recording_w{i:05d}" for i in range(4)]

    # Gaze on the right pixels: the streamed point is projectaria's point turned upright and scaled.
    first = windows["aea1_2022-04-06_recording_w00000"]
    for frame_meta, frame, source in zip(first.meta["frames"], first.frames, ingested.frames):
        assert frame.shape == (352, 352, 3)
        assert frame_meta["gaze"] == pytest.approx(list(scale_point(source.gaze, 0.25, 0.25)), abs=1e-9)
        x0, y0, x1, y1 = frame_meta["crop_box"]
        assert x1 - x0 == 128 and x0 <= source.gaze[0] < x1 and y0 <= source.gaze[1] < y1
    assert first.crops[0].shape == (128, 128, 3)

    # Each transcript word in the right window: window i holds the words starting in
    # [start + 30 i, start + 30 (i + 1)), from the speech.csv device times.
    start = ingested.recording.start
    words = read_speech(ingested.meta["speech_file"])
    origin = ingested.frames[0].t - ingested.frames[0].meta["device_ns"] / 1e9
    expected: dict[int, list[str]] = {}
    for word in words:
        expected.setdefault(int((origin + word["start_ns"] / 1e9 - start) // 30), []).append(word["text"])
    assert expected == {0: ["and"], 1: ["what", "is", "there", "like", "looking", "at?"],
                        3: ["I'm", "in", "the", "masters,", "right", "now."]}
    for i in range(4):
        window = windows[f"aea1_2022-04-06_recording_w{i:05d}"]
        assert [w["text"] for w in window.meta["words"]] == expected.get(i, [])
        assert all(window.meta["start"] <= w["start"] < window.meta["end"] for w in window.meta["words"])
    assert json.loads((tmp_path / "shards/index.json").read_text())["totals"]["words"] == 13


def test_cli_ingest_aria_finds_mps_and_speech(aea, tmp_path, capsys):
    from egohorizon.cli import main

    folder, _, _ = aea
    assert main(["ingest", "aria", str(folder / "recording.vrs"), "--participant", "aea1", "--rate", "0",
                 "--out", str(tmp_path / "rec")]) == 0
    assert '"frames": 8' in capsys.readouterr().out
    rec = IngestedRecording.load(tmp_path / "rec")
    assert rec.meta["gaze_file"].endswith("general_eye_gaze.csv") and rec.meta["words"] == 13
    assert rec.meta["gaze_status_counts"]["ok"] == 8


# ------------------------------------------------------------------------------------------------
# Damaged and foreign VRS files, gaze from another time (issue 9, items 2, 4, 5)
# ------------------------------------------------------------------------------------------------

AEA_VRS = GEN1 + "/aria_everyday_activities_test_data/recording.vrs"
GEN2_VRS = GEN2 + "/aria_gen2_unit_test_sequence_with_bluetooth.vrs"


@pytest.fixture()
def cut_vrs(shared_data, tmp_path):
    """The AEA sample cut at half its bytes, as an interrupted copy leaves it: projectaria-tools opens
    it and reads 4 of its 8 RGB frames."""
    data = (shared_data / AEA_VRS).read_bytes()
    path = tmp_path / "cut.vrs"
    path.write_bytes(data[:len(data) // 2])
    return path


def _rgb_device_ns(vrs):
    from projectaria_tools.core.sensor_data import TimeDomain

    provider = data_provider.create_vrs_data_provider(str(vrs))
    return provider.get_timestamps_ns(provider.get_stream_id_from_label("camera-rgb"), TimeDomain.DEVICE_TIME)


def test_truncated_vrs_is_refused_with_frames_and_gap(cut_vrs, tmp_path):
    assert len(_rgb_device_ns(cut_vrs)) == 4  # what the reader silently gives
    with pytest.raises(DataError, match=r"cut.vrs: truncated: .*4 of the 8 'camera-rgb' frames") as error:
        ingest_aria(cut_vrs, tmp_path / "rec", participant="p1", rate_hz=None)
    assert "--allow-truncated" in str(error.value)
    assert not (tmp_path / "rec").exists()


def test_allow_truncated_records_the_gap(shared_data, cut_vrs, tmp_path, caplog):
    whole = _rgb_device_ns(shared_data / AEA_VRS)
    with caplog.at_level("WARNING", logger="egohorizon.data.ingest.aria"):
        rec = ingest_aria(cut_vrs, tmp_path / "rec", participant="p1", rate_hz=None, allow_truncated=True)
    assert len(rec.frames) == 4
    gap = rec.meta["truncated"]
    assert gap["expected_frames"] == 8 and gap["read_frames"] == 4
    assert gap["file_bytes"] == cut_vrs.stat().st_size
    assert gap["expected_bytes"] == (shared_data / AEA_VRS).stat().st_size
    # The lost frames are the whole file's 5th to 8th, in the recording's time base.
    origin = rec.frames[0].t - rec.frames[0].meta["device_ns"] / 1e9
    assert gap["missing_frames_start"] == pytest.approx(origin + whole[4] / 1e9, abs=1e-6)
    assert gap["missing_frames_end"] == pytest.approx(origin + whole[7] / 1e9, abs=1e-6)
    assert any("truncated" in w for w in rec.meta["warnings"])
    assert any("truncated" in r.getMessage() for r in caplog.records)
    # Recorded on disk, not only in memory.
    assert IngestedRecording.load(rec.root).meta["truncated"]["expected_frames"] == 8


def test_intact_recordings_are_not_truncated(shared_data, tmp_path):
    for name, vrs in (("aea", AEA_VRS), ("g2", GEN2_VRS)):
        rec = ingest_aria(shared_data / vrs, tmp_path / name, participant=name, rate_hz=None)
        assert rec.meta["truncated"] is None


def test_cli_refuses_truncated_vrs_without_traceback(cut_vrs, tmp_path, capsys):
    from egohorizon.cli import main

    args = ["ingest", "aria", str(cut_vrs), "--participant", "p1", "--rate", "0", "--out", str(tmp_path / "rec")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "cut.vrs: truncated" in err and "--allow-truncated" in err and "Traceback" not in err
    assert main(args + ["--allow-truncated"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["frames"] == 4 and summary["truncated"]["expected_frames"] == 8


def test_vrs_without_rgb_names_file_and_stream(shared_data, tmp_path):
    from vrs_edit import copy_vrs_without

    # Like an Aria Digital Twin depth or segmentation VRS: no RGB stream and no device calibration.
    vrs = copy_vrs_without(shared_data / AEA_VRS, tmp_path / "depth.vrs", streams={"214-1"}, file_tags={"calib_json"})
    with pytest.raises(DataError, match=r"depth.vrs: no 'camera-rgb' stream \(214-1\); it has 211-1 \(camera-et\)"):
        ingest_aria(vrs, tmp_path / "rec", participant="p1", time_base="device", day="2022-04-06")


def test_vrs_without_calibration_is_a_clear_error(shared_data, tmp_path):
    from vrs_edit import copy_vrs_without

    vrs = copy_vrs_without(shared_data / AEA_VRS, tmp_path / "nocal.vrs", file_tags={"calib_json"})
    with pytest.raises(DataError, match=r"nocal.vrs: no device calibration \(file tag 'calib_json'\)"):
        ingest_aria(vrs, tmp_path / "rec", participant="p1")


def test_vrs_copy_keeps_what_it_does_not_remove(shared_data, tmp_path):
    """The test helper is faithful: a copy that removes nothing ingests like the original."""
    from vrs_edit import copy_vrs_without

    vrs = copy_vrs_without(shared_data / AEA_VRS, tmp_path / "copy.vrs")
    assert _rgb_device_ns(vrs) == _rgb_device_ns(shared_data / AEA_VRS)
    rec = ingest_aria(vrs, tmp_path / "rec", participant="p1", rate_hz=None)
    assert len(rec.frames) == 8 and rec.meta["truncated"] is None


def test_gaze_outside_the_recording_warns_with_both_ranges(shared_data, tmp_path, caplog):
    with caplog.at_level("WARNING", logger="egohorizon.data.ingest.aria"):
        rec = ingest_aria(shared_data / GEN2_VRS, tmp_path / "g2", participant="g2",
                          gaze_csv=shared_data / GEN2 / "mps_sample/eye_gaze/general_eye_gaze.csv", rate_hz=None)
    # Gaze at device time 1130.889-1130.934 s, RGB frames at 7385.798-7385.997 s.
    expected = r"general_eye_gaze.csv: gaze covers device time 1130\.889-1130\.934 s but the RGB frames " \
               r"7385\.798-7385\.997 s"
    assert [r for r in caplog.records if re.search(expected, r.getMessage())]
    assert [w for w in rec.meta["warnings"] if re.search(expected, w)]


def test_overlapping_gaze_gives_no_warning(aea, tmp_path, caplog):
    folder, _, _ = aea
    with caplog.at_level("WARNING", logger="egohorizon.data.ingest.aria"):
        rec = ingest_aria(folder / "recording.vrs", tmp_path / "rec", participant="aea1",
                          gaze_csv=find_gaze_csv(folder / "mps"), rate_hz=None)
    assert rec.meta["warnings"] == [] and not caplog.records


def test_cli_summary_shows_gaze_warning(shared_data, tmp_path, capsys):
    from egohorizon.cli import main

    assert main(["ingest", "aria", str(shared_data / GEN2_VRS), "--participant", "g2", "--rate", "0",
                 "--gaze", str(shared_data / GEN2 / "mps_sample/eye_gaze/general_eye_gaze.csv"),
                 "--out", str(tmp_path / "g2")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert len(summary["warnings"]) == 1 and "do not overlap" in summary["warnings"][0]


def test_cut_after_the_last_rgb_frame_is_still_reported(shared_data, tmp_path):
    """A cut that spares every RGB frame still loses other streams' records: refused by default, and
    with --allow-truncated the gap says no frame is missing."""
    from egohorizon.data.ingest.aria.vrs_index import read_vrs_index

    whole = read_vrs_index(shared_data / AEA_VRS)
    records = whole.records
    last_rgb = np.flatnonzero((records["type_id"] == 214) & (records["record_type"] == 3))[-1]
    end = whole.expected_bytes - int(records["size"][last_rgb + 1:].sum())  # the byte after the last RGB frame
    vrs = tmp_path / "tail.vrs"
    vrs.write_bytes((shared_data / AEA_VRS).read_bytes()[:end])
    with pytest.raises(DataError, match=r"tail.vrs: truncated: .*\(25 of 785 records missing\); all 8 'camera-rgb'"):
        ingest_aria(vrs, tmp_path / "rec", participant="p1", rate_hz=None)
    rec = ingest_aria(vrs, tmp_path / "rec", participant="p1", rate_hz=None, allow_truncated=True)
    gap = rec.meta["truncated"]
    assert len(rec.frames) == 8 and gap["expected_frames"] == gap["read_frames"] == 8
    assert gap["missing_frames_start"] is None and gap["missing_records"] == 25
