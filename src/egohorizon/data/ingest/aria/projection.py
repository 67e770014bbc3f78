"""MPS gaze and device-frame points (wrist, palm) projected through the device calibration into the RGB
camera, then into the upright image (Aria Gen1 records its RGB camera rotated 90 degrees counter-clockwise).

The projection follows ``projectaria_tools.core.mps.utils.get_gaze_vector_reprojection`` (tests compare
the two on the same calibration). Gaze outside the image is marked, never dropped.

The camera calibration is fitted to the stored frames first (issue 36, item 10): a recording whose RGB
calibration is for another resolution than its frames (the Aria Digital Twin synthetic sample, and
Nymeria and HD-EPIC recordings by projectaria_tools' issue tracker: calibration 2880 x 2880, frames
1408 x 1408) would otherwise put gaze in the calibration's pixels, off the frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from egohorizon.data.ingest.ingested import GAZE_OK, GAZE_OUTSIDE
from egohorizon.errors import DataError

ARIA_RGB_NATIVE = (2880, 2880)
ARIA_RGB_CROP_PX = 32.0  # the firmware crops 32 px a side of the 2880-pixel sensor, then halves (1408)
ARIA_RGB_SCALED = (1408, 704)  # 704: Aria simulation data (projectaria_tools' AriaCalibRescaleAndCrop)


def fit_calibration(camera, stored_size: tuple[int, int], label: str):
    """``camera`` (a projectaria_tools CameraCalibration) for frames of ``stored_size`` (width, height
    as the sensor records them), and the calibration's own size when it had to be rescaled (else None).

    Aria's RGB 2880 -> 1408 (or 704) is the firmware's crop and scale, as projectaria_tools' own loader
    does it (``AriaCalibRescaleAndCrop.cpp``); any other pair of sizes of one aspect ratio is a plain
    scaling; sizes of different aspect ratios are a DataError (a crop whose offset is unknown)."""
    calibrated = tuple(int(v) for v in camera.get_image_size())
    width, height = (int(v) for v in stored_size)
    if calibrated == (width, height):
        return camera, None
    if calibrated == ARIA_RGB_NATIVE and width == height and width in ARIA_RGB_SCALED:
        scale, offset = width / (ARIA_RGB_NATIVE[0] - 2 * ARIA_RGB_CROP_PX), [ARIA_RGB_CROP_PX] * 2
    elif abs(width * calibrated[1] - height * calibrated[0]) <= max(calibrated):  # one aspect ratio
        scale, offset = width / calibrated[0], [0.0, 0.0]
    else:
        raise DataError(f"camera {label!r}: its calibration is for {calibrated[0]} x {calibrated[1]} pixels but the "
                        f"stored frames are {width} x {height}, another aspect ratio (a crop this ingest cannot "
                        "undo); gaze cannot be projected into these frames")
    rescaled = camera.rescale(np.array([width, height], dtype=np.int32), scale, np.array(offset, dtype=np.float64))
    return rescaled, [calibrated[0], calibrated[1]]


def rotate_point_cw90(x: float, y: float, raw_height: int) -> tuple[float, float]:
    """A pixel of the raw image in the image turned 90 degrees clockwise (np.rot90(k=-1)).
    Same convention as projectaria-tools' ``make_upright`` with ``rotate_camera_calib_cw90deg``."""
    return (raw_height - 1) - y, x


class GazeProjector:
    """Projects MPS gaze into the (optionally upright) RGB image through the device calibration."""

    def __init__(self, device_calibration, camera_label: str = "camera-rgb", *, upright: bool = True,
                 default_depth_m: float = 1.0, stored_size: tuple[int, int] | None = None):
        """``stored_size``: (width, height) of the stored frames as the sensor records them (before
        turning upright); the calibration is fitted to it, and ``rescaled_from`` keeps its own size."""
        self.camera = device_calibration.get_camera_calib(camera_label)
        if self.camera is None:
            raise DataError(f"device calibration has no camera {camera_label!r}")
        self.rescaled_from = None
        if stored_size is not None:
            self.camera, self.rescaled_from = fit_calibration(self.camera, stored_size, camera_label)
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


