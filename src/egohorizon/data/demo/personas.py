"""The simulated people: who they are, what they are working on week by week, and how their days go.

A persona holds the values its acts' ``{slots}`` are filled with (names of friends, the project, the
song being learned), work *phases* that change those values every two weeks or so (so history
matters: what someone did last week says what they will do tomorrow), and a plan function that
turns a calendar day into a list of level-5 episodes with clock times: weekday and weekend
structure, fixed weekly habits (climbing on Thursdays), and the rare days that break routine.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from egohorizon.data.demo.grammar import Part, pick


@dataclass(frozen=True)
class PlanItem:
    episode: str
    until: float | None = None  # hour of the day a fill episode runs to (e.g. 12.5 = 12:30)
    ctx: dict[str, Any] = field(default_factory=dict)  # slot values for this episode only
    pool: Part | None = None  # replaces a fill episode's pool (the weights of a work phase)


@dataclass(frozen=True)
class Phase:
    days: int
    values: dict[str, Any]
    pools: dict[str, tuple]
    work_pool: Part


@dataclass
class Day:
    date: dt.date
    index: int  # days since the start of the world
    rng: random.Random
    phase: Phase
    special: str | None  # a rare day's name, or None
    values: dict[str, Any]  # the persona's slot values merged with the phase's


@dataclass(frozen=True)
class Persona:
    key: str
    name: str
    description: str
    values: dict[str, Any]
    pools: dict[str, tuple]
    phases: tuple[Phase, ...]
    plan: Callable[[Day], tuple[float, list[PlanItem]]]  # -> (wake-up hour, episodes)
    rare_days: Callable[[random.Random, int], dict[int, str]]  # (rng, n_days) -> {day index: name}

    def phase_for(self, day_index: int) -> Phase:
        left = day_index
        for phase in self.phases:
            if left < phase.days:
                return phase
            left -= phase.days
        return self.phases[-1]


def _at(rng: random.Random, hour: float, jitter_min: float) -> float:
    return hour + rng.gauss(0, jitter_min) / 60


def _weekend_days(n_days: int, start_weekday: int, which: int) -> list[int]:
    """Day indices that fall on ``which`` (5 = Saturday, 6 = Sunday)."""
    return [i for i in range(n_days) if (start_weekday + i) % 7 == which]


def _rare(rng: random.Random, n_days: int, start_weekday: int, trip_weekday: int) -> dict[int, str]:
    """Picks the rare days: a three-day trip starting on ``trip_weekday`` in the middle weeks, one hike
    (Saturday), one concert (Friday), one birthday party (Saturday), one museum visit (Sunday)."""
    special: dict[int, str] = {}
    weeks = n_days // 7
    if weeks >= 3:
        week = rng.randrange(1, weeks - 1)
        first = next(i for i in range(week * 7, week * 7 + 7) if (start_weekday + i) % 7 == trip_weekday)
        special.update({first: "trip_out", first + 1: "trip_middle", first + 2: "trip_back"})
    for name, weekday in (("hike", 5), ("concert", 4), ("birthday", 5), ("museum", 6)):
        free = [i for i in _weekend_days(n_days, start_weekday, weekday) if i not in special]
        if free and rng.random() < 0.9:
            special[rng.choice(free)] = name
    return special


# --------------------------------------------------------------------------------------------
# Mia: a PhD student in machine learning; runs, climbs, plays guitar
# --------------------------------------------------------------------------------------------

_MIA_BASE_POOL = ("coding", "experiments", "writing", "reading", "coffee_break")
MIA_PHASES = (
    Phase(14, {"song": "Blackbird", "series": "Severance", "book": "Project Hail Mary"},
          {"feature": ("the EEG data loader", "signal filtering", "the train/validation split", "the evaluation script"),
           "bug": ("a shape mismatch in the loader", "a NaN in the loss", "an off-by-one error in the windowing"),
           "module": ("data.py", "preprocess.py", "evaluate.py"),
           "topic": ("sleep staging", "EEG artefact removal", "self-supervised learning"),
           "section": ("introduction", "related work")},
          pick(*_MIA_BASE_POOL, weights=(4, 1.5, 0.5, 2.5, 1.2))),
    Phase(14, {"song": "Wonderwall", "series": "The Bear", "book": "Project Hail Mary"},
          {"feature": ("a transformer encoder", "data augmentation", "the learning-rate schedule"),
           "bug": ("a memory leak in training", "a mislabelled night in the data", "a crash on the cluster"),
           "module": ("model.py", "train.py", "augment.py"),
           "topic": ("transformers for time series", "data augmentation for EEG", "sleep staging"),
           "section": ("method", "experiments")},
          pick(*_MIA_BASE_POOL, weights=(2.5, 3.5, 1, 1, 1.2))),
    Phase(100, {"song": "Hotel California", "series": "The Bear", "book": "Piranesi"},
          {"feature": ("the ablation script", "the figure code", "the results table export"),
           "bug": ("a wrong axis label", "a mismatch between the tables"),
           "module": ("plots.py", "ablation.py"),
           "topic": ("our sleep-staging results", "the limitations of the method", "the ablation study"),
           "section": ("results", "discussion", "abstract")},
          pick(*_MIA_BASE_POOL, weights=(1, 1.5, 4, 0.7, 1.2))),
)

MIA = {
    "key": "mia", "name": "Mia",
    "description": "PhD student in machine learning (sleep staging from EEG); cycles to the lab; runs on Mondays and "
                   "Wednesdays, climbs on Thursdays, plays guitar in the evenings",
    "values": {"workplace": "the lab", "desk": "lab office", "supervisor": "Dr. Keller", "library": "PyTorch",
               "project": "the sleep-staging model", "game": "Celeste", "home_city": "Zurich", "trip_city": "Lisbon",
               "conference": "the ML for Health workshop", "peak": "Mount Pilatus", "band": "Khruangbin",
               "venue": "concert hall", "dog": "the neighbour's dog", "client": "the lab's partners",
               "screen_name": "results", "piece": "a Bach prelude"},
    "pools": {"friend": ("Sam", "Noor", "Jonas"), "colleague": ("Priya", "Tom", "Lena", "Marco"),
              "family": ("my mum", "my brother", "my grandma"), "contact": ("Sam", "Noor", "Mum", "Jonas", "Priya"),
              "chat_topic": ("the weekend", "a new climbing route", "travel plans", "a film we saw", "work stress",
                             "finding a new flat"),
              "produce": ("apples", "tomatoes", "spinach", "carrots", "bananas", "peppers"),
              "item": ("oat milk", "pasta", "coffee beans", "rice", "eggs", "yoghurt", "bread")},
    "phases": MIA_PHASES,
}


def mia_plan(day: Day) -> tuple[float, list[PlanItem]]:
    rng, weekday, pool = day.rng, day.date.weekday(), day.phase.work_pool
    if day.special in TRIP_PLANS:
        return TRIP_PLANS[day.special](day, middle="conference_day")
    if weekday < 5:
        wake = _at(rng, 7.0, 15)
        morning = "work_morning_meeting" if weekday == 1 else "work_morning"
        items = [PlanItem("morning_office"), PlanItem(morning, _at(rng, 12.4, 10), pool=pool),
                 PlanItem("lunch_canteen"), PlanItem("work_afternoon", _at(rng, 17.6, 20), pool=pool)]
        evening = {0: "run_after_work", 1: "shopping_trip", 2: "run_after_work", 3: "evening_climb",
                   4: "shopping_trip"}[weekday]
        if weekday in (0, 2) and rng.random() < 0.2:  # skip the run now and then
            evening = "head_home"
        items.append(PlanItem(evening))
        if day.special == "concert":
            items += [PlanItem("concert_night"), PlanItem("go_to_bed")]
            return wake, items
        if weekday == 4 and rng.random() < 0.4:
            items.append(PlanItem("dinner_with_friend"))
        else:
            items.append(PlanItem("dinner_home"))
        return wake, items + [PlanItem("evening_free_guitar", _at(rng, 22.6, 15)), PlanItem("go_to_bed")]
    return _weekend_plan(day, free="weekend_free_guitar", evening="evening_free_guitar", sport="evening_climb")


def _weekend_plan(day: Day, free: str, evening: str, sport: str) -> tuple[float, list[PlanItem]]:
    rng, saturday = day.rng, day.date.weekday() == 5
    wake = _at(rng, 8.8, 30)
    items = [PlanItem("morning_weekend")]
    if day.special == "hike":
        return wake, items + [PlanItem("hike_day"), PlanItem("dinner_home"), PlanItem("go_to_bed")]
    items.append(PlanItem("weekend_chores" if saturday else free, _at(rng, 12.4, 20)))
    items.append(PlanItem("weekend_lunch"))
    if day.special == "museum":
        items.append(PlanItem("museum_visit"))
    elif rng.random() < 0.45:
        items.append(PlanItem("coffee_with_friend" if saturday else sport))
    items.append(PlanItem(free, _at(rng, 17.5, 30)))
    if day.special == "birthday":
        return wake, items + [PlanItem("birthday_night"), PlanItem("go_to_bed")]
    if saturday and rng.random() < 0.5:
        items.append(PlanItem("dinner_with_friend"))
    else:
        items.append(PlanItem("dinner_home"))
    return wake, items + [PlanItem(evening, _at(rng, 23.0 if saturday else 22.5, 20)), PlanItem("go_to_bed")]


def _trip_out(day: Day, middle: str) -> tuple[float, list[PlanItem]]:
    away = {"city": day.values["trip_city"]}
    return _at(day.rng, 6.5, 10), [PlanItem("trip_morning", ctx=away), PlanItem("fly_out", ctx=away),
                                   PlanItem("evening_abroad", ctx=away), PlanItem("go_to_bed")]


def _trip_middle(day: Day, middle: str) -> tuple[float, list[PlanItem]]:
    away = {"city": day.values["trip_city"]}
    return _at(day.rng, 7.5, 15), [PlanItem(middle, ctx=away), PlanItem("evening_abroad", ctx=away),
                                   PlanItem("go_to_bed")]


def _trip_back(day: Day, middle: str) -> tuple[float, list[PlanItem]]:
    # The flight's destination ({city}) is home now; the episode names the place left behind.
    home = {"city": day.values["home_city"]}
    return _at(day.rng, 8.0, 15), [PlanItem("fly_back", ctx=home), PlanItem("dinner_home"), PlanItem("go_to_bed")]


TRIP_PLANS = {"trip_out": _trip_out, "trip_middle": _trip_middle, "trip_back": _trip_back}


# --------------------------------------------------------------------------------------------
# Leo: a UX designer, mostly working from home; has a dog, does yoga, plays the piano
# --------------------------------------------------------------------------------------------

_LEO_HOME_POOL = ("design_work", "client_call", "tidy_home")
LEO_PHASES = (
    Phase(18, {"project": "the Travelo booking app", "client": "Travelo", "piece": "Clair de Lune",
               "series": "Slow Horses", "book": "The Overstory"},
          {"screen_name": ("login", "search results", "checkout", "booking summary"),
           "topic": ("the booking flow", "accessibility of the forms")},
          pick(*_LEO_HOME_POOL, weights=(5, 1, 0.6))),
    Phase(100, {"project": "the city museum website", "client": "the city museum", "piece": "a Chopin nocturne",
                "series": "Shogun", "book": "The Overstory"},
          {"screen_name": ("homepage", "exhibition page", "ticket shop", "opening hours"),
           "topic": ("the ticket shop", "the exhibition pages")},
          pick(*_LEO_HOME_POOL, weights=(5, 1.5, 0.6))),
)

LEO = {
    "key": "leo", "name": "Leo",
    "description": "UX designer working from home on Mondays, Wednesdays and Fridays and at the studio otherwise; "
                   "walks his dog Biscuit twice a day, does yoga, plays the piano, cooks",
    "values": {"workplace": "the studio", "desk": "home office", "dog": "Biscuit", "game": "Stardew Valley",
               "home_city": "Vienna", "trip_city": "Lisbon", "peak": "the Schneeberg", "band": "Phoenix",
               "venue": "concert hall", "supervisor": "Rosa", "library": "Figma", "conference": "a design meetup",
               "song": "Clair de Lune"},
    "pools": {"friend": ("Ana", "Ben", "Kai"), "colleague": ("Rosa", "Felix", "Mira"),
              "family": ("my dad", "my sister"), "contact": ("Ana", "Dad", "Ben", "Rosa", "my sister"),
              "chat_topic": ("the weekend", "Biscuit's training", "a new restaurant", "holiday plans", "a concert"),
              "produce": ("potatoes", "mushrooms", "lemons", "onions", "courgettes", "pears"),
              "item": ("flour", "dog food", "olive oil", "lentils", "cheese", "coffee"),
              "feature": ("the search filters",), "bug": ("a broken prototype link",), "module": ("the prototype",),
              "section": ("design notes",)},
    "phases": LEO_PHASES,
}


def leo_plan(day: Day) -> tuple[float, list[PlanItem]]:
    rng, weekday, pool = day.rng, day.date.weekday(), day.phase.work_pool
    if day.special in TRIP_PLANS:
        return TRIP_PLANS[day.special](day, middle="city_day")
    if weekday >= 5:
        return _weekend_plan(day, free="weekend_free_piano", evening="evening_free_piano", sport="coffee_with_friend")
    wake = _at(rng, 6.75, 15)
    studio = weekday in (1, 3)
    desk = {"desk": "studio desk"} if studio else {}
    studio_pool = pick("design_work", "client_call", "coffee_break", weights=(5, 1, 1.2))
    items = [PlanItem("morning_office" if studio else "morning_home_dog"),
             PlanItem("design_morning", _at(rng, 12.3, 10), ctx=desk, pool=studio_pool if studio else pool),
             PlanItem("lunch_canteen" if studio else "lunch_desk"),
             PlanItem("design_afternoon", _at(rng, 17.2, 20), ctx=desk, pool=studio_pool if studio else pool)]
    if studio:
        items.append(PlanItem("head_home"))
    evening = {0: "evening_yoga", 1: "evening_yoga", 2: "shopping_trip", 3: "evening_yoga", 4: None}[weekday]
    if day.special == "concert":
        return wake, items + [PlanItem("concert_night"), PlanItem("go_to_bed")]
    if evening:
        items.append(PlanItem(evening))
    if weekday == 4 and rng.random() < 0.5:
        items.append(PlanItem("dinner_with_friend"))
    else:
        items.append(PlanItem("dinner_home"))
    return wake, items + [PlanItem("evening_free_piano", _at(rng, 22.4, 15)), PlanItem("go_to_bed")]


PERSONAS = (
    (MIA, mia_plan, 1),  # Mia's trip (to a conference) starts on a Tuesday
    (LEO, leo_plan, 4),  # Leo's (a weekend away) starts on a Friday
)
EXTRA_NAMES = ("Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana")


def make_persona(index: int, start: dt.date) -> Persona:
    """Persona ``index`` (0-based). Beyond the written ones, the templates repeat under new names
    (a fresh seed gives them other days, rare events and choices)."""
    spec, plan, trip_weekday = PERSONAS[index % len(PERSONAS)]
    name = spec["name"] if index < len(PERSONAS) else EXTRA_NAMES[(index - len(PERSONAS)) % len(EXTRA_NAMES)]
    start_weekday = start.weekday()
    return Persona(
        key=spec["key"], name=name, description=spec["description"], values=dict(spec["values"], name=name),
        pools=spec["pools"], phases=spec["phases"], plan=plan,
        rare_days=lambda rng, n_days: _rare(rng, n_days, start_weekday, trip_weekday),
    )
