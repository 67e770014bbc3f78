"""``egohorizon ingest aria|video``: recordings -> ingested recording folders (frames, gaze, words)."""

from __future__ import annotations

import argparse
from pathlib import Path

from egohorizon.commands import write_result
from egohorizon.commands._args import nonneg_float, out_dir, positive_float
from egohorizon.commands._owned import declare_output


def day_arg(value: str) -> str:
    """An argparse type: a real calendar day (a placeholder label, as the schema allows, starts with a
    letter). --day 2025-13-45 was only refused by the record check after every frame was written, and
    the folder it left made the corrected rerun ask for --overwrite."""
    import datetime as dt

    if value[:1].isdigit():
        try:
            if len(value) != 10:
                raise ValueError(value)
            dt.date.fromisoformat(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a calendar day YYYY-MM-DD, got {value!r}") from None
    elif not value.strip():
        raise argparse.ArgumentTypeError("expected a calendar day YYYY-MM-DD, got an empty string")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest", help="sample frames (1 Hz), gaze and speech from Aria VRS or video files",
        description="Turn a recording into an ingested recording folder (recording.json, frames.jsonl, "
                    "frames/*.jpg at native resolution, transcript.jsonl) that `egohorizon shards build` reads.")
    sub = parser.add_subparsers(dest="ingest_command", metavar="SOURCE", required=True)

    aria = sub.add_parser("aria", help="a Project Aria VRS file with its MPS eye gaze and speech.csv",
                          description="Sample the RGB stream at --rate Hz, match MPS eye gaze to each frame "
                                      "(nearest sample within --gaze-tolerance s) and project it into the "
                                      "image through the device calibration; group speech.csv words by time.")
    aria.add_argument("vrs", help="the .vrs file")
    aria.add_argument("--mps", help="MPS output folder (default: <vrs folder>/mps when present); the eye-gaze "
                                    "CSV (personalized, general, generalized, eyegaze.csv), hand tracking and "
                                    "closed-loop trajectory are found inside; its other files are listed as "
                                    "mps_not_read in the summary")
    aria.add_argument("--gaze", help="an eye-gaze CSV, instead of searching --mps")
    aria.add_argument("--hands", help="an MPS hand_tracking_results*.csv or wrist_and_palm_poses*.csv, instead of "
                                      "searching --mps (wrist and palm are projected into each frame)")
    aria.add_argument("--trajectory", help="an MPS closed_loop_trajectory.csv, instead of searching --mps "
                                           "(the device pose of each frame)")
    aria.add_argument("--mps-tolerance", type=positive_float, default=0.1,
                      help="seconds between a frame and the hand or trajectory sample matched to it (default 0.1)")
    aria.add_argument("--speech", help="speech.csv (default: <vrs folder>/speech.csv when present)")
    aria.add_argument("--gaze-tolerance", type=positive_float, default=0.1, help="seconds (default 0.1)")
    aria.add_argument("--upright", choices=("auto", "yes", "no"), default="auto",
                      help="turn frames upright (auto: Gen1 yes, Gen2 no)")
    aria.add_argument("--time-base", choices=("epoch", "device"), default="epoch",
                      help="epoch: the VRS clock's wall time (default); device: device seconds (then pass --day)")
    aria.add_argument("--allow-truncated", action="store_true",
                      help="ingest a VRS file that holds fewer records than its index lists (a cut copy) "
                           "instead of refusing it; the gap is recorded in recording.json")
    _common(aria)
    aria.set_defaults(handler=run_aria)

    video = sub.add_parser("video", help="an MP4 (or any container decord/PyAV reads)",
                           description="Sample frames at --rate Hz with decord (PyAV for VP9/AV1 and when decord "
                                       "fails); a damaged file keeps the frames that decode and reports the rest.")
    video.add_argument("video", help="the video file")
    video.add_argument("--start-time", type=_start_time,
                       help="epoch seconds (UTC) of the first frame, from 1990-01-01 (631152000) to one day "
                            "from now; not milliseconds (default: the container's creation_time when it is "
                            "in that range; else relative times, then pass --day)")
    video.add_argument("--backend", choices=("auto", "decord", "pyav"), default="auto",
                       help="video decoder; auto: decord, PyAV for VP9/AV1 or when decord fails")
    _common(video)
    video.set_defaults(handler=run_video)


def _start_time(value: str) -> float:
    """An argparse type: a plausible start time in epoch seconds (video.check_start_time), so a
    value in milliseconds fails with a hint before any work."""
    from egohorizon.data.ingest.video import check_start_time
    from egohorizon.errors import DataError

    try:
        return check_start_time(float(value), "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected epoch seconds, got {value!r}") from None
    except DataError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix(": ")) from None


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=out_dir, help="the recording folder to write")
    parser.add_argument("--participant", required=True, help="participant id the recording belongs to, e.g. p1")
    parser.add_argument("--day", type=day_arg, help="calendar day YYYY-MM-DD (default: from the recording's clock)")
    parser.add_argument("--session", help="session id (default: the file name)")
    parser.add_argument("--rate", type=nonneg_float, default=1.0, help="frames per second to keep (default 1; 0: all)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing recording folder written by this command (never another folder)")
    declare_output(parser, inputs=("vrs", "mps", "gaze", "hands", "trajectory", "speech", "video"),
                   flag="--overwrite", add_flag=False, legacy=("recording.json",))


def _summary(recording, **extra) -> None:
    meta = recording.meta
    write_result({"out": str(recording.root), "recording": recording.recording.id,
                  "start": recording.recording.start, "end": recording.recording.end,
                  "frames": meta.get("frames"), "words": meta.get("words"),
                  "gaze_status_counts": meta.get("gaze_status_counts"),
                  "warnings": meta.get("warnings", []), **extra})


def run_aria(args: argparse.Namespace) -> int:
    from egohorizon.data.ingest.aria import find_mps_files, ingest_aria
    from egohorizon.errors import DataError

    vrs = Path(args.vrs)
    mps = Path(args.mps) if args.mps else vrs.parent / "mps"
    if args.mps and not mps.is_dir():
        raise DataError(f"{mps}: --mps: no such folder")
    files = find_mps_files(mps, gaze=args.gaze, hands=args.hands, trajectory=args.trajectory)
    if args.mps and not (files.gaze or files.hands or files.trajectory):
        raise DataError(f"{mps}: no eye-gaze, hand-tracking or closed-loop trajectory CSV found (looked for "
                        "eye_gaze/*_eye_gaze.csv, eyegaze.csv, hand_tracking/hand_tracking_results*.csv, "
                        "wrist_and_palm_poses*.csv, slam/closed_loop_trajectory.csv)")
    speech = args.speech or (vrs.parent / "speech.csv" if (vrs.parent / "speech.csv").is_file() else None)
    upright = {"auto": None, "yes": True, "no": False}[args.upright]
    recording = ingest_aria(vrs, args.out, participant=args.participant, day=args.day, session=args.session,
                            gaze_csv=files.gaze, speech_csv=speech, rate_hz=args.rate or None,
                            gaze_tolerance_s=args.gaze_tolerance, upright=upright, time_base=args.time_base,
                            overwrite=args.overwrite, allow_truncated=args.allow_truncated,
                            hands_csv=files.hands, trajectory_csv=files.trajectory,
                            mps_tolerance_s=args.mps_tolerance, mps_not_read=files.not_read)
    meta = recording.meta
    # What of the MPS folder went in (hands, poses) and what did not, so nothing is dropped unsaid.
    _summary(recording, truncated=meta.get("truncated"), hand_status_counts=meta.get("hand_status_counts"),
             pose_frames=meta.get("pose_frames"), mps_not_read=meta.get("mps_not_read"))
    return 0


def run_video(args: argparse.Namespace) -> int:
    from egohorizon.data.ingest.video import ingest_video

    recording = ingest_video(args.video, args.out, participant=args.participant, day=args.day,
                             session=args.session, rate_hz=args.rate or None, start_time=args.start_time,
                             backend=args.backend, overwrite=args.overwrite)
    # The backend used and what a cut-off or damaged file lost (issue 9).
    _summary(recording, decode=recording.meta.get("decode"))
    return 0
