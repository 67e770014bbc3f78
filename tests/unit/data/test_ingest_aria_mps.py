"""Issue 22, item 29: MPS hand tracking and the closed-loop trajectory go into the ingested recording
(wrist and palm projected into each frame, the device pose per frame), what an MPS folder holds but
ingestion does not read is named, and broken hand / trajectory CSVs are refused with file, line and
column (projectaria-tools reads an absent column as 0 and stops silently at a cut line)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("projectaria_tools")

from projectaria_tools.core import data_provider
from projectaria_tools.core.sensor_data import TimeDomain

from egohorizon.cli import main
from egohorizon.data.ingest.aria import (
    find_mps_files,
    ingest_aria,
    read_hands,
    read_trajectory,
    rotate_point_cw90,
)
from egohorizon.data.ingest.ingested import IngestedRecording
from egohorizon.errors import DataError

SAMPLE = "projectaria-tools-testdata/data/gen1/mps_sample"
AEA = "projectaria-tools-testdata/data/gen1/aria_everyday_activities_test_data"
TRAJECTORY_HEADER = [
    "graph_uid", "tracking_timestamp_us", "utc_timestamp_ns", "tx_world_device", "ty_world_device",
    "tz_world_device", "qx_world_device", "qy_world_device", "qz_world_device", "qw_world_device",
    "device_linear_velocity_x_device", "device_linear_velocity_y_device", "device_linear_velocity_z_device",
    "angular_velocity_x_device", "angular_velocity_y_device", "angular_velocity_z_device",
    "gravity_x_world", "gravity_y_world", "gravity_z_world", "quality_score"]


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


@pytest.fixture(scope="module")
def aea(shared_data):
    vrs = shared_data / AEA / "recording.vrs"
    provider = data_provider.create_vrs_data_provider(str(vrs))
    stream = provider.get_stream_id_from_label("camera-rgb")
    frame_ns = list(provider.get_timestamps_ns(stream, TimeDomain.DEVICE_TIME))
    return vrs, provider.get_device_calibration(), frame_ns


@pytest.fixture()
def retimed_hands(shared_data, aea, tmp_path):
    """The sample's 8 real hand_tracking_results_v2 rows (another recording's) moved onto the AEA
    sample's 8 RGB frame times, so each frame gets one real hand sample."""
    _, _, frame_ns = aea
    rows = _rows(shared_data / SAMPLE / "hand_tracking/hand_tracking_results_v2.csv")
    assert len(rows) == 9
    for row, ns in zip(rows[1:], frame_ns):
        row[0] = str(ns // 1000)
    return _write(tmp_path / "mps/hand_tracking/hand_tracking_results_v2.csv", rows), rows


def _trajectory_rows(frame_ns, every=2):
    """A pose at every other frame time: frame k at x = k metres, turned k * 10 degrees about z."""
    rows = [TRAJECTORY_HEADER]
    for k in range(0, len(frame_ns), every):
        half = np.radians(10 * k) / 2
        rows.append(["map-1", str(frame_ns[k] // 1000), "1649265055000000000", str(float(k)), "2.0", "0.5",
                     "0", "0", str(float(np.sin(half))), str(float(np.cos(half))), "0", "0", "0", "0", "0", "0", "0", "0",
                     "-9.81", "0.75"])
    return rows


# ------------------------------------------------------------------------------------------------
# Reading the shipped MPS sample
# ------------------------------------------------------------------------------------------------


def test_read_every_shipped_hand_file(shared_data):
    folder = shared_data / SAMPLE / "hand_tracking"
    for name, layout, samples, left, right in (
            ("hand_tracking_results_v1.csv", "MPS hand tracking results", 8, 3, 3),
            ("hand_tracking_results_v2.csv", "MPS hand tracking results", 8, 3, 3),
            ("wrist_and_palm_poses.csv", "MPS wrist and palm poses", 122, 0, 6),
            ("wrist_and_palm_poses_v2.csv", "MPS wrist and palm poses", 122, 0, 6)):
        track = read_hands(folder / name)
        assert (track.layout, len(track.samples)) == (layout, samples), name
        assert sum(s.left is not None for s in track.samples) == left
        assert sum(s.right is not None for s in track.samples) == right
    # The wrist read through the library is the CSV's own numbers: landmark 5 (WRIST), palm landmark 20.
    rows = _rows(folder / "hand_tracking_results_v2.csv")
    header, row = rows[0], rows[2]
    confidence, wrist, palm = read_hands(folder / "hand_tracking_results_v2.csv").samples[1].right
    assert confidence == pytest.approx(float(row[header.index("right_tracking_confidence")]))
    assert wrist == pytest.approx([float(row[header.index(f"t{a}_right_landmark_5_device")]) for a in "xyz"])
    assert palm == pytest.approx([float(row[header.index(f"t{a}_right_landmark_20_device")]) for a in "xyz"])
    rows = _rows(folder / "wrist_and_palm_poses.csv")
    header = rows[0]
    tracked = [r for r in rows[1:] if float(r[header.index("right_tracking_confidence")]) > 0]
    first = next(s for s in read_hands(folder / "wrist_and_palm_poses.csv").samples if s.right).right
    assert first[1] == pytest.approx([float(tracked[0][header.index(f"t{a}_right_wrist_device")]) for a in "xyz"])


def test_mps_sample_folder_names_what_it_does_not_read(shared_data):
    files = find_mps_files(shared_data / SAMPLE)
    assert files.gaze.name == "generalized_eye_gaze.csv"
    assert files.hands.name == "hand_tracking_results_v2.csv"  # the newer kind and version first
    assert files.trajectory is None
    assert files.not_read == ["eye_gaze/eyegaze.csv", "eye_gaze_vergence/generalized_gaze.csv",
                              "hand_tracking/hand_tracking_results_v1.csv", "hand_tracking/wrist_and_palm_poses.csv",
                              "hand_tracking/wrist_and_palm_poses_v2.csv"]


# ------------------------------------------------------------------------------------------------
# Into the ingested recording
# ------------------------------------------------------------------------------------------------


def test_hands_projected_into_the_upright_frames(aea, retimed_hands, tmp_path):
    vrs, device, _ = aea
    hands_csv, rows = retimed_hands
    rec = IngestedRecording.load(ingest_aria(vrs, tmp_path / "rec", participant="p1", rate_hz=None,
                                             hands_csv=hands_csv).root)
    camera = device.get_camera_calib("camera-rgb")
    camera_from_device = device.get_transform_device_sensor("camera-rgb").inverse()
    header = rows[0]
    for frame, row in zip(rec.frames, rows[1:]):
        hands = frame.meta["hands"]
        assert abs(hands["dt"]) < 1e-6
        for side in ("left", "right"):
            confidence = float(row[header.index(f"{side}_tracking_confidence")])
            if confidence < 0:  # MPS writes -1 for a hand it did not track
                assert hands[side] is None
                continue
            assert hands[side]["confidence"] == pytest.approx(confidence)
            for key, landmark in (("wrist", 5), ("palm", 20)):
                point = np.array([float(row[header.index(f"t{a}_{side}_landmark_{landmark}_device")]) for a in "xyz"])
                assert hands[side][f"{key}_device"] == pytest.approx(point.tolist())
                raw = camera.project(camera_from_device @ point.reshape(3, 1))
                if raw is None:  # behind the camera: no pixel, the 3D point is kept
                    assert hands[side][key] is None
                    continue
                expected = rotate_point_cw90(float(raw[0]), float(raw[1]), 1408)
                assert hands[side][key] == pytest.approx(expected, abs=1e-6)
                assert hands[side][key][1] > 704  # hands are seen below the eyes: the lower half, upright
    counts = rec.meta["hand_status_counts"]
    assert counts == {"tracked": 4, "not_tracked": 4, "missing": 0, "points_in_image": 10}
    assert rec.meta["hands_file"] == str(hands_csv) and rec.meta["warnings"] == []


def test_hand_samples_beyond_the_tolerance_are_missing(aea, retimed_hands, tmp_path):
    vrs = aea[0]
    hands_csv, rows = retimed_hands
    for row in rows[1:]:
        row[0] = str(int(row[0]) + 25_000)  # halfway between two 20 Hz frames
    _write(hands_csv, rows)
    rec = ingest_aria(vrs, tmp_path / "rec", participant="p1", rate_hz=None, hands_csv=hands_csv,
                      mps_tolerance_s=0.015)
    assert [f.meta["hands"] for f in rec.frames] == [None] * 8
    assert rec.meta["hand_status_counts"]["missing"] == 8


def test_closed_loop_pose_per_frame(aea, tmp_path):
    vrs, _, frame_ns = aea
    trajectory = _write(tmp_path / "slam/closed_loop_trajectory.csv", _trajectory_rows(frame_ns))
    assert len(read_trajectory(trajectory).poses) == 4
    rec = IngestedRecording.load(ingest_aria(vrs, tmp_path / "rec", participant="p1", rate_hz=None,
                                             trajectory_csv=trajectory, mps_tolerance_s=0.01).root)
    assert rec.meta["pose_frames"] == 4 and rec.meta["trajectory_file"] == str(trajectory)
    for k, frame in enumerate(rec.frames):
        pose = frame.meta["device_pose"]
        if k % 2:  # 50 ms from the nearest pose, beyond 10 ms
            assert pose is None
            continue
        half = np.radians(10 * k) / 2
        assert pose["t_world_device"] == pytest.approx([k, 2.0, 0.5])
        assert pose["q_world_device_wxyz"] == pytest.approx([np.cos(half), 0, 0, np.sin(half)], abs=1e-9)
        assert pose["quality"] == pytest.approx(0.75) and pose["graph_uid"] == "map-1"


def test_trajectory_of_another_time_warns(aea, tmp_path):
    vrs, _, frame_ns = aea
    rows = _trajectory_rows([ns + 3_600_000_000_000 for ns in frame_ns])  # an hour later
    trajectory = _write(tmp_path / "closed_loop_trajectory.csv", rows)
    rec = ingest_aria(vrs, tmp_path / "rec", participant="p1", rate_hz=None, trajectory_csv=trajectory)
    assert rec.meta["pose_frames"] == 0
    assert any("trajectory covers device time 3686.385-3686.685 s" in w for w in rec.meta["warnings"])


# ------------------------------------------------------------------------------------------------
# Broken CSVs
# ------------------------------------------------------------------------------------------------


def _drop(rows, column):
    i = rows[0].index(column)
    return [r[:i] + r[i + 1:] for r in rows]


@pytest.mark.parametrize("name, column, layout", [
    # projectaria-tools reads all of these without the column, as 0.
    ("wrist_and_palm_poses.csv", "left_tracking_confidence", "MPS wrist and palm poses"),
    ("wrist_and_palm_poses_v2.csv", "ty_right_wrist_device", "MPS wrist and palm poses"),
    ("hand_tracking_results_v2.csv", "tx_right_landmark_5_device", "MPS hand tracking results"),
])
def test_hand_csv_without_a_column_is_refused(shared_data, tmp_path, name, column, layout):
    rows = _drop(_rows(shared_data / SAMPLE / "hand_tracking" / name), column)
    path = _write(tmp_path / name, rows)
    with pytest.raises(DataError, match=rf"{name}:1: not a complete {layout} header: missing column\(s\) {column} "):
        read_hands(path)


def test_cut_hand_and_trajectory_lines_name_the_line(shared_data, aea, tmp_path):
    rows = _rows(shared_data / SAMPLE / "hand_tracking/hand_tracking_results_v2.csv")
    path = _write(tmp_path / "hands.csv", rows[:4] + [rows[4][:5]])  # the library stops there silently
    with pytest.raises(DataError, match=r"hands.csv:5: 5 fields where the header has 155 \(a cut or damaged line\)"):
        read_hands(path)
    rows = _trajectory_rows(aea[2])
    path = _write(tmp_path / "closed_loop_trajectory.csv", rows[:3] + [rows[3][:6]])
    with pytest.raises(DataError, match=r"closed_loop_trajectory.csv:4: 6 fields where the header has 20"):
        read_trajectory(path)


def test_broken_trajectory_columns_and_numbers(aea, tmp_path):
    rows = _trajectory_rows(aea[2])
    path = _write(tmp_path / "a/closed_loop_trajectory.csv", _drop(rows, "tz_world_device"))
    with pytest.raises(DataError, match=r"closed_loop_trajectory.csv:1: not a complete MPS closed-loop trajectory "
                                        r"header: missing column\(s\) tz_world_device "):
        read_trajectory(path)
    rows[2][rows[0].index("qw_world_device")] = "n/a"
    path = _write(tmp_path / "b/closed_loop_trajectory.csv", rows)
    with pytest.raises(DataError, match=r"closed_loop_trajectory.csv:3: field 'qw_world_device': expected a number, "
                                        r"got 'n/a'"):
        read_trajectory(path)


# ------------------------------------------------------------------------------------------------
# The command, as a user runs it
# ------------------------------------------------------------------------------------------------


def test_cli_reads_hands_and_trajectory_and_names_the_rest(shared_data, aea, retimed_hands, tmp_path, capfd):
    vrs, _, frame_ns = aea
    mps = tmp_path / "mps"  # beside the retimed hands: gaze, a trajectory and files ingestion does not read
    (mps / "eye_gaze").mkdir()
    (mps / "eye_gaze/general_eye_gaze.csv").write_bytes(
        (shared_data / AEA / "mps/eye_gaze/general_eye_gaze.csv").read_bytes())
    _write(mps / "slam/closed_loop_trajectory.csv", _trajectory_rows(frame_ns, every=1))
    _write(mps / "slam/open_loop_trajectory.csv", [["tracking_timestamp_us"]])
    (mps / "slam/semidense_points.csv.gz").write_bytes(b"")
    (mps / "slam/summary.json").write_text("{}")
    assert main(["ingest", "aria", str(vrs), "--participant", "p1", "--rate", "0", "--mps", str(mps),
                 "--out", str(tmp_path / "rec")]) == 0
    out, err = capfd.readouterr()
    summary = json.loads(out)
    assert summary["gaze_status_counts"]["ok"] == 8
    assert summary["hand_status_counts"] == {"tracked": 4, "not_tracked": 4, "missing": 0, "points_in_image": 10}
    assert summary["pose_frames"] == 8
    assert summary["mps_not_read"] == ["slam/open_loop_trajectory.csv", "slam/semidense_points.csv.gz"]
    assert err == ""
    meta = IngestedRecording.load(tmp_path / "rec").meta
    assert meta["mps_not_read"] == summary["mps_not_read"] and meta["mps_tolerance_s"] == 0.1


def test_cli_refuses_a_broken_hand_csv(shared_data, aea, tmp_path, capsys):
    rows = _drop(_rows(shared_data / SAMPLE / "hand_tracking/wrist_and_palm_poses.csv"), "right_tracking_confidence")
    hands = _write(tmp_path / "wrist_and_palm_poses.csv", rows)
    code = main(["ingest", "aria", str(aea[0]), "--participant", "p1", "--hands", str(hands),
                 "--out", str(tmp_path / "rec")])
    err = capsys.readouterr().err
    assert code == 2 and f"error: {hands}:1: not a complete MPS wrist and palm poses header" in err
    assert "right_tracking_confidence" in err and not (tmp_path / "rec").exists()


def test_tolerance_must_be_positive(aea, tmp_path, capsys):
    with pytest.raises(DataError, match=r"mps_tolerance_s \(--mps-tolerance\): expected seconds > 0, got 0"):
        ingest_aria(aea[0], tmp_path / "rec", participant="p1", mps_tolerance_s=0)
    try:  # refused by argparse (SystemExit 2) or by ingest_aria (exit 2): either names the option
        code = main(["ingest", "aria", str(aea[0]), "--participant", "p1", "--mps-tolerance=-1",
                     "--out", str(tmp_path / "rec")])
    except SystemExit as exit_info:
        code = exit_info.code
    assert code == 2 and "--mps-tolerance" in capsys.readouterr().err
    assert not (tmp_path / "rec").exists()
