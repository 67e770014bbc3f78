"""HD-EPIC VQA benchmark -> multiple-choice QA items (5 options each).

Where to get the files: https://github.com/hd-epic/hd-epic-annotations, folder ``vqa-benchmark/``
(one JSON file per question prototype, e.g. ``recipe_step_localization.json``; CC BY-NC 4.0).
``youtube-links/HD_EPIC_YouTube_URLs.csv`` is read too when present, to flag evidence videos that are
not in the release. Every ``*.json`` file in a folder called ``vqa-benchmark`` under ``--root`` is read.

Each file maps an item id (``<task>_<n>``) to ``inputs``, ``question``, ``choices`` and
``correct_idx`` (0-based), sometimes with ``metadata`` or ``stat``. Mapping:
- ``task`` = the file name without ``.json``; ``meta.category`` = its first part (recipe, ingredient,
  nutrition, fine_grained, 3d_perception, object_motion, gaze);
- ``answer`` = the letter of ``correct_idx`` (0 -> A);
- ``options`` = the choices; a choice that is a list (``ingredient_ingredients_order``) is joined with
  ", " and the original kept in ``meta.choices``;
- ``evidence`` = one entry per input, in input order: ``{"video", "start", "end", "input", "kind"}``
  with times in seconds from the start of that video. A "video N" input with ``start_time`` /
  ``end_time`` gives that range; one without gives the whole video (``start``/``end`` null); an
  "image N" input gives ``start == end ==`` its ``time``. Time tags inside questions and choices
  (``<TIME 00:03:1.8 video 1>``, ``<BBOX ...>``) are left in the text as the benchmark has them;
- ``participant`` = ``hd-PXX`` when every input video belongs to one participant, else "" (a few
  nutrition items compare images of several participants; ``meta.participants`` lists them);
- ``level`` is not set: HD-EPIC's prototypes are not EgoMonth's L1-L3 tasks;
- ``meta`` keeps the original ``inputs``, ``correct_idx`` and any other field (``metadata``, ``stat``).
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from egohorizon.data.sources._common import Conversion, FileIndex, clock_seconds, read_csv
from egohorizon.errors import DataError
from egohorizon.schema import QAItem

SOURCE = "hd-epic-vqa"
CATEGORIES = ("3d_perception", "fine_grained", "object_motion", "recipe", "ingredient", "nutrition", "gaze")


def convert(root: str | Path) -> Conversion:
    index = FileIndex(root)
    paths = [p for p in index.matching(r".+\.json") if p.parent.name == "vqa-benchmark"]
    if not paths:
        raise DataError(f"{root}: no vqa-benchmark/*.json files found")
    known_videos = _known_videos(index)
    conversion = Conversion(SOURCE)
    seen: dict[str, Path] = {}
    for path in paths:
        for item in _read_file(path, known_videos, conversion):
            if item.id in seen:
                raise DataError(f"{path}: item {item.id!r}: duplicate id (also in {seen[item.id]})")
            seen[item.id] = path
            conversion.qa.append(item)
            conversion.counts[f"items: {item.task}"] += 1
    conversion.counts["items"] = len(conversion.qa)
    conversion.metadata = {
        "dataset": "HD-EPIC VQA benchmark",
        "files": {"vqa-benchmark": str(paths[0].parent)},
        "tasks": sorted({item.task for item in conversion.qa}),
        "evidence_times": "seconds from the start of each evidence video",
    }
    return conversion


def _known_videos(index: FileIndex) -> set[str] | None:
    path = index.find("HD_EPIC_YouTube_URLs.csv")
    return None if path is None else {row["video_id"].strip() for row in read_csv(path, ("video_id",))}


def _read_file(path: Path, known_videos: set[str] | None, conversion: Conversion) -> list[QAItem]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(f"{path}:{error.lineno}: invalid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object of items keyed by id, got {type(data).__name__}")
    task = path.stem
    return [_item(path, task, str(key), raw, known_videos, conversion) for key, raw in data.items()]


def _item(path: Path, task: str, key: str, raw: Any, known_videos: set[str] | None,
          conversion: Conversion) -> QAItem:
    def fail(field: str, message: str) -> DataError:
        return DataError(f"{path}: item {key!r}: field '{field}': {message}")

    if not isinstance(raw, dict):
        raise fail("", f"expected an object, got {type(raw).__name__}")
    for field in ("inputs", "question", "choices", "correct_idx"):
        if field not in raw:
            raise fail(field, "missing")
    choices = raw["choices"]
    if not isinstance(choices, list) or len(choices) < 2:
        raise fail("choices", f"expected a list of options, got {choices!r}")
    options = [_option(choice, fail) for choice in choices]
    correct = raw["correct_idx"]
    if not isinstance(correct, int) or isinstance(correct, bool) or not 0 <= correct < len(options):
        raise fail("correct_idx", f"expected an integer 0-{len(options) - 1}, got {correct!r}")
    evidence = _evidence(raw["inputs"], fail)
    for entry in evidence:
        if known_videos is not None and entry["video"] not in known_videos:
            conversion.skipped.add("evidence video not in HD_EPIC_YouTube_URLs.csv (item kept)",
                                   f"{path.name}: {key}: {entry['video']}")
    people = sorted({entry["video"].split("-")[0] for entry in evidence})
    meta = {"file": path.name, "category": _category(task),
            **{k: v for k, v in raw.items() if k not in ("question", "choices")}}
    if any(not isinstance(choice, str) for choice in choices):
        meta["choices"] = choices
    if len(people) > 1:
        meta["participants"] = [f"hd-{p}" for p in people]
    return QAItem(id=key, participant=f"hd-{people[0]}" if len(people) == 1 else "", task=task,
                  question=str(raw["question"]), options=options, answer=string.ascii_uppercase[correct],
                  evidence=evidence, source=SOURCE, meta=meta)


def _option(choice: Any, fail) -> str:
    if isinstance(choice, str):
        return choice
    if isinstance(choice, list) and all(isinstance(c, str) for c in choice):
        return ", ".join(choice)
    if isinstance(choice, (int, float)) and not isinstance(choice, bool):
        return str(choice)
    raise fail("choices", f"expected text or a list of texts, got {choice!r}")


def _evidence(inputs: Any, fail) -> list[dict[str, Any]]:
    if not isinstance(inputs, dict) or not inputs:
        raise fail("inputs", f"expected an object of named inputs, got {inputs!r}")
    evidence = []
    for name, value in inputs.items():
        if not isinstance(value, dict) or not isinstance(value.get("id"), str):
            raise fail("inputs", f"{name!r}: expected an object with a video 'id', got {value!r}")
        kind = name.split(" ")[0]
        if kind == "image":
            start = end = _time(value, "time", name, fail, required=True)
        else:
            start, end = _time(value, "start_time", name, fail), _time(value, "end_time", name, fail)
            if (start is None) != (end is None) or (start is not None and end < start):
                raise fail("inputs", f"{name!r}: expected start_time <= end_time, got {value!r}")
        evidence.append({"video": value["id"], "start": start, "end": end, "input": name, "kind": kind})
    return evidence


def _time(value: dict, key: str, name: str, fail, required: bool = False) -> float | None:
    if key not in value:
        if required:
            raise fail("inputs", f"{name!r}: missing '{key}'")
        return None
    seconds = clock_seconds(str(value[key]))
    if seconds is None:
        raise fail("inputs", f"{name!r}: '{key}' expected HH:MM:SS.fff, got {value[key]!r}")
    return round(seconds, 3)


def _category(task: str) -> str:
    return next((c for c in CATEGORIES if task.startswith(c + "_")), task.split("_")[0])
