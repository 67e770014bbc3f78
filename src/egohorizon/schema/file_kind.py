"""What a file that should be JSON Lines really is (a CSV, one JSON document, plain text), and how to
turn it into records: one message for the whole file instead of one "invalid JSON" per line
(issue 22, item 15)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

SNIFF_BYTES = 1 << 16  # enough for a header and the first lines
WHOLE_JSON_LIMIT = 256 << 20  # larger files are not parsed as one document just to name them
PROBE_LINES = 20  # JSON Lines if any of these is a JSON value
HAND_BOX_HEADER = ("filename", "xmin", "ymin", "xmax", "ymax")


def not_json_lines(path: str | os.PathLike) -> str | None:
    """A message saying what the file is and how to convert it when it is not JSON Lines; None when
    it is (or may be: its lines' own defects then speak for themselves)."""
    path = Path(path)
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES).decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = [line for line in head.splitlines() if line.strip()][:PROBE_LINES]
    if not lines or any(_is_json(line) for line in lines):
        return None
    first = lines[0].lstrip()
    if first[:1] in "[{":
        return _json_document(path)
    if len(lines) > 1 and _looks_like_csv(lines):
        return _csv_message(path, lines[0])
    return (f"{path}: not a JSON Lines file (one JSON record a line): none of its first {len(lines)} lines is "
            f"JSON (line 1: {lines[0][:60]!r})")


def _is_json(line: str) -> bool:
    """Whether the line is a JSON object, as every record is (a pretty-printed document's lines can be
    bare strings or numbers)."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _looks_like_csv(lines: list[str]) -> bool:
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines[:5]), delimiters=",\t;")
    except csv.Error:
        dialect = csv.excel
    widths = {len(row) for row in csv.reader(lines[:5], dialect)}
    return len(widths) == 1 and widths.pop() > 1


def _json_document(path: Path) -> str | None:
    if path.stat().st_size > WHOLE_JSON_LIMIT:
        return (f"{path}: not a JSON Lines file: it starts like one JSON document spread over several lines; "
                "expected one JSON record a line")
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        return None  # broken JSON of some kind: the line-by-line defects say where
    to_lines = f"jq -c '.[]' {path} > {path.with_suffix('.jsonl')}"
    if isinstance(document, list):
        return (f"{path}: a JSON array of {len(document)} items, not JSON Lines (one record a line); "
                f"convert it with `{to_lines}`")
    if isinstance(document, dict):
        hint = _vqa_hint(path, document) or (
            f"if its values are the records, `jq -c '.[]' {path} > {path.with_suffix('.jsonl')}`")
        return (f"{path}: one JSON object of {len(document)} keys spread over several lines, not JSON Lines "
                f"(one record a line); {hint}")
    return None


def _vqa_hint(path: Path, document: dict[str, Any]) -> str | None:
    """HD-EPIC's VQA benchmark files map item ids to {inputs, question, choices, correct_idx}."""
    sample = next(iter(document.values()), None)
    if isinstance(sample, dict) and {"question", "choices"} <= set(sample):
        root = path.parent.parent if path.parent.name == "vqa-benchmark" else path.parent
        return (f"it looks like an HD-EPIC VQA benchmark file: `egohorizon data convert hd-epic-vqa --root {root} "
                f"--out OUT` writes its items as OUT/qa.jsonl (it reads every *.json of a vqa-benchmark folder)")
    return None


def _csv_message(path: Path, header: str) -> str:
    columns = [c.strip() for c in next(csv.reader([header]))]
    shown = ",".join(columns[:8]) + (",..." if len(columns) > 8 else "")
    text = f"{path}: a CSV file (header: {shown}), not JSON Lines (one JSON record a line)"
    if set(HAND_BOX_HEADER) <= set(columns):
        return (f"{text}; it is a hand-box table: `egohorizon hands detect IMAGES --gold {path}` reads it as it is, "
                "and `egohorizon score boxes` takes JSON Lines of hand_box records")
    if path.name.startswith("EPIC_") or "narration_id" in columns:
        return (f"{text}; it looks like an EPIC-KITCHENS annotation file: `egohorizon data convert epic-kitchens "
                f"--root {path.parent} --out OUT` writes events.jsonl")
    if path.name.startswith("HD_EPIC"):
        return (f"{text}; it looks like an HD-EPIC annotation file: `egohorizon data convert hd-epic --root "
                f"{path.parent} --out OUT` writes events.jsonl")
    return f"{text}; `egohorizon data convert` turns EPIC-KITCHENS and HD-EPIC annotations into records"
