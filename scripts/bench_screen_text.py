"""Screen-text masking: today's full-frame OCR against region-first OCR, in one run on the same frames.

Frames: real 1408x1408 Aria RGB frames (../shared/data/projectaria-tools-testdata/derived_frames) with
text panels drawn on them (egohorizon.data.deid.text_frames): e-mails, phone numbers, card numbers,
addresses and listed names among distractors (prices, dates, times, words), at 12-64 px. Prints per
method: wall and CPU seconds per frame (CPU includes the tesseract processes), recall of sensitive
items (an item counts when 90% of its ink is under a masked box) and distractors touched (30% of ink).

    .venv/bin/python scripts/bench_screen_text.py --frames 22
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FRAMES_DIR = ROOT.parent / "shared" / "data" / "projectaria-tools-testdata" / "derived_frames"


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(masker, frames) -> dict[str, float]:
    from egohorizon.data.deid.text_frames import ink_hidden

    wall = cpu = 0.0
    hidden = total = touched = distractors = 0
    for image, items in frames:
        start_wall, start_cpu = time.perf_counter(), cpu_seconds()
        boxes = [box for box, _ in masker.find(image)]
        wall += time.perf_counter() - start_wall
        cpu += cpu_seconds() - start_cpu
        for item in items:
            if item.sensitive:
                total += 1
                hidden += ink_hidden(item, boxes)
            else:
                distractors += 1
                touched += ink_hidden(item, boxes, share=0.3)
    return {"wall_s": wall / len(frames), "cpu_s": cpu / len(frames), "hidden": hidden, "total": total,
            "touched": touched, "distractors": distractors}


def main(argv: list[str] | None = None) -> int:
    import cv2

    from egohorizon.data.deid.screen_text import ScreenTextMasker
    from egohorizon.data.deid.text_frames import NAMES, make_text_frame

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=22, help="made frames (backgrounds cycle)")
    parser.add_argument("--frames-dir", type=Path, default=DEFAULT_FRAMES_DIR)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    paths = []
    for path in sorted(args.frames_dir.glob("*camera-rgb*.jpg")):
        image = cv2.imread(str(path))
        if image is not None and image.shape[:2] == (1408, 1408):
            paths.append(path)
    if not paths:
        print(f"no 1408x1408 Aria RGB frames in {args.frames_dir}", file=sys.stderr)
        return 1
    rng = random.Random(args.seed)
    frames = []
    for number in range(args.frames):
        background = cv2.cvtColor(cv2.imread(str(paths[number % len(paths)])), cv2.COLOR_BGR2RGB)
        frames.append(make_text_frame(background, rng, panels=3, lines=5, sizes=(12, 64)))
    print(f"{len(frames)} frames 1408x1408 ({len(paths)} Aria backgrounds), "
          f"{sum(i.sensitive for _, items in frames for i in items)} sensitive items, "
          f"{sum(not i.sensitive for _, items in frames for i in items)} distractors")

    regions = ScreenTextMasker(NAMES, method="regions")
    regions.find(frames[0][0])  # loads the model once, as a long run does
    results = {
        "full frame (today)": measure(ScreenTextMasker(NAMES, method="full"), frames),
        "region-first": measure(regions, frames),
    }
    for name, r in results.items():
        print(f"{name:20s} wall {r['wall_s']:.3f} s/frame  cpu {r['cpu_s']:.3f} s/frame  recall "
              f"{r['hidden']}/{r['total']} = {r['hidden'] / r['total']:.3f}  distractors touched "
              f"{r['touched']}/{r['distractors']}")
    full, fast = results["full frame (today)"], results["region-first"]
    print(f"speed-up: wall {full['wall_s'] / fast['wall_s']:.1f}x, cpu {full['cpu_s'] / fast['cpu_s']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
