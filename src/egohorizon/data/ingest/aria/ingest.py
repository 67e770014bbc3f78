"""``ingest_aria``: one Aria VRS file (with its MPS gaze, hands and trajectory and its speech) to an
ingested recording folder (egohorizon.data.ingest.ingested), and the per-frame records it keeps.

Each stored frame gets the nearest gaze sample (projected into the image, or marked missing or outside),
``meta["hands"]`` (wrist and palm projected: hand pseudo-labels) and ``meta["device_pose"]``; a gaze,
hand or trajectory file whose time range misses the frames' is a warning (issue 9), kept in
recording.json with the truncation gap and the MPS files not read.
"""

from __future__ import annotations

import logging
import math
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from egohorizon.data.ingest.aria.projection import GazeProjector
from egohorizon.data.ingest.aria.speech import read_speech
from egohorizon.data.ingest.aria.tracks import (
    HandSample,
    gaze_confidence,
    match_nearest,
    read_gaze,
    read_hands,
    read_trajectory,
)
from egohorizon.data.ingest.aria.vrs import (
    check_complete,
    frame_period,
    make_time_base,
    open_vrs,
    sample_frame_indices,
)
from egohorizon.data.ingest.ingested import (
    GAZE_MISSING,
    GAZE_NO_SOURCE,
    IngestedRecording,
    RecordingWriter,
    Word,
)
from egohorizon.errors import DataError

log = logging.getLogger(__name__)

def stored_frame_size(provider, stream, indices: np.ndarray) -> tuple[int, int] | None:
    """(width, height) of the stream's first sampled frame as stored, before turning upright: what the
    calibration must fit (a stream's configuration record may state the calibration's size instead)."""
    if len(indices) == 0:
        return None
    image = provider.get_image_data_by_index(stream, int(indices[0]))[0].to_numpy_array()
    return int(image.shape[1]), int(image.shape[0])


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
    """Writes an ingested recording folder (see egohorizon.data.ingest.ingested) from one Aria VRS file.
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

    timestamps = np.asarray(provider.get_timestamps_ns(stream, TimeDomain.DEVICE_TIME), dtype=np.int64)
    indices = sample_frame_indices(timestamps, rate_hz)
    stored = stored_frame_size(provider, stream, indices)
    projector = GazeProjector(calibration, camera_label, upright=upright, default_depth_m=default_depth_m,
                              stored_size=stored)
    if projector.rescaled_from:
        log.info("%s: %r calibration rescaled from %s to the stored frames' %s", vrs_path, camera_label,
                 projector.rescaled_from, list(stored))
    track = read_gaze(gaze_csv) if gaze_csv else None
    hands = read_hands(hands_csv) if hands_csv else None
    poses = read_trajectory(trajectory_csv) if trajectory_csv else None
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
            if (image.shape[1], image.shape[0]) != (projector.width, projector.height):
                raise DataError(f"{vrs_path}: {camera_label!r} frame {int(index)} is {image.shape[1]} x "
                                f"{image.shape[0]}, the first stored frame {projector.width} x {projector.height}")
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
            "calibration_rescaled_from": projector.rescaled_from,  # the calibration's own [width, height]
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

