"""Issue 36, item 10: an Aria recording whose RGB calibration is for 2880 x 2880 while its frames are
stored at 1408 x 1408 (as the Aria Digital Twin synthetic sample) gets its gaze in the stored frames'
pixels. The test makes such a file from ../shared's ADT video.vrs: its RGB configuration record is set
to 2880 x 2880, so projectaria-tools no longer fits the calibration (whose JSON is for 2880) to the
1408-pixel JPEG frames; the ingest must, and equal the unedited file's run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from vrs_edit import copy_vrs_without

from egohorizon.data.ingest.aria.ingest import ingest_aria
from egohorizon.errors import DataError

ADT = "projectaria-tools-testdata/data/gen1/aria_digital_twin_test_data"


def _ingest(vrs, out, gaze):
    ingest_aria(vrs, out, participant="adt", day="2021-01-01", time_base="device", gaze_csv=gaze, rate_hz=None)
    meta = json.loads((out / "recording.json").read_text())["meta"]
    frames = [json.loads(line) for line in (out / "frames.jsonl").read_text().splitlines()]
    return meta, [(f["gaze"], f["gaze_status"]) for f in frames]


def test_gaze_and_image_size_equal_the_run_on_a_fitted_calibration(shared_data, tmp_path):
    from projectaria_tools.core import data_provider

    original = shared_data / ADT / "video.vrs"
    edited = copy_vrs_without(original, tmp_path / "video_2880.vrs",
                              config_values={"214-1": {"image_width": 2880, "image_height": 2880}})
    provider = data_provider.create_vrs_data_provider(str(edited))
    assert list(provider.get_device_calibration().get_camera_calib("camera-rgb").get_image_size()) == [2880, 2880]
    gaze = shared_data / ADT / "mps/eye_gaze/general_eye_gaze.csv"
    plain_meta, plain = _ingest(original, tmp_path / "plain", gaze)
    meta, got = _ingest(edited, tmp_path / "edited", gaze)
    assert meta["image_size"] == plain_meta["image_size"] == [1408, 1408]
    assert meta["calibration_rescaled_from"] == [2880, 2880] and plain_meta["calibration_rescaled_from"] is None
    assert [status for _, status in got] == [status for _, status in plain] == ["ok"] * 3
    assert np.allclose([p for p, _ in got], [p for p, _ in plain], atol=1e-6)


def test_another_aspect_ratio_is_refused_and_one_aspect_ratio_scales(shared_data):
    from projectaria_tools.core import data_provider

    from egohorizon.data.ingest.aria.projection import fit_calibration

    provider = data_provider.create_vrs_data_provider(str(shared_data / ADT / "video.vrs"))
    camera = provider.get_device_calibration().get_camera_calib("camera-rgb")  # 1408 x 1408
    with pytest.raises(DataError, match="calibration is for 1408 x 1408 pixels but the stored frames are 704 x 528"):
        fit_calibration(camera, (704, 528), "camera-rgb")
    half, rescaled_from = fit_calibration(camera, (704, 704), "camera-rgb")
    assert rescaled_from == [1408, 1408] and list(half.get_image_size()) == [704, 704]
    point = np.array([0.1, -0.2, 1.0])
    # A plain halving, of pixel centres: (x + 0.5) / 2 - 0.5.
    assert np.allclose(half.project(point), (camera.project(point) + 0.5) / 2 - 0.5, atol=1e-9)
    assert fit_calibration(camera, (1408, 1408), "camera-rgb") == (camera, None)
