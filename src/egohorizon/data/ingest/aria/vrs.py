"""An Aria VRS file: opened with its RGB stream and device calibration (a file without either is an error
naming what is missing), its time base (epoch or device seconds), the frames sampled at a rate (the closest
recorded frame to each tick) and the check that the file is as long as its own VRS index (a cut copy is
refused unless allowed, then its gap is recorded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from egohorizon.data.ingest.aria.native_output import native_output_to_log
from egohorizon.data.ingest.aria.tracks import match_nearest
from egohorizon.data.ingest.aria.vrs_index import VrsIndex, read_vrs_index
from egohorizon.errors import DataError

EARLIEST_PLAUSIBLE_EPOCH = 1.4e9  # 2014: Aria did not exist before; smaller clocks were never set


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


