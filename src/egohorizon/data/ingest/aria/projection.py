"""MPS gaze and device-frame points (wrist, palm) projected through the device calibration into the RGB
camera, then into the upright image (Aria Gen1 records its RGB camera rotated 90 degrees counter-clockwise).

The projection follows ``projectaria_tools.core.mps.utils.get_gaze_vector_reprojection`` (tests compare
the two on the same calibration). Gaze outside the image is marked, never dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from egohorizon.data.ingest.ingested import GAZE_OK, GAZE_OUTSIDE
from egohorizon.errors import DataError


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


