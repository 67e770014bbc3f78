"""Real-frame hand clips from pseudo-labels: ``egohorizon hands clips SHARDS --labels LABELS --out DIR``.

``egohorizon hands label SHARDS`` writes MediaPipe's boxes for every shard frame as gold-format
``HandBox`` records (``clip`` = window, ``frame`` = 30 fps index from the window's start). This turns
the shard frames and those records into a clip folder of the layout the hands datamodule reads for
the demo world (``clips.jsonl``, ``boxes.jsonl``, ``segments.jsonl``, ``split.json``), so the hand
VLM trains on real frames with ``data.clips_dir=DIR``:

- each window is cut into clips of ``clip_s`` seconds (a 30 s window at 1 Hz -> five 6-frame clips);
  a clip's frames are written as JPEGs under ``frames/<clip>/`` and listed in its record
  (``"frames": {30 fps index from the clip's start: file}``), where the demo records have a seed;
- every frame is resized to one ``size`` (the datamodule feeds one frame size per run), each axis
  scaled on its own, and the boxes with it;
- ``segments.jsonl`` is empty: real frames carry no subtask, action or caption annotation here, so
  the targets hold box lines only;
- whole days are held out (``DaySplit``): ``val_days`` and ``test_days`` drawn with ``seed`` among the
  days that have a labelled box (a held-out split without one has nothing to score), the rest train.

Label lines that are not valid ``HandBox`` records, or name a window that is not in the shards, are
skipped and counted (file and line of the first few are kept); a labels file without one valid line,
or of another record type (an events file), is refused with its first bad lines or its type.
"""

from __future__ import annotations

import json
import logging
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from egohorizon.errors import ConfigError
from egohorizon.metrics.boxes import FPS

log = logging.getLogger(__name__)

MAX_LISTED = 20  # problems listed by file and line; the rest are only counted


def read_labels(path: str | Path) -> tuple[dict[str, list[dict[str, Any]]], list[str], int]:
    """Window -> its label records, the first problems (file, line, field) and the number skipped.

    A file of another record type (an events file given where labels are expected) or one without a
    single valid label is refused, naming the type or the first bad lines: skipping every line would
    end later in a puzzling "boxes on 0 days"."""
    from egohorizon.schema import HandBox, detect_record_type, iter_json_lines

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such labels file (write one with `egohorizon hands label SHARDS --out ...`)")
    kind = detect_record_type(path)
    if kind is not None and kind is not HandBox:
        raise ConfigError(f"{path}: {_kind_text(kind)}, not hand box labels ({{\"clip\", \"frame\", \"hand\", "
                          "\"box\"} lines); write labels with `egohorizon hands label SHARDS --out labels.jsonl`")
    by_window: dict[str, list[dict[str, Any]]] = defaultdict(list)
    problems, skipped, lines = [], 0, 0
    for line_no, obj, json_problem in iter_json_lines(path):
        lines += 1
        if json_problem:
            box, bad = None, [("", json_problem)]
        else:
            box, bad = HandBox.from_dict(obj) if isinstance(obj, dict) else (None, [("", "not a JSON object")])
        if bad:
            skipped += 1
            if len(problems) < MAX_LISTED:
                problems.append(f"{path}, line {line_no}: " + "; ".join(f"field {f!r}: {p}" if f else p for f, p in bad))
            continue
        by_window[box.clip].append({"frame": box.frame, "hand": box.hand, "box": list(box.box)})
    if not by_window and problems:  # an empty file is a detector that found no hand: the days check speaks
        first = "; ".join(problems[:3])
        raise ConfigError(f"{path}: no valid hand box label in {lines} lines; first problems: {first}")
    if skipped:
        log.warning("%s: %d of %d label lines skipped; first: %s", path, skipped, lines, problems[0])
    return dict(by_window), problems, skipped


def _kind_text(kind: type) -> str:
    from egohorizon.schema import Event

    if kind is Event:
        return "an events file (Event records, SPEC §5)"
    return f"a file of {kind.__name__} records"


def _resized(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    from PIL import Image

    width, height = size
    if image.shape[:2] == (height, width):
        return image
    return np.asarray(Image.fromarray(image).resize((width, height), Image.BILINEAR))


def _scaled(box: list[float], sx: float, sy: float, size: tuple[int, int]) -> list[float]:
    x1, y1, x2, y2 = box
    width, height = size
    return [round(min(max(v, 0.0), limit), 1) for v, limit in
            ((x1 * sx, width), (y1 * sy, height), (x2 * sx, width), (y2 * sy, height))]


def build_pseudo_clips(shards: str | Path, labels: str | Path, out: str | Path, *, clip_s: float = 6.0,
                       size: tuple[int, int] = (320, 240), val_days: int = 1, test_days: int = 1,
                       seed: int = 0) -> dict[str, Any]:
    """Write the clip folder (see the module's docstring); returns counts and the skipped problems."""
    from PIL import Image

    from egohorizon.data.splits import DaySplit
    from egohorizon.pipelines.hands.frames import annotation_grid, shard_frames

    if clip_s <= 0:
        raise ConfigError(f"--clip-seconds: expected > 0, got {clip_s}")
    by_window, problems, skipped = read_labels(labels)
    out = Path(out)
    (out / "frames").mkdir(parents=True, exist_ok=True)
    damaged: list[dict[str, Any]] = []
    clips, boxes, seen = [], [], set()
    for key, meta, frames in shard_frames(shards, damaged):
        seen.add(key)
        window_s = float(meta.get("end", 0.0)) - float(meta.get("start", 0.0))
        if frames:  # the clip reaches past its last frame
            window_s = max(window_s, max(t for t, _ in frames) + 1 / FPS)
        labelled = defaultdict(list)
        for record in by_window.get(key, []):
            labelled[record["frame"]].append(record)
        by_clip: dict[int, list[tuple[float, np.ndarray]]] = defaultdict(list)
        for t, image in frames:
            by_clip[int(t // clip_s)].append((t, image))
        for number, own in sorted(by_clip.items()):
            name = f"{key}_c{number:02d}"
            start = number * clip_s
            folder = out / "frames" / name
            folder.mkdir(parents=True, exist_ok=True)
            listed, own_boxes = {}, []
            for t, image in own:
                window_frame, frame = round(FPS * t), round(FPS * (t - start))
                sx, sy = size[0] / image.shape[1], size[1] / image.shape[0]
                file = f"frames/{name}/{frame:05d}.jpg"
                Image.fromarray(_resized(image, size)).save(out / file, quality=92)
                listed[str(frame)] = file
                own_boxes += [{"clip": name, "frame": frame, "hand": record["hand"],
                               "box": _scaled(record["box"], sx, sy, size)} for record in labelled.get(window_frame, [])]
            frame_ids = sorted(int(f) for f in listed)
            grid = annotation_grid(frame_ids)  # every frame of the clip was labelled: its spacing
            boxes += [{**record, "grid": grid} for record in own_boxes]
            clips.append({"clip": name, "participant": meta["participant"], "day": meta["day"],
                          "window": key, "width": size[0], "height": size[1],
                          "duration": round(min(clip_s, window_s - start), 3),
                          "frames": listed, "source": "shards"})
    unknown = sorted(set(by_window) - seen)
    days = sorted({(c["participant"], c["day"]) for c in clips})
    if len(days) <= val_days + test_days:
        raise ConfigError(f"{shards}: {len(days)} days of frames cannot hold out {val_days} validation and "
                          f"{test_days} test days and still train on one")
    # held-out days are drawn among days with a labelled box: a split without one has nothing to score
    boxed = {b["clip"] for b in boxes}
    labelled_days = sorted({(c["participant"], c["day"]) for c in clips if c["clip"] in boxed})
    if len(labelled_days) < val_days + test_days:
        # labels written for another shard folder match no window: say so, with a name of each
        unmatched = (f"; none of the {len(by_window)} labelled windows is in {shards} (e.g. label window "
                     f"{unknown[0]!r}, shard window {min(seen)!r})") if unknown and not boxed else ""
        raise ConfigError(f"{labels}: boxes on {len(labelled_days)} days, fewer than the {val_days} validation + "
                          f"{test_days} test days to hold out (a held-out day needs a labelled hand){unmatched}")
    held = random.Random(f"hands-pseudo/{seed}").sample(labelled_days, val_days + test_days)
    split_of = {d: "val" if d in held[:val_days] else "test" if d in held[val_days:] else "train" for d in days}
    participants: dict[str, dict[str, str]] = defaultdict(dict)
    for (participant, day), name in split_of.items():
        participants[participant][day] = name
    for clip in clips:
        clip["split"] = split_of[(clip["participant"], clip["day"])]
    _write_jsonl(out / "clips.jsonl", clips)
    _write_jsonl(out / "boxes.jsonl", boxes)
    _write_jsonl(out / "segments.jsonl", [])
    DaySplit(days=dict(participants), settings={"seed": seed, "val_days": val_days, "test_days": test_days,
                                                "source": f"pseudo-labels {labels}"}).save(out / "split.json")
    counts = {name: sum(c["split"] == name for c in clips) for name in ("train", "val", "test")}
    if skipped or unknown:
        log.warning("%d label lines skipped, %d labelled windows not in the shards", skipped, len(unknown))
    return {"out": str(out), "clips": counts, "frames": sum(len(c["frames"]) for c in clips), "boxes": len(boxes),
            "skipped_labels": skipped, "label_problems": problems, "labelled_windows_not_in_shards": len(unknown),
            "unknown_windows": unknown[:MAX_LISTED], "damaged_shards": damaged}


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
