#!/usr/bin/env python
"""Face detector recall and false positives on real frames (the counts in docs/shards.md).

Face frames (a partner's face is visible, checked by eye): the 10 frames of
``egohands-frames/faces/`` and the 23 frames of video CARDS_LIVINGROOM_B_T in
``egohands-frames/images/`` (``FACE_VIDEOS``), 33 in all. The other 77 frames of ``images/``
(CARDS_OFFICE_S_B, CHESS_COURTYARD_B_T, PUZZLE_LIVINGROOM_T_B) show the partner cut off by the
top edge, at most chin and mouth: neither a miss nor a false positive can be told there, so they are
reported apart (counting boxes there, not judging them). Face-free frames: all 23 Aria sample frames in
``projectaria-tools-testdata/derived_frames/`` (12 RGB, 11 grey eye-tracking frames).

    .venv/bin/python scripts/face_recall.py [--detector blazeface-full|blazeface-short] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
EGOHANDS = SHARED / "egohands-frames"
ARIA_FRAMES = SHARED / "projectaria-tools-testdata" / "derived_frames"
FACE_VIDEOS = ("CARDS_LIVINGROOM_B_T",)  # videos of images/ whose every frame shows the partner's face


def frame_sets(egohands: Path = EGOHANDS, aria: Path = ARIA_FRAMES) -> dict[str, list[Path]]:
    images = sorted((egohands / "images").glob("*.jpg"))
    return {
        "face": sorted((egohands / "faces").glob("*.jpg")) + [p for p in images if p.name.startswith(FACE_VIDEOS)],
        "face_free": sorted(aria.glob("*.jpg")),
        "cut_off": [p for p in images if not p.name.startswith(FACE_VIDEOS)],
    }


def make_detector(name: str):
    if name.startswith("blazeface-"):
        from egohorizon.data.deid.faces import BlazeFaceDetector

        return BlazeFaceDetector(variant=name.removeprefix("blazeface-"))
    raise SystemExit(f"unknown detector {name!r}")


def main(argv: list[str] | None = None) -> int:
    import cv2

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--detector", default="blazeface-full")
    parser.add_argument("--json", default=None, help="also write per-frame results here")
    args = parser.parse_args(argv)
    detector = make_detector(args.detector)
    rows, seconds = [], 0.0
    for group, paths in frame_sets().items():
        for path in paths:
            image = cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
            start = time.perf_counter()
            boxes = detector(image)
            seconds += time.perf_counter() - start
            rows.append({"group": group, "image": path.name, "faces": len(boxes), "boxes": [list(b) for b in boxes]})
    summary = {}
    for group in ("face", "face_free", "cut_off"):
        members = [r for r in rows if r["group"] == group]
        summary[group] = {"frames": len(members), "frames_with_a_face": sum(r["faces"] > 0 for r in members),
                          "boxes": sum(r["faces"] for r in members)}
    misses = [r["image"] for r in rows if r["group"] == "face" and not r["faces"]]
    fires = [r["image"] for r in rows if r["group"] == "face_free" and r["faces"]]
    face, free = summary["face"], summary["face_free"]
    print(f"{args.detector}: face frames found {face['frames_with_a_face']}/{face['frames']} "
          f"({face['boxes']} boxes); face-free frames fired on {free['frames_with_a_face']}/{free['frames']}; "
          f"cut-off frames with a box {summary['cut_off']['frames_with_a_face']}/{summary['cut_off']['frames']}; "
          f"{1000 * seconds / len(rows):.1f} ms/frame")
    if misses:
        print("missed:", " ".join(misses))
    if fires:
        print("fired on:", " ".join(fires))
    if args.json:
        Path(args.json).write_text(json.dumps({"detector": args.detector, "summary": summary, "frames": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
