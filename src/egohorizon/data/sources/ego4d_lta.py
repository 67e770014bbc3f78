"""Ego4D long-term action anticipation (FHO LTA, v2) -> clip-level forecast points, official splits.

Where to get the files: the Ego4D CLI (``--datasets annotations --benchmarks FHO``):
``fho_lta_train.json``, ``fho_lta_val.json``, ``fho_lta_test_unannotated.json`` (each
``{"split": ..., "clips": [{clip_uid, video_uid, clip_id, action_idx, verb_label, noun_label, verb,
noun, action_clip_start_sec, action_clip_end_sec, ...}]}``: one row per annotated action; the test
rows have no labels) and ``fho_lta_taxonomy.json`` (``{"verbs": [...], "nouns": [...]}``).

Points are the official forecasting instances (EGO4D/forecasting, ``clip_forecasting_dataset``): a
clip's actions in ``action_idx`` order; for every run of ``input_actions`` consecutive actions
followed by ``z`` more, one point whose id is ``<clip_uid>_<action_idx of the last input action>``
(the key of the challenge's submission file). ``context`` = the input actions (the official
protocol observes the video of exactly these; their labels are shown here as text), ``targets`` =
the next ``z`` actions' texts, ``windows`` = their [start, end] seconds in the clip, ``t0`` = the
latest end of an input action, ``k`` = ``z`` (20), ``level`` = 1.

- Text: "<verb> <noun>" from the taxonomy's head words (``take_(pick,_grab,_get)`` -> "take";
  ``nut_(food)`` keeps its qualifier, "nut (food)", when another class shares the head word).
  ``meta.target_verbs`` / ``target_nouns`` hold the two parts (``score forecast --metric ego4d-ed``
  reads them), ``target_verb_labels`` / ``target_noun_labels`` the class indices.
- Splits: train -> ``split: train``; val -> ``split: test`` (the local test set is the official
  validation set, as for EPIC-KITCHENS; the challenge's test labels are not public);
  ``meta.official_split`` says which file. The unannotated test file gives ``test_unannotated.jsonl``:
  the same ids with the input and future windows, no text (for video models and submissions).
- ``participant`` is "" (the LTA files name no wearer); ``meta`` keeps clip_uid, video_uid, clip_id.
A row's ``verb``/``noun`` must be its label's class name in the taxonomy; a clip may be in one file
only; ``(clip_uid, action_idx)`` is unique. Every defect is listed at once, by file, item and field.

``read_taxonomy`` reads the taxonomy (or the ``metadata.json`` a conversion wrote) as the challenge file
numbers its classes (``Taxonomy``), for ``export ego4d-lta`` and ``score ... --export ego4d-lta``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.data.sources._common import Conversion
from egohorizon.data.sources._json import Defects, read_json, type_name
from egohorizon.errors import DataError
from egohorizon.schema import ForecastPoint, write_jsonl

SOURCE = "ego4d-lta"
SPLIT_OF = {"train": "train", "val": "test", "test_unannotated": "unannotated", "test": "unannotated"}
UNLABELLED = ("test_unannotated", "test")  # the challenge's test rows carry no labels
LABELS = ("verb_label", "noun_label")


@dataclass
class LTAConversion(Conversion):
    points: list[ForecastPoint] = field(default_factory=list)
    unannotated: list[dict[str, Any]] = field(default_factory=list)

    def write(self, out: str | os.PathLike) -> dict[str, Path]:
        written = super().write(out)
        out = Path(out)
        if self.points:
            write_jsonl(out / "points.jsonl", self.points)
            written["points"] = out / "points.jsonl"
        if self.unannotated:
            path = out / "test_unannotated.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in self.unannotated), encoding="utf-8")
            written["test_unannotated"] = path
        return written


def class_texts(names: list[str]) -> list[str]:
    """Taxonomy names -> head words; a head shared by several classes keeps its qualifier."""
    heads = [re.split(r"_\(", name, maxsplit=1)[0].replace("_", " ").strip() for name in names]
    shared = {h for h, n in Counter(heads).items() if n > 1}
    return [" ".join(name.replace("_", " ").split()) if h in shared else h for h, name in zip(heads, names)]


@dataclass(frozen=True)
class Taxonomy:
    """Ego4D LTA's verb and noun classes: the texts the importer writes (``take``, ``nut (food)``) in
    class order, and the names as the taxonomy file has them (``take_(pick,_grab,_get)``)."""

    verbs: list[str]
    nouns: list[str]
    verb_names: list[str]
    noun_names: list[str]
    path: str

    def index(self, head: str) -> dict[str, int]:
        """Label -> class index of one head: each class's text and its taxonomy name, normalised."""
        texts, names = (self.verbs, self.verb_names) if head == "verb" else (self.nouns, self.noun_names)
        table: dict[str, int] = {}
        for i, (text, name) in enumerate(zip(texts, names, strict=True)):
            for key in (text, name, name.replace("_", " ")):
                table.setdefault(Taxonomy.key(key), i)
        return table

    @staticmethod
    def key(text: str) -> str:
        """A label as the tables compare it: whitespace collapsed, case folded."""
        return " ".join(text.split()).casefold()


def read_taxonomy(path: str | os.PathLike) -> Taxonomy:
    """``fho_lta_taxonomy.json`` (``{"verbs": [...], "nouns": [...]}``) or the ``metadata.json`` that
    ``data convert ego4d-lta`` writes (its ``verbs`` / ``nouns`` are the texts the points use)."""
    data = read_json(path, "fho_lta_taxonomy.json or the metadata.json of `data convert ego4d-lta`")
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object with 'verbs' and 'nouns', got {type_name(data)}")
    for key in ("verbs", "nouns"):
        value = data.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
            raise DataError(f"{path}: field '{key}': expected an array of class names, got {value!r:.80}")
    converted = data.get("source") == "ego4d-lta"  # metadata.json: the names are already the texts
    verbs = data["verbs"] if converted else class_texts(data["verbs"])
    nouns = data["nouns"] if converted else class_texts(data["nouns"])
    return Taxonomy(verbs, nouns, list(data["verbs"]), list(data["nouns"]), str(path))


def convert(annotations: list[str | Path], taxonomy: str | Path, *, input_actions: int = 2,
            z: int = 20) -> LTAConversion:
    verbs, nouns = _taxonomy(taxonomy)
    conversion = LTAConversion(SOURCE)
    verb_texts, noun_texts = class_texts(verbs), class_texts(nouns)
    owner: dict[str, Path] = {}
    for path in map(Path, annotations):
        split, clips = _read(path, verbs, nouns)
        for clip_uid in clips:
            if clip_uid in owner:
                raise DataError(f"{path}: clip_uid {clip_uid!r} is also in {owner[clip_uid]}; the official "
                                "splits share no clip")
            owner[clip_uid] = path
        for clip_uid, rows in sorted(clips.items()):
            instances = _instances(rows, input_actions, z)
            conversion.counts[f"clips: {split}"] += 1
            conversion.counts[f"points: {split}"] += len(instances)
            for inputs, future in instances:
                if split in UNLABELLED:
                    conversion.unannotated.append(_unannotated(clip_uid, inputs, future))
                else:
                    conversion.points.append(_point(clip_uid, split, inputs, future, verb_texts, noun_texts))
    conversion.metadata = {
        "dataset": "Ego4D FHO long-term anticipation", "files": {"taxonomy": str(taxonomy),
                                                                  "annotations": [str(a) for a in annotations]},
        "input_actions": input_actions, "z": z, "splits": {k: f"split: {v}" for k, v in SPLIT_OF.items()},
        "verbs": verb_texts, "nouns": noun_texts,
    }
    return conversion


def _taxonomy(path: str | Path) -> tuple[list[str], list[str]]:
    data = read_json(path, "fho_lta_taxonomy.json: an object {verbs: [...], nouns: [...]}")
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object {{verbs, nouns}}, got {type_name(data)}")
    for key in ("verbs", "nouns"):
        value = data.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise DataError(f"{path}: field '{key}': expected an array of class names, got {value!r:.80}")
    return data["verbs"], data["nouns"]


def _read(path: Path, verbs: list[str], nouns: list[str]) -> tuple[str, dict[str, list[dict]]]:
    data = read_json(path, "an Ego4D LTA annotation file: an object with a 'clips' array")
    if not isinstance(data, dict) or not isinstance(data.get("clips"), list):
        got = type_name(data.get("clips")) if isinstance(data, dict) else type_name(data)
        raise DataError(f"{path}: expected an object with a 'clips' array, got {got}")
    split = data.get("split") or re.sub(r"^fho_lta_|\.json$", "", path.name)
    if split not in SPLIT_OF:
        raise DataError(f"{path}: field 'split': expected one of {', '.join(SPLIT_OF)} (or a file named "
                        f"fho_lta_<split>.json), got {split!r}")
    labelled = split not in UNLABELLED
    defects = Defects(path)
    clips: dict[str, list[dict]] = defaultdict(list)
    seen: dict[tuple[str, int], int] = {}
    for index, row in enumerate(data["clips"]):
        action = _row(row, f"item [{index}]", labelled, verbs, nouns, defects)
        if action is None:
            continue
        key = (action["clip_uid"], action["action_idx"])
        if key in seen:
            defects.add(f"item [{index}]", "action_idx", f"duplicate {key[1]} in clip {key[0]!r} (also item "
                        f"[{seen[key]}])")
            continue
        seen[key] = index
        clips[action["clip_uid"]].append(action)
    defects.raise_if_any()
    return split, clips


def _row(row: Any, where: str, labelled: bool, verbs: list[str], nouns: list[str],
         defects: Defects) -> dict | None:
    if not isinstance(row, dict):
        defects.add(where, None, f"expected an object, got {type_name(row)}")
        return None
    before = len(defects.lines)
    if not isinstance(row.get("clip_uid"), str) or not row["clip_uid"]:
        defects.add(where, "clip_uid", f"expected text, got {row.get('clip_uid')!r}")
    for name in ("action_idx", *(LABELS if labelled else ())):
        value = row.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            defects.add(where, name, "missing" if name not in row else f"expected an integer >= 0, got {value!r}")
    for name in ("action_clip_start_sec", "action_clip_end_sec"):
        value = row.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            defects.add(where, name, "missing" if name not in row else f"expected seconds, got {value!r}")
        elif not math.isfinite(value) or value < 0:  # json reads NaN and Infinity (issue 36, item 5)
            defects.add(where, name, f"expected finite seconds >= 0, got {value!r}")
    if len(defects.lines) > before:
        return None
    if row["action_clip_end_sec"] < row["action_clip_start_sec"]:
        defects.add(where, "action_clip_end_sec", f"ends ({row['action_clip_end_sec']}) before it starts "
                    f"({row['action_clip_start_sec']})")
    if labelled:
        for name, classes, label in (("verb", verbs, "verb_label"), ("noun", nouns, "noun_label")):
            if row[label] >= len(classes):
                defects.add(where, label, f"{row[label]} is not a class of the taxonomy ({len(classes)} {name}s)")
            elif name in row and row[name] != classes[row[label]]:
                defects.add(where, name, f"{row[name]!r} is not class {row[label]} of the taxonomy "
                            f"({classes[row[label]]!r}): another taxonomy version?")
    return row if len(defects.lines) == before else None


def _instances(rows: list[dict], input_actions: int, z: int) -> list[tuple[list[dict], list[dict]]]:
    """The official windows: ``input_actions`` observed actions, then ``z`` to forecast."""
    rows = sorted(rows, key=lambda r: r["action_idx"])
    return [(rows[i:i + input_actions], rows[i + input_actions:i + input_actions + z])
            for i in range(len(rows) - input_actions - z + 1)]


def _text(row: dict, verb_texts: list[str], noun_texts: list[str]) -> tuple[str, str]:
    return verb_texts[row["verb_label"]], noun_texts[row["noun_label"]]


def _point(clip_uid: str, split: str, inputs: list[dict], future: list[dict], verb_texts: list[str],
           noun_texts: list[str]) -> ForecastPoint:
    t0 = max(r["action_clip_end_sec"] for r in inputs)
    context = [{"id": f"{clip_uid}_{r['action_idx']}", "text": " ".join(_text(r, verb_texts, noun_texts)),
                "start": r["action_clip_start_sec"], "end": r["action_clip_end_sec"]} for r in inputs]
    parts = [_text(r, verb_texts, noun_texts) for r in future]
    meta = {"clip_uid": clip_uid, "video_uid": inputs[-1].get("video_uid"), "clip_id": inputs[-1].get("clip_id"),
            "official_split": split, "last_action_idx": inputs[-1]["action_idx"],
            "target_ids": [f"{clip_uid}_{r['action_idx']}" for r in future],
            "target_verbs": [v for v, _ in parts], "target_nouns": [n for _, n in parts],
            "target_verb_labels": [r["verb_label"] for r in future],
            "target_noun_labels": [r["noun_label"] for r in future]}
    return ForecastPoint(id=f"{clip_uid}_{inputs[-1]['action_idx']}", source=SOURCE, participant="", level=1,
                         k=len(future), t0=t0, context=context, targets=[f"{v} {n}" for v, n in parts],
                         windows=[[r["action_clip_start_sec"], r["action_clip_end_sec"]] for r in future],
                         split=SPLIT_OF[split], meta=meta)


def _unannotated(clip_uid: str, inputs: list[dict], future: list[dict]) -> dict[str, Any]:
    return {"id": f"{clip_uid}_{inputs[-1]['action_idx']}", "clip_uid": clip_uid,
            "video_uid": inputs[-1].get("video_uid"), "split": "unannotated",
            "input_windows": [[r["action_clip_start_sec"], r["action_clip_end_sec"]] for r in inputs],
            "future_windows": [[r["action_clip_start_sec"], r["action_clip_end_sec"]] for r in future]}
