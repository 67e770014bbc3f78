"""The 14 EgoMonth task types as question makers over a participant's past (issue 13).

Each maker reads only a ``Past`` (events that ended by the question time) and returns a ``Draft``:
the question, the right answer, distractors drawn from the same person's history, and the evidence
(the events that hold the answer), or None when the past has no question of that type whose answer
is certain. "Certain" is decided on the simulation's ground truth (``meta.key``, ``meta.place``,
``meta.objects``, ``meta.screen``, the frames' gaze), never on wording, and every distractor is checked
to be wrong on the same ground truth. How each type is made is listed in docs/qa.md.

Wording bias: a maker's own distractors alone would let the option texts give the answer away (the
usual route, the object seen everywhere, the gaze that sits in the upper left). So a draft also says
which values of its task's answer space are certainly wrong for it (``pooled``: every value but the
answer and ``excluded``), and the generator (``qa.generate_items``) redraws its distractors from the
answers of the same task type and person, as often as each is right; makers whose options cannot come
from that pool (personality, temporal ordering) ask the question in both polarities instead.

Why one file: the 14 makers are short and alike (each reads a Past and returns a Draft through the
same few helpers), and they are read best side by side, in the paper's order and that of docs/qa.md.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from egohorizon.clock import day_clock
from egohorizon.data.demo.qa.history import Past, date_of, weekday
from egohorizon.schema import Event

DAY_S = 86400.0
RECENT_DAYS = 7  # episodic questions ask about the last week: findable, still days before the question


@dataclass
class Draft:
    question: str
    answer: str
    distractors: list[str]
    evidence: list[Event]
    meta: dict[str, Any] = field(default_factory=dict)
    # pooled: any value of this task's answer space other than the answer and ``excluded`` is certainly
    # wrong for this question, so the generator may draw distractors from other items' answers.
    pooled: bool = False
    excluded: frozenset[str] = frozenset()


Maker = Callable[[Past, random.Random, Any], "Draft | None"]


def _recent(past: Past, level: int) -> list[Event]:
    return [e for e in past.level(level) if e.start >= past.t_q - RECENT_DAYS * DAY_S]


def _key(event: Event) -> str:
    return event.meta.get("key") or event.text


def _canonical(event: Event) -> str:
    return event.meta.get("canonical") or event.text


def _usual_wording(events: list[Event]) -> str:
    return Counter(_canonical(e) for e in events).most_common(1)[0][0]


def _pick(rng: random.Random, pool: list[str], exclude: set[str], n: int = 3) -> list[str] | None:
    """``n`` distinct entries of ``pool`` not in ``exclude``, or None when there are too few."""
    seen, out = set(exclude), []
    for value in pool:
        if value not in seen:
            seen.add(value)
            out.append(value)
    if len(out) < n:
        return None
    return rng.sample(out, n)


def _pick_ordered(pool: list[str], exclude: set[str], n: int = 3) -> list[str] | None:
    """The first ``n`` distinct entries of ``pool`` not in ``exclude`` (the pool is in preference order)."""
    seen, out = set(exclude), []
    for value in pool:
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out[:n] if len(out) >= n else None


def _by_key_days(events: list[Event]) -> dict[str, dict[str, list[Event]]]:
    """act key -> day -> its events that day."""
    out: dict[str, dict[str, list[Event]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        out[_key(e)][e.day].append(e)
    return out


def _numbers(rng: random.Random, answer: int, low: int = 0) -> list[str]:
    """The three other counts of a run of four consecutive counts holding the answer, the run's place
    drawn at random (never below ``low``): the options' spread tells nothing about which is right."""
    first = rng.choice([f for f in range(answer - 3, answer + 1) if f >= low])
    return [str(v) for v in range(first, first + 4) if v != answer]


# -- level 1: schema consolidation -------------------------------------------------------------------


def habit_inference(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """The weekday on which the person usually does an activity (L4), when one weekday clearly leads."""
    candidates = []
    for key, days in _by_key_days(past.level(4)).items():
        per_weekday = Counter(weekday(d) for d in days)
        (top, n_top), *rest = per_weekday.most_common() + [("", 0)]
        second = rest[0][1] if rest else 0
        if n_top >= 2 and n_top >= 2 * max(second, 1) and n_top / len(days) >= 0.6:
            candidates.append((key, top, per_weekday, days))
    if not candidates:
        return None
    key, top, per_weekday, days = rng.choice(sorted(candidates, key=lambda c: c[0]))
    occurrences = [e for d in sorted(days) for e in days[d]]
    from egohorizon.data.demo.qa.history import WEEKDAYS

    wrong = [w for w in WEEKDAYS if w != top and per_weekday[w] * 2 <= per_weekday[top]]
    distractors = _pick(rng, wrong, {top})
    if distractors is None:
        return None
    return Draft(f"Judging from the past weeks, on which day of the week does the person usually "
                 f"{_usual_wording(occurrences)}?", top, distractors, occurrences[-8:], {"act": key},
                 pooled=True, excluded=frozenset(w for w in WEEKDAYS if w not in wrong))


def personality_inference(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """Which activity is a regular part of the person's life (on 4+ days) against ones done on at most
    one day, or never (another person's activities)."""
    days = _by_key_days(past.level(4))
    regular = sorted(k for k, d in days.items() if len(d) >= 4)
    if not regular:
        return None
    key = rng.choice(regular)
    answer = _usual_wording([e for es in days[key].values() for e in es])
    rare = sorted({_usual_wording([e for es in d.values() for e in es]) for k, d in days.items() if len(d) <= 1})
    pool = rng.sample(rare, len(rare))
    if len(pool) < 3:  # early in the record: add activities this person never did (from other people)
        own = {_key(e) for e in past.level(4)}
        others = sorted({_canonical(e) for e in world.events if e.level == 4 and e.participant != past.participant
                         and _key(e) not in own})
        pool += rng.sample(others, len(others))
    distractors = _pick_ordered(pool, {answer})
    if distractors is None:
        return None
    evidence = [e for d in sorted(days[key]) for e in days[key][d]][-8:]
    if rng.random() < 0.5:
        return Draft("Which of these activities is a regular part of the person's life (not a one-off)?",
                     answer, distractors, evidence, {"act": key, "days": len(days[key]), "asks": "regular"})
    # The other polarity: the one-off among regular ones, so no activity is right by its wording alone.
    rare_keys = sorted(k for k, d in days.items() if len(d) <= 1)
    others_regular = [k for k in regular if k != key]
    if not rare_keys or len(others_regular) < 2:
        return None
    one_off = rng.choice(rare_keys)
    wording = {k: _usual_wording([e for es in days[k].values() for e in es]) for k in regular + rare_keys}
    regular_texts = _pick(rng, [wording[k] for k in others_regular], {wording[one_off], answer}, n=2)
    if regular_texts is None or wording[one_off] == answer:
        return None
    evidence = [e for d in sorted(days[one_off]) for e in days[one_off][d]]
    return Draft("Which of these activities has the person done on one day only (a one-off, not a regular one)?",
                 wording[one_off], [answer, *regular_texts], evidence,
                 {"act": one_off, "days": len(days[one_off]), "asks": "one-off"})


# -- level 2: episodic indexing ----------------------------------------------------------------------


def detail_retrieval(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """What was open on a phone or laptop screen during a given action."""
    apps = sorted({e.meta["screen"]["app"] for e in past.level(1) if e.meta.get("screen")})
    shown = [e for e in _recent(past, 1) if e.meta.get("screen")]
    if not shown or len(apps) < 4:
        return None
    event = rng.choice(shown)
    screen = event.meta["screen"]
    distractors = _pick(rng, apps, {screen["app"]})
    if distractors is None:
        return None
    return Draft(f"At {day_clock(event.start)} the person was busy with this: \"{event.text}\". What was open on "
                 f"the {screen['device']} screen?", screen["app"], distractors, [event], pooled=True)


def spatial_relation(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """Which object was in view beside the one in the person's hands."""
    seen = sorted({o for e in past.level(1) for o in e.meta.get("objects", [])})
    events = [e for e in _recent(past, 1) if len(set(e.meta.get("objects", []))) >= 2]
    if not events:
        return None
    event = rng.choice(events)
    held, *beside = event.meta["objects"]
    answer = rng.choice(sorted(set(beside) - {held}))
    distractors = _pick(rng, seen, set(event.meta["objects"]))
    if distractors is None:
        return None
    return Draft(f"At {day_clock(event.start)} the person held the {held}. Which object was in view next to it?",
                 answer, distractors, [event], {"held": held}, pooled=True,
                 excluded=frozenset(event.meta["objects"]))


def self_localization(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """Where the person was at a given moment."""
    places = sorted({e.meta.get("place") for e in past.level(1) if e.meta.get("place")})
    events = [e for e in _recent(past, 1) if e.meta.get("place") and e.end - e.start >= 10]
    if not events:
        return None
    event = rng.choice(events)
    t = event.start + rng.uniform(0.2, 0.8) * (event.end - event.start)
    distractors = _pick(rng, places, {event.meta["place"]})
    if distractors is None:
        return None
    return Draft(f"Where was the person at {day_clock(t)}?", event.meta["place"], distractors, [event],
                 {"t": t}, pooled=True)


def temporal_ordering(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """Which of four tasks (L3) of one day came first."""
    by_day: dict[str, list[Event]] = defaultdict(list)
    for e in _recent(past, 3):
        by_day[e.day].append(e)
    days = sorted(by_day)
    rng.shuffle(days)
    for day in days:
        counts = Counter(_canonical(e) for e in by_day[day])
        once = [e for e in by_day[day] if counts[_canonical(e)] == 1]
        if len(once) >= 4:
            chosen = sorted(rng.sample(once, 4), key=lambda e: e.start)
            texts = [_canonical(e) for e in chosen]
            # Asked for the first or the last at random: a morning task is then right as often as it
            # is wrong, and the option texts alone do not tell.
            if rng.random() < 0.5:
                return Draft(f"On {date_of(day)}, which of these did the person do first?", texts[0],
                             texts[1:], chosen, {"about_day": day, "asks": "first"})
            return Draft(f"On {date_of(day)}, which of these did the person do last?", texts[-1], texts[:-1],
                         chosen, {"about_day": day, "asks": "last"})
    return None


def event_time(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """When the person last did an activity (L4) that they did on several days."""
    days = _by_key_days(past.level(4))
    keys = sorted(k for k, d in days.items() if len(d) >= 2 and max(d) >= _day_of(past.t_q - RECENT_DAYS * DAY_S))
    if not keys:
        return None
    key = rng.choice(keys)
    occurrences = sorted((e for es in days[key].values() for e in es), key=lambda e: e.start)
    last = occurrences[-1]
    # Distractors: the starts of earlier occurrences on other days (plausible, and wrong: not the last),
    # then starts of other activities on days without this one.
    earlier = [day_clock(e.start) for e in reversed(occurrences) if e.day != last.day]
    others = [day_clock(e.start) for e in past.level(4) if e.day not in days[key]]
    distractors = _pick_ordered(rng.sample(earlier[:6], len(earlier[:6])) + rng.sample(others, len(others)),
                               {day_clock(last.start)})
    if distractors is None:
        return None
    return Draft(f"When did the person last {_usual_wording(occurrences)}? (when it began)", day_clock(last.start),
                 distractors, occurrences[-4:], {"act": key}, pooled=True)


def _day_of(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.UTC).date().isoformat()


def object_location(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """Where an object was last seen (the place of the last action that had it in view)."""
    last: dict[str, Event] = {}
    places_of: dict[str, set[str]] = defaultdict(set)
    for e in past.level(1):
        for o in e.meta.get("objects", []):
            if e.meta.get("place"):
                last[o] = e
                places_of[o].add(e.meta["place"])
    cutoff = past.t_q - RECENT_DAYS * DAY_S
    objects = sorted(o for o, e in last.items() if len(places_of[o]) >= 2 and e.start >= cutoff)
    if not objects:
        return None
    obj = rng.choice(objects)
    answer = last[obj].meta["place"]
    all_places = sorted({e.meta.get("place") for e in past.level(1) if e.meta.get("place")})
    elsewhere = sorted(places_of[obj] - {answer})
    pool = rng.sample(elsewhere, len(elsewhere)) + rng.sample(all_places, len(all_places))
    distractors = _pick_ordered(pool, {answer})
    if distractors is None:
        return None
    return Draft(f"Where did the person last see the {obj}?", answer, distractors, [last[obj]], {"object": obj},
                 pooled=True)


# -- level 3: cascading reasoning --------------------------------------------------------------------


def procedure_planning(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """The step (L2) that followed a given step within a task (L3)."""
    tasks = [e for e in _recent(past, 3) if len(past.kids(e)) >= 3]
    if not tasks:
        return None
    task = rng.choice(tasks)
    steps = sorted(past.kids(task), key=lambda e: e.start)
    i = rng.randrange(len(steps) - 1)
    step, answer = steps[i], steps[i + 1]
    if _canonical(step) == _canonical(answer):
        return None
    # Steps of the same kind of task first (the plausible ones), then any step the person took.
    same_task = sorted({_canonical(s) for t in past.level(3) if _key(t) == _key(task) for s in past.kids(t)})
    any_step = sorted({_canonical(e) for e in past.level(2)})
    pool = rng.sample(same_task, len(same_task)) + rng.sample(any_step, len(any_step))
    distractors = _pick_ordered(pool, {_canonical(answer), _canonical(step)})
    if distractors is None:
        return None
    return Draft(f"On {day_clock(task.start)} the person started to {_canonical(task)}. What did they do right "
                 f"after they {_canonical(step)}?", _canonical(answer), distractors, [task], pooled=True,
                 excluded=frozenset({_canonical(step)}))


def event_counting(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """On how many of the 7 days before the question day the person did an activity (L4)."""
    today = _day_of(past.t_q)
    first = _day_of(past.t_q - RECENT_DAYS * DAY_S)
    week = [e for e in past.level(4) if first <= e.day < today]
    days = _by_key_days(week)
    keys = sorted(days)
    if not keys:
        return None
    key = rng.choice(keys)
    answer = len(days[key])
    occurrences = [e for d in sorted(days[key]) for e in days[key][d]]
    return Draft(f"In the 7 days before {date_of(today)}, on how many days did the person "
                 f"{_usual_wording(occurrences)}?", str(answer), _numbers(rng, answer, low=1),
                 occurrences[-8:], {"act": key}, pooled=True)


def object_counting(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """How many different objects were in view during a task (L3)."""
    tasks = [e for e in _recent(past, 3)]
    rng.shuffle(tasks)
    for task in tasks:
        actions = [a for s in past.kids(task) for a in past.kids(s)]
        objects = {o for a in actions for o in a.meta.get("objects", [])}
        if len(objects) >= 2:
            return Draft(f"On {day_clock(task.start)} the person started to {_canonical(task)}. How many different "
                         "objects did they have in view while doing it?", str(len(objects)),
                         _numbers(rng, len(objects), low=1), [task], {"objects": sorted(objects)}, pooled=True)
    return None


def _route(actions: list[Event]) -> list[str]:
    route: list[str] = []
    for a in actions:
        place = a.meta.get("place")
        if place and (not route or route[-1] != place):
            route.append(place)
    return route


def route_reasoning(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """The sequence of places the person went through in a stretch of one session."""
    by_session: dict[str, list[Event]] = defaultdict(list)
    for a in _recent(past, 1):
        by_session[a.session].append(a)
    sessions = sorted(s for s, acts in by_session.items() if len(set(_route(acts))) >= 3)
    if not sessions:
        return None
    actions = by_session[rng.choice(sessions)]
    # The stretch from one place change to the third-next: a route of 3 distinct places.
    changes = [i for i in range(len(actions)) if i == 0 or actions[i].meta.get("place") != actions[i - 1].meta.get("place")]
    for start in rng.sample(range(len(changes)), len(changes)):
        stretch = actions[changes[start]:]
        route = _route(stretch)[:3]
        if len(set(route)) == 3:
            end = next(i for i, a in enumerate(stretch) if a.meta.get("place") == route[2])
            span = stretch[: end + 1]
            answer = " -> ".join(route)
            # Every other order of the same three places: symmetric, so no order marks the answer.
            wrong = [" -> ".join(p) for p in itertools.permutations(route)]
            distractors = _pick(rng, wrong, {answer})
            if distractors is None:
                return None
            return Draft(f"Between {day_clock(span[0].start)} and {day_clock(span[-1].end)}, which way did the person "
                         "go?", answer, distractors, span, pooled=True)
    return None


def cross_view_spatial(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """Which object the person has seen in two different places (on any days)."""
    objects_at: dict[str, set[str]] = defaultdict(set)
    for e in past.level(1):
        if e.meta.get("place"):
            objects_at[e.meta["place"]].update(e.meta.get("objects", []))
    places = sorted(objects_at)
    pairs = [(a, b) for i, a in enumerate(places) for b in places[i + 1:]
             if objects_at[a] & objects_at[b] and len(objects_at[a] ^ objects_at[b]) >= 3]
    if not pairs:
        return None
    # An object seen in most places (the phone) would be the answer of most questions and never a
    # distractor: ask only about objects seen in fewer than half of the person's places.
    n_places = Counter(o for objs in objects_at.values() for o in objs)
    everywhere = {o for o, n in n_places.items() if 2 * n >= len(objects_at)}
    pairs = [(a, b) for a, b in pairs if (objects_at[a] & objects_at[b]) - everywhere]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    both = objects_at[a] & objects_at[b]
    answer = rng.choice(sorted(both - everywhere))
    distractors = _pick(rng, sorted(objects_at[a] ^ objects_at[b]), both)
    if distractors is None:
        return None
    evidence = [e for e in past.level(1) if e.meta.get("place") in (a, b) and answer in e.meta.get("objects", [])]
    return Draft(f"Which of these objects has the person seen both in the {a} and in the {b}?", answer,
                 distractors, evidence[-6:], {"places": [a, b]}, pooled=True, excluded=frozenset(both))


# The 8 directions from the middle of the view, counter-clockwise from the right (image y grows down).
DIRECTIONS = ("right", "upper right", "up", "upper left", "left", "lower left", "down", "lower right")
_FRAME = 224
_MARGIN = 0.12  # gaze this close to the middle of the view is not asked about: no direction to tell
_EDGE_DEG = 7.5  # nor gaze this close (in degrees) to the line between two directions: it must be plain
_TRIES = 40  # moments looked at per question: enough to find the rarer directions


def _direction(x: float, y: float) -> str | None:
    """The direction of (x, y) (fractions of the view) from its middle, or None when not plain."""
    dx, dy = x - 0.5, 0.5 - y
    if math.hypot(dx, dy) < _MARGIN:
        return None
    angle = math.degrees(math.atan2(dy, dx)) % 360
    sector, offset = divmod(angle + 22.5, 45)
    if min(offset, 45 - offset) < _EDGE_DEG:
        return None
    return DIRECTIONS[int(sector) % 8]


def direction_judgement(past: Past, rng: random.Random, world: Any) -> Draft | None:
    """In which direction from the middle of the view the person was looking at a given second (the
    rendered gaze; 8 directions, so that distractors can be drawn as often as each is right)."""
    actions = _recent(past, 1)
    if not actions:
        return None
    # The gaze sits mostly in the upper left, so a first hit would nearly always answer "upper left":
    # look at _TRIES moments and ask about a direction drawn uniformly among the ones found.
    found: dict[str, list[tuple[Event, float, float, float]]] = defaultdict(list)
    for _ in range(_TRIES):
        event = rng.choice(actions)
        t = float(rng.randrange(int(event.start), max(int(event.start) + 1, int(event.end))))
        _, gaze, confidence = world.render_frame(event.session, t, size=_FRAME)
        if gaze is None or confidence < 0.75:
            continue
        x, y = gaze[0] / _FRAME, gaze[1] / _FRAME
        direction = _direction(x, y) if 0 <= x < 1 and 0 <= y < 1 else None
        if direction is not None:
            found[direction].append((event, t, x, y))
    if not found:
        return None
    answer = rng.choice(sorted(found))
    event, t, x, y = rng.choice(found[answer])
    wrong = [d for d in DIRECTIONS if d != answer]
    return Draft(f"At {day_clock(t)}, in which direction from the middle of the view was the person looking?",
                 answer, rng.sample(wrong, 3), [event], {"t": t, "gaze": [x, y]}, pooled=True)


MAKERS: dict[str, Maker] = {
    "Habit Inference": habit_inference,
    "Personality Inference": personality_inference,
    "Detail Retrieval": detail_retrieval,
    "Spatial Relation": spatial_relation,
    "Self-localization": self_localization,
    "Temporal Ordering": temporal_ordering,
    "Event Time": event_time,
    "Object Location": object_location,
    "Procedure Planning": procedure_planning,
    "Event Counting": event_counting,
    "Object Counting": object_counting,
    "Route Reasoning": route_reasoning,
    "Cross-view Spatial Reasoning": cross_view_spatial,
    "Direction Judgement": direction_judgement,
}
