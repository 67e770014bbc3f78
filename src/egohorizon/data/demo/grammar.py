"""A small grammar of behaviour: acts at five levels and the rules by which they expand.

An ``Act`` is something the simulated person does at one level of the L1-L5 hierarchy, with its
first-person descriptions (paraphrases, separated by ``|`` when written, possibly holding
``{slots}``) and, above level 1, the parts it is made of. Parts are the script inside an activity:
fixed steps, optional steps, repeats, choices and steps done in any order, so the same activity
unfolds a little differently every time while keeping a structure a model can learn.

The vocabulary modules (``vocab/``) declare acts with the helpers at the bottom (``a``, ``step``,
``task``, ``activity``, ``episode``); they all land in ``REGISTRY``, keyed by a stable name. Written
by hand: no library models hierarchical scripts of behaviour with paraphrases.
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

# Slot values: a plain string, or a dict that sets several slots at once (e.g. a dish with its
# ingredients); a string starting with "@" names a pool of the persona (e.g. "@friends").
SlotValues = tuple[Any, ...] | str


@dataclass(frozen=True)
class Act:
    key: str
    level: int
    texts: tuple[str, ...]
    parts: tuple[Part, ...] = ()
    duration: tuple[int, int] | None = None  # seconds; L1, and unrecorded (private) blocks
    place: str | None = None  # inherited by the parts that do not name their own
    objects: tuple[str, ...] = ()  # L1: what is in view; the first one is in the hands
    screen: str | None = None  # L1: kind of on-screen content (see screens.py), e.g. "phone:chat"
    speech: str | None = None  # L1: kind of conversation (see transcript.py), e.g. "chat"
    slots: dict[str, SlotValues] = field(default_factory=dict)  # chosen when this act starts
    private: bool = False  # never recorded (the wearer pauses the glasses): ends a session
    interruptible: bool = True  # may get a glance at the phone or a message between its parts
    fill: bool = False  # L5: parts are a pool drawn from until the episode's end time

    def __post_init__(self) -> None:
        if not 1 <= self.level <= 5:
            raise ValueError(f"act {self.key!r}: level {self.level} outside 1-5")
        if self.level == 1 and not self.duration:
            raise ValueError(f"act {self.key!r}: a level-1 act needs a duration")
        if self.level > 1 and not self.parts and not (self.private and self.duration):
            raise ValueError(f"act {self.key!r}: level {self.level} needs parts (or be a private block)")


# --------------------------------------------------------------------------------------------
# Parts: each expands to a list of act keys
# --------------------------------------------------------------------------------------------


class Part(ABC):
    @abstractmethod
    def expand(self, rng: random.Random) -> list[str]:
        """The act keys this part stands for, drawn with ``rng``."""


@dataclass(frozen=True)
class One(Part):
    key: str

    def expand(self, rng: random.Random) -> list[str]:
        return [self.key]


@dataclass(frozen=True)
class Maybe(Part):
    part: Part
    p: float

    def expand(self, rng: random.Random) -> list[str]:
        return self.part.expand(rng) if rng.random() < self.p else []


@dataclass(frozen=True)
class Repeat(Part):
    part: Part
    low: int
    high: int

    def expand(self, rng: random.Random) -> list[str]:
        return [key for _ in range(rng.randint(self.low, self.high)) for key in self.part.expand(rng)]


@dataclass(frozen=True)
class Pick(Part):
    options: tuple[Part, ...]
    weights: tuple[float, ...]

    def expand(self, rng: random.Random) -> list[str]:
        return rng.choices(self.options, weights=self.weights)[0].expand(rng)


@dataclass(frozen=True)
class AnyOrder(Part):
    parts: tuple[Part, ...]

    def expand(self, rng: random.Random) -> list[str]:
        order = list(self.parts)
        rng.shuffle(order)
        return [key for part in order for key in part.expand(rng)]


def as_part(value: Part | str) -> Part:
    return value if isinstance(value, Part) else One(value)


def opt(part: Part | str, p: float = 0.5) -> Part:
    return Maybe(as_part(part), p)


def rep(part: Part | str, low: int, high: int) -> Part:
    return Repeat(as_part(part), low, high)


def pick(*options: Part | str, weights: tuple[float, ...] | None = None) -> Part:
    return Pick(tuple(as_part(o) for o in options), tuple(weights or [1.0] * len(options)))


def anyorder(*parts: Part | str) -> Part:
    return AnyOrder(tuple(as_part(p) for p in parts))


def part_keys(part: Part) -> list[str]:
    """Every act key a part can produce (to check the vocabulary is closed)."""
    if isinstance(part, One):
        return [part.key]
    if isinstance(part, (Maybe, Repeat)):
        return part_keys(part.part)
    if isinstance(part, Pick):
        return [k for o in part.options for k in part_keys(o)]
    if isinstance(part, AnyOrder):
        return [k for p in part.parts for k in part_keys(p)]
    raise TypeError(f"unknown part {part!r}")


# --------------------------------------------------------------------------------------------
# The registry and the helpers the vocabulary is written with
# --------------------------------------------------------------------------------------------

REGISTRY: dict[str, Act] = {}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _texts(texts: str | tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(texts, tuple):
        return texts
    return tuple(t.strip() for t in texts.split("|") if t.strip())


def define(act: Act) -> str:
    """Registers ``act``; the same key may be declared twice only with the same definition."""
    known = REGISTRY.get(act.key)
    if known is not None and known != act:
        raise ValueError(f"act {act.key!r} is declared twice with different definitions")
    REGISTRY[act.key] = act
    return act.key


def a(texts: str, objects: str, low: int, high: int, key: str | None = None, **kw: Any) -> str:
    """A level-1 action lasting ``low``-``high`` seconds; ``objects`` space-separated, in the hands first
    (underscores stand for spaces, e.g. ``cutting_board``)."""
    texts_ = _texts(texts)
    objs = tuple(o.replace("_", " ") for o in objects.split())
    return define(Act(key or _slug(texts_[0]), 1, texts_, duration=(low, high), objects=objs, **kw))


def _composite(level: int, key: str, texts: str, parts: list[Part | str] | tuple = (), **kw: Any) -> str:
    return define(Act(key, level, _texts(texts), tuple(as_part(p) for p in parts), **kw))


def step(key: str, texts: str, parts: list[Part | str], **kw: Any) -> str:
    return _composite(2, key, texts, parts, **kw)


def task(key: str, texts: str, parts: list[Part | str], **kw: Any) -> str:
    return _composite(3, key, texts, parts, **kw)


def activity(key: str, texts: str, parts: list[Part | str] = (), **kw: Any) -> str:
    return _composite(4, key, texts, parts, **kw)


def episode(key: str, texts: str, parts: list[Part | str], **kw: Any) -> str:
    return _composite(5, key, texts, parts, **kw)


def check_registry() -> list[str]:
    """Problems with the vocabulary: unknown part keys, parts not one level below their act."""
    problems = []
    for act in REGISTRY.values():
        for part in act.parts:
            for key in part_keys(part):
                child = REGISTRY.get(key)
                if child is None:
                    problems.append(f"act {act.key!r}: part {key!r} is not declared")
                elif child.level != act.level - 1:
                    problems.append(f"act {act.key!r} (L{act.level}): part {key!r} is L{child.level}")
    return problems
