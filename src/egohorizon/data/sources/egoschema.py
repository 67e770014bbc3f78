"""EgoSchema's ``questions.json`` + ``subset_answers.json`` -> 5-option QA items.

Where to get the files: github.com/egoschema/EgoSchema (``questions.json``: a JSON array of
``{"q_uid", "google_drive_id", "question", "option 0", ..., "option 4"}``; ``subset_answers.json``: an
object ``{q_uid: 0-based answer index}`` for the public 500-question subset; the videos, one
``<q_uid>.mp4`` each, through its download scripts).

Mapping (``egohorizon data convert egoschema --questions Q --answers A --out DIR``):
- ``qa.jsonl``: the questions that have a public answer, ``id`` = ``q_uid``, ``task`` = "egoschema",
  ``options`` = options 0-4 in order, ``answer`` = the letter of the 0-based index (0 -> A),
  ``evidence`` = ``[{"video": "<q_uid>.mp4"}]`` (the whole 3-minute clip), ``meta`` keeps ``q_uid``,
  ``google_drive_id`` and ``answer_index``. ``participant`` is "" (EgoSchema's clips come from many
  Ego4D wearers) and ``level`` is not set;
- ``unanswered.jsonl``: the other questions (the full set's answers are held by EgoSchema's server),
  the same fields without ``answer``, for a submission;
- ``metadata.json``: counts, including how many options start with "C " (EgoSchema's camera wearer:
  a first-capital-letter answer rule reads them as option C).
Every defect is listed at once, by item index and field (questions) or by q_uid (answers).
"""

from __future__ import annotations

import json
import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.atomic_files import write_text_atomic
from egohorizon.data.sources._common import Conversion
from egohorizon.data.sources._json import Defects, read_json, type_name, warn_duplicate_options
from egohorizon.errors import DataError
from egohorizon.schema import QAItem

SOURCE = "egoschema"
N_OPTIONS = 5
_OPTION_KEY = re.compile(r"option \d+")


@dataclass
class EgoSchemaConversion(Conversion):
    """A conversion that also writes the questions without a public answer."""

    unanswered: list[dict[str, Any]] = field(default_factory=list)

    def write(self, out: str | os.PathLike) -> dict[str, Path]:
        written = super().write(out)
        path = Path(out) / "unanswered.jsonl"
        write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.unanswered))
        written["unanswered"] = path
        return written


def convert(questions: str | Path, answers: str | Path) -> EgoSchemaConversion:
    rows = read_json(questions, "EgoSchema's questions.json: an array of {q_uid, question, option 0..4}")
    if not isinstance(rows, list):
        raise DataError(f"{questions}: expected a JSON array of questions, got {type_name(rows)}")
    if not rows:  # nothing to write: exit 0 with no qa.jsonl would look like success
        raise DataError(f"{questions}: the array holds no questions")
    key = read_json(answers, "EgoSchema's subset_answers.json: an object {q_uid: 0-based answer index}")
    if not isinstance(key, dict):
        raise DataError(f"{answers}: expected a JSON object {{q_uid: answer index}}, got {type_name(key)}")
    defects = Defects(questions)
    parsed: dict[str, dict[str, Any]] = {}
    for index, raw in enumerate(rows):
        row = _question(raw, index, defects)
        if row is None:
            continue
        if row["id"] in parsed:
            defects.add(f"item [{index}]", "q_uid", f"duplicate {row['id']!r} (also item "
                        f"[{parsed[row['id']]['meta']['index']}])")
            continue
        parsed[row["id"]] = row
    defects.raise_if_any()
    answer_defects = Defects(answers)
    letters = {}
    for q_uid, value in key.items():
        if q_uid not in parsed:
            answer_defects.add(f"q_uid {q_uid!r}", None, f"not a question of {questions}")
        elif not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < N_OPTIONS:
            answer_defects.add(f"q_uid {q_uid!r}", None, f"expected an integer 0-{N_OPTIONS - 1} "
                               f"(0-based option index), got {value!r}")
        else:
            letters[q_uid] = string.ascii_uppercase[value]
    answer_defects.raise_if_any()
    conversion = EgoSchemaConversion(SOURCE)
    for q_uid, row in parsed.items():
        if q_uid in letters:
            meta = {**row["meta"], "answer_index": key[q_uid]}
            conversion.qa.append(QAItem(**{**row, "meta": meta}, answer=letters[q_uid]))
        else:
            conversion.unanswered.append(row)
    _count(conversion)
    conversion.metadata = {"dataset": "EgoSchema", "files": {"questions": str(questions), "answers": str(answers)},
                           "answers": "letters of subset_answers.json's 0-based indices (0 -> A)",
                           "unanswered": "unanswered.jsonl: questions whose answer is not public"}
    return conversion


def _question(raw: Any, index: int, defects: Defects) -> dict[str, Any] | None:
    where = f"item [{index}]"
    if not isinstance(raw, dict):
        defects.add(where, None, f"expected an object, got {type_name(raw)}")
        return None
    before = len(defects.lines)
    for name in ("q_uid", "question", *(f"option {i}" for i in range(N_OPTIONS))):
        value = raw.get(name)
        if not isinstance(value, str) or not value.strip():
            defects.add(where, name, "missing" if name not in raw else f"expected non-empty text, got {value!r}")
    extra = sorted(k for k in raw if _OPTION_KEY.fullmatch(k) and int(k.split()[1]) >= N_OPTIONS)
    if extra:  # refused, never dropped: the format has options 0-4 only
        defects.add(where, extra[0], f"EgoSchema questions have {N_OPTIONS} options (option 0..{N_OPTIONS - 1}); "
                    f"got {len(extra)} more")
    if len(defects.lines) > before:
        return None
    if warn_duplicate_options(defects.path, where, [raw[f"option {i}"] for i in range(N_OPTIONS)]):
        raw = {**raw, "duplicate_options": True}
    q_uid = raw["q_uid"].strip()
    meta = {"index": index, **{k: v for k, v in raw.items()
                                if k != "question" and not k.startswith("option ")}}
    return {"id": q_uid, "participant": "", "task": "egoschema", "question": raw["question"],
            "options": [raw[f"option {i}"] for i in range(N_OPTIONS)], "source": SOURCE,
            "evidence": [{"video": f"{q_uid}.mp4", "start": None, "end": None}], "meta": meta}


def _count(conversion: EgoSchemaConversion) -> None:
    conversion.counts["items with a public answer (qa.jsonl)"] = len(conversion.qa)
    conversion.counts["questions without a public answer (unanswered.jsonl)"] = len(conversion.unanswered)
    options = [o for item in conversion.qa for o in item.options]
    conversion.counts["options of answered items"] = len(options)
    conversion.counts["options starting with 'C ' (the camera wearer)"] = sum(o.startswith("C ") for o in options)
