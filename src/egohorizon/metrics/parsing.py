"""Reading a forecaster's raw output into candidate trajectories (SPEC §1 "malformed output").

The forecasting prompt asks for ``{"candidates": [["action 1", ..., "action K"], ...]}``. Models
wrap, trim and reformat that, so ``parse_forecast_output`` accepts, in this order:

1. JSON (the whole text, or inside a code fence, or the first JSON value embedded in prose):
   an object with ``candidates``, a bare list of lists (several candidates), or a list of strings
   (one candidate);
2. plain text: ``Candidate 1:`` headers each followed by numbered or bulleted actions, or, without
   headers, a text whose every line is a numbered action (one candidate).

A reply stopped once its list held K actions (``model.generation.actions`` first_k / exactly_k:
``{"candidates": [["a", "b"``) is closed by ``close_stopped_reply`` before it is parsed; a reply cut
by its token budget anywhere else stays unclosed and invalid.

Action strings are stripped and empty ones dropped; a candidate left empty is dropped. Anything else
(no list, numbers or objects where strings belong, an object without ``candidates``) is None:
invalid, scored 0 and counted, never repaired by guessing.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_CANDIDATE_HEADER = re.compile(
    r"^\s*[#*_>\s]*(?:candidate|trajectory|option)\s*(\d+)\s*[*_]*\s*[:.)\-]?\s*[*_]*\s*(.*)$", re.IGNORECASE
)
_NUMBERED = re.compile(r"^\s*(?:\d+\s*[.):]|[-*\u2022])\s+(.*\S)\s*$")


def _as_candidates(value: Any) -> list[list[str]] | None:
    """A parsed JSON value -> candidates, or None if its shape is not one we accept."""
    if isinstance(value, dict):
        if "candidates" not in value:
            return None
        value = value["candidates"]
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, str) for item in value):
        value = [value]  # a single list of actions is one candidate
    elif not all(isinstance(item, list) and all(isinstance(a, str) for a in item) for item in value):
        return None
    candidates = [[a.strip() for a in cand if a.strip()] for cand in value]
    candidates = [cand for cand in candidates if cand]
    return candidates or None


def _json_values(text: str):
    """The whole text as JSON, then each JSON object/array that starts somewhere inside it."""
    try:
        yield json.loads(text)
        return
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        yield value


def _from_json(text: str) -> tuple[bool, list[list[str]] | None]:
    """(found any JSON list/object, candidates). The first list/object found decides."""
    for value in _json_values(text):
        if isinstance(value, (list, dict)):
            return True, _as_candidates(value)
    return False, None


def _from_plain_text(text: str) -> list[list[str]] | None:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    if any(_CANDIDATE_HEADER.match(line) for line in lines):
        # Prose before the first header and after a candidate's list is allowed; an action after
        # such prose, with no new header, is ambiguous and makes the output invalid.
        candidates: list[list[str]] = []
        open_ = False
        for line in lines:
            header = _CANDIDATE_HEADER.match(line)
            if header:
                candidates.append([])
                open_ = True
                rest = header.group(2).strip().strip("*_").strip()
                if rest and not rest.endswith(":"):  # "Candidate 1: a; b; c" on one line
                    candidates[-1].extend(re.split(r"\s*(?:;|->|\u2192)\s*", rest))
                continue
            item = _NUMBERED.match(line)
            if item and open_:
                candidates[-1].append(item.group(1))
            elif item:
                return None
            elif candidates:
                open_ = False
        return _as_candidates(candidates)
    items = [_NUMBERED.match(line) for line in lines]
    if all(items):
        return _as_candidates([[item.group(1) for item in items]])
    return None


def parse_forecast_output(text: str) -> list[list[str]] | None:
    """Candidate trajectories from raw model text, or None when the output is malformed."""
    if not isinstance(text, str) or not text.strip():
        return None
    blocks = [m.group(1) for m in _FENCE.finditer(text)] or [text]
    for block in blocks:
        found, candidates = _from_json(block.strip())
        if found:
            return candidates
    for block in blocks:
        candidates = _from_plain_text(block)
        if candidates is not None:
            return candidates
    return None


def close_stopped_reply(text: str, k: int) -> str:
    """``text`` closed after its last finished action when it stopped inside an inner JSON list that holds
    at least ``k`` finished actions (how generation stops a candidate at K actions): the unfinished
    rest (a comma, a started string) is dropped and the open lists and object closed. Any other text is
    returned as it is, so an unfinished reply with fewer actions stays invalid."""
    stack: list[str] = []
    in_string = escaped = False
    items, last_end, closers = 0, None, ""
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if len(stack) >= 2 and stack[-1] == "]" and stack[-2] == "]":  # an action in an inner list
                    items += 1
                    last_end, closers = index + 1, "".join(reversed(stack))
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
            items = 0 if char == "[" else items
        elif char in "]}" and stack:
            stack.pop()
            last_end = None  # a list closed after the last action: the reply goes on in its own form
    if not (in_string or stack) or last_end is None or items < k:
        return text
    return text[:last_end] + closers
