"""A generated demo world on disk, loaded: its records, and frames rendered on demand."""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from functools import cached_property
from pathlib import Path
from typing import Any

from egohorizon.errors import DataError
from egohorizon.schema import Event, Recording, iter_json_lines, load_jsonl

FILES = ("events.jsonl", "recordings.jsonl", "transcript.jsonl", "world.json")
TRANSCRIPT_FIELDS = ("participant", "session", "start", "end", "text")


class DemoWorld:
    """Events (L1-L5), recordings (one per session), transcript and metadata of a demo world.

    ``render_frame(session_id, t, size)`` draws the frame at Unix time ``t`` (any time inside the
    session; frames are meant to be sampled at 1 Hz) and returns ``(image, gaze, confidence)``:
    a PIL RGB image, the gaze point (x, y) in that image's pixels or None when there is no gaze
    fix, and the gaze confidence in 0-1. A gaze point outside ``[0, size)`` means the wearer
    looked beyond the camera's view. Frames are a pure function of the world and ``t``.
    """

    def __init__(self, path: Path, events: list[Event], recordings: list[Recording],
                 transcript: list[dict[str, Any]], meta: dict[str, Any], cues: list[dict[str, Any]] | None = None):
        self.path, self.events, self.recordings, self.transcript, self.meta = path, events, recordings, transcript, meta
        # Cue-driven switches (egohorizon.data.demo.cues.switches): None unless the world was made with them.
        self.cues = None
        if cues is not None:
            from egohorizon.data.demo.cues.switches import CueIndex

            self.cues = CueIndex(cues)

    @property
    def seed(self) -> int:
        return int(self.meta["seed"])

    @cached_property
    def _sessions(self) -> dict[str, Recording]:
        return {r.session: r for r in self.recordings}

    @cached_property
    def _actions(self) -> dict[str, tuple[list[float], list[Event]]]:
        by_session: dict[str, list[Event]] = defaultdict(list)
        for event in self.events:
            if event.level == 1:
                by_session[event.session].append(event)
        index = {}
        for session, actions in by_session.items():
            actions.sort(key=lambda e: e.start)
            index[session] = ([e.start for e in actions], actions)
        return index

    def session(self, session_id: str) -> Recording:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise DataError(f"demo world {self.path}: no session {session_id!r}") from None

    def action_at(self, session_id: str, t: float) -> Event:
        """The level-1 event going on at time ``t`` of the session."""
        recording = self.session(session_id)
        if not recording.start <= t <= recording.end:
            raise DataError(f"demo world {self.path}: t={t} is outside session {session_id!r} "
                            f"({recording.start}-{recording.end})")
        starts, actions = self._actions[session_id]
        return actions[max(0, bisect.bisect_right(starts, t) - 1)]

    def frame_times(self, session_id: str) -> list[float]:
        """The session's 1 Hz frame times (Unix seconds)."""
        recording = self.session(session_id)
        return [float(t) for t in range(int(recording.start), int(recording.end))]

    def render_frame(self, session_id: str, t: float, size: int = 224):
        from egohorizon.data.demo.render import render

        if size < 16:
            raise ValueError(f"frame size must be at least 16 pixels, got {size}")
        image, gaze, confidence = render(self.action_at(session_id, t), self.seed, session_id, t, size)
        cue = self.cues.at(session_id, t) if self.cues is not None else None
        if cue is not None:
            from egohorizon.data.demo.cues.switches import overlay

            image, gaze, confidence = overlay(image, gaze, confidence, cue, t, size)
        return image, gaze, confidence

    def utterances(self, session_id: str, start: float, end: float) -> list[dict[str, Any]]:
        """Transcript entries of a session that overlap [start, end)."""
        return [u for u in self.transcript if u["session"] == session_id and u["end"] > start and u["start"] < end]


def _read_transcript(path: Path) -> list[dict[str, Any]]:
    rows, problems = [], []
    for line, obj, problem in iter_json_lines(path):
        if problem is None and not isinstance(obj, dict):
            problem = "expected a JSON object"
        if problem is None:
            missing = [f for f in TRANSCRIPT_FIELDS if f not in obj]
            problem = f"missing field(s) {', '.join(missing)}" if missing else None
        if problem:
            problems.append(f"{path}:{line}: {problem}")
        else:
            rows.append(obj)
    if problems:
        raise DataError(f"{len(problems)} defective transcript line(s):\n" + "\n".join(problems[:20]))
    return rows


def read_demo_world(path: str | Path) -> DemoWorld:
    """Reads a generated world from its folder (``writer.load_demo_world`` also makes the default one)."""
    path = Path(path)
    if path.is_file():  # a world's events.jsonl: "create it with demo --out events.jsonl" misled
        raise DataError(f"{path}: a file; expected a demo world folder (events.jsonl, recordings.jsonl, "
                        f"transcript.jsonl, world.json), e.g. {path.parent}")
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise DataError(f"{path}: not a demo world (missing {', '.join(missing)}); "
                        f"create it with `egohorizon demo --out {path}`")
    try:
        meta = json.loads((path / "world.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(f"{path / 'world.json'}: invalid JSON ({error.msg} at line {error.lineno})") from None
    events = load_jsonl(path / "events.jsonl", Event)
    recordings = load_jsonl(path / "recordings.jsonl", Recording)
    cues = None
    if "cue_switches" in meta:
        from egohorizon.data.demo.cues.switches import CUES_FILE, read_cues

        if not (path / CUES_FILE).is_file():
            raise DataError(f"{path}: world.json says cue_switches but {CUES_FILE} is missing")
        cues = read_cues(path / CUES_FILE)
    return DemoWorld(path, events, recordings, _read_transcript(path / "transcript.jsonl"), meta, cues=cues)
