"""The hand annotator on real frames, leave one video out (issue 40, item 2; docs/hands.md).

    nice -n 19 python scripts/hands_loo_study.py [--out outputs/hands_loo] [--steps 16] [--fractions 0.25 0.5 1]

The EgoHands frames (``../shared/data/egohands-frames``: 100 frames of 4 videos) make 4 folds: each
video is the test video once, the next one (in name order) chooses the checkpoint, the other two train.
Every fold trains ``experiment=hands_effnet_smollm2`` (projector + LoRA, flips and crops) through
``train.py`` on 25 / 50 / 100 % of its training frames (nested: a seeded order, each a prefix), the
checkpoint chosen on the validation video, then writes the test video's boxes once. The same test frames
are scored for:

- the box prior: the fold's training boxes' mean left-half and right-half boxes (``metrics.hand_agnostic``);
- MediaPipe's palm and landmark networks at the hand landmarker's default thresholds (palm 0.5,
  presence 0.5, 2 hands, whole frame: ``MEDIAPIPE_DEFAULTS``; nothing trained, so one pass over all 100);
- the toy VLM (``backbone=tiny``: random weights), trained like the model at 100 %.

Scores are hand-agnostic (hits / (gold boxes + predicted boxes that hit no gold box)), pooled over the
4 test videos, with a 95 % frame-bootstrap interval and, against the box prior, the paired bootstrap
interval of the difference; then per fold, each predictor's pooled fraction on that fold's test video
(the learning curve). A run whose ``reports/test.json`` exists is reused (``--fresh`` retrains).
Output: ``<out>/table.md``, ``table.json``, printed as each row is done. One fraction alone
(``--fractions 0.25 --no-toy``) still prints the box prior and MediaPipe rows beside it.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from egohorizon.metrics.hand_agnostic import (
    bootstrap_difference,
    bootstrap_fraction,
    frame_hits,
    half_prior_boxes,
    pooled_fraction,
    prior_predictions,
)
from egohorizon.pipelines.hands.egohands import find_frames, read_frames

log = logging.getLogger("hands_loo_study")


def folds(videos: list[str]) -> list[tuple[str, str, list[str]]]:
    """(test video, validation video, training videos) per fold."""
    out = []
    for i, test in enumerate(videos):
        val = videos[(i + 1) % len(videos)]
        out.append((test, val, [v for v in videos if v not in (test, val)]))
    return out


def train_run(run_dir: Path, test: str, val: str, fraction: float, args, toy: bool = False) -> list[dict]:
    """One fold's training through train.py; the test video's per-frame rows of its report."""
    report = run_dir / "reports" / "test.json"
    if not report.is_file() or args.fresh:
        overrides = [
            "experiment=hands_effnet_smollm2", f"data.frames_dir={args.frames}", f"data.test_video={test}",
            f"data.val_video={val}", f"data.train_fraction={fraction}", "test_after_fit=true",
            "data.mediapipe_baseline=false", f"trainer.max_steps={args.steps}",
            f"trainer.val_check_interval={args.val_every}", f"paths.run_dir={run_dir}", "logger=csv",
            f"seed={args.seed}",
        ]
        if toy:
            overrides += ["backbone=tiny", "~backbone.image_size"]
        else:
            overrides += [f"backbone.image_size={args.image_size}"]
        started = time.time()
        result = subprocess.run([sys.executable, str(ROOT / "train.py"), *overrides], cwd=ROOT,
                                capture_output=True, text=True, check=False)  # a failed run is reported below
        if result.returncode or not report.is_file():
            raise SystemExit(f"train.py failed for {run_dir} (exit {result.returncode}):\n{result.stderr[-3000:]}")
        log.info("%s: trained in %.0f s", run_dir.name, time.time() - started)
    return json.loads(report.read_text())["boxes"]["per_frame"]


def mediapipe_rows(folder: Path, frames) -> list[dict]:
    from egohorizon.pipelines.hands.detector import MEDIAPIPE_DEFAULTS
    from egohorizon.pipelines.hands.frames import detect_images, mediapipe_finder

    records, _bad = detect_images([folder / "images" / f.name for f in frames], mediapipe_finder(MEDIAPIPE_DEFAULTS))
    found: dict[str, list] = {}
    for record in records:
        found.setdefault(record["image"].rsplit(".", 1)[0], []).append(record["box"])
    return frame_hits({f.name.rsplit(".", 1)[0]: f.boxes for f in frames}, found)


def summarise(name: str, rows: list[dict], prior: list[dict] | None, n_boot: int, seed: int) -> dict:
    pooled = pooled_fraction(rows)
    low, high = bootstrap_fraction(rows, n_boot, seed)
    out = {"predictor": name, **{k: pooled[k] for k in ("chf", "hits", "annotated", "false_positive_frames",
                                                         "predicted", "n_frames")}, "low": low, "high": high}
    if prior is not None:
        out["vs_prior_low"], out["vs_prior_high"] = bootstrap_difference(rows, prior, n_boot, seed)
    return out


def markdown(rows: list[dict]) -> str:
    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}"

    lines = [("| predictor | hit fraction % (95 % CI) | hits / gold boxes | false positives | predicted boxes "
              "| minus box prior, 95 % CI (points) |"), "|---|---|---|---|---|---|"]
    for r in rows:
        diff = (f"{pct(r['vs_prior_low'])} to {pct(r['vs_prior_high'])}" if "vs_prior_low" in r else "")
        lines.append(f"| {r['predictor']} | {pct(r['chf'])} ({pct(r['low'])}-{pct(r['high'])}) | "
                     f"{r['hits']} / {r['annotated']} | {r['false_positive_frames']} | {r['predicted']} | {diff} |")
    return "\n".join(lines)


def per_fold(named_rows: dict[str, list[dict]], video_of: dict[str, str], tests: list[str]) -> dict:
    """{test video: {predictor: pooled hit fraction on that video's frames, or None}}: the per-fold columns."""
    return {test: {name: pooled_fraction([r for r in rows if video_of[r["frame"]] == test])["chf"]
                   for name, rows in named_rows.items()} for test in tests}


def per_fold_markdown(folds_done: list[tuple[str, str, list[str]]], table: dict, counts: dict) -> str:
    """One line per fold: test video (validation video), its frames / gold boxes, each predictor's fraction."""
    names = list(next(iter(table.values()))) if table else []
    lines = ["| test video (validation video) | test frames / boxes | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    for test, val, _ in folds_done:
        cells = ["n/a" if table[test][n] is None else f"{table[test][n]:.3f}" for n in names]
        lines.append(f"| {test} ({val}) | {counts[test][0]} / {counts[test][1]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", default="egohands-frames", help="the frames folder, or its name in a data home")
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "hands_loo")
    parser.add_argument("--fractions", type=float, nargs="+", default=[1.0, 0.5, 0.25],
                        help="shares of each fold's training frames, run in this order")
    parser.add_argument("--steps", type=int, default=20, help="optimiser steps per run (batch 4)")
    parser.add_argument("--val-every", type=int, default=10, help="validation (checkpoint choice) every N steps")
    parser.add_argument("--image-size", type=int, default=160)
    parser.add_argument("--folds", type=int, nargs="*", help="fold indices to run (default: all)")
    parser.add_argument("--no-toy", action="store_true", help="leave out the toy VLM rows")
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fresh", action="store_true", help="retrain runs that already have a test report")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    folder = find_frames(args.frames)
    frames = read_frames(folder)
    videos = sorted({f.video for f in frames})
    chosen = [fold for i, fold in enumerate(folds(videos)) if args.folds is None or i in args.folds]
    args.out.mkdir(parents=True, exist_ok=True)
    by_id = {f.name.rsplit(".", 1)[0]: f for f in frames}
    test_ids = [fid for fid, f in sorted(by_id.items()) if f.video in {test for test, _, _ in chosen}]

    video_of = {fid: f.video for fid, f in by_id.items()}
    tests = [test for test, _, _ in chosen]
    counts = {test: (sum(f.video == test for f in frames), sum(len(f.boxes) for f in frames if f.video == test))
              for test in tests}
    pooled: dict[str, list[dict]] = {"box prior": []}
    for test, _, train in chosen:
        training = [(box, (f.height, f.width)) for f in frames if f.video in train for box in f.boxes]
        relative = half_prior_boxes(training)
        scored = {fid: by_id[fid].boxes for fid in test_ids if by_id[fid].video == test}
        pooled["box prior"] += frame_hits(scored, {fid: prior_predictions(relative, (by_id[fid].height,
                                                                                     by_id[fid].width))
                                                   for fid in scored})
    pooled["box prior"].sort(key=lambda r: r["frame"])
    prior = pooled["box prior"]
    table = [summarise("box prior (training boxes' mean left- and right-half box)", prior, None, args.n_boot,
                       args.seed)]
    print(markdown(table), flush=True)
    mediapipe = [r for r in mediapipe_rows(folder, frames) if r["frame"] in set(test_ids)]
    table.append(summarise("MediaPipe networks, hand landmarker default thresholds", mediapipe, prior,
                           args.n_boot, args.seed))
    print(markdown(table[-1:]).splitlines()[-1], flush=True)
    named = {"box prior": prior, "MediaPipe": mediapipe}

    runs = [(f"effnet_smollm2, {round(100 * fraction)} % of training frames", fraction, False)
            for fraction in args.fractions]
    if not args.no_toy:  # right after the first fraction's row (the full one by default): the rows that matter first
        runs.insert(1, ("toy VLM (tiny, random weights), 100 %", 1.0, True))
    for name, fraction, toy in runs:
        rows = []
        for test, val, _ in chosen:
            tag = f"{'toy' if toy else 'effnet'}_f{round(100 * fraction):03d}_{test}"
            rows += train_run(args.out / tag, test, val, fraction, args, toy)
        rows.sort(key=lambda r: r["frame"])
        table.append(summarise(name, rows, prior, args.n_boot, args.seed))
        named["toy VLM, 100 %" if toy else f"{round(100 * fraction)} %"] = rows
        print(markdown(table[-1:]).splitlines()[-1], flush=True)
        fold_table = per_fold(named, video_of, tests)
        (args.out / "table.json").write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                                         "folds": chosen, "rows": table, "per_fold": fold_table},
                                                        indent=2))
        (args.out / "table.md").write_text(markdown(table) + "\n\nPer fold (pooled over the test video):\n\n"
                                           + per_fold_markdown(chosen, fold_table, counts) + "\n")
    print(markdown(table))
    print("\nPer fold (pooled over the test video):\n")
    print(per_fold_markdown(chosen, per_fold(named, video_of, tests), counts))


if __name__ == "__main__":
    main()
