"""The shard index (``index.json``): what each shard holds, so splits pick whole shards by day.

Format (``INDEX_FORMAT``, version ``INDEX_VERSION``)::

    {"format": "egohorizon-window-shards", "schema_version": 1, "window_schema_version": 2,
     "build": {window_s, long_side, crop_size, draw_gaze, min_frames, samples_per_shard,
               jpeg_quality, crop_quality, deid, window_schema_version, screen_text, skipped_windows},
     "totals": {"shards", "samples", "frames", "words", "bytes", "participants", "days",
                "deid": {"frames", "faces", "text_boxes"},
                "screen_text": {"frames", "failed", "lines", "sensitive_dropped"}},
     "inputs": {"ingested": [folders], "events": [files], "sessions": {recording id: fingerprint}},
     "shards": [{"path", "participant", "day", "sessions", "samples", "frames", "words", "bytes",
                 "start", "end", "gaze_status_counts", "deid": {"frames", "faces", "text_boxes"},
                 "screen_text": {"frames", "failed", "lines", "sensitive_dropped"},
                 "fingerprint", "inputs": {recording id: fingerprint}}, ...]}

``build.skipped_windows`` counts windows left out for having fewer than ``min_frames`` frames;
``deid.frames`` counts the frames that passed the de-identifier (0 when it was off).
``build.screen_text`` is the on-screen text reader's settings (its OCR version) or ``"off"``;
``screen_text`` counts the frames OCR'd, the failed reads, the lines kept and the sensitive lines
dropped (egohorizon.data.windows.text). ``window_schema_version`` 1: shards from before on-screen text;
``require_screen_text`` refuses them (and shards built with it off) for readers that need it.

``path`` is relative to the index's folder, inside it and one file per entry (``path_problems``;
built from ``windows.safe_name`` of participant and day, which keeps the original ids). Each shard also has a sidecar ``<shard>.json`` holding its
entry and the build settings; the index is assembled from the sidecars, and a re-run of the writer
trusts a shard only when its sidecar exists, its build settings match, its ``fingerprint`` (settings,
ordered keys, the fingerprints of the sessions it draws on) equals the plan's, and its byte size
agrees. ``inputs`` says what the shards were built from (``ingested``/``events``: absent for the demo
world), so ``shards verify`` can tell a stale index (issue 9).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from egohorizon.atomic_files import write_json_atomic
from egohorizon.errors import DataError

INDEX_FILE = "index.json"
INDEX_FORMAT = "egohorizon-window-shards"
INDEX_VERSION = 1


@dataclass
class ShardIndex:
    root: Path
    build: dict[str, Any]
    shards: list[dict[str, Any]]
    window_schema_version: int = 1
    inputs: dict[str, Any] = field(default_factory=dict)

    def path_of(self, entry: dict[str, Any]) -> Path:
        """The shard's file; a DataError for a path outside the shard folder, which no reader follows."""
        if not is_inside(entry["path"]):
            raise DataError(f"{self.root / INDEX_FILE}: shard path {entry['path']!r} is outside the shard folder "
                            "(absolute or with '..'); this index was not written by `egohorizon shards build`")
        return self.root / entry["path"]

    def path_problems(self) -> list[str]:
        """What is wrong with the shards' paths: one outside the shard folder, or two entries naming one
        file (shards built before issue 22 could give two participants, e.g. Zoë and Zoé, one path:
        the later shard overwrote the earlier, whose samples are lost)."""
        problems, seen = [], {}
        for i, entry in enumerate(self.shards):
            path = entry["path"]
            if not is_inside(path):
                problems.append(f"field 'shards[{i}].path': {path!r} is outside the shard folder (absolute or "
                                "with '..'); not read")
                continue
            name = posixpath.normpath(path)
            if name in seen:
                j = seen[name]
                other = self.shards[j]
                problems.append(f"field 'shards[{i}].path': {path!r} is also the path of shards[{j}] "
                                f"({entry['participant']}/{entry['day']} and {other['participant']}/{other['day']}): "
                                "one shard overwrote the other's samples; rebuild the shards (a rebuild into this "
                                "folder gives each its own path)")
            else:
                seen[name] = i
        return problems

    def urls(self, entries: list[dict[str, Any]] | None = None) -> list[str]:
        return [str(self.path_of(e)) for e in (self.shards if entries is None else entries)]

    def expected_samples(self) -> dict[str, int]:
        """Shard path (as in ``urls``) -> sample count, to count samples lost in a damaged shard."""
        return {str(self.path_of(e)): int(e["samples"]) for e in self.shards}

    def totals(self) -> dict[str, Any]:
        deid: Counter = Counter()
        text: Counter = Counter()
        for entry in self.shards:
            deid.update(entry.get("deid", {}))
            text.update(entry.get("screen_text", {}))
        return {
            "shards": len(self.shards),
            "samples": sum(e["samples"] for e in self.shards),
            "frames": sum(e.get("frames", 0) for e in self.shards),
            "words": sum(e.get("words", 0) for e in self.shards),
            "bytes": sum(e["bytes"] for e in self.shards),
            "participants": sorted({e["participant"] for e in self.shards}),
            "days": sorted({e["day"] for e in self.shards}),
            "deid": dict(deid),
            "screen_text": dict(text),
        }

    def require_screen_text(self) -> None:
        """Raises a DataError unless the windows carry their on-screen text (a captioner's input):
        older shards would otherwise read as windows without any text on screen."""
        where = self.root / INDEX_FILE
        if self.window_schema_version < 2:
            raise DataError(f"{where}: field 'window_schema_version': {self.window_schema_version} (built before "
                            "on-screen text was read); rebuild the shards into a new folder (window schema 2)")
        if self.build.get("screen_text", "off") == "off":
            raise DataError(f"{where}: field 'build.screen_text': 'off' (built without on-screen text); rebuild "
                            "the shards with it")

    def to_dict(self) -> dict[str, Any]:
        return {"format": INDEX_FORMAT, "schema_version": INDEX_VERSION,
                "window_schema_version": self.window_schema_version, "build": self.build,
                "totals": self.totals(), "inputs": self.inputs, "shards": self.shards}

    def save(self) -> Path:
        path = self.root / INDEX_FILE
        write_json_atomic(path, self.to_dict())
        return path

    @classmethod
    def load(cls, root_or_file: str | os.PathLike) -> ShardIndex:
        path = Path(root_or_file)
        if path.is_dir():
            path = path / INDEX_FILE
        elif path.is_file() and path.name != INDEX_FILE:  # an events or points file: "not valid JSON" said little
            raise DataError(f"{path}: not a shard index; expected a shard folder or its {INDEX_FILE} "
                            "(build shards with `egohorizon shards build`)")
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DataError(f"{path}: shard index not found (build shards with `egohorizon shards build`)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise DataError(f"{path}: shard index is not valid JSON ({error})") from None
        if not isinstance(obj, dict) or obj.get("format") != INDEX_FORMAT:
            raise DataError(f"{path}: field 'format': expected {INDEX_FORMAT!r}, got {obj.get('format')!r}"
                            if isinstance(obj, dict) else f"{path}: expected a JSON object")
        if obj.get("schema_version") != INDEX_VERSION:
            raise DataError(f"{path}: field 'schema_version': expected {INDEX_VERSION}, got "
                            f"{obj.get('schema_version')!r}; rebuild the shards")
        shards = obj.get("shards")
        if not isinstance(shards, list):
            raise DataError(f"{path}: field 'shards': expected a list")
        for i, entry in enumerate(shards):
            for key in ("path", "participant", "day", "samples", "bytes"):
                if not isinstance(entry, dict) or key not in entry:
                    raise DataError(f"{path}: field 'shards[{i}].{key}': missing")
            if not isinstance(entry["path"], str) or not entry["path"]:
                raise DataError(f"{path}: field 'shards[{i}].path': expected a relative file path, got "
                                f"{entry['path']!r}")
        inputs = obj.get("inputs", {})
        if not isinstance(inputs, dict):
            raise DataError(f"{path}: field 'inputs': expected an object, got {type(inputs).__name__}")
        return cls(root=path.parent, build=obj.get("build", {}), shards=shards,
                   window_schema_version=obj.get("window_schema_version", 1), inputs=inputs)

    def select(self, *, days: set[tuple[str, str]] | None = None,
               participants: set[str] | None = None) -> list[dict[str, Any]]:
        """Entries whose (participant, day) is in ``days`` and participant in ``participants``."""
        return [e for e in self.shards
                if (days is None or (e["participant"], e["day"]) in days)
                and (participants is None or e["participant"] in participants)]

    def participant_days(self) -> dict[tuple[str, str], float]:
        """(participant, day) -> earliest start, for building held-out-day splits."""
        out: dict[tuple[str, str], float] = {}
        for entry in self.shards:
            key = (entry["participant"], entry["day"])
            out[key] = min(out.get(key, float("inf")), float(entry.get("start", 0.0)))
        return out


def is_inside(relpath: str) -> bool:
    """Whether a shard path stays inside the index's folder: relative, without '..' (or a drive)."""
    pure = PurePosixPath(relpath.replace("\\", "/"))
    return not pure.is_absolute() and ".." not in pure.parts and ":" not in relpath

