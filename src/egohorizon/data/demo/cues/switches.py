"""Cue-driven switches (issue 15): some task switches of a demo world announced in its frames.

An option of the world (``cue_switches``, off by default). The simulation is not touched: the same
seed gives the same events, recordings and transcript, so every figure of the world stays as it is.
What the option adds is a list of *cues*: a few seconds before certain switches start, something
visible announces them in the frames, and nothing in the text history does:

- ``phone``: the phone on the desk lights up with a message banner, before the wearer glances at the
  phone, answers a message or takes a phone break (the world's phone interruptions);
- ``person``: a colleague walks into view, before the wearer chats with a colleague in the kitchen.

The other examples of the issue (a kettle boiling, a doorbell screen) have no switch they could
announce in this world's vocabulary, so they are not drawn. Not every switch is announced
(``P_ANNOUNCED``), and the wearer looks at the cue in most of its frames (``P_GAZE_ON_CUE``), not all.

The cues are written to ``cues.jsonl`` of the world's folder (``participant, session, t_switch,
start, kind, event, gaze_on_cue``, the cue visible in ``[start, t_switch)``) and drawn over the
rendered frame by ``overlay``. Forecast points whose ``t0`` is an announced switch get
``meta.cue_driven = true`` and ``meta.cue`` (``mark_cue_points``).

This module lives beside ``data/demo/``, not in it, on purpose: the generator's code digest hashes
every module of that folder, and a new one there would make every existing default world regenerate
(same events, new ``world.json``) under the engineers training on it. A cue world records
``CUE_VERSION`` and this file's own digest in ``world.json`` (``cue_switches``) instead.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from egohorizon.errors import DataError
from egohorizon.schema import Event, ForecastPoint, iter_json_lines, write_jsonl

CUE_VERSION = "1"
CUES_FILE = "cues.jsonl"
# event key -> the cue that announces it
CUE_OF_KEY = {
    "glance_at_my_phone": "phone",
    "reply_to_message": "phone",
    "phone_break": "phone",
    "chat_with_colleague_in_the_kitchen": "person",
}
P_ANNOUNCED = 0.8
P_GAZE_ON_CUE = 0.7
LEAD_S = (3, 8)  # the cue shows this many seconds (inclusive range) before the switch
CUE_FIELDS = ("participant", "session", "t_switch", "start", "kind", "event", "gaze_on_cue")


def cues_digest() -> str:
    return hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:12]


def settings() -> dict[str, Any]:
    """What ``world.json`` records under ``cue_switches`` (and ``ensure_demo_world`` compares)."""
    return {"version": CUE_VERSION, "code": cues_digest(), "p_announced": P_ANNOUNCED,
            "p_gaze_on_cue": P_GAZE_ON_CUE, "lead_s": list(LEAD_S), "kinds": sorted(set(CUE_OF_KEY.values()))}


def make_cues(events: Sequence[Event], seed: int) -> list[dict[str, Any]]:
    """The announced switches of a world: one cue per switch time (a phone break, its first message
    and its first action start together and share one cue), seeded per switch."""
    session_start: dict[str, float] = {}
    for event in events:
        if event.session not in session_start or event.start < session_start[event.session]:
            session_start[event.session] = event.start
    cues: dict[tuple[str, float], dict[str, Any]] = {}
    for event in sorted(events, key=lambda e: (e.start, -e.level, e.id)):
        kind = CUE_OF_KEY.get(event.meta.get("key", ""))
        if kind is None or (event.participant, event.start) in cues:
            continue
        rng = random.Random(f"{seed}:cue:{event.participant}:{event.start}")
        announced = rng.random() < P_ANNOUNCED
        lead = rng.randint(*LEAD_S)
        gaze_on_cue = rng.random() < P_GAZE_ON_CUE
        start = max(event.start - lead, session_start[event.session])
        if not announced or start >= event.start:  # a switch at a session's first second cannot be announced
            cues[(event.participant, event.start)] = {}
            continue
        cues[(event.participant, event.start)] = {
            "participant": event.participant, "session": event.session, "t_switch": event.start,
            "start": start, "kind": kind, "event": event.id, "gaze_on_cue": gaze_on_cue}
    return sorted((c for c in cues.values() if c), key=lambda c: (c["participant"], c["t_switch"]))


def write_cues(folder: Path, cues: list[dict[str, Any]]) -> None:
    write_jsonl(folder / CUES_FILE, cues)


def read_cues(path: Path) -> list[dict[str, Any]]:
    """``cues.jsonl``; a bad line is named with its file, line and field."""
    rows, problems = [], []
    for line, obj, problem in iter_json_lines(path):
        if problem is None and not isinstance(obj, dict):
            problem = "expected a JSON object"
        if problem is None:
            missing = [f for f in CUE_FIELDS if f not in obj]
            if missing:
                problem = f"missing field(s) {', '.join(missing)}"
            elif obj["kind"] not in ("phone", "person"):
                problem = f"field kind: expected 'phone' or 'person', got {obj['kind']!r}"
            elif not obj["start"] < obj["t_switch"]:
                problem = "fields start/t_switch: the cue must start before the switch"
        if problem:
            problems.append(f"{path}:{line}: {problem}")
        else:
            rows.append(obj)
    if problems:
        raise DataError(f"{len(problems)} defective cue line(s):\n" + "\n".join(problems[:20]))
    return rows


class CueIndex:
    """The cues of a world by session, for the renderer, and by participant, for the points."""

    def __init__(self, cues: Iterable[dict[str, Any]]):
        self.cues = list(cues)
        by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for cue in self.cues:
            by_session[cue["session"]].append(cue)
        self._sessions = {s: (sorted(c["start"] for c in cs), sorted(cs, key=lambda c: c["start"]))
                          for s, cs in by_session.items()}
        self.switches = {(c["participant"], float(c["t_switch"])): c for c in self.cues}

    def at(self, session: str, t: float) -> dict[str, Any] | None:
        """The cue visible at ``t`` (start <= t < t_switch), if any."""
        if session not in self._sessions:
            return None
        starts, cues = self._sessions[session]
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and cues[i]["start"] <= t < cues[i]["t_switch"]:
            return cues[i]
        return None


def cues_beside(events_path: str | Path) -> CueIndex | None:
    """The cues of a cue world whose events are at ``events_path`` (its folder or its events file);
    None when there is no ``cues.jsonl`` beside them (a world without the option, or another data set)."""
    path = Path(events_path)
    folder = path if path.is_dir() else path.parent
    return CueIndex(read_cues(folder / CUES_FILE)) if (folder / CUES_FILE).is_file() else None


def mark_cue_points(points: Iterable[ForecastPoint], index: CueIndex) -> int:
    """Sets ``meta.cue_driven`` (and ``meta.cue``, the kind) on every point; returns how many are."""
    count = 0
    for point in points:
        cue = index.switches.get((point.participant, float(point.t0)))
        point.meta["cue_driven"] = cue is not None
        if cue is not None:
            point.meta["cue"] = cue["kind"]
            count += 1
    return count


def cue_box(kind: str, size: int) -> tuple[float, float, float, float]:
    if kind == "phone":  # on the desk, lower right
        return 0.70 * size, 0.58 * size, 0.90 * size, 0.94 * size
    return 0.03 * size, 0.12 * size, 0.30 * size, 0.95 * size  # a person entering on the left


def overlay(image, gaze, confidence, cue: dict[str, Any], t: float, size: int):
    """Draws ``cue`` over a rendered frame; when the wearer looks at it, the gaze moves onto it (with
    the renderer's noise). Returns (image, gaze, confidence)."""
    from PIL import ImageDraw

    from egohorizon.data.demo.render import _font

    draw = ImageDraw.Draw(image)
    x0, y0, x1, y1 = cue_box(cue["kind"], size)
    progress = (t - cue["start"]) / max(1e-6, cue["t_switch"] - cue["start"])
    if cue["kind"] == "phone":
        draw.rounded_rectangle([x0, y0, x1, y1], radius=0.02 * size, fill=(20, 20, 25))
        glow = (255, 250, 200) if int(t) % 2 == 0 else (255, 255, 255)  # a blinking lit screen
        draw.rectangle([x0 + 0.015 * size, y0 + 0.03 * size, x1 - 0.015 * size, y1 - 0.03 * size], fill=glow)
        draw.rectangle([x0 + 0.015 * size, y0 + 0.05 * size, x1 - 0.015 * size, y0 + 0.12 * size], fill=(40, 170, 80))
        draw.text(((x0 + x1) / 2, y0 + 0.085 * size), "1 new", fill=(255, 255, 255), font=_font(size // 22),
                  anchor="mm")
    else:  # the person steps further in as the switch nears
        shift = (1 - progress) * -0.1 * size
        cx = (x0 + x1) / 2 + shift
        head = 0.07 * size
        draw.ellipse([cx - head, y0, cx + head, y0 + 2 * head], fill=(205, 150, 120))
        draw.rounded_rectangle([cx - 0.11 * size, y0 + 2 * head, cx + 0.11 * size, y1], radius=0.04 * size,
                               fill=(60, 90, 160))
    if cue["gaze_on_cue"] and gaze is not None:
        rng = random.Random(f"cue-gaze:{cue['session']}:{round(t * 1000)}")
        gaze = (round((x0 + x1) / 2 + rng.gauss(0, 0.025 * size), 1),
                round((y0 + y1) / 2 + rng.gauss(0, 0.025 * size), 1))
        confidence = max(confidence, 0.75)
    return image, gaze, confidence


def cue_statistics(cues: Sequence[dict[str, Any]], events: Sequence[Event]) -> dict[str, Any]:
    """Counts for the docs: cues per kind, switches that could have been announced, gaze on cue."""
    candidates = {(e.participant, e.start) for e in events if e.meta.get("key") in CUE_OF_KEY}
    kinds: dict[str, int] = defaultdict(int)
    for cue in cues:
        kinds[cue["kind"]] += 1
    return {"cues": len(cues), "per_kind": dict(kinds), "switch_times": len(candidates),
            "gaze_on_cue": sum(c["gaze_on_cue"] for c in cues),
            "mean_lead_s": round(sum(c["t_switch"] - c["start"] for c in cues) / max(1, len(cues)), 2)}


def dumps_settings() -> str:
    return json.dumps(settings(), sort_keys=True)
