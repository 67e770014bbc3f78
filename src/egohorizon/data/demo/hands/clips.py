"""Demo-world hand clips (issue 14): short first-person clips in which the wearer's left and right
hands work through household subtasks, with gold per-frame hand boxes, subtask segments, hand-action
segments (Ego4D verbs) and hand captions, split by held-out days.

A clip is a pure function of (seed, clip index): ``make_clip`` draws its script (subtasks -> steps
-> per-hand segments) and its hand motion; ``render.render_hand_frame`` draws any frame of it,
so no images are stored. The hands are distinct (thumbs on opposite sides, different sleeves, each
arm entering from its own bottom corner), occlude each other when they work on one object, leave
the frame while idle, and change scale from clip to clip (near and far work surfaces).

Records (SPEC §6): ``clips.jsonl`` (one per clip: id, participant, day, split, size, duration, seed),
``boxes.jsonl`` (gold ``HandBox`` at 30 fps frame indices on a grid of 3, i.e. 10 fps as EgoHome
annotates), ``segments.jsonl`` (``subtask`` / ``hand_action`` / ``hand_caption``) and ``split.json``
(a ``DaySplit``: whole days are held out for validation and test).
"""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path

FPS = 30
GRID = 3  # annotated every 3rd frame: 10 fps
HANDS = ("left", "right")

# object -> (colour, shape) for the renderer
OBJECTS: dict[str, tuple[tuple[int, int, int], str]] = {
    "kettle": ((90, 90, 100), "box"), "cup": ((240, 240, 250), "round"), "spoon": ((200, 200, 210), "bar"),
    "cloth": ((60, 120, 220), "box"), "table": ((150, 100, 60), "bar"), "plate": ((250, 250, 240), "round"),
    "knife": ((180, 180, 190), "bar"), "carrot": ((240, 130, 30), "bar"), "jar": ((120, 200, 120), "round"),
    "lid": ((220, 60, 60), "round"), "shirt": ((230, 200, 60), "box"), "watering can": ((40, 160, 90), "box"),
    "plant": ((30, 120, 40), "round"), "phone": ((30, 30, 35), "box"), "sponge": ((250, 230, 80), "box"),
    "bowl": ((200, 120, 200), "round"), "towel": ((230, 110, 150), "box"), "book": ((120, 60, 160), "box"),
}

# subtask -> (place, steps); a step is (hands, Ego4D verb, object, caption of what the hand does)
SUBTASKS: dict[str, tuple[str, list[tuple[str, str, str, str]]]] = {
    "make tea": ("kitchen", [("right", "take", "kettle", "grabs the kettle by its handle"),
                             ("left", "hold", "cup", "holds the cup steady"),
                             ("right", "pour", "kettle", "pours hot water into the cup"),
                             ("right", "mix", "spoon", "stirs the tea with a spoon")]),
    "wipe the table": ("kitchen", [("right", "take", "cloth", "picks up the blue cloth"),
                                   ("right", "wipe", "table", "wipes the table in circles"),
                                   ("left", "lift", "plate", "lifts the plate out of the way")]),
    "cut a carrot": ("kitchen", [("left", "hold", "carrot", "holds the carrot on the board"),
                                 ("right", "cut", "carrot", "slices the carrot with the knife"),
                                 ("left", "move", "carrot", "pushes the slices aside")]),
    "open a jar": ("kitchen", [("left", "hold", "jar", "grips the jar"),
                               ("right", "turn", "lid", "twists the red lid"),
                               ("right", "put", "lid", "puts the lid down")]),
    "fold laundry": ("bedroom", [("both", "take", "shirt", "takes a corner of the shirt"),
                                 ("both", "fold", "shirt", "folds the shirt in half"),
                                 ("right", "put", "shirt", "lays the folded shirt down")]),
    "water the plant": ("living room", [("right", "lift", "watering can", "lifts the green watering can"),
                                        ("right", "water", "plant", "waters the plant"),
                                        ("left", "touch", "plant", "feels the soil of the plant")]),
    "wash a bowl": ("kitchen", [("left", "hold", "bowl", "holds the bowl under the tap"),
                                ("right", "clean", "sponge", "scrubs the bowl with the sponge"),
                                ("both", "shake", "bowl", "shakes the water off the bowl")]),
    "read a book": ("living room", [("both", "hold", "book", "holds the book open"),
                                    ("right", "turn", "book", "turns a page")]),
    "check the phone": ("hallway", [("left", "hold", "phone", "holds the phone"),
                                    ("right", "scroll", "phone", "scrolls with the index finger")]),
    "dry the hands": ("bathroom", [("both", "take", "towel", "takes the pink towel"),
                                   ("both", "wipe", "towel", "rubs the hands dry in the towel")]),
}


@dataclass
class HandKey:
    """Where a hand is at time ``t``: centre (fractions of width, height), tilt (radians)."""

    t: float
    x: float
    y: float
    tilt: float = 0.0


@dataclass
class HandClip:
    clip: str
    participant: str
    day: str
    split: str
    seed: int
    width: int
    height: int
    duration: float
    place: str
    scale: float  # hand length as a fraction of the frame height
    right_on_top: bool
    segments: list[dict] = field(default_factory=list)
    keys: dict[str, list[HandKey]] = field(default_factory=dict)
    objects: list[tuple[float, float, float, float, str]] = field(default_factory=list)  # start, end, x, y, name


def _rest(hand: str, rng: random.Random, leave: bool) -> tuple[float, float]:
    """An idle hand: low in its own corner, or below the frame (it has left the view)."""
    x = 0.15 + 0.1 * rng.random() if hand == "left" else 0.75 + 0.1 * rng.random()
    return x, (1.35 + 0.2 * rng.random()) if leave else (0.9 + 0.08 * rng.random())


def _steps(rng: random.Random, duration: float) -> list[tuple[str, float, float, tuple[str, str, str, str]]]:
    """(subtask, start, end, step) covering the clip: one or two subtasks, their steps in order."""
    names = rng.sample(sorted(SUBTASKS), 2)
    n_subtasks = 1 if rng.random() < 0.5 else 2
    chosen = [step for name in names[:n_subtasks] for step in [(name, s) for s in SUBTASKS[name][1]]]
    weights = [0.6 + rng.random() for _ in chosen]
    scale = duration / sum(weights)
    out, t = [], 0.0
    for (name, step), weight in zip(chosen, weights):
        end = duration if (name, step) == chosen[-1] else round(t + weight * scale, 2)
        out.append((name, round(t, 2), end, step))
        t = end
    return out


def make_clip(seed: int, index: int, participant: str, day: str, split: str, *, width: int = 320,
              height: int = 240, duration: float = 6.0) -> HandClip:
    rng = random.Random(f"hands/{seed}/{index}")
    steps = _steps(rng, duration)
    clip = HandClip(clip=f"{participant}_{day}_h{index:04d}", participant=participant, day=day, split=split,
                    seed=seed, width=width, height=height, duration=duration, place=SUBTASKS[steps[0][0]][0],
                    scale=0.3 + 0.35 * rng.random(), right_on_top=rng.random() < 0.7)
    # subtask segments: consecutive steps of one subtask
    for name in dict.fromkeys(s[0] for s in steps):
        own = [s for s in steps if s[0] == name]
        clip.segments.append({"kind": "subtask", "hand": None, "start": own[0][1], "end": own[-1][2], "label": name})
    keys: dict[str, list[HandKey]] = {hand: [] for hand in HANDS}
    busy: dict[str, list[tuple[float, float]]] = {hand: [] for hand in HANDS}
    for _, start, end, (who, verb, obj, caption) in steps:
        x = 0.25 + 0.5 * rng.random()
        y = 0.45 + 0.3 * rng.random()
        clip.objects.append((start, end, x, y, obj))
        for hand in HANDS if who == "both" else (who,):
            offset = (-0.12 if hand == "left" else 0.12) if who == "both" else 0.0
            tilt = (0.35 if hand == "left" else -0.35) + 0.3 * (rng.random() - 0.5)
            keys[hand] += [HandKey(start + 0.25 * (end - start), x + offset, y, tilt),
                           HandKey(end - 0.1 * (end - start), x + offset + 0.04 * (rng.random() - 0.5), y + 0.03, tilt)]
            busy[hand].append((start, end))
            clip.segments.append({"kind": "hand_action", "hand": hand, "start": start, "end": end,
                                  "label": f"{verb} {obj}"})
            clip.segments.append({"kind": "hand_caption", "hand": hand, "start": start, "end": end,
                                  "label": f"the {hand} hand {caption}"})
    for hand in HANDS:
        # idle stretches: the hand rests in its corner or leaves the frame
        leave = rng.random() < 0.5
        rest = [HandKey(0.0, *_rest(hand, rng, leave))] if not busy[hand] or busy[hand][0][0] > 0.3 else []
        gaps = [(a[1], b[0]) for a, b in itertools.pairwise(busy[hand]) if b[0] - a[1] > 0.6]
        for a, b in gaps:
            rest.append(HandKey((a + b) / 2, *_rest(hand, rng, rng.random() < 0.5)))
        if busy[hand] and busy[hand][-1][1] < duration - 0.6:
            rest.append(HandKey(duration, *_rest(hand, rng, rng.random() < 0.5)))
        keys[hand] = sorted(keys[hand] + rest, key=lambda k: k.t)
    clip.keys = keys
    return clip


def hand_at(clip: HandClip, hand: str, t: float) -> HandKey:
    """The hand's pose at ``t``: linear between key poses, held before the first and after the last."""
    keys = clip.keys[hand]
    if t <= keys[0].t:
        return HandKey(t, keys[0].x, keys[0].y, keys[0].tilt)
    for a, b in itertools.pairwise(keys):
        if a.t <= t <= b.t:
            w = (t - a.t) / max(b.t - a.t, 1e-9)
            return HandKey(t, a.x + w * (b.x - a.x), a.y + w * (b.y - a.y), a.tilt + w * (b.tilt - a.tilt))
    return HandKey(t, keys[-1].x, keys[-1].y, keys[-1].tilt)


def hand_outline(clip: HandClip, hand: str, t: float) -> list[tuple[float, float]]:
    """The hand's polygon points in pixels (palm, four fingers, thumb towards the other hand)."""
    pose = hand_at(clip, hand, t)
    length = clip.scale * clip.height
    cx, cy = pose.x * clip.width, pose.y * clip.height
    thumb = 1.0 if hand == "left" else -1.0  # seen from behind, a left hand's thumb points right
    local = [(-0.22, 0.15), (0.22, 0.15), (0.24, -0.15), (0.2, -0.5), (0.07, -0.55), (-0.07, -0.55),
             (-0.2, -0.5), (-0.24, -0.15)]
    local = [(x * -thumb, y) for x, y in local] + [(0.45 * thumb, -0.2), (0.3 * thumb, 0.05)]
    cos, sin = math.cos(pose.tilt), math.sin(pose.tilt)
    return [(cx + length * (x * cos - y * sin), cy + length * (x * sin + y * cos)) for x, y in local]


def gold_box(clip: HandClip, hand: str, t: float) -> list[float] | None:
    """The visible extent of the hand (its outline clipped to the frame); None when out of view."""
    points = hand_outline(clip, hand, t)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    box = [max(0.0, min(xs)), max(0.0, min(ys)), min(float(clip.width), max(xs)), min(float(clip.height), max(ys))]
    if box[2] - box[0] < 2 or box[3] - box[1] < 2:
        return None
    return [round(v, 1) for v in box]


def clip_records(clip: HandClip) -> tuple[dict, list[dict], list[dict]]:
    """(clip record, gold box records, segment records) of one clip."""
    boxes = []
    for frame in range(0, int(clip.duration * FPS) + 1, GRID):
        for hand in HANDS:
            box = gold_box(clip, hand, frame / FPS)
            if box is not None:
                boxes.append({"clip": clip.clip, "frame": frame, "hand": hand, "box": box, "grid": GRID})
    segments = [{"clip": clip.clip, **s} for s in clip.segments]
    record = {k: v for k, v in asdict(clip).items() if k not in ("segments", "keys", "objects")}
    return record, boxes, segments


def clip_from_record(record: dict, index: int | None = None) -> HandClip:
    """The clip a ``clips.jsonl`` record describes (regenerated from its seed and index)."""
    index = int(record["clip"].rsplit("_h", 1)[1]) if index is None else index
    return make_clip(record["seed"], index, record["participant"], record["day"], record["split"],
                     width=record["width"], height=record["height"], duration=record["duration"])


def build_hand_clips(out: str | Path, *, seed: int = 0, days: int = 20, clips_per_day: int = 15,
                     val_days: int = 3, test_days: int = 3, participant: str = "p01", width: int = 320,
                     height: int = 240, duration: float = 6.0, extra_train_days: int = 0) -> dict:
    """Write clips.jsonl, boxes.jsonl, segments.jsonl and split.json under ``out``; returns counts.
    Held-out days are drawn with ``seed`` among the first ``days``; every clip of a day shares its split.
    ``extra_train_days`` more training days follow them (clip indices continue), so a larger training set
    keeps exactly the same validation and test clips as the set without them."""
    from egohorizon.data.splits import DaySplit
    from egohorizon.errors import ConfigError

    if val_days + test_days >= days:
        raise ConfigError(f"hand clips: {val_days} validation + {test_days} test days leave no training day of {days}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if extra_train_days < 0:
        raise ConfigError(f"hand clips: extra_train_days must be >= 0, got {extra_train_days}")
    base = [(date(2024, 5, 1) + timedelta(days=d)).isoformat() for d in range(days)]
    held = random.Random(f"hands-split/{seed}").sample(base, val_days + test_days)
    names = base + [(date(2024, 5, 1) + timedelta(days=days + d)).isoformat() for d in range(extra_train_days)]
    split_of = {d: "val" if d in held[:val_days] else "test" if d in held[val_days:] else "train" for d in names}
    counts = {"train": 0, "val": 0, "test": 0}
    with (out / "clips.jsonl").open("w") as c, (out / "boxes.jsonl").open("w") as b, \
            (out / "segments.jsonl").open("w") as s:
        for d, day in enumerate(names):
            for k in range(clips_per_day):
                clip = make_clip(seed, d * clips_per_day + k, participant, day, split_of[day], width=width,
                                 height=height, duration=duration)
                record, boxes, segments = clip_records(clip)
                c.write(json.dumps(record) + "\n")
                b.writelines(json.dumps(x) + "\n" for x in boxes)
                s.writelines(json.dumps(x) + "\n" for x in segments)
                counts[split_of[day]] += 1
    DaySplit(days={participant: split_of}, settings={"seed": seed, "val_days": val_days, "test_days": test_days,
                                                     "source": "demo hands"}).save(out / "split.json")
    return {"clips": counts, "days": {k: sum(v == k for v in split_of.values()) for k in counts}}
