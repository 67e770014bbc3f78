"""EgoMonth's ``QA.json`` -> multiple-choice QA items (4 options each) over the item's own videos.

Where to get the files: the EgoMonth release (research licence; QA files per participant, e.g.
``global_json_list/021/QA.json``, and the MP4 folders they point into). The format is the one the
paper's scripts read (github.com/susu801/EgoMonth, ``scripts/*.py``): a JSON array of
``{"video_path": ["relative/a.mp4", ...], "question": "...", "options": ["A. ...", "B. ...", ...],
"correct_options": "A", "task_type": "Detail Retrieval", "difficulty": ..., "video_id": ...}``.

Mapping (``egohorizon data convert egomonth QA.json --videos ROOT --out DIR``):
- ``id`` = ``<participant>/<index>`` (0-based position in the file; EgoMonth items carry no id);
  ``participant`` = ``--participant``, default the QA file's folder name (``021``);
- ``options`` = the options with their "A. " prefix removed (the prefix letter must be the option's
  position; all options have one or none); ``answer`` = ``correct_options`` (one letter, or a
  one-letter array);
- ``task`` = the canonical one of EgoMonth's 14 task types (Table 1 of the paper), its spelling
  variants mapped (case, spaces, hyphens, underscores, "Judgment", "-localisation", plurals);
  ``level`` = its cognitive level 1-3 (Schema Consolidation, Episodic Indexing, Cascading Reasoning).
  A name that is none of them is refused by name;
- ``evidence`` = one entry per video, ``{"video": path as given (".mp4" added when it has no
  extension, as the scripts do), "start": null, "end": null}`` (whole videos); every video must exist
  under ``--videos``; ``meta.videos_root`` is that folder;
- ``meta`` keeps ``difficulty``, ``video_id``, the original ``task_type`` and any other field.
Two items with the same ``video_id`` and question are refused: the scripts' resume key would skip
the second. Every defect of every item is listed at once, by item index and field.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

from egohorizon.data.sources._common import Conversion
from egohorizon.data.sources._json import Defects, read_json, type_name, warn_duplicate_options
from egohorizon.errors import DataError
from egohorizon.schema import EGOMONTH_TASK_LEVELS, QAItem, task_key

SOURCE = "egomonth"
N_OPTIONS = 4  # every EgoMonth item has options A-D; its scripts read only those letters
LEVEL_NAMES = {1: "Schema Consolidation", 2: "Episodic Indexing", 3: "Cascading Reasoning"}
_PREFIX = re.compile(r"^\s*\(?([A-Za-z])\s*[.:)．：、]\s*")
# spelling variants beyond case / space / hyphen / underscore (task_key already folds those)
_VARIANTS = {"directionjudgment": "Direction Judgement", "selflocalisation": "Self-localization",
             "crossviewspatialreasoningtask": "Cross-view Spatial Reasoning"}
KNOWN_FIELDS = ("video_path", "question", "options", "correct_options", "task_type", "difficulty", "video_id")


def canonical_task(name: str) -> str | None:
    """EgoMonth's own spelling of a task-type name, or None when it is not one of the 14."""
    key = task_key(name)
    canon = {task_key(t): t for t in EGOMONTH_TASK_LEVELS}
    if key in canon:
        return canon[key]
    if key in _VARIANTS:
        return _VARIANTS[key]
    return canon.get(key[:-1]) if key.endswith("s") else None  # "Spatial Relations"


def convert(qa_file: str | Path, videos: str | Path, participant: str | None = None) -> Conversion:
    path, root = Path(qa_file), Path(videos)
    if not root.is_dir():
        raise DataError(f"--videos {root}: no such folder (expected the folder the items' video_path "
                        "entries are relative to)")
    data = read_json(path, "EgoMonth's QA.json: an array of {video_path, question, options, correct_options, "
                           "task_type}")
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON array of items, got {type_name(data)}")
    if not data:
        raise DataError(f"{path}: the array holds no items")
    person = participant or path.resolve().parent.name
    defects, conversion = Defects(path), Conversion(SOURCE)
    seen: dict[tuple[str, str], int] = {}
    for index, raw in enumerate(data):
        item = _item(raw, index, person, root, defects)
        if item is None:
            continue
        key = (str(item.meta.get("video_id", "")), item.question.strip())
        if key in seen:
            defects.add(f"item [{index}]", "question", f"duplicate of item [{seen[key]}] (same video_id and "
                        "question: the paper scripts' resume key would skip one)")
            continue
        seen[key] = index
        if warn_duplicate_options(path, f"item [{index}]", item.options):
            conversion.counts["items with two options of the same text (kept; warned)"] += 1
        conversion.qa.append(item)
    defects.raise_if_any()
    _count(conversion)
    videos_used = sorted({e["video"] for item in conversion.qa for e in item.evidence})
    conversion.metadata = {
        "dataset": "EgoMonth (month-level egocentric QA)", "participant": person,
        "files": {"qa": str(path.resolve()), "videos_root": str(root.resolve())},
        "levels": {str(k): v for k, v in LEVEL_NAMES.items()},
        "videos": {v: (root / v).stat().st_size for v in videos_used},
        "note": "options without their 'A. ' prefix; evidence = whole videos, relative to videos_root",
    }
    return conversion


def _item(raw: Any, index: int, person: str, root: Path, defects: Defects) -> QAItem | None:
    where = f"item [{index}]"
    if not isinstance(raw, dict):
        defects.add(where, None, f"expected an object, got {type_name(raw)}")
        return None
    before = len(defects.lines)
    for field in ("video_path", "question", "options", "correct_options", "task_type"):
        if field not in raw:
            defects.add(where, field, "missing")
    if len(defects.lines) > before:
        return None
    question = raw["question"]
    if not isinstance(question, str) or not question.strip():
        defects.add(where, "question", f"expected non-empty text, got {question!r}")
    options = _options(raw["options"], where, defects)
    answer = _answer(raw["correct_options"], options, where, defects)
    task = raw["task_type"]
    canon = canonical_task(task) if isinstance(task, str) else None
    if canon is None:
        defects.add(where, "task_type", f"{task!r} is not one of EgoMonth's 14 task types "
                    f"({', '.join(EGOMONTH_TASK_LEVELS)})")
    evidence = _videos(raw["video_path"], root, where, defects)
    if len(defects.lines) > before:
        return None
    meta = {"task_type": task, "difficulty": raw.get("difficulty"), "videos_root": str(root.resolve()),
            "level_name": LEVEL_NAMES[EGOMONTH_TASK_LEVELS[canon]], "index": index,
            **{k: v for k, v in raw.items() if k not in ("question", "options", "correct_options",
                                                             "task_type", "video_path", "difficulty")}}
    return QAItem(id=f"{person}/{index}", participant=person, task=canon, question=question, options=options,
                  answer=answer, level=EGOMONTH_TASK_LEVELS[canon], evidence=evidence, source=SOURCE, meta=meta)


def _options(value: Any, where: str, defects: Defects) -> list[str]:
    if not isinstance(value, list) or len(value) < 2 or not all(isinstance(o, str) for o in value):
        defects.add(where, "options", f"expected an array of at least 2 option texts, got {value!r}")
        return []
    if len(value) > N_OPTIONS:  # the scripts' [A-D] never reads an option E: refuse, never drop it
        defects.add(where, f"options[{N_OPTIONS}]", f"EgoMonth items have at most {N_OPTIONS} options (A-D); "
                    f"got {len(value)}, the extra one is {value[N_OPTIONS]!r}")
        return []
    prefixes = [_PREFIX.match(o) for o in value]
    if not any(prefixes):
        return [o.strip() for o in value]
    options = []
    for i, (option, prefix) in enumerate(zip(value, prefixes, strict=True)):
        letter = string.ascii_uppercase[i]
        if prefix is None or prefix.group(1).upper() != letter:
            defects.add(where, f"options[{i}]", f"expected the prefix '{letter}. ' like the other options, "
                        f"got {option!r}")
            return []
        options.append(option[prefix.end():].strip())
    return options


def _answer(value: Any, options: list[str], where: str, defects: Defects) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    letter = value.strip().rstrip(".").upper() if isinstance(value, str) else None
    if not letter or len(letter) != 1 or not letter.isalpha() or (
            options and ord(letter) - ord("A") >= len(options)):
        last = string.ascii_uppercase[max(len(options), 2) - 1]
        defects.add(where, "correct_options", f"expected one option letter A-{last}, got {value!r}")
        return "A"
    return letter


def _videos(value: Any, root: Path, where: str, defects: Defects) -> list[dict[str, Any]]:
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p.strip() for p in paths):
        defects.add(where, "video_path", f"expected an array of relative video paths, got {value!r}")
        return []
    evidence = []
    for i, video in enumerate(paths):
        video = video.strip()
        video = video if Path(video).suffix else video + ".mp4"  # the scripts add .mp4 to a bare name
        if not (root / video).is_file():
            defects.add(where, f"video_path[{i}]", f"{video!r} not found under --videos {root}")
        evidence.append({"video": video, "start": None, "end": None})
    return evidence


def _count(conversion: Conversion) -> None:
    conversion.counts["items"] = len(conversion.qa)
    for item in conversion.qa:
        conversion.counts[f"items: L{item.level} {item.task}"] += 1
        conversion.counts[f"difficulty: {item.meta.get('difficulty')}"] += 1
    conversion.counts["videos"] = len({e["video"] for item in conversion.qa for e in item.evidence})
