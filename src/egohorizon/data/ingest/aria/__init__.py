"""Project Aria ingestion: RGB frames sampled from a VRS file, MPS eye gaze projected into them, MPS hand
tracking and device pose per frame, speech.

- Frames: the RGB stream sampled at ``rate`` Hz (default 1 Hz; the closest recorded frame to each
  tick), stored upright at native resolution (Gen1 frames are turned clockwise; Gen2 ones are upright).
- Gaze, hands, device pose: MPS ``*eye_gaze.csv`` (every Gen1 and Gen2 header), ``hand_tracking_results*.csv``
  (or ``wrist_and_palm_poses*.csv``) and ``slam/closed_loop_trajectory.csv``, checked, then read by
  projectaria-tools, matched to each frame by the nearest sample within a tolerance; gaze, wrist and palm
  projected through the device calibration into the stored image. Missing gaze is marked, never dropped.
- Speech: ``speech.csv`` words, device time.
- Checks: a cut VRS file, a file without the RGB stream or calibration, an MPS CSV that projectaria-tools
  would misread (absent column, empty field, cut line), gaze from another time range (issue 9).

A package by job (issue 24): ``mps_files`` (finding an MPS folder's files, checking their CSVs),
``tracks`` (gaze, hand and trajectory readers, nearest-sample matching), ``projection`` (GazeProjector,
the clockwise turn), ``speech``, ``vrs`` (opening, time base, frame sampling, truncation), ``ingest``
(``ingest_aria`` and the per-frame records), ``native_output`` (projectaria-tools' console output to
the debug log). Everything is re-exported here: ``from egohorizon.data.ingest.aria import ingest_aria``.

projectaria-tools is imported inside the functions that need it (it is an optional, heavy module).
"""

from egohorizon.data.ingest.aria.ingest import (  # noqa: F401  (re-exported)
    gaze_overlap_warning,
    hand_status_counts,
    hands_meta,
    ingest_aria,
    pose_meta,
)
from egohorizon.data.ingest.aria.mps_files import (  # noqa: F401  (re-exported)
    GAZE_FILE_NAMES,
    GAZE_LAYOUTS,
    HAND_FILE_PATTERNS,
    HAND_LAYOUTS,
    TRAJECTORY_FILE_NAME,
    TRAJECTORY_LAYOUTS,
    CsvLayout,
    MpsFiles,
    check_mps_csv,
    find_gaze_csv,
    find_mps_files,
    read_mps_csv,
)
from egohorizon.data.ingest.aria.native_output import native_output_to_log  # noqa: F401  (re-exported)
from egohorizon.data.ingest.aria.projection import (  # noqa: F401  (re-exported)
    GazeProjector,
    rotate_point_cw90,
)
from egohorizon.data.ingest.aria.speech import SPEECH_COLUMNS, read_speech  # noqa: F401  (re-exported)
from egohorizon.data.ingest.aria.tracks import (  # noqa: F401  (re-exported)
    CONFIDENCE_FULL_SCALE_RAD,
    GazeTrack,
    HandSample,
    HandTrack,
    PoseTrack,
    device_ns,
    gaze_confidence,
    match_nearest,
    read_gaze,
    read_hands,
    read_trajectory,
)
from egohorizon.data.ingest.aria.vrs import (  # noqa: F401  (re-exported)
    EARLIEST_PLAUSIBLE_EPOCH,
    TimeBase,
    check_complete,
    describe_truncation,
    frame_period,
    make_time_base,
    open_vrs,
    sample_frame_indices,
    truncation_gap,
)
