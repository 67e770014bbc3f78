"""Simulate a person's days: expand each day's plan of level-5 episodes into a timed tree of acts.

The timeline of a day is continuous from waking to bed (what is *recorded* of it is decided later,
in ``recording.py``). Every choice draws from one ``random.Random`` per person and day, seeded by a
string, so a world is a pure function of (seed, persona, date) and one day's change never shifts
another day's choices.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

from egohorizon.data.demo import screens, transcript
from egohorizon.data.demo.grammar import REGISTRY, Act, Part
from egohorizon.data.demo.personas import Day, Persona, PlanItem
from egohorizon.data.demo.vocab.common import INTERRUPTIONS

MAX_FILL_PARTS = 40  # a fill episode never holds more activities than this (guards a bad plan)
MIN_FILL_LEFT_S = 300  # do not start another activity when less than this is left to a fill episode
PLACE_PHRASES = {
    "kitchen": "in the kitchen", "living room": "in the living room", "bedroom": "in the bedroom",
    "bathroom": "in the bathroom", "hallway": "in the hallway", "lab office": "at my desk",
    "home office": "at my desk", "studio desk": "at my desk in the studio", "meeting room": "in the meeting room",
    "canteen": "in the canteen", "café": "at the café", "supermarket": "in the supermarket", "park": "in the park",
    "climbing gym": "at the climbing gym", "restaurant": "at the restaurant", "office kitchen": "in the office kitchen",
    "airport": "at the airport", "plane": "on the plane",
}


@dataclass
class Node:
    """One simulated act with its times (Unix seconds) and, above level 1, its parts."""

    act: Act
    text: str
    canonical: str  # the first wording of the act, with the same slot values: one meaning, one string
    start: int
    end: int
    place: str
    children: list[Node] = field(default_factory=list)
    objects: tuple[str, ...] = ()
    details: tuple[_Slots, int] | None = None  # L1 with a screen or speech: (slot values, seed)
    wordings: tuple[str, ...] = ()  # L5: every wording, for the parts of an episode cut by pauses

    @property
    def level(self) -> int:
        return self.act.level

    @property
    def private(self) -> bool:
        return self.act.private


class SlotError(KeyError):
    pass


class _Slots:
    """The mapping ``str.format_map`` reads slot values from: the act's context first, then what
    was drawn earlier in this episode, then the persona's values, then a fresh draw from the
    persona's pools, kept in the episode's scope so the rest of the episode names the same friend."""

    def __init__(self, ctx: dict[str, Any], scope: dict[str, Any], values: dict[str, Any],
                 pools: dict[str, tuple], rng: random.Random):
        self.ctx, self.scope, self.values, self.pools, self.rng = ctx, scope, values, pools, rng

    def __getitem__(self, name: str) -> Any:
        if name in self.ctx:
            return self.ctx[name]
        if name in self.scope:
            return self.scope[name]
        if name in self.values:
            return self.values[name]
        if name in self.pools:
            value = self.scope[name] = self.rng.choice(self.pools[name])
            return value
        raise SlotError(f"slot {{{name}}} has no value")


class DaySimulator:
    def __init__(self, persona: Persona, day: Day):
        self.persona, self.day, self.rng = persona, day, day.rng
        self.values = day.values
        self.pools = {**persona.pools, **day.phase.pools}
        self.episode_scope: dict[str, Any] = {}

    def slots(self, ctx: dict[str, Any], rng: random.Random | None = None) -> _Slots:
        return _Slots(ctx, self.episode_scope, self.values, self.pools, rng or self.rng)

    def fmt(self, template: str, ctx: dict[str, Any]) -> str:
        if "{" not in template:
            return template
        try:
            return template.format_map(self.slots(ctx))
        except SlotError as error:
            raise SlotError(f"{error.args[0]} in {template!r} (persona {self.persona.key})") from None

    # -- the day ------------------------------------------------------------------------------
    def run(self, wake_hour: float, plan: list[PlanItem]) -> list[Node]:
        midnight = int(dt.datetime(self.day.date.year, self.day.date.month, self.day.date.day,
                                   tzinfo=dt.UTC).timestamp())
        t = midnight + int(wake_hour * 3600)
        episodes = []
        base = {"city": self.values.get("home_city", "")}
        for item in plan:
            act = REGISTRY[item.episode]
            until = midnight + int(item.until * 3600) if item.until is not None else None
            self.episode_scope = {}
            node = self.expand(act, {**base, **item.ctx}, t, place="home", until=until, pool=item.pool)
            episodes.append(node)
            t = node.end
        return episodes

    # -- acts ---------------------------------------------------------------------------------
    def _bind_slots(self, act: Act, ctx: dict[str, Any]) -> dict[str, Any]:
        if not act.slots:
            return ctx
        ctx = dict(ctx)
        for name, values in act.slots.items():
            if isinstance(values, str) and values.startswith("@"):
                values = self.pools[values[1:]]
            value = self.rng.choice(values)
            if isinstance(value, dict):
                ctx.update({k: self.fmt(v, ctx) for k, v in value.items()})
            else:
                ctx[name] = self.fmt(value, ctx)
        return ctx

    def _wording(self, act: Act, ctx: dict[str, Any], place: str, repeated: bool) -> tuple[str, str]:
        # The first wording is the usual one; the others are paraphrases used now and then.
        texts = act.texts
        text = texts[0] if len(texts) == 1 or self.rng.random() < 0.5 else texts[self.rng.randrange(1, len(texts))]
        text = self.fmt(text, ctx)
        if act.level == 1:
            text = self._embellish(act, text, place, repeated)
        return text, self.fmt(act.texts[0], ctx)

    def _embellish(self, act: Act, text: str, place: str, repeated: bool) -> str:
        """Details a captioner adds now and then without changing the action: where, which hand,
        "again". They make the same action read differently from one time to the next."""
        roll = self.rng.random()
        if repeated and roll < 0.6:
            return f"{text} again"
        if roll < 0.12 and place in PLACE_PHRASES and PLACE_PHRASES[place] not in text:
            return f"{text} {PLACE_PHRASES[place]}"
        if roll > 0.94 and act.objects and not act.screen:
            return f"{text} with my {self.rng.choice(('left', 'right'))} hand"
        return text

    def expand(self, act: Act, ctx: dict[str, Any], t: int, place: str, until: int | None = None,
               pool: Part | None = None, previous: str | None = None) -> Node:
        ctx = self._bind_slots(act, ctx)
        place = self.fmt(act.place, ctx) if act.place else place
        text, canonical = self._wording(act, ctx, place, repeated=previous == act.key)
        node = Node(act, text, canonical, t, t, place)
        if act.level == 5:
            node.wordings = tuple(self.fmt(wording, ctx) for wording in act.texts)
        if act.level == 1 or (act.private and not act.parts):
            node.end = t + self.rng.randint(*act.duration)
            if act.level == 1:
                self._fill_action(node, ctx)
            return node
        if act.fill:
            node.end = self._fill(act, ctx, t, place, until, pool, node)
            return node
        keys = self._interrupt(act, [k for part in act.parts for k in part.expand(self.rng)])
        for i, key in enumerate(keys):
            child = self.expand(REGISTRY[key], ctx, t, place, previous=keys[i - 1] if i else None)
            node.children.append(child)
            t = child.end
        node.end = t
        return node

    def _fill(self, act, ctx, t, place, until, pool, node) -> int:
        """A fill episode: its fixed parts, then activities from the pool until ``until`` (each
        activity's length decides whether another one fits). Appends to ``node``; returns the end."""
        if until is None:
            raise ValueError(f"episode {act.key!r} fills time, but its plan item gives no end time")
        fixed, pool = act.parts[:-1], pool or act.parts[-1]
        for key in (k for part in fixed for k in part.expand(self.rng)):
            child = self.expand(REGISTRY[key], ctx, t, place)
            node.children.append(child)
            t = child.end
        previous = node.children[-1].act.key if node.children else None
        while t < until - MIN_FILL_LEFT_S and len(node.children) < MAX_FILL_PARTS:
            key = pool.expand(self.rng)[0]
            for _ in range(10):  # never the same activity twice in a row (if the pool allows)
                if key != previous:
                    break
                key = pool.expand(self.rng)[0]
            child = self.expand(REGISTRY[key], ctx, t, place)
            node.children.append(child)
            t, previous = child.end, key
        return t

    def _interrupt(self, act: Act, keys: list[str]) -> list[str]:
        """Now and then an interruption (a glance at the phone, a message) cuts between two parts."""
        rule = INTERRUPTIONS.get(act.level - 1)
        if not act.interruptible or not rule or len(keys) < 2:
            return keys
        chance, options, weights = rule
        out = [keys[0]]
        for key in keys[1:]:
            if self.rng.random() < chance:
                out.append(self.rng.choices(options, weights=weights)[0])
            out.append(key)
        return out

    def _fill_action(self, node: Node, ctx: dict[str, Any]) -> None:
        act = node.act
        node.objects = tuple(self.fmt(o, ctx) for o in act.objects)
        if act.screen or act.speech:
            # Screen text and speech are only worked out for actions that get recorded (see
            # ``action_details``); keep what they need, and a seed of their own.
            node.details = (self.slots(ctx, rng=None), self.rng.getrandbits(32))


def action_details(node: Node) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The screen content and the utterances of a level-1 node (None and [] when it has neither)."""
    if node.details is None:
        return None, []
    slots, seed = node.details
    rng = random.Random(seed)
    slots = _Slots(slots.ctx, slots.scope, slots.values, slots.pools, rng)
    screen = screens.screen_content(node.act.screen, slots, rng) if node.act.screen else None
    speech = transcript.conversation(node.act.speech, slots, node.start, node.end, rng) if node.act.speech else []
    return screen, speech


def simulate_person(persona: Persona, seed: int, participant: str, start: dt.date, n_days: int,
                    skip: set[int] = frozenset()) -> dict[int, list[Node]]:
    """Each day's level-5 episodes, in order, by day index from ``start``; days in ``skip`` (days
    without any recording) are not simulated at all."""
    rare = persona.rare_days(random.Random(f"{seed}:{participant}:rare"), n_days)
    days = {}
    for index in range(n_days):
        if index in skip:
            continue
        date = start + dt.timedelta(days=index)
        phase = persona.phase_for(index)
        day = Day(date, index, random.Random(f"{seed}:{participant}:{date.isoformat()}"), phase,
                  rare.get(index), {**persona.values, **phase.values})
        wake, plan = persona.plan(day)
        days[index] = DaySimulator(persona, day).run(wake, plan)
    return days
