"""Month-scale multiple-choice QA (SPEC §3): answer extraction that never guesses, and the report.

``extract_answer(text, options)`` accepts exactly these forms (case of the letter aside, surrounding
whitespace and a final period ignored), after removing markdown emphasis (``**C**``, ``__C__``,
``*C*``) that models wrap around answers:

- a lone option letter, bare or as ``Option B``: ``B``, ``(B)``, ``[B]``, ``B.``, ``B)``, ``Option (B)``;
- a letter followed by that option's own text: ``(B) the kitchen``, ``Option B: the kitchen``;
- statements anywhere in the text: ``Answer: C`` / ``Final answer: (C)`` / ``the answer is D`` /
  ``the correct answer is option D`` / ``the correct option is B`` / ``Best option: B``, provided
  every such statement names the same letter;
- the exact text of one option (case- and whitespace-insensitive).

Anything else, a letter beyond the options, or two different letters, is invalid (None): scored
wrong and counted. There is no fallback to the first capital letter or a random choice, and
"option B" inside prose ("option A is wrong, ...") is not a statement. The table of accepted and
refused forms is in docs/scoring.md.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import defaultdict
from collections.abc import Mapping, Sequence

from egohorizon.errors import DataError
from egohorizon.schema import EGOMONTH_TASK_LEVELS, QAItem, task_key

_STATEMENTS = (
    re.compile(
        r"\b(?:(?:final|correct|best)\s+)?answer\b\s*(?:is|:|=)?\s*:?\s*(?:option\s+)?"
        r"[\(\[]?([A-Za-z])[\)\]]?(?![A-Za-z])",
        re.IGNORECASE,
    ),
    # "the correct option is B", "Best option: B": the verb or colon is required, so that "option A"
    # inside prose ("option A is wrong") is never read as a choice
    re.compile(
        r"\b(?:(?:final|correct|best|right)\s+)?option\b\s*(?:is|:|=)\s*:?\s*"
        r"[\(\[]?([A-Za-z])[\)\]]?(?![A-Za-z])",
        re.IGNORECASE,
    ),
)
_OPTION = r"(?:option\s*)?"
_LONE = re.compile(rf"^{_OPTION}[\(\[]?([A-Za-z])[\)\]]?[.:]?$", re.IGNORECASE)
_LETTER_THEN_TEXT = re.compile(
    rf"^{_OPTION}[\(\[]?([A-Za-z])(?:[\)\]]|[.:)])\s*(.+)$", re.DOTALL | re.IGNORECASE
)
# Markdown emphasis: runs of * or _ at the edge of a word ("**C**", "__C__", "**Answer:** B"); an
# underscore or asterisk inside a word ("snake_case", "2*3") is kept.
_EMPHASIS = re.compile(r"(?<![\w*_])[*_]{1,3}|[*_]{1,3}(?![\w*_])")


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", text).strip().rstrip(".").strip()


def _letter_index(letter: str, n_options: int) -> int | None:
    index = ord(letter.upper()) - ord("A")
    return index if 0 <= index < n_options else None


def _statement_letters(text: str) -> set[str]:
    letters = set()
    for statement in _STATEMENTS:
        for match in statement.finditer(text):
            letter = match.group(1)
            rest = text[match.end() :]
            # "the answer is a cup": a lowercase letter followed by a word is the article, not option A
            if letter.islower() and re.match(r"\s+[A-Za-z]", rest):
                continue
            letters.add(letter.upper())
    return letters


def extract_answer(text: str | None, options: Sequence[str]) -> str | None:
    """The chosen option letter ("A", "B", ...) or None when the text does not say clearly."""
    if text is None:
        return None
    raw = text.strip()
    stripped = _EMPHASIS.sub("", raw).strip()
    if not stripped:
        return None
    n = len(options)
    lone = _LONE.match(stripped)
    if lone:
        index = _letter_index(lone.group(1), n)
        return chr(ord("A") + index) if index is not None else None
    normalised_options = [_normalise(o) for o in options]
    letter_text = _LETTER_THEN_TEXT.match(stripped)
    if letter_text:
        index = _letter_index(letter_text.group(1), n)
        if index is not None and _normalise(letter_text.group(2)) == normalised_options[index]:
            return chr(ord("A") + index)
    letters = _statement_letters(stripped)
    if letters:
        if len(letters) > 1:
            return None
        index = _letter_index(letters.pop(), n)
        return chr(ord("A") + index) if index is not None else None
    said = {_normalise(stripped), _normalise(raw)}  # an option's own text may hold * or _
    matches = [i for i, option in enumerate(normalised_options) if option and option in said]
    return chr(ord("A") + matches[0]) if len(matches) == 1 else None


def item_level(item: QAItem, task_levels: Mapping[str, int] | None) -> int | None:
    """The item's own ``level``, else its task's level in ``task_levels`` (EgoMonth by default)."""
    if item.level is not None:
        return item.level
    levels = {task_key(t): lv for t, lv in (task_levels or EGOMONTH_TASK_LEVELS).items()}
    return levels.get(task_key(item.task))


def score_qa(
    items: Sequence[QAItem], answers: Mapping[str, str | None], task_levels: Mapping[str, int] | None = None
) -> dict:
    """Accuracy report (SPEC §3, §6).

    items: gold questions. answers: item id -> extracted letter, or None (invalid); an item missing
        from ``answers`` is invalid too. task_levels: task -> level for benchmarks other than
        EgoMonth (e.g. HD-EPIC's); items without a level are left out of ``per_level`` only.
    Returns ``Avg`` (macro mean of per-task accuracy), ``Acc`` (micro accuracy), ``n``, ``invalid``,
    ``chance`` (mean of 1 / number of options), ``per_task`` {task: {acc, n, correct, invalid,
    level}}, ``per_level`` {level: {avg (macro over its tasks), acc (micro), n, n_tasks}} and
    ``per_category`` {category: the same}, for benchmarks whose items name one in ``meta.category``
    (HD-EPIC VQA's 7: recipe, ingredient, nutrition, fine_grained, 3d_perception, object_motion, gaze);
    empty when none does.
    Accuracies are fractions in [0, 1]; None when there are no items. Raises DataError when two items
    of one task have different levels (naming the task and both items).
    """
    per_task: dict[str, dict] = {}
    task_names: dict[str, str] = {}
    correct_total = invalid_total = 0
    category_of: dict[str, str] = {}  # task -> its items' category
    first_of: dict[str, QAItem] = {}  # task -> its first item, to name it when another disagrees
    for item in items:
        name = task_names.setdefault(task_key(item.task), item.task)
        level = item_level(item, task_levels)
        row = per_task.setdefault(name, {"acc": None, "n": 0, "correct": 0, "invalid": 0, "level": level})
        first = first_of.setdefault(name, item)
        if level != row["level"]:  # one task under two levels would be reported under one of them
            raise DataError(f"task {name!r} has items at two levels: {first.id!r} at level {row['level']}, "
                            f"{item.id!r} at level {level}; give every item of a task the same level")
        category = (item.meta or {}).get("category")
        if isinstance(category, str) and category:
            category_of.setdefault(name, category)
        answer = answers.get(item.id)
        row["n"] += 1
        if answer is None:
            row["invalid"] += 1
            invalid_total += 1
        elif answer.upper() == item.answer:
            row["correct"] += 1
            correct_total += 1
    for row in per_task.values():
        row["acc"] = row["correct"] / row["n"]
    by_level: dict[int, list[dict]] = defaultdict(list)
    for row in per_task.values():
        if row["level"] is not None:
            by_level[row["level"]].append(row)
    per_level = {str(level): _pooled(rows) for level, rows in sorted(by_level.items())}
    by_category: dict[str, list[dict]] = defaultdict(list)
    for name, category in category_of.items():
        by_category[category].append(per_task[name])
    per_category = {category: _pooled(rows) for category, rows in sorted(by_category.items())}
    n = len(items)
    return {
        "Avg": sum(r["acc"] for r in per_task.values()) / len(per_task) if per_task else None,
        "Acc": correct_total / n if n else None,
        "n": n,
        "invalid": invalid_total,
        "chance": sum(1 / len(item.options) for item in items) / n if n else None,
        "per_task": dict(sorted(per_task.items())),
        "per_level": per_level,
        "per_category": per_category,
    }


def _pooled(rows: Sequence[dict]) -> dict:
    """A group of task rows: ``avg`` (macro over its tasks), ``acc`` (micro), ``n``, ``n_tasks``."""
    return {
        "avg": sum(r["acc"] for r in rows) / len(rows),
        "acc": sum(r["correct"] for r in rows) / sum(r["n"] for r in rows),
        "n": sum(r["n"] for r in rows),
        "n_tasks": len(rows),
    }


def answer_prior(train_items: Sequence[QAItem]) -> dict[str, dict[str, int]]:
    """The answer-prior baseline's table: per task type, each option text's times right minus times a
    distractor among the training items. A blind baseline (no frames, no memory, not even the question):
    it measures how much the options' wording gives away, e.g. an activity that is always the regular one."""
    table: dict[str, dict[str, int]] = {}
    for item in train_items:
        scores = table.setdefault(item.task, {})
        for letter, option in zip(string.ascii_uppercase, item.options, strict=False):
            scores[option] = scores.get(option, 0) + (1 if letter == item.answer else -1)
    return table


def prior_answers(items: Sequence[QAItem], table: Mapping[str, Mapping[str, int]],
                  tie_letter: str | None = None) -> dict[str, str]:
    """Each item's option with the highest ``answer_prior`` score of its task type; among tied options
    the ``tie_letter`` (the majority position) when it is one of them, else the first."""
    answers = {}
    for item in items:
        scores = table.get(item.task, {})
        values = [scores.get(option, 0) for option in item.options]
        best = [string.ascii_uppercase[k] for k, v in enumerate(values) if v == max(values)]
        answers[item.id] = tie_letter if tie_letter in best else best[0]
    return answers
