"""``egohorizon hands detect IMAGES_DIR --out boxes.jsonl``: left/right hand boxes for a folder of
images (``--gold boxes.csv`` also scores them hand-agnostically); ``egohorizon hands label SHARDS
--out boxes.jsonl``: gold-format box records for every frame of a shard folder (pseudo-labels);
``egohorizon hands clips SHARDS --labels boxes.jsonl --out DIR``: those frames and labels as a clip
folder the hand VLM trains on (``data.clips_dir``);
``egohorizon hands aria VRS``: the detector scored against an Aria gen2 recording's own hand tracking.
The detector is MediaPipe's palm + landmark models (``egohorizon.pipelines.hands.detector``)."""

from __future__ import annotations

import argparse

from egohorizon.commands import write_result
from egohorizon.commands._args import (
    bounded_int,
    fraction,
    nonneg_int,
    out_dir,
    out_file,
    positive_float,
    positive_int,
    seed,
)
from egohorizon.commands._owned import declare_output
from egohorizon.pipelines.image_folder import add_allow_bad, damaged_shards_status

MODELS = ("mediapipe", "mediapipe-defaults")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("hands", help="hand boxes on real frames (MediaPipe's bundled hand models)",
                                   description="Left/right hand boxes from MediaPipe's palm + landmark models, "
                                               "offline on CPU (docs/hands.md).")
    sub = parser.add_subparsers(dest="hands_command", metavar="SUBCOMMAND", required=True)
    detect = sub.add_parser("detect", help="boxes for a folder of images, one JSON line per box",
                            description='One line per box: {"image", "hand": "left|right", "box": [x1, y1, x2, '
                                        'y2], "score"} in the image\'s pixels. With --gold, the result also holds '
                                        'hand-agnostic hits, misses and false positives.')
    detect.add_argument("images", help="a folder of .jpg/.png images")
    detect.add_argument("--out", required=True, type=out_file, help="the boxes JSONL to write")
    detect.add_argument("--gold", help="a filename,width,height,class,xmin,ymin,xmax,ymax CSV to score against")
    detect.add_argument("--allow-unlisted", action="store_true",
                        help="with --gold: score images the CSV does not list as images without hands even when "
                             "it lists none of them (default: an error, the names most likely do not match)")
    add_allow_bad(detect)
    _add_model(detect)
    detect.set_defaults(handler=run_detect)
    declare_output(detect, inputs=("images", "gold"), kind="file")
    label = sub.add_parser("label", help="box records for every frame of a shard folder (pseudo-labels)",
                           description='Gold-format records {"clip": window, "frame": 30 fps index from the '
                                       'window start, "hand", "box", "grid", "score", "source"} in the shard '
                                       'frames\' pixels.')
    label.add_argument("shards", help="a shard folder (with index.json)")
    label.add_argument("--out", required=True, type=out_file, help="the box records JSONL to write")
    add_allow_bad(label)
    _add_model(label)
    label.set_defaults(handler=run_label)
    declare_output(label, inputs=("shards",), kind="file")
    clips = sub.add_parser("clips", help="a training clip folder from shard frames and their pseudo-labels",
                           description="Cuts every shard window into short clips, writes their frames (one size) "
                                       "and the label records of `hands label` as the clip folder the hands "
                                       "datamodule trains on (data.clips_dir); whole days held out.")
    clips.add_argument("shards", help="the shard folder the labels were written for")
    clips.add_argument("--labels", required=True, help="the box records of `egohorizon hands label`")
    clips.add_argument("--out", required=True, type=out_dir, help="the clip folder to write")
    clips.add_argument("--clip-seconds", type=positive_float, default=6.0, help="clip length in seconds (default 6)")
    clips.add_argument("--size", default="320x240", help="WIDTHxHEIGHT every frame is resized to (default 320x240)")
    clips.add_argument("--val-days", type=nonneg_int, default=1, help="held-out validation days (default 1)")
    clips.add_argument("--test-days", type=nonneg_int, default=1, help="held-out test days (default 1)")
    clips.add_argument("--seed", type=seed, default=0, help="draws the held-out days")
    add_allow_bad(clips)
    clips.set_defaults(handler=run_clips)
    declare_output(clips, inputs=("shards", "labels"))
    aria = sub.add_parser("aria", help="score the detector against an Aria gen2 recording's own hand tracking",
                          description="The device's 21 hand landmarks per hand, projected into each RGB frame "
                                      "through the calibration, give real left/right boxes without annotation; "
                                      "the detector is scored per hand and hand-agnostically.")
    aria.add_argument("vrs", help="a gen2 VRS file with the handtracking stream")
    aria.add_argument("--out", type=out_file, help="also write the per-frame gold and found boxes (JSON)")
    _add_model(aria)
    aria.set_defaults(handler=run_aria)
    declare_output(aria, inputs=("vrs",), kind="file")


def _add_model(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="mediapipe",
                        help="mediapipe (tuned thresholds, default), mediapipe-defaults (MediaPipe's own) or a "
                             "trained hands adapter (*.adapter folder, .ckpt or run folder of train.py task=hands)")
    parser.add_argument("--min-palm-score", type=fraction,
                        help="palm detector threshold, 0-1 (default: the --model setting's)")
    parser.add_argument("--min-presence", type=fraction,
                        help="hand landmark presence threshold, 0-1 (default: the --model setting's)")
    parser.add_argument("--max-hands", type=positive_int, help="most hands per image (default: the --model setting's)")
    parser.add_argument("--tiles", type=bounded_int(0, 2), choices=(0, 1, 2),
                        help="0: whole frame only; 1, 2: also tiles (default: the --model setting's)")


def _finder(args: argparse.Namespace):
    from dataclasses import replace

    from egohorizon.errors import ConfigError
    from egohorizon.pipelines.hands.detector import (
        HAND_DETECTOR_VERSION,
        MEDIAPIPE_DEFAULTS,
        HandDetectorSettings,
    )
    from egohorizon.pipelines.hands.frames import mediapipe_finder

    if args.model not in MODELS:
        from pathlib import Path

        if not Path(args.model).exists():
            raise ConfigError(f"--model: expected one of {', '.join(MODELS)} or a trained hands adapter (a "
                              f"*.adapter folder, .ckpt or run folder), got {args.model!r}")
        from egohorizon.pipelines.hands.vlm import adapter_finder

        return adapter_finder(args.model)
    settings = MEDIAPIPE_DEFAULTS if args.model == "mediapipe-defaults" else HandDetectorSettings()
    changes = {name: getattr(args, name) for name in ("min_palm_score", "min_presence", "max_hands", "tiles")
               if getattr(args, name) is not None}
    settings = replace(settings, **changes)
    return mediapipe_finder(settings), {"detector": HAND_DETECTOR_VERSION, "settings": settings.__dict__}


def _write_jsonl(path: str, records) -> int:
    import json
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
            count += 1
    return count


def run_detect(args: argparse.Namespace) -> int:
    from egohorizon.pipelines.hands.frames import (
        detect_images,
        image_files,
        read_box_csv,
        refuse_unmatched_gold,
        score_images,
        warn_unlisted,
    )

    files = image_files(args.images)
    gold = None
    if args.gold:  # read and matched to the images before any detection: a mismatch fails in a second
        gold = read_box_csv(args.gold)
        if not args.allow_unlisted:
            refuse_unmatched_gold(args.gold, gold, [p.name for p in files])
    find, provenance = _finder(args)
    records, bad = detect_images(files, find)
    _write_jsonl(args.out, records)
    result = {"out": args.out, "images": len(files), "boxes": len(records), "skipped": bad.skipped, **provenance}
    if gold is not None:
        skipped = {s["image"] for s in bad.skipped}
        scored = [p.name for p in files if p.name not in skipped]
        result["score"] = score_images(records, gold, scored)
        result["score"]["images_not_in_gold"] = warn_unlisted(args.gold, gold, scored)
    write_result(result)
    return bad.exit_status(args.allow_bad)


def run_label(args: argparse.Namespace) -> int:
    from egohorizon.pipelines.hands.frames import label_shards

    find, provenance = _finder(args)
    problems: list[dict] = []
    count = _write_jsonl(args.out, label_shards(args.shards, find, provenance["detector"], problems))
    write_result({"out": args.out, "boxes": count, "damaged_shards": problems, **provenance})
    return damaged_shards_status(problems, args.allow_bad)


def run_clips(args: argparse.Namespace) -> int:
    from egohorizon.errors import ConfigError
    from egohorizon.pipelines.hands.pseudo import build_pseudo_clips

    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        raise ConfigError(f"--size: expected WIDTHxHEIGHT such as 320x240, got {args.size!r}") from None
    if width < 1 or height < 1:
        raise ConfigError(f"--size: expected positive sides, got {args.size!r}")
    result = build_pseudo_clips(args.shards, args.labels, args.out, clip_s=args.clip_seconds,
                                size=(width, height), val_days=args.val_days, test_days=args.test_days, seed=args.seed)
    write_result(result)
    return damaged_shards_status(result["damaged_shards"], args.allow_bad)


def run_aria(args: argparse.Namespace) -> int:
    import json

    from egohorizon.pipelines.hands.aria import aria_hand_frames, score_hands

    find, provenance = _finder(args)
    report = score_hands(aria_hand_frames(args.vrs), find)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(report["per_frame"], handle, indent=1)
    write_result({k: v for k, v in report.items() if k != "per_frame"} | {"vrs": args.vrs, **provenance})
    return 0
