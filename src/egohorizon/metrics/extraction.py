"""Answer-extraction modes: how a model's multiple-choice reply becomes an option letter.

``extract(text, options, mode)`` returns "A", "B", ... or None (invalid, scored wrong). Modes:

- ``strict`` (default, the project's own; ``egohorizon.metrics.qa.extract_answer``): a lone letter,
  a letter with its option's own text, "Answer: C"-style statements that agree, or one option's exact
  text; nothing is guessed.
- ``egomonth-cs``: EgoMonth's Qwen3-VL-8B script (``scripts/Qwen3-VL-8B.py``,
  ``re.search(r'\\b([A-D])\\b', response)``): the first standalone capital letter, case-sensitive, so
  ``c`` is invalid and ``I think A or B`` reads A.
- ``egomonth-upper``: EgoMonth's other scripts (``scripts/qwen2vl.py``: the same search on
  ``text.upper()``): ``c`` reads C, and ``Based on the video, a person ...`` reads A (the article).
- ``egoschema``: EgoSchema ships no parser for generated replies (its own baselines score options,
  its answers are 0-based digits); this mode reads what lmms-eval's EgoSchema task accepts (the reply
  is an option's text, or its letter) plus the reply's first token when it is a capital letter or a
  0-based digit (``2`` is the third option) closed by a bracket, period, colon, comma, line break or
  the end, after an optional ``Answer:`` / ``The answer is`` / ``Option``. A capital followed by a
  word (``C is correct``, ``C stops scrolling``) is not read: many EgoSchema options start with "C "
  (the camera wearer; ``data convert egoschema`` counts them, issue 25 counted 861 of the public
  subset's 2,500), so such a reply is prose, not a choice. Lower-case letters are not read either
  (EgoSchema writes the wearer as "c").

The EgoMonth scripts' letter range is ``[A-D]`` (every EgoMonth item has four options); here it is
A up to the item's last option letter, the same range for four options. Python's ``\\b`` is
Unicode-aware, as in the scripts: ``答案：B`` reads B (the full-width colon is not a word character),
``答案B`` reads nothing (a CJK character is one). The table of replies and what each mode reads is
tests/unit/metrics/test_qa_extraction.py and docs/scoring.md.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

MODES = ("strict", "egomonth-cs", "egomonth-upper", "egoschema")

_EGOSCHEMA_PREFIX = re.compile(
    r"^\s*(?:(?:the\s+)?(?:final\s+|correct\s+|best\s+)?answer(?:\s+is)?\s*[:：]?\s*|option\s*[:：]?\s*)?",
    re.IGNORECASE,
)


def extract(text: str | None, options: Sequence[str], mode: str = "strict") -> str | None:
    """The option letter ``text`` chooses under ``mode`` (one of ``MODES``), or None."""
    if mode == "strict":
        from egohorizon.metrics.qa import extract_answer

        return extract_answer(text, options)
    if mode not in MODES:
        raise ValueError(f"unknown extraction mode {mode!r}; expected one of {', '.join(MODES)}")
    if text is None or not options:
        return None
    letters = string.ascii_uppercase[: len(options)]
    if mode == "egoschema":
        return _egoschema(text, options, letters)
    if mode == "egomonth-upper":
        text = text.upper()
    match = re.search(rf"\b([{letters[0]}-{letters[-1]}])\b", text)
    return match.group(1) if match else None


def _egoschema(text: str, options: Sequence[str], letters: str) -> str | None:
    reply = text.strip()
    # the reply is an option's own text (lmms-eval's first two rules); a text two options share names
    # neither, so it is invalid rather than the first of them (issue 36, item 6)
    same = [i for i, option in enumerate(options) if option.strip()
            and reply.rstrip(".") == option.strip().rstrip(".")]
    if same:
        return letters[same[0]] if len(same) == 1 else None
    rest = reply[_EGOSCHEMA_PREFIX.match(reply).end():]
    digits = "".join(str(i) for i in range(min(len(options), 10)))
    token = re.match(
        rf"(?:\(([{letters}{digits}])\)|\[([{letters}{digits}])\]|([{letters}{digits}])(?=[.,:)\]]|\s*(?:\n|$)))",
        rest,
    )
    if not token:
        return None
    choice = next(group for group in token.groups() if group)
    return letters[int(choice)] if choice.isdigit() else choice
