"""The habit baselines (SPEC §1) on small event sets whose answers were worked out by hand."""

from __future__ import annotations

import pytest

from egohorizon.data.splits import DaySplit
from egohorizon.metrics.habits import HABIT_PREDICTORS, habit_predictions, learn_habits
from egohorizon.schema import Event, ForecastPoint

JAN1 = 1_704_067_200  # 2024-01-01 00:00 UTC
H = 3600


def at(day: int, clock_s: float) -> float:
    return JAN1 + (day - 1) * 86_400 + clock_s


def ev(eid, participant, day, clock_s, text, level=1, meta=None, end=None, day_label=None):
    start = at(day, clock_s)
    return Event(id=eid, participant=participant, day=day_label or f"2024-01-0{day}", session="s", level=level,
                 start=start, end=start + 60 if end is None else end, text=text, source="home", meta=meta or {})


# Participant A (worked out in the docstring of each test):
#   day 1 (train): 08:00 wake, 08:10 coffee, 08:20 toast, 12:00 lunch
#   day 2 (train): 08:00 wake, 08:10 toast, 08:20 coffee, 20:00 tea
#   day 3 (test) and day 4 (val) hold events that no baseline may use.
# counts: coffee 2 (last d2 08:20), toast 2 (d2 08:10), wake 2 (d2 08:00), tea 1 (d2 20:00), lunch 1 (d1 12:00)
# frequency order: coffee, toast, wake, tea, lunch
# successors: wake -> toast (d2 08:10), coffee (d1 08:10); coffee -> tea (d2 20:00), toast (d1 08:20);
#             toast -> coffee (d2 08:20), lunch (d1 12:00); tea, lunch: none
A_EVENTS = [
    ev("a1", "A", 1, 8 * H, "wake"), ev("a2", "A", 1, 8 * H + 600, "coffee"),
    ev("a3", "A", 1, 8 * H + 1200, "toast"), ev("a4", "A", 1, 12 * H, "lunch"),
    ev("a5", "A", 2, 8 * H, "wake"), ev("a6", "A", 2, 8 * H + 600, "toast"),
    ev("a7", "A", 2, 8 * H + 1200, "coffee"), ev("a8", "A", 2, 20 * H, "tea"),
]
B_EVENTS = [ev("b1", "B", 1, 9 * H, "read")]  # one training day, one event
U_EVENTS = [  # an undated recording: seconds since the first recording, a placeholder day
    Event(id="u1", participant="U", day="undated-U_101", session="s", level=1, start=100.0, end=160.0,
          text="stir", source="home", meta={"time_basis": "seconds_since_first_recording"}),
    Event(id="u2", participant="U", day="undated-U_101", session="s", level=1, start=200.0, end=260.0,
          text="stir", source="home", meta={"time_basis": "seconds_since_first_recording"}),
]
SPLIT = DaySplit.from_dict({"participants": {
    "A": {"train": ["2024-01-01", "2024-01-02"], "test": ["2024-01-03"], "val": ["2024-01-04"]},
    "B": {"train": ["2024-01-01"], "test": ["2024-01-03"]},
    "U": {"train": ["undated-U_101"], "test": ["undated-U_102"]},
    "E": {"test": ["2024-01-03"]},  # no training day at all
}})


def point(pid, participant, k, window_clocks, last_text=None, day=3, level=1):
    context = [] if last_text is None else [{"text": last_text, "start": at(day, 0), "end": at(day, 1)}]
    windows = [[at(day, c), at(day, c) + 60] for c in window_clocks]
    return ForecastPoint(id=pid, source="home", participant=participant, level=level, k=k,
                         t0=windows[0][0], context=context, targets=["x"] * k, windows=windows)


def history(events=A_EVENTS + B_EVENTS + U_EVENTS):
    return learn_habits(events, SPLIT.days_in("train"))


def test_frequency_order_breaks_ties_by_last_start_then_text():
    points = [point("k2", "A", 2, [0, 60]), point("k9", "A", 9, [60 * i for i in range(9)])]
    preds, counts = habit_predictions("frequency", points, history())
    assert preds["k2"] == [["coffee", "toast"]]
    assert preds["k9"] == [["coffee", "toast", "wake", "tea", "lunch"]]  # fewer when there are fewer
    assert counts == {"no_history": 0, "no_clock": 0}
    # same count, same latest start: text order (Unicode code points, "B" < "a")
    same = [ev("d1", "A", 1, 9 * H, "a"), ev("d2", "A", 1, 9 * H, "B")]
    preds, _ = habit_predictions("frequency", [point("p", "A", 2, [0, 1])], history(same))
    assert preds["p"] == [["B", "a"]]


def test_markov_follows_successors_and_falls_back_to_frequency():
    preds, _ = habit_predictions("markov", [point("w", "A", 3, [0, 1, 2], last_text="wake")], history())
    # start list: toast, coffee (successors of wake, by latest), then wake, tea, lunch
    assert preds["w"] == [
        ["toast", "coffee", "tea"],
        ["coffee", "tea", "toast"],  # tea has no successor: first frequency text not yet in it
        ["wake", "toast", "coffee"],
    ]


def test_markov_context_text_never_seen_in_training_starts_from_the_frequency_order():
    points = [point("new", "A", 2, [0, 1], last_text="dance"), point("empty", "A", 2, [0, 1])]
    preds, _ = habit_predictions("markov", points, history())
    expected = [["coffee", "tea"], ["toast", "coffee"], ["wake", "toast"]]
    assert preds["new"] == expected and preds["empty"] == expected


def test_participant_with_one_training_day_and_one_with_none():
    points = [point("b", "B", 3, [0, 1, 2], last_text="read"), point("e", "E", 3, [0, 1, 2])]
    for name in ("frequency", "markov", "time_of_day"):
        preds, counts = habit_predictions(name, points, history())
        assert preds["e"] is None and counts["no_history"] == 1
    assert habit_predictions("frequency", points, history())[0]["b"] == [["read"]]
    # one text, no transition: one candidate (start list of 1), repeating the only text
    assert habit_predictions("markov", points, history())[0]["b"] == [["read", "read", "read"]]
    # the population rows answer E with everyone's habits (coffee, read ... by count, last, text)
    preds, counts = habit_predictions("frequency_all", points, history())
    assert counts["no_history"] == 0
    assert preds["e"] == [["coffee", "toast", "wake"]]
    assert habit_predictions("markov_all", points, history())[0]["e"][0] == ["coffee", "tea", "toast"]


def test_time_of_day_window_ties_midnight_and_fallback():
    # 08:05: wake, coffee, toast have 2 events each within 30 min; coffee started latest (d2 08:20)
    # 12:10: lunch; 03:00: nothing within 30 min -> first frequency text, counted no_clock
    preds, counts = habit_predictions("time_of_day", [point("t", "A", 3, [8 * H + 300, 12 * H + 600, 3 * H])],
                                      history())
    assert preds["t"] == [["coffee", "lunch", "coffee"]]
    assert counts["no_clock"] == 1
    late = [ev("n1", "A", 1, 23 * H + 50 * 60, "snack")]  # 23:50, 25 min before 00:15 across midnight
    preds, counts = habit_predictions("time_of_day", [point("m", "A", 1, [15 * 60])], history(late))
    assert preds["m"] == [["snack"]] and counts["no_clock"] == 0


def test_undated_recording_has_no_clock_time():
    preds, counts = habit_predictions("time_of_day", [point("u", "U", 2, [100, 200])], history())
    assert preds["u"] == [["stir", "stir"]] and counts["no_clock"] == 2
    # a dated video whose clock time is unknown (EPIC-55's 00:00:00) is left out the same way
    unknown = [ev("c1", "A", 1, 8 * H, "yawn", meta={"clock_time_known": False})]
    preds, counts = habit_predictions("time_of_day", [point("c", "A", 1, [8 * H])], history(unknown))
    assert preds["c"] == [["yawn"]] and counts["no_clock"] == 1


def test_no_baseline_uses_an_event_of_a_test_or_validation_day():
    planted = [ev(f"z{day}{i}", p, day, c, "PLANTED") for p in ("A", "B", "E") for day in (3, 4)
               for i, c in enumerate([0, 8 * H, 8 * H + 300, 12 * H, 12 * H + 600])]
    planted += [ev("z99", "A", 3, 8 * H + 330, "PLANTED", level=2)]  # another level, for good measure
    points = [point("a", "A", 3, [8 * H + 300, 12 * H + 600, 0], last_text="PLANTED"),
              point("w", "A", 2, [8 * H, 12 * H], last_text="wake"),
              point("b", "B", 2, [8 * H, 9 * H], last_text="read"), point("e", "E", 2, [8 * H, 9 * H])]
    clean, leaky = history(), history(A_EVENTS + B_EVENTS + U_EVENTS + planted)
    for name in HABIT_PREDICTORS:
        with_planted, _ = habit_predictions(name, points, leaky)
        assert with_planted == habit_predictions(name, points, clean)[0], name
        texts = {t for cands in with_planted.values() if cands for c in cands for t in c}
        assert "PLANTED" not in texts, name


def test_unknown_baseline_is_refused():
    with pytest.raises(ValueError, match="unknown"):
        habit_predictions("weekday", [], history())
