"""Hand boxes for real frames: a folder of images (``egohorizon hands detect``) or the frames of a
shard folder (``egohorizon hands label``, pseudo-labels the VLM can be trained on), and the
hand-agnostic score of image boxes against a ``filename,width,height,class,xmin,ymin,xmax,ymax``
CSV (the EgoHands frames in ../shared/data/egohands-frames)."""

from __future__ import annotations

import csv
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from egohorizon.errors import ConfigError
from egohorizon.metrics.boxes import FPS, image_box_hits
from egohorizon.pipelines.image_folder import BadImages, image_files  # noqa: F401 (image_files: this module's before)

log = logging.getLogger(__name__)

# (rgb image) -> [(hand, [x1, y1, x2, y2], score), ...]
BoxFinder = Callable[[np.ndarray], list[tuple[str, list[float], float]]]


def mediapipe_finder(settings=None) -> BoxFinder:
    from egohorizon.pipelines.hands.detector import MediaPipeHands

    detector = MediaPipeHands(settings)

    def find(image: np.ndarray) -> list[tuple[str, list[float], float]]:
        return [(h.hand, list(h.box), round(h.score, 4)) for h in detector.detect(image)]

    return find


def detect_images(files: list[Path], find: BoxFinder) -> tuple[list[dict[str, Any]], BadImages]:
    """One record per box, ``{"image", "hand", "box", "score"}`` in the image's pixels as stored (no
    EXIF turn: gold CSVs give boxes in those pixels); unreadable images are skipped and kept in the
    returned ``BadImages`` (file and reason)."""
    records, bad = [], BadImages(total=len(files))
    for path in files:
        image = bad.read(path, upright=False)
        if image is not None:
            records += [{"image": path.name, "hand": hand, "box": box, "score": score}
                        for hand, box, score in find(image)]
    return records, bad


def _csv_key_example(gold: dict[str, list[list[float]]]) -> str:
    return repr(next(iter(gold))) if gold else "none: the CSV holds no boxes"


def refuse_unmatched_gold(gold_path: str | Path, gold: dict[str, list[list[float]]], images: list[str]) -> None:
    """None of the images (file names) in the gold CSV is almost always a mismatch of names (another
    folder, a path in the CSV, another frame numbering), and would score every box a false positive:
    refused, with an image name and a CSV key side by side. Checked before any detection."""
    if images and not any(name in gold for name in images):
        raise ConfigError(f"--gold {gold_path}: none of the {len(images)} images looked up is in it (e.g. image "
                          f"{images[0]!r}; a key of the CSV's filename column: {_csv_key_example(gold)}); images "
                          "are looked up by file name. Pass --allow-unlisted to score them as images without hands")


def warn_unlisted(gold_path: str | Path, gold: dict[str, list[list[float]]], images: list[str]) -> int:
    """Warns about the scored images (file names) the gold CSV does not list (an image without hands
    has no row in an EgoHands-style CSV, so some may be right); returns how many."""
    unlisted = [name for name in images if name not in gold]
    if unlisted:
        log.warning("--gold %s: %d of %d scored images are not in it (e.g. %r; a CSV key: %s) and are scored "
                    "as images without hands", gold_path, len(unlisted), len(images), unlisted[0],
                    _csv_key_example(gold))
    return len(unlisted)


def read_box_csv(path: str | Path) -> dict[str, list[list[float]]]:
    """Gold boxes by image file name from an EgoHands-style CSV; errors name file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--gold {path}: no such file (a filename,width,height,class,xmin,ymin,xmax,ymax CSV)")
    gold: dict[str, list[list[float]]] = defaultdict(list)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        needed = ("filename", "xmin", "ymin", "xmax", "ymax")
        missing = [f for f in needed if f not in (reader.fieldnames or [])]
        if missing:
            raise ConfigError(f"{path}, line 1: header lacks {', '.join(missing)} (expected {','.join(needed)})")
        for line, row in enumerate(reader, start=2):
            box = []
            for field in needed[1:]:
                try:
                    box.append(float(row[field]))
                except (TypeError, ValueError):
                    raise ConfigError(f"{path}, line {line}, field {field!r}: expected a number, "
                                      f"got {row[field]!r}") from None
            if box[2] < box[0] or box[3] < box[1]:
                raise ConfigError(f"{path}, line {line}: expected xmin <= xmax and ymin <= ymax, got {box}")
            gold[row["filename"]].append(box)
    return dict(gold)


def score_images(records: list[dict[str, Any]], gold: dict[str, list[list[float]]],
                 images: list[str]) -> dict[str, Any]:
    """Hand-agnostic hits / misses / false positives over ``images`` (file names); an image with
    no gold boxes contributes only false positives."""
    by_image: dict[str, list[list[float]]] = defaultdict(list)
    for record in records:
        by_image[record["image"]].append(record["box"])
    totals = {"hits": 0, "misses": 0, "false_positives": 0}
    for name in images:
        for key, value in image_box_hits(by_image.get(name, []), gold.get(name, [])).items():
            totals[key] += value
    boxes = sum(len(gold.get(name, [])) for name in images)
    return {"images": len(images), "gold_boxes": boxes, "predicted_boxes": sum(len(by_image[n]) for n in images),
            **totals, "hit_rate": totals["hits"] / boxes if boxes else None,
            "unscored_gold_images": sorted(set(gold) - set(images))}


def shard_frames(shards: str | Path, problems: list[dict[str, Any]]
                 ) -> Iterator[tuple[str, dict[str, Any], list[tuple[float, np.ndarray]]]]:
    """(window key, window meta, [(seconds from the window's start, frame)]) for every readable
    window of a shard folder; damaged samples are skipped, and once the folder is read ``problems``
    gets one entry per shard that lost any (shard, lost, reasons)."""
    from egohorizon.data.shards.encode import SampleError, decode_window
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.pipelines.caption.windows import ShardReader

    index = ShardIndex.load(Path(shards))
    reader = ShardReader(index, index.shards, done=set())
    for _, raw in reader:
        try:
            window = decode_window(raw, crops=False)
        except SampleError as error:
            reader.stats.bad(error.reason, raw.get("__url__", ""), str(error))
            continue
        start = float(window.meta.get("start", 0.0))
        yield window.key, window.meta, [(float(f["t"]) - start, image)
                                        for f, image in zip(window.meta["frames"], window.frames)]
    problems.extend(reader.problems())


def label_shards(shards: str | Path, find: BoxFinder, source: str,
                 problems: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Gold-format box records (SPEC §6 ``HandBox``) for the frames of every window: ``clip`` = the
    window, ``frame`` = its 30 fps index from the window's start, ``grid`` = the frames' spacing (a
    1 Hz shard: 30), plus the detector's ``score`` and ``source``. Frames in the shard's pixels."""
    for key, _, frames in shard_frames(shards, problems):
        indices = [round(FPS * t) for t, _ in frames]
        grid = annotation_grid(indices)
        for frame, (_, image) in zip(indices, frames):
            for hand, box, score in find(image):
                yield {"clip": key, "frame": frame, "hand": hand, "box": box, "grid": grid,
                       "score": score, "source": source}


def annotation_grid(frames: list[int]) -> int:
    """The coarsest grid N (SPEC §4: frames 0, N, 2N, ...) that every frame index lies on."""
    import math

    grid = 0
    for frame in frames:
        grid = math.gcd(grid, frame)
    return grid or 1
