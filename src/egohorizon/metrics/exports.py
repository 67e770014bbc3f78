"""Scored results in the benchmarks' own file formats (issue 25, item 4). Plain functions, no torch.

- ``qa_rows``: one row per scored QA item (id, task, level, gold answer, prediction, raw reply,
  extraction mode, status, correct); ``score qa --out`` keeps them as ``per_item`` and every QA
  export below is made from them, so an export and the printed table never disagree.
- ``egoschema_submission``: EgoSchema's answer file, ``{q_uid: 0-based option index}`` (the shape of
  its ``subset_answers.json``, which the EgoSchema server / Kaggle competition takes as a
  submission), over the questions with an extracted answer; invalid and missing replies are left out
  and counted.
- ``egomonth_csv_rows``: the per-item CSV the EgoMonth paper's scripts write (``EGOMONTH_COLUMNS``).
- ``lta_submission``: Ego4D long-term anticipation's challenge file, ``{"<clip_uid>_<last observed
  action_idx>": {"verb": [[Z ints] x K], "noun": [[Z ints] x K]}}`` with K = 5, as
  ``ego4d_forecasting/tasks/long_term_anticipation.py`` (``test_epoch_end``) writes it: predicted
  action texts mapped back to taxonomy class indices (``data.sources.ego4d_lta.read_taxonomy``).
The lmms-eval results and samples files are ``metrics/lmms_eval.py``. ``write_text_atomic`` writes
any of them (temp file + rename, as ``schema.write_jsonl`` does for JSON Lines).
"""

from __future__ import annotations

import csv
import io
import json
import os
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from egohorizon.errors import ConfigError, DataError

if TYPE_CHECKING:
    from egohorizon.data.sources.ego4d_lta import Taxonomy

EXAMPLES = 5  # examples named in a message


# ------------------------------------------------------------------------------------------ writing


def write_text_atomic(path: str | os.PathLike, text: str, what: str) -> Path:
    """Writes ``text`` to ``path`` through a temporary file and a rename, so a crash never leaves half
    a submission; ``what`` names the output in the error (``--export egoschema=sub.json``)."""
    from egohorizon.atomic_files import write_text_atomic as write

    path = Path(path)
    try:
        write(path, text)
    except OSError as error:
        raise ConfigError(f"{what}: cannot write {path} ({error.strerror or error})") from error
    return path


def json_text(obj: Any, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------------------------- QA


def qa_rows(items: Sequence, raws: Mapping[str, str | None], answers: Mapping[str, str | None], mode: str,
            levels: Mapping[str, int | None], strict: Mapping[str, str | None] | None = None) -> list[dict]:
    """One row per item, in item order: ``id``, ``task``, ``level``, ``answer`` (gold letter),
    ``prediction`` (the letter ``mode`` read, or None), ``raw`` (the prediction's ``answer`` or
    ``text`` as given; None without a prediction), ``extraction`` (the mode), ``status`` ("answered",
    "invalid": a reply no letter was read from, "missing": no prediction), ``correct``; with a
    ``strict`` table (a mode other than strict) also ``strict_prediction``. ``levels``: item id -> level."""
    rows = []
    for item in items:
        prediction = answers.get(item.id)
        status = "missing" if item.id not in raws else "invalid" if prediction is None else "answered"
        row = {"id": item.id, "task": item.task, "level": levels.get(item.id), "answer": item.answer,
               "prediction": prediction, "raw": raws.get(item.id), "extraction": mode, "status": status,
               "correct": prediction is not None and prediction.upper() == item.answer}
        if strict is not None:
            row["strict_prediction"] = strict.get(item.id)
        rows.append(row)
    return rows


def egoschema_submission(items: Sequence, answers: Mapping[str, str | None], where: str) -> tuple[dict, dict]:
    """``({q_uid: 0-based index}, counts)`` for the items (``q_uid`` = ``meta.q_uid``, else the id)
    whose answer was read; ``counts``: ``items``, ``written``, ``not_answered`` (invalid or missing:
    left out, as the server scores an absent question wrong). Items that do not have EgoSchema's five
    options are refused, named with ``where`` (the file)."""
    wrong = [item.id for item in items if len(item.options) != 5]
    if wrong:
        raise DataError(f"{where}: field 'options': {len(wrong)} item(s) without EgoSchema's 5 options (e.g. "
                        f"{', '.join(map(repr, wrong[:EXAMPLES]))}); an EgoSchema submission holds indices 0-4 "
                        "of the questions of `data convert egoschema`")
    submission: dict[str, int] = {}
    for item in items:
        letter = answers.get(item.id)
        if letter is not None:
            submission[str(item.meta.get("q_uid") or item.id)] = string.ascii_uppercase.index(letter.upper())
    return submission, {"items": len(items), "written": len(submission),
                        "not_answered": len(items) - len(submission)}


# The columns of the EgoMonth paper's scripts (github.com/susu801/EgoMonth, scripts/Qwen3-VL-8B.py and
# scripts/qwen3vl_30b.py: ``fieldnames = ['video_id', 'question', 'task_type', 'difficulty',
# 'ground_truth', 'prediction', 'raw_output', 'is_correct']``; scripts/qwen2vl.py and gemini2.5pro.py
# write a shorter question/pred/gt/correct/raw table without the item's ids, not followed here).
EGOMONTH_COLUMNS = ("video_id", "question", "task_type", "difficulty", "ground_truth", "prediction",
                    "raw_output", "is_correct")
EGOMONTH_FAIL = "FAIL"  # the scripts' prediction when no letter is found in the reply
EGOMONTH_MISSING = "MISSING"  # the scripts' prediction when there is no reply (their videos missing)


def egomonth_csv_rows(items: Sequence, rows: Sequence[Mapping]) -> list[dict[str, str]]:
    """The scripts' row per item, values as they write them: ``video_id`` and ``question`` stripped,
    ``task_type`` as the QA file spells it (``meta.task_type``, else the task), ``difficulty``
    ("unknown" when the item has none, their default), ``ground_truth`` the gold letter, ``prediction``
    the letter or FAIL / MISSING, ``raw_output`` the reply with line breaks as spaces, ``is_correct``
    True / False (Python's spelling, what ``csv.DictWriter`` writes for their bool)."""
    by_id = {row["id"]: row for row in rows}
    out = []
    for item in items:
        row = by_id[item.id]
        difficulty = item.meta.get("difficulty")
        prediction = row["prediction"] or (EGOMONTH_MISSING if row["status"] == "missing" else EGOMONTH_FAIL)
        out.append({"video_id": str(item.meta.get("video_id", "")).strip(), "question": item.question.strip(),
                    "task_type": item.meta.get("task_type") or item.task,
                    "difficulty": "unknown" if difficulty is None else str(difficulty),
                    "ground_truth": item.answer, "prediction": prediction,
                    "raw_output": (row["raw"] or "").strip().replace("\n", " "),
                    "is_correct": str(bool(row["correct"]))})
    return out


# A spreadsheet runs a cell that starts with one of these as a formula (a model's reply "=HYPERLINK(...)"
# or "@SUM(...)"): OWASP's CSV-injection advice is to prefix such a cell with a single quote, which the
# spreadsheet shows as text (https://owasp.org/www-community/attacks/CSV_Injection; issue 36, item 16).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: object) -> object:
    """``value`` with a single quote in front when it is text that a spreadsheet would run."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def csv_text(columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> str:
    """A header and the rows, as ``csv.DictWriter`` writes them (quoted where needed, CRLF line ends),
    every cell that would start a formula prefixed with a single quote (``neutralise_cell``)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns))
    writer.writeheader()
    writer.writerows({k: neutralise_cell(v) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------ Ego4D LTA


LTA_K = 5  # candidate sequences per clip in the challenge file


def lta_submission(points: Sequence[tuple[str, int]], predictions: Mapping[str, list[list[str]] | None],
                   taxonomy: Taxonomy, where: str, unknown: str = "refuse") -> tuple[dict, dict]:
    """``(challenge dict, counts)``. ``points``: (id, Z) per point; ``predictions``: id -> candidate
    action texts (None: unparsed); ``where``: the predictions file, for messages.

    Each action is split into verb and noun as ``score forecast --metric ego4d-ed`` does (the longest
    taxonomy verb it starts with) and both are looked up in the taxonomy. A label that is not there is
    refused (``unknown="refuse"``: one error naming how many and where) or, with ``"repeat"``, takes
    the candidate's previous label of that head (its next one at the start; a candidate with no known
    label of a head is dropped). The shape the challenge needs is then made: each candidate cut to Z
    and, when shorter, padded with its last action; fewer than K candidates repeated in order (the
    score is a minimum over candidates, so a repeat changes nothing), more than K cut to the first K.
    Points without a usable candidate are left out and counted."""
    if unknown not in ("refuse", "repeat"):
        raise ConfigError(f"unknown-label rule {unknown!r}: expected refuse or repeat")
    labeller = _Labeller(taxonomy)
    counts = {"points": len(points), "written": 0, "no_prediction": 0, "no_usable_candidate": 0,
              "unknown_verb": 0, "unknown_noun": 0, "replaced": 0, "dropped_candidates": 0,
              "padded_candidates": 0, "repeated_candidates": 0, "cut_candidates": 0}
    examples: list[str] = []
    submission: dict[str, dict[str, list[list[int]]]] = {}
    for point_id, z in points:
        candidates = [[a.strip() for a in c if isinstance(a, str) and a.strip()]
                      for c in (predictions.get(point_id) or [])]
        candidates = [c for c in candidates if c]
        if not candidates:
            counts["no_prediction"] += 1
            continue
        counts["cut_candidates"] += max(0, len(candidates) - LTA_K)
        usable = []
        for c, candidate in enumerate(candidates[:LTA_K]):
            labels = labeller.labels(candidate[:z], f"point {point_id!r} candidate {c}", counts, examples)
            filled = {head: _fill(seq, z, counts) for head, seq in labels.items()}
            if filled["verb"] is None or filled["noun"] is None:
                counts["dropped_candidates"] += 1
                continue
            counts["padded_candidates"] += len(candidate) < z
            usable.append(filled)
        if not usable:
            counts["no_usable_candidate"] += 1
            continue
        counts["repeated_candidates"] += LTA_K - len(usable)
        submission[point_id] = {head: [usable[i % len(usable)][head] for i in range(LTA_K)]
                                for head in ("verb", "noun")}
    if unknown == "refuse" and (counts["unknown_verb"] or counts["unknown_noun"]):
        raise DataError(
            f"{where}: {counts['unknown_verb']} verb and {counts['unknown_noun']} noun label(s) are not classes "
            f"of the taxonomy {taxonomy.path} (e.g. {'; '.join(examples)}); the challenge file holds class "
            "indices only: predict the taxonomy's words (the points' texts), or give --lta-unknown repeat to "
            "write the candidate's previous label in their place (counted)")
    counts["written"] = len(submission)
    return submission, counts


class _Labeller:
    """Action text -> (verb index or None, noun index or None) against one taxonomy."""

    def __init__(self, taxonomy: Taxonomy):
        self.key = taxonomy.key
        self.tables = {"verb": taxonomy.index("verb"), "noun": taxonomy.index("noun")}
        self.verb_words = sorted({self.key(v) for v in taxonomy.verbs}
                                 | {self.key(v.replace("_", " ")) for v in taxonomy.verb_names})

    def labels(self, actions: Sequence[str], where: str, counts: dict, examples: list[str]) -> dict:
        from egohorizon.metrics.ego4d import split_action

        labels: dict[str, list[int | None]] = {"verb": [], "noun": []}
        for position, action in enumerate(actions):
            verb, noun = split_action(self.key(action), self.verb_words)
            for head, word in (("verb", verb), ("noun", noun)):
                index = self.tables[head].get(self.key(word))
                if index is None:
                    counts[f"unknown_{head}"] += 1
                    if len(examples) < EXAMPLES:
                        examples.append(f"{where} action {position}: {head} {word!r} of {action!r}")
                labels[head].append(index)
        return labels


def _fill(seq: list[int | None], z: int, counts: dict) -> list[int] | None:
    """Unknown labels (None) take the previous known one (the next at the start); then padded to z."""
    known = [s for s in seq if s is not None]
    if not known:
        return None
    filled, last = [], known[0]
    for label in seq:
        if label is None:
            counts["replaced"] += 1
        else:
            last = label
        filled.append(last)
    return filled + [filled[-1]] * (z - len(filled))


def unannotated_points(path: str | os.PathLike) -> list[tuple[str, int]]:
    """(id, Z) of the rows of ``test_unannotated.jsonl`` (``data convert ego4d-lta``: ``id`` and
    ``future_windows``) or of a points file (``targets``); a bad line is named by file, line, field."""
    from egohorizon.schema import Defect, RecordError

    points, defects, seen = [], [], {}
    for line, obj, problem in _lines(path):
        if problem:
            defects.append(Defect(str(path), line, "", problem))
            continue
        if not isinstance(obj, dict):
            defects.append(Defect(str(path), line, "", f"expected an object, got {type(obj).__name__}"))
            continue
        point_id, future = obj.get("id"), obj.get("future_windows", obj.get("targets"))
        if not isinstance(point_id, str) or not point_id:
            defects.append(Defect(str(path), line, "id", f"expected the point id <clip_uid>_<action_idx>, got "
                                  f"{point_id!r}"))
        elif not isinstance(future, list) or not future:
            field = "future_windows" if "targets" not in obj else "targets"
            defects.append(Defect(str(path), line, field, f"expected a non-empty array (Z future actions), got "
                                  f"{future!r:.60}"))
        elif point_id in seen:
            defects.append(Defect(str(path), line, "id", f"duplicate id {point_id!r} (first on line {seen[point_id]})"))
        else:
            seen[point_id] = line
            points.append((point_id, len(future)))
    if defects:
        raise RecordError(defects)
    if not points:
        raise DataError(f"{path}: no points; expected the test_unannotated.jsonl or points.jsonl of "
                        "`data convert ego4d-lta`")
    return points


def _lines(path: str | os.PathLike):
    from egohorizon.schema import iter_json_lines

    try:
        yield from iter_json_lines(path)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a folder; expected a .jsonl file") from None


@dataclass(frozen=True)
class Question:
    """A multiple-choice question without a public answer (``unanswered.jsonl``)."""

    id: str
    options: list[str]
    meta: dict


def unanswered_questions(path: str | os.PathLike) -> list[Question]:
    """The questions of ``qa.jsonl`` or ``unanswered.jsonl`` (``data convert egoschema``): ``id``,
    ``options`` and ``meta``, with or without ``answer``; a bad line is named by file, line, field."""
    from egohorizon.schema import Defect, RecordError

    questions, defects, seen = [], [], {}
    for line, obj, problem in _lines(path):
        if problem or not isinstance(obj, dict):
            defects.append(Defect(str(path), line, "", problem or f"expected an object, got {type(obj).__name__}"))
            continue
        q_id, options, meta = obj.get("id"), obj.get("options"), obj.get("meta", {})
        if not isinstance(q_id, str) or not q_id.strip():
            defects.append(Defect(str(path), line, "id", f"expected the question id (q_uid), got {q_id!r}"))
        elif not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            defects.append(Defect(str(path), line, "options", f"expected an array of option texts, got {options!r:.60}"))
        elif not isinstance(meta, dict):
            defects.append(Defect(str(path), line, "meta", f"expected an object, got {meta!r:.60}"))
        elif q_id in seen:
            defects.append(Defect(str(path), line, "id", f"duplicate id {q_id!r} (first on line {seen[q_id]})"))
        else:
            seen[q_id] = line
            questions.append(Question(q_id, options, meta))
    if defects:
        raise RecordError(defects)
    if not questions:
        raise DataError(f"{path}: no questions; expected the qa.jsonl or unanswered.jsonl of "
                        "`data convert egoschema`")
    return questions
