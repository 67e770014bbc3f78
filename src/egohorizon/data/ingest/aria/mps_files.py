"""The files of an MPS output folder (eye gaze, hand tracking, closed-loop trajectory; what else it holds,
as ``not_read``) and the checks of their CSVs before projectaria-tools reads them.

The library reads an absent column or an empty field as 0 and stops at a cut line without a word, so
every MPS CSV is checked against its header layouts first (file, line and column named), and the rows
the library read are counted against the rows of the file. Its console output goes to the debug log.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from warnings import catch_warnings, simplefilter

from egohorizon.data.ingest.aria.native_output import native_output_to_log
from egohorizon.errors import DataError

# Search order inside an MPS folder: personalized gaze is the more accurate when present.
GAZE_FILE_NAMES = ("personalized_eye_gaze.csv", "general_eye_gaze.csv", "generalized_eye_gaze.csv",
                   "eyegaze.csv")


def find_gaze_csv(mps_dir: str | os.PathLike) -> Path | None:
    """The eye-gaze CSV of an MPS output folder (or of its eye_gaze/ subfolder), best kind first."""
    root = Path(mps_dir)
    for folder in (root, root / "eye_gaze", root / "mps" / "eye_gaze"):
        for name in GAZE_FILE_NAMES:
            if (folder / name).is_file():
                return folder / name
    return None


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


