"""Project Aria ingestion: RGB frames sampled from a VRS file, MPS eye gaze projected into them, speech.

- Frames: the RGB stream sampled at ``rate`` Hz (default 1 Hz; the closest recorded frame to each
  tick), stored upright at native resolution. Aria Gen1 records its RGB camera rotated 90 degrees
  counter-clockwise, so Gen1 frames are turned clockwise; Gen2 frames are upright already.
- Gaze: MPS eye gaze (``personalized_eye_gaze.csv``, ``general_eye_gaze.csv``, the older
  ``generalized_eye_gaze.csv`` and legacy ``eyegaze.csv`` headers, Gen2 vergence columns) read by
  projectaria-tools, matched to each frame by the nearest sample within a tolerance (the offset is
  kept), and projected through the device calibration into the RGB camera, then into the upright
  image. The projection follows ``projectaria_tools.core.mps.utils.get_gaze_vector_reprojection``
  (tests compare the two on the same calibration). Missing gaze, or gaze outside the image, is
  marked on the frame, never dropped.
- Hands: MPS ``hand_tracking_results*.csv`` (or the older ``wrist_and_palm_poses*.csv``) read by
  projectaria-tools, matched to each frame like gaze; wrist and palm (device frame) are projected into
  the stored image through the same calibration (``meta["hands"]`` per frame: hand pseudo-labels).
- Device pose: the MPS closed-loop trajectory (``slam/closed_loop_trajectory.csv``), T_world_device
  of the nearest pose per frame (``meta["device_pose"]``). The MPS folder's other files (semidense
  points, open-loop trajectory, ...) are listed in ``meta["mps_not_read"]``.
- MPS CSVs are checked before projectaria-tools reads them: it reads an absent column or an empty
  field as 0 and stops at a cut line without a word. Its console output goes to the debug log.
- Speech: ``speech.csv`` words (``startTime_ns, endTime_ns, written, confidence``), device time.
- Checks: a file shorter than its own VRS index (a cut copy) is refused unless allowed, then its gap
  is recorded; a file without the RGB stream or calibration is an error naming what is missing; gaze
  whose time range misses the frames' is a warning (issue 9).

projectaria-tools is imported inside the functions that need it (it is an optional, heavy module).
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import logging
import math
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from warnings import catch_warnings, simplefilter

import numpy as np

from egohorizon.data.ingested import (
    GAZE_MISSING,
    GAZE_NO_SOURCE,
    GAZE_OK,
    GAZE_OUTSIDE,
    IngestedRecording,
    RecordingWriter,
    Word,
)
from egohorizon.data.vrs_index import VrsIndex, read_vrs_index
from egohorizon.errors import DataError

log = logging.getLogger(__name__)

# Search order inside an MPS folder: personalized gaze is the more accurate when present.
GAZE_FILE_NAMES = ("personalized_eye_gaze.csv", "general_eye_gaze.csv", "generalized_eye_gaze.csv",
                   "eyegaze.csv")
SPEECH_COLUMNS = ("startTime_ns", "endTime_ns", "written")
# Gaze confidence: 1 - (half-width of MPS's yaw/pitch confidence interval) / this, clipped to [0, 1].
# 0.2 rad (~11 deg) is wider than the interval of any usable fixation in MPS outputs we have seen.
CONFIDENCE_FULL_SCALE_RAD = 0.2
EARLIEST_PLAUSIBLE_EPOCH = 1.4e9  # 2014: Aria did not exist before; smaller clocks were never set


def find_gaze_csv(mps_dir: str | os.PathLike) -> Path | None:
    """The eye-gaze CSV of an MPS output folder (or of its eye_gaze/ subfolder), best kind first."""
    root = Path(mps_dir)
    for folder in (root, root / "eye_gaze", root / "mps" / "eye_gaze"):
        for name in GAZE_FILE_NAMES:
            if (folder / name).is_file():
                return folder / name
    return None


# ------------------------------------------------------------------------------------------------
# projectaria-tools' own console output
# ------------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.contextmanager
def native_output_to_log(what: str) -> Iterator[None]:
    """Sends what projectaria-tools' C++ code prints while inside (coloured VRS INFO lines, "Loaded
    #EyeGazes: 4" on stdout, "Failed to parse eye gaze vergence file" when its first of two readers
    declines a Gen1 file) to this module's debug log: shown with ``egohorizon -v``, never mixed into
    the JSON a command prints. The library has no log-level setting, so its file descriptors 1 and 2
    are pointed at a temporary file for the call; our own checks report what matters."""
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no descriptors to redirect (an embedding without stdout)
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:  # also when the library raises: what it printed explains why
            with contextlib.suppress(Exception):  # C stdio buffers what it prints to a non-terminal
                ctypes.CDLL(None).fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            for line in _ANSI.sub("", sink.read().decode("utf-8", errors="replace")).splitlines():
                if line.strip():
                    log.debug("projectaria-tools (%s): %s", what, line.strip())


HAND_FILE_PATTERNS = ("hand_tracking_results*.csv", "wrist_and_palm_poses*.csv")  # newer kind first
TRAJECTORY_FILE_NAME = "closed_loop_trajectory.csv"
# Files of an MPS folder that are metadata, not data someone could expect in the recording.
_MPS_METADATA = ("summary.json", "vrs_health_check.json", "vrs_health_check_slam.json")


@dataclass
class MpsFiles:
    """What an MPS output folder holds for ingestion: the files read, and ``not_read``: its other data
    files (semidense points, open-loop trajectory, online calibration, the gaze or hand files of a
    kind not chosen), named so the summary says what was left out."""

    root: Path | None = None
    gaze: Path | None = None
    hands: Path | None = None
    trajectory: Path | None = None
    not_read: list[str] = field(default_factory=list)


def _first_match(folders: list[Path], patterns: tuple[str, ...]) -> Path | None:
    """The first pattern's newest version (``_v2`` before ``_v1`` before none) in the first folder."""
    for pattern in patterns:
        for folder in folders:
            found = sorted(folder.glob(pattern), reverse=True)
            if found:
                return found[0]
    return None


def find_mps_files(mps_dir: str | os.PathLike, *, gaze: str | os.PathLike | None = None,
                   hands: str | os.PathLike | None = None,
                   trajectory: str | os.PathLike | None = None) -> MpsFiles:
    """The gaze, hand-tracking and closed-loop trajectory CSVs of an MPS folder (files given
    explicitly win), plus the folder's other data files as ``not_read``."""
    root = Path(mps_dir)
    if not root.is_dir():
        return MpsFiles(gaze=Path(gaze) if gaze else None, hands=Path(hands) if hands else None,
                        trajectory=Path(trajectory) if trajectory else None)
    files = MpsFiles(root=root)
    files.gaze = Path(gaze) if gaze else find_gaze_csv(root)
    files.hands = Path(hands) if hands else _first_match([root / "hand_tracking", root], HAND_FILE_PATTERNS)
    files.trajectory = Path(trajectory) if trajectory else _first_match(
        [root / "slam", root / "trajectory", root], (TRAJECTORY_FILE_NAME,))
    read = {p.resolve() for p in (files.gaze, files.hands, files.trajectory) if p}
    files.not_read = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                            if p.is_file() and p.resolve() not in read and p.name not in _MPS_METADATA)
    return files


# ------------------------------------------------------------------------------------------------
# MPS CSV files: checked here, read by projectaria-tools
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CsvLayout:
    """One header layout of an MPS CSV: the columns projectaria-tools reads, and those that must hold
    a number on every row. The library reads an absent column or an empty field as 0 without a word
    (a Gen2 gaze file without ``right_yaw_rads_cpf`` gives gaze points metres off), so both are
    checked before it reads the file."""

    name: str
    columns: tuple[str, ...]
    numbers: tuple[str, ...]
    optional: tuple[str, ...] = ()


def _sides(*patterns: str) -> tuple[str, ...]:
    return tuple(p.format(side=side, axis=axis) for side in ("left", "right") for p in patterns
                 for axis in ("x", "y", "z"))


_GAZE_BOUNDS = ("yaw_low_rads_cpf", "pitch_low_rads_cpf", "yaw_high_rads_cpf", "pitch_high_rads_cpf")
_EYE_ORIGINS = _sides("t{axis}_{side}_eye_cpf")
GAZE_LAYOUTS = (
    # Gen1 general / generalized / personalized gaze and the legacy eyegaze.csv (depth may be empty).
    CsvLayout("Gen1 eye gaze", ("tracking_timestamp_us", "yaw_rads_cpf", "pitch_rads_cpf", "depth_m",
                                *_GAZE_BOUNDS),
              ("tracking_timestamp_us", "yaw_rads_cpf", "pitch_rads_cpf"), ("session_uid",)),
    # Gen1 eye_gaze_vergence/: one yaw per eye.
    CsvLayout("Gen1 vergence eye gaze",
              ("tracking_timestamp_us", "left_yaw_rads_cpf", "right_yaw_rads_cpf", "pitch_rads_cpf", "depth_m",
               "left_yaw_low_rads_cpf", "right_yaw_low_rads_cpf", "pitch_low_rads_cpf", "left_yaw_high_rads_cpf",
               "right_yaw_high_rads_cpf", "pitch_high_rads_cpf", *_EYE_ORIGINS),
              ("tracking_timestamp_us", "left_yaw_rads_cpf", "right_yaw_rads_cpf", "pitch_rads_cpf"),
              ("session_uid",)),
    # Gen2: combined and per-eye yaw/pitch with the eye origins; the library intersects the two rays.
    CsvLayout("Gen2 eye gaze",
              ("tracking_timestamp_us", "yaw_rads_cpf", "pitch_rads_cpf", "left_yaw_rads_cpf", "right_yaw_rads_cpf",
               "left_pitch_rads_cpf", "right_pitch_rads_cpf", *_EYE_ORIGINS),
              ("tracking_timestamp_us", "yaw_rads_cpf", "pitch_rads_cpf", "left_yaw_rads_cpf",
               "right_yaw_rads_cpf", "left_pitch_rads_cpf", "right_pitch_rads_cpf", *_EYE_ORIGINS),
              ("session_uid",)),
)
_LANDMARKS = tuple(f"t{axis}_{side}_landmark_{i}_device" for side in ("left", "right") for i in range(21)
                   for axis in ("x", "y", "z"))
_CONFIDENCES = ("left_tracking_confidence", "right_tracking_confidence")
HAND_LAYOUTS = (
    CsvLayout("MPS hand tracking results",
              ("tracking_timestamp_us", *_CONFIDENCES, *_LANDMARKS,
               *(f"{c}_{side}_device_wrist" for side in ("left", "right")
                 for c in ("tx", "ty", "tz", "qx", "qy", "qz", "qw"))),
              ("tracking_timestamp_us", *_CONFIDENCES, *_LANDMARKS),
              _sides("n{axis}_{side}_palm_device", "n{axis}_{side}_wrist_device")),
    CsvLayout("MPS wrist and palm poses",
              ("tracking_timestamp_us", *_CONFIDENCES, *_sides("t{axis}_{side}_wrist_device", "t{axis}_{side}_palm_device")),
              ("tracking_timestamp_us", *_CONFIDENCES, *_sides("t{axis}_{side}_wrist_device", "t{axis}_{side}_palm_device")),
              _sides("n{axis}_{side}_palm_device", "n{axis}_{side}_wrist_device")),
)
_TRAJECTORY_NUMBERS = (
    "tracking_timestamp_us", "utc_timestamp_ns", "tx_world_device", "ty_world_device", "tz_world_device",
    "qx_world_device", "qy_world_device", "qz_world_device", "qw_world_device",
    "device_linear_velocity_x_device", "device_linear_velocity_y_device", "device_linear_velocity_z_device",
    "angular_velocity_x_device", "angular_velocity_y_device", "angular_velocity_z_device",
    "gravity_x_world", "gravity_y_world", "gravity_z_world", "quality_score")
TRAJECTORY_LAYOUTS = (CsvLayout("MPS closed-loop trajectory", ("graph_uid", *_TRAJECTORY_NUMBERS),
                                _TRAJECTORY_NUMBERS),)


def _closest_layout(header: list[str], layouts: tuple[CsvLayout, ...]) -> CsvLayout:
    """The layout sharing most columns with the header (a header with a column missing is still
    recognised, so the message can name what is missing)."""
    return max(layouts, key=lambda layout: len(set(header) & set(layout.columns)))


def check_mps_csv(path: Path, layouts: tuple[CsvLayout, ...], what: str) -> tuple[CsvLayout, int, list[str]]:
    """The layout of an MPS CSV, its number of data rows and its header, after checking what projectaria-tools
    does not: every column of the layout is in the header, every row has as many fields as the header
    (a cut line), and the number columns hold finite numbers. DataError names file, line and column."""
    if not path.is_file():
        raise DataError(f"{path}: {what} file not found")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None) or []
        layout = _closest_layout(header, layouts)
        missing = [c for c in layout.columns if c not in header]
        if len(missing) > len(layout.columns) / 2:  # not a damaged MPS header: another file
            raise DataError(f"{path}:1: not an MPS {what} header (got {', '.join(header) or 'nothing'}); "
                            f"expected a {' or '.join(l.name for l in layouts)} file with column(s) "
                            f"{', '.join(layout.columns[:4])}, ...")
        if missing:
            raise DataError(f"{path}:1: not a complete {layout.name} header: missing column(s) "
                            f"{', '.join(missing)} (projectaria-tools would read them as 0)")
        numbers = [(header.index(c), c) for c in layout.numbers]
        rows = 0
        for row in reader:
            if not row:
                continue
            rows += 1
            if len(row) != len(header):
                raise DataError(f"{path}:{reader.line_num}: {len(row)} fields where the header has "
                                f"{len(header)} (a cut or damaged line)")
            for column, name in numbers:
                try:
                    ok = math.isfinite(float(row[column]))
                except ValueError:
                    ok = False
                if not ok:
                    raise DataError(f"{path}:{reader.line_num}: field '{name}': expected a number, "
                                    f"got {row[column]!r}")
    return layout, rows, header


def read_mps_csv(path: Path, reader, layouts: tuple[CsvLayout, ...], what: str) -> tuple[list, CsvLayout]:
    """Checks the file (check_mps_csv), reads it with projectaria-tools' ``reader`` (quietly; a dict
    picks the reader by layout name) and checks that the library read every row."""
    layout, rows, header = check_mps_csv(path, layouts, what)
    read = reader[layout.name] if isinstance(reader, dict) else reader
    with native_output_to_log(path.name), catch_warnings():
        # read_wrist_and_palm_poses warns that the API will be deprecated: not the user's concern.
        simplefilter("ignore")
        items = list(read(str(path)))
    if len(items) != rows:
        extra = [c for c in header if c not in layout.columns + layout.optional]
        why = (f"; it does not know the column(s) {', '.join(extra)}" if extra
               else "; the file has malformed rows")
        raise DataError(f"{path}: projectaria-tools read {len(items)} of {rows} {what} rows{why}")
    return items, layout


def device_ns(stamp: timedelta) -> int:
    """A projectaria-tools tracking timestamp (a timedelta of whole microseconds) in ns, exactly."""
    return (stamp // timedelta(microseconds=1)) * 1000


@dataclass
class GazeTrack:
    """MPS eye-gaze samples (projectaria-tools ``EyeGaze`` objects) with their device times in ns."""

    path: Path
    t_ns: np.ndarray
    samples: list
    layout: str = ""


def read_gaze(path: str | os.PathLike) -> GazeTrack:
    """Reads an MPS eye-gaze CSV (any layout of GAZE_LAYOUTS) with projectaria-tools; a missing
    column, a cut line or an empty number raise DataError naming the file, line and column."""
    from projectaria_tools.core import mps

    path = Path(path)
    samples, layout = read_mps_csv(path, mps.read_eyegaze, GAZE_LAYOUTS, "gaze")
    t_ns = np.array([device_ns(s.tracking_timestamp) for s in samples], dtype=np.int64)
    order = np.argsort(t_ns, kind="stable")
    return GazeTrack(path=path, t_ns=t_ns[order], samples=[samples[i] for i in order], layout=layout.name)


@dataclass
class HandSample:
    """One MPS hand-tracking sample: per side None (not tracked) or (confidence, wrist, palm), the two
    points in the device frame, metres."""

    left: tuple[float, np.ndarray, np.ndarray] | None
    right: tuple[float, np.ndarray, np.ndarray] | None


@dataclass
class HandTrack:
    path: Path
    t_ns: np.ndarray
    samples: list[HandSample]
    layout: str = ""


def _hand_side(hand: Any) -> tuple[float, np.ndarray, np.ndarray] | None:
    if hand is None:  # projectaria-tools gives None for a side whose confidence is -1 (not tracked)
        return None
    if hasattr(hand, "get_wrist_position_device"):  # hand_tracking_results: 21 landmarks
        wrist, palm = hand.get_wrist_position_device(), hand.get_palm_position_device()
    else:  # wrist_and_palm_poses
        wrist, palm = hand.wrist_position_device, hand.palm_position_device
    return (float(hand.confidence), np.asarray(wrist, dtype=np.float64).ravel(),
            np.asarray(palm, dtype=np.float64).ravel())


def read_hands(path: str | os.PathLike) -> HandTrack:
    """Reads MPS ``hand_tracking_results*.csv`` or ``wrist_and_palm_poses*.csv`` with projectaria-tools'
    readers, after check_mps_csv (the library reads an absent confidence or position column as 0)."""
    from projectaria_tools.core.mps import hand_tracking

    path = Path(path)
    readers = {HAND_LAYOUTS[0].name: hand_tracking.read_hand_tracking_results,
               HAND_LAYOUTS[1].name: hand_tracking.read_wrist_and_palm_poses}
    items, layout = read_mps_csv(path, readers, HAND_LAYOUTS, "hand tracking")
    t_ns = np.array([device_ns(i.tracking_timestamp) for i in items], dtype=np.int64)
    order = np.argsort(t_ns, kind="stable")
    samples = [HandSample(_hand_side(items[i].left_hand), _hand_side(items[i].right_hand)) for i in order]
    return HandTrack(path=path, t_ns=t_ns[order], samples=samples, layout=layout.name)


@dataclass
class PoseTrack:
    """MPS closed-loop trajectory poses (projectaria-tools ``ClosedLoopTrajectoryPose``), device ns."""

    path: Path
    t_ns: np.ndarray
    poses: list


def read_trajectory(path: str | os.PathLike) -> PoseTrack:
    """Reads an MPS ``closed_loop_trajectory.csv`` with projectaria-tools, after check_mps_csv."""
    from projectaria_tools.core import mps

    path = Path(path)
    poses, _ = read_mps_csv(path, mps.read_closed_loop_trajectory, TRAJECTORY_LAYOUTS, "trajectory")
    t_ns = np.array([device_ns(p.tracking_timestamp) for p in poses], dtype=np.int64)
    order = np.argsort(t_ns, kind="stable")
    return PoseTrack(path=path, t_ns=t_ns[order], poses=[poses[i] for i in order])


def hands_meta(sample: HandSample, dt_s: float, projector: GazeProjector) -> dict[str, Any]:
    """A frame's ``meta["hands"]``: per side None (not tracked) or its confidence, wrist and palm in
    the stored image's pixels (None when behind the camera or outside the image) and in the device
    frame (metres); ``dt``: hand sample time minus frame time, seconds."""
    out: dict[str, Any] = {"dt": dt_s}
    for side in ("left", "right"):
        hand = getattr(sample, side)
        if hand is None:
            out[side] = None
            continue
        confidence, wrist, palm = hand
        out[side] = {"confidence": confidence, "wrist": projector.project_device_point(wrist),
                     "palm": projector.project_device_point(palm),
                     "wrist_device": wrist.tolist(), "palm_device": palm.tolist()}
    return out


def pose_meta(pose: Any, dt_s: float) -> dict[str, Any]:
    """A frame's ``meta["device_pose"]``: T_world_device of the MPS closed-loop trajectory as a
    translation (metres) and a unit quaternion (w, x, y, z), its quality score and SLAM map id."""
    wxyz_xyz = np.asarray(pose.transform_world_device.to_quat_and_translation(), dtype=np.float64).ravel()
    return {"dt": dt_s, "t_world_device": wxyz_xyz[4:].tolist(), "q_world_device_wxyz": wxyz_xyz[:4].tolist(),
            "quality": float(pose.quality_score), "graph_uid": pose.graph_uid}


def match_nearest(sample_ns: np.ndarray, query_ns: np.ndarray, tolerance_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """For each query time, the index of the nearest sample (-1 if none within tolerance) and the
    signed offset sample - query in ns (0 where unmatched). ``sample_ns`` must be sorted."""
    query_ns = np.asarray(query_ns, dtype=np.int64)
    if len(sample_ns) == 0:
        return np.full(len(query_ns), -1), np.zeros(len(query_ns), dtype=np.int64)
    right = np.clip(np.searchsorted(sample_ns, query_ns), 0, len(sample_ns) - 1)
    left = np.clip(right - 1, 0, len(sample_ns) - 1)
    pick_left = np.abs(sample_ns[left] - query_ns) <= np.abs(sample_ns[right] - query_ns)
    nearest = np.where(pick_left, left, right)
    offset = sample_ns[nearest] - query_ns
    matched = np.abs(offset) <= tolerance_ns
    return np.where(matched, nearest, -1), np.where(matched, offset, 0)


def gaze_confidence(sample: Any, full_scale_rad: float = CONFIDENCE_FULL_SCALE_RAD) -> float | None:
    """Confidence in [0, 1] from MPS's yaw/pitch confidence interval; None when the file has none
    (Gen2 and vergence outputs carry no interval)."""
    widths = [sample.yaw_high - sample.yaw_low, sample.pitch_high - sample.pitch_low]
    if not all(math.isfinite(w) for w in widths) or max(widths) <= 0:
        return None
    return float(np.clip(1.0 - (max(widths) / 2) / full_scale_rad, 0.0, 1.0))


def rotate_point_cw90(x: float, y: float, raw_height: int) -> tuple[float, float]:
    """A pixel of the raw image in the image turned 90 degrees clockwise (np.rot90(k=-1)).
    Same convention as projectaria-tools' ``make_upright`` with ``rotate_camera_calib_cw90deg``."""
    return (raw_height - 1) - y, x


class GazeProjector:
    """Projects MPS gaze into the (optionally upright) RGB image through the device calibration."""

    def __init__(self, device_calibration, camera_label: str = "camera-rgb", *, upright: bool = True,
                 default_depth_m: float = 1.0):
        self.camera = device_calibration.get_camera_calib(camera_label)
        if self.camera is None:
            raise DataError(f"device calibration has no camera {camera_label!r}")
        transform_device_camera = device_calibration.get_transform_device_sensor(camera_label)
        # Same CPF as projectaria-tools' reprojection helper: the default one, in which MPS reports gaze.
        self.transform_camera_cpf = transform_device_camera.inverse() @ device_calibration.get_transform_device_cpf()
        self.transform_camera_device = transform_device_camera.inverse()  # MPS hands are in the device frame
        self.width, self.height = (int(v) for v in self.camera.get_image_size())
        self.upright = upright
        self.default_depth_m = default_depth_m

    def gaze_point_in_cpf(self, sample: Any) -> np.ndarray:
        from projectaria_tools.core import mps

        if sample.spatial_gaze_point_valid:  # Gen2: the vergence point itself
            return np.asarray(sample.spatial_gaze_point_in_cpf, dtype=np.float64).reshape(3, 1)
        # Gen1 general gaze has no depth (0): fall back to the same 1 m as projectaria-tools' helper.
        depth = sample.depth if sample.depth and sample.depth > 0 else self.default_depth_m
        return np.asarray(mps.get_eyegaze_point_at_depth(sample.yaw, sample.pitch, depth)).reshape(3, 1)

    def project_raw(self, sample: Any) -> np.ndarray | None:
        """Pixel in the raw (sensor-oriented) image, or None when the ray misses the camera."""
        return self._pixel(self.transform_camera_cpf @ self.gaze_point_in_cpf(sample))

    def project_device_point(self, point_device: Any) -> tuple[float, float] | None:
        """A 3D point in the device frame (MPS wrist, palm) as (x, y) in the stored image, or None
        when it is behind the camera or outside the image."""
        point_camera = self.transform_camera_device @ np.asarray(point_device, dtype=np.float64).reshape(3, 1)
        pixel = self._pixel(point_camera)
        if pixel is None:
            return None
        x, y = float(pixel[0]), float(pixel[1])
        return rotate_point_cw90(x, y, self.height) if self.upright else (x, y)

    def _pixel(self, point_camera: np.ndarray) -> np.ndarray | None:
        pixel = self.camera.project(point_camera)
        if pixel is None:
            return None
        pixel = np.asarray(pixel, dtype=np.float64).ravel()
        inside = -0.5 <= pixel[0] < self.width - 0.5 and -0.5 <= pixel[1] < self.height - 0.5
        return pixel if inside else None

    def project(self, sample: Any) -> tuple[tuple[float, float] | None, str]:
        """(x, y) in the stored image (upright if requested) and the gaze status."""
        pixel = self.project_raw(sample)
        if pixel is None:
            return None, GAZE_OUTSIDE
        x, y = float(pixel[0]), float(pixel[1])
        if self.upright:
            x, y = rotate_point_cw90(x, y, self.height)
        return (x, y), GAZE_OK


def read_speech(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Words of an Aria ``speech.csv``: dicts with start_ns, end_ns, text, confidence (or None).
    A malformed row raises DataError with file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: speech file not found")
    words = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in SPEECH_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}:1: missing column(s) {', '.join(missing)} (expected {', '.join(SPEECH_COLUMNS)})")
        for row in reader:
            line = reader.line_num
            try:
                start, end = int(row["startTime_ns"]), int(row["endTime_ns"])
            except (TypeError, ValueError):
                raise DataError(f"{path}:{line}: field 'startTime_ns'/'endTime_ns': expected integers, "
                                f"got {row['startTime_ns']!r}, {row['endTime_ns']!r}") from None
            if end < start:
                raise DataError(f"{path}:{line}: field 'endTime_ns': ends before it starts")
            confidence = row.get("confidence")
            try:
                confidence = float(confidence) if confidence not in (None, "") else None
            except ValueError:
                raise DataError(f"{path}:{line}: field 'confidence': expected a number, got {confidence!r}") from None
            words.append({"start_ns": start, "end_ns": end, "text": row["written"] or "", "confidence": confidence})
    return words


def sample_frame_indices(timestamps_ns: np.ndarray, rate_hz: float | None) -> np.ndarray:
    """Indices of the recorded frames closest to ticks every 1/rate s from the first frame
    (all frames when rate is None); a frame is used at most once."""
    timestamps_ns = np.asarray(timestamps_ns, dtype=np.int64)
    if len(timestamps_ns) == 0 or rate_hz is None:
        return np.arange(len(timestamps_ns))
    if rate_hz <= 0:
        raise DataError(f"rate: expected a positive frame rate in Hz, got {rate_hz}")
    step = round(1e9 / rate_hz)
    ticks = np.arange(timestamps_ns[0], timestamps_ns[-1] + 1, step, dtype=np.int64)
    nearest, _ = match_nearest(timestamps_ns, ticks, tolerance_ns=step)
    return np.unique(nearest[nearest >= 0])


def frame_period(timestamps_ns: np.ndarray, rate_hz: float | None) -> float:
    """Seconds each stored frame stands for: the sampling period, or the recorded one."""
    if rate_hz:
        return 1.0 / rate_hz
    if len(timestamps_ns) > 1:
        return float(np.median(np.diff(timestamps_ns))) / 1e9
    return 1.0


@dataclass
class TimeBase:
    """Maps device nanoseconds to the recording's time base (epoch or device seconds)."""

    name: str
    origin_device_ns: int
    origin_seconds: float

    def __call__(self, device_ns: int) -> float:
        return self.origin_seconds + (int(device_ns) - self.origin_device_ns) / 1e9


def make_time_base(provider, time_base: str, vrs_path: Path) -> TimeBase:
    from projectaria_tools.core.sensor_data import TimeDomain

    first_ns = int(provider.get_first_time_ns_all_streams(TimeDomain.DEVICE_TIME))
    if time_base == "device":
        return TimeBase("device", 0, 0.0)
    if time_base != "epoch":
        raise DataError(f"time_base: expected 'epoch' or 'device', got {time_base!r}")
    epoch = float(provider.get_metadata().start_time_epoch_sec)
    if epoch < EARLIEST_PLAUSIBLE_EPOCH:
        raise DataError(f"{vrs_path}: the recording's start_time_epoch_sec ({epoch:.0f}) is not a real "
                        "clock time; use time_base='device' (--time-base device) and pass --day")
    # Aria stores its wall-clock start in whole seconds; finer times keep the device clock's precision.
    return TimeBase("epoch", first_ns, epoch)


def open_vrs(vrs_path: Path, camera_label: str):
    """A projectaria-tools provider of the file with its image stream and device calibration; a file
    that lacks either is a DataError naming the file and what is missing."""
    from projectaria_tools.core import data_provider

    if not vrs_path.is_file():
        raise DataError(f"{vrs_path}: VRS file not found")
    try:
        with native_output_to_log(vrs_path.name):
            provider = data_provider.create_vrs_data_provider(str(vrs_path))
    except RuntimeError as error:  # a truncated or foreign file fails inside the C++ reader
        raise DataError(f"{vrs_path}: projectaria-tools cannot read this VRS file ({error})") from error
    if provider is None:
        raise DataError(f"{vrs_path}: projectaria-tools cannot open this VRS file")
    stream = provider.get_stream_id_from_label(camera_label)
    streams = provider.get_all_streams()
    # The label lookup answers from a fixed table, whether or not the file has the stream (issue 9).
    if stream is None or str(stream) not in {str(s) for s in streams}:
        present = ", ".join(f"{s} ({provider.get_label_from_stream_id(s) or 'unlabelled'})" for s in streams)
        raise DataError(f"{vrs_path}: no {camera_label!r} stream{f' ({stream})' if stream else ''}; it has "
                        f"{present or 'no streams'}. An Aria Digital Twin depth or segmentation VRS holds no "
                        "RGB frames: ingest the recording's main VRS file")
    calibration = provider.get_device_calibration()
    if calibration is None:
        raise DataError(f"{vrs_path}: no device calibration (file tag 'calib_json'), so gaze cannot be "
                        "projected into its frames; ingest the recording's main VRS file")
    return provider, stream, calibration


def truncation_gap(index: VrsIndex, stream: str, read_frames: int, clock: TimeBase) -> dict[str, Any]:
    """What a cut VRS file lost, for recording.json: frames of ``stream`` expected and read, the time
    range of the lost ones (recording time base; None when the cut spared them) and byte counts."""
    lost = index.data_records(stream, missing=True)
    return {"stream": stream, "expected_frames": read_frames + len(lost), "read_frames": read_frames,
            "missing_frames_start": clock(lost[0]) if len(lost) else None,
            "missing_frames_end": clock(lost[-1]) if len(lost) else None,
            "indexed_records": len(index.records), "missing_records": len(index.records) - index.present,
            "file_bytes": index.file_bytes, "expected_bytes": index.expected_bytes}


def describe_truncation(index: VrsIndex, gap: dict[str, Any], camera_label: str) -> str:
    lost = index.data_records(gap["stream"], missing=True)
    frames = (f"projectaria-tools reads {gap['read_frames']} of the {gap['expected_frames']} {camera_label!r} "
              f"frames; those from device time {lost[0] / 1e9:.3f} s to {lost[-1] / 1e9:.3f} s are lost"
              if len(lost) else f"all {gap['read_frames']} {camera_label!r} frames are there, other streams "
              "lose their last records")
    return (f"{index.path}: truncated: the file has {index.file_bytes} of the {index.expected_bytes} bytes its "
            f"VRS index lists ({gap['missing_records']} of {gap['indexed_records']} records missing); {frames}")


def check_complete(vrs_path: Path, stream: str, read_frames: int, clock: TimeBase, camera_label: str, *,
                   allow_truncated: bool) -> tuple[dict[str, Any] | None, str | None]:
    """(the gap for recording.json, a warning) when the file is shorter than its VRS index says; a cut
    file is a DataError unless ``allow_truncated``."""
    index = read_vrs_index(vrs_path)
    if index is None:
        return None, f"{vrs_path}: no VRS index to check the file's completeness against"
    if not index.truncated:
        return None, None
    gap = truncation_gap(index, stream, read_frames, clock)
    message = describe_truncation(index, gap, camera_label)
    if not allow_truncated:
        raise DataError(f"{message}. Pass --allow-truncated to ingest what is there and record the gap in "
                        "recording.json")
    return gap, message


def gaze_overlap_warning(track: Any, frame_ns: np.ndarray, tolerance_ns: int, what: str = "gaze") -> str | None:
    """A warning when no frame can get gaze (or hands, a pose) because the file covers another time
    (e.g. MPS output of another recording: the Gen2 sample's gaze is ~6250 s before its frames)."""
    if track is None or len(frame_ns) == 0:
        return None
    if len(track.t_ns) == 0:
        return f"{track.path}: no {what} samples, so no frame has {what}"
    if track.t_ns[-1] + tolerance_ns >= frame_ns[0] and track.t_ns[0] - tolerance_ns <= frame_ns[-1]:
        return None
    return (f"{track.path}: {what} covers device time {track.t_ns[0] / 1e9:.3f}-{track.t_ns[-1] / 1e9:.3f} s but "
            f"the RGB frames {frame_ns[0] / 1e9:.3f}-{frame_ns[-1] / 1e9:.3f} s: they do not overlap, so no "
            f"frame has {what} (is the {what} file from another recording?)")


def hand_status_counts(frames: list) -> dict[str, int]:
    """Frames with a tracked hand, with a hand sample but no hand tracked, and with no hand sample
    within the tolerance (``meta["hands"]`` None)."""
    counts = Counter("missing" if f.meta["hands"] is None else
                     "tracked" if f.meta["hands"]["left"] or f.meta["hands"]["right"] else "not_tracked"
                     for f in frames)
    points = sum(1 for f in frames if f.meta["hands"] for side in ("left", "right")
                 if f.meta["hands"][side] for key in ("wrist", "palm") if f.meta["hands"][side][key])
    return {"tracked": counts["tracked"], "not_tracked": counts["not_tracked"], "missing": counts["missing"],
            "points_in_image": points}


def ingest_aria(vrs_path: str | os.PathLike, out_dir: str | os.PathLike, *, participant: str,
                day: str | None = None, session: str | None = None, gaze_csv: str | os.PathLike | None = None,
                speech_csv: str | os.PathLike | None = None, rate_hz: float | None = 1.0,
                gaze_tolerance_s: float = 0.1, upright: bool | None = None, time_base: str = "epoch",
                camera_label: str = "camera-rgb", default_depth_m: float = 1.0,
                overwrite: bool = False, allow_truncated: bool = False,
                hands_csv: str | os.PathLike | None = None, trajectory_csv: str | os.PathLike | None = None,
                mps_tolerance_s: float = 0.1, mps_not_read: list[str] | None = None) -> IngestedRecording:
    """Writes an ingested recording folder (see egohorizon.data.ingested) from one Aria VRS file.
    A file cut short (fewer records than its VRS index lists) is refused unless ``allow_truncated``;
    then the gap is kept in ``meta["truncated"]``. Warnings also go to ``meta["warnings"]``.

    MPS hand tracking (``hands_csv``) and the closed-loop trajectory (``trajectory_csv``) are matched
    to each frame like gaze (nearest sample within ``mps_tolerance_s``) and kept in the frame's
    ``meta["hands"]`` (wrist and palm projected into the stored image: hand pseudo-labels) and
    ``meta["device_pose"]``; ``mps_not_read`` (the MPS folder's other files) goes to recording.json."""
    from projectaria_tools.core.calibration import DeviceVersion
    from projectaria_tools.core.sensor_data import TimeDomain

    vrs_path = Path(vrs_path)
    if not (math.isfinite(mps_tolerance_s) and mps_tolerance_s > 0):
        raise DataError(f"mps_tolerance_s (--mps-tolerance): expected seconds > 0, got {mps_tolerance_s}")
    provider, stream, calibration = open_vrs(vrs_path, camera_label)
    if upright is None:  # Gen1 mounts the RGB sensor rotated; Gen2 records upright.
        upright = calibration.get_device_version() == DeviceVersion.Gen1
    clock = make_time_base(provider, time_base, vrs_path)
    if day is None:
        if clock.name != "epoch":
            raise DataError("day: required when the time base is not 'epoch' (pass --day YYYY-MM-DD)")
        day = datetime.fromtimestamp(clock.origin_seconds, tz=UTC).strftime("%Y-%m-%d")

    projector = GazeProjector(calibration, camera_label, upright=upright, default_depth_m=default_depth_m)
    track = read_gaze(gaze_csv) if gaze_csv else None
    hands = read_hands(hands_csv) if hands_csv else None
    poses = read_trajectory(trajectory_csv) if trajectory_csv else None
    timestamps = np.asarray(provider.get_timestamps_ns(stream, TimeDomain.DEVICE_TIME), dtype=np.int64)
    indices = sample_frame_indices(timestamps, rate_hz)
    tolerance_ns = round(gaze_tolerance_s * 1e9)
    gap, cut = check_complete(vrs_path, str(stream), len(timestamps), clock, camera_label,
                              allow_truncated=allow_truncated)
    mps_tolerance_ns = round(mps_tolerance_s * 1e9)
    warnings = [w for w in (cut, gaze_overlap_warning(track, timestamps, tolerance_ns),
                            gaze_overlap_warning(hands, timestamps, mps_tolerance_ns, "hand tracking"),
                            gaze_overlap_warning(poses, timestamps, mps_tolerance_ns, "trajectory")) if w]
    for warning in warnings:
        log.warning(warning)
    if track is not None:
        gaze_index, gaze_offset = match_nearest(track.t_ns, timestamps[indices], tolerance_ns)
    if hands is not None:
        hand_index, hand_offset = match_nearest(hands.t_ns, timestamps[indices], mps_tolerance_ns)
    if poses is not None:
        pose_index, pose_offset = match_nearest(poses.t_ns, timestamps[indices], mps_tolerance_ns)

    writer = RecordingWriter(out_dir, overwrite=overwrite)
    try:
        for position, index in enumerate(indices):
            image_data, record = provider.get_image_data_by_index(stream, int(index))
            image = image_data.to_numpy_array()
            if image.ndim == 2:
                image = np.repeat(image[:, :, None], 3, axis=2)
            if upright:
                image = np.ascontiguousarray(np.rot90(image, k=-1))
            gaze, status, confidence, offset = None, GAZE_NO_SOURCE, None, None
            if track is not None:
                if gaze_index[position] < 0:
                    status = GAZE_MISSING
                else:
                    sample = track.samples[gaze_index[position]]
                    gaze, status = projector.project(sample)
                    confidence = gaze_confidence(sample)
                    offset = float(gaze_offset[position]) / 1e9
            meta: dict[str, Any] = {"device_ns": int(record.capture_timestamp_ns)}
            if hands is not None:
                k = hand_index[position]
                meta["hands"] = hands_meta(hands.samples[k], float(hand_offset[position]) / 1e9,
                                           projector) if k >= 0 else None
            if poses is not None:
                k = pose_index[position]
                meta["device_pose"] = pose_meta(poses.poses[k], float(pose_offset[position]) / 1e9) if k >= 0 else None
            writer.add_frame(image, t=clock(record.capture_timestamp_ns), gaze=gaze, gaze_status=status,
                             gaze_confidence=confidence, gaze_dt=offset, meta=meta)
        words = [Word(start=clock(w["start_ns"]), end=clock(w["end_ns"]), text=w["text"], confidence=w["confidence"])
                 for w in (read_speech(speech_csv) if speech_csv else [])]
        recording = writer.make_recording(words, participant=participant, day=day,
                                          session=session or vrs_path.stem, source="aria",
                                          frame_period_s=frame_period(timestamps, rate_hz))
        recording.meta = {
            "source": "aria", "vrs": str(vrs_path), "camera": camera_label,
            "device_version": str(calibration.get_device_version()).split(".")[-1],
            # [width, height] of the stored frames: turning the image swaps the sensor's sides.
            "image_size": [projector.height, projector.width] if upright else [projector.width, projector.height],
            "rotated_cw90": bool(upright), "time_base": clock.name, "rate_hz": rate_hz,
            "gaze_file": str(track.path) if track else None, "gaze_tolerance_s": gaze_tolerance_s,
            "gaze_default_depth_m": default_depth_m, "speech_file": str(speech_csv) if speech_csv else None,
            "truncated": gap, "warnings": warnings,
            "hands_file": str(hands.path) if hands else None,
            "hand_status_counts": hand_status_counts(writer.frames) if hands else None,
            "trajectory_file": str(poses.path) if poses else None,
            "pose_frames": sum(f.meta["device_pose"] is not None for f in writer.frames) if poses else None,
            "mps_tolerance_s": mps_tolerance_s, "mps_not_read": list(mps_not_read or []),
        }
        return writer.commit(recording, words)
    except BaseException:
        writer.abort()
        raise

