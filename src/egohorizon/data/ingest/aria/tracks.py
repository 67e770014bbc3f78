"""MPS tracks read with projectaria-tools after the checks of ``mps_files``, sorted by device time:
eye gaze (``GazeTrack``), hand tracking (``HandTrack``: wrist and palm per side, device frame) and the
closed-loop trajectory (``PoseTrack``: T_world_device). Each frame gets the nearest sample within a
tolerance (``match_nearest``; the offset is kept), and gaze a confidence from MPS's interval.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from egohorizon.data.ingest.aria.mps_files import GAZE_LAYOUTS, HAND_LAYOUTS, TRAJECTORY_LAYOUTS, read_mps_csv

# Gaze confidence: 1 - (half-width of MPS's yaw/pitch confidence interval) / this, clipped to [0, 1].
# 0.2 rad (~11 deg) is wider than the interval of any usable fixation in MPS outputs we have seen.
CONFIDENCE_FULL_SCALE_RAD = 0.2


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


