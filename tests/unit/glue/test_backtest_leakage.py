"""The rolling backtest's window (egohorizon.data.backtest) and its no-leakage promise through the forecast
datamodule: a distinctive event planted on day d + 1 and later reaches no training point, no validation
point and no habit baseline (issue 38, item 5)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from forecast_toy_world import toy_events

from datamodules.forecast import ForecastDataModule
from egohorizon.data.backtest import backtest_window, window_for_split
from egohorizon.data.splits import participant_days
from egohorizon.errors import ConfigError, DataError
from egohorizon.metrics.habits import HABIT_PREDICTORS, habit_predictions
from egohorizon.schema import write_jsonl

PLANTED = "juggle flaming torches on the roof"


def test_window_trains_on_days_before_d_validates_on_d_tests_on_the_next_and_drops_the_rest():
    events = toy_events(participants=2, days=8)
    window, split = backtest_window(events, 3)
    for participant, days in participant_days(events).items():
        assert split.days[participant] == {days[0]: "train", days[1]: "train", days[2]: "val", days[3]: "test"}
    assert {(e.participant, e.day) for e in window} == {(p, d) for p, ds in split.days.items() for d in ds}
    assert split.settings["backtest_day"] == 3 and split.settings["dropped_events"] == len(events) - len(window)


def test_a_participant_without_a_test_day_is_left_out_and_bad_d_is_refused():
    short = [e for e in toy_events(participants=1, days=3)]  # 3 days: d = 2 has its test day, d = 3 not
    longer = [replace(e, participant="p2", id="p2" + e.id) for e in toy_events(participants=1, days=6)]
    _, split = backtest_window(short + longer, 3)
    assert set(split.days) == {"p2"} and split.settings["participants_left_out"] == ["p1"]
    with pytest.raises(ConfigError, match=r"no participant has 7 recorded \(dated\) days"):
        backtest_window(short + longer, 6)
    for bad in (1, 0, "2", True):
        with pytest.raises(ConfigError, match="data.backtest_day"):
            backtest_window(short, bad)
    with pytest.raises(ConfigError, match="data.backtest_min_days"):
        backtest_window(short, 2, min_days=2)


def test_a_fixed_cohort_keeps_the_same_people_at_every_d_and_undated_recordings_are_dropped():
    short = toy_events(participants=1, days=3)
    longer = [replace(e, participant="p2", id="p2" + e.id) for e in toy_events(participants=1, days=6)]
    undated = [replace(e, day="undated-p2_v1", id=e.id + "u") for e in longer[:5]]
    for d in (2, 3):
        window, split = backtest_window(short + longer + undated, d, min_days=5)
        assert set(split.days) == {"p2"} and split.settings["participants_left_out"] == ["p1"]
        assert split.settings["undated_events"] == 5 and not any(e.day.startswith("undated") for e in window)


def _planted_world(d: int):
    """The toy world with PLANTED events on p1's day d + 1 (the test day) and on every later day."""
    events = toy_events(participants=2, days=9)
    days = participant_days(events)["p1"]
    planted = []
    for day in days[d:]:  # index d is day d + 1
        first = min((e for e in events if e.participant == "p1" and e.day == day), key=lambda e: e.start)
        planted += [replace(first, id=f"{first.id}-planted{i}", start=first.start + 60 + i * 300,
                            end=first.start + 60 + i * 300 + 200, text=PLANTED) for i in range(4)]
    return events + planted


@pytest.mark.parametrize("d", [2, 4])
def test_an_event_planted_on_the_test_day_and_later_reaches_no_training_validation_or_baseline(tmp_path, d):
    path = tmp_path / "events.jsonl"
    write_jsonl(path, _planted_world(d))
    module = ForecastDataModule(events=str(path), levels=[3], ks=[1, 3], n_context=6, max_train_points=None,
                                max_eval_points=None, backtest_day=d)
    points = module.prepare_points()
    for name in ("train", "val"):
        assert points[name], name
        for point in points[name]:
            seen = [e["text"] for e in point.context] + list(point.targets)
            assert PLANTED not in seen, (name, point.id)
    # The test day's targets may hold it (it happened that day); nothing of a later day is there at all.
    test_day = {p.participant: p.meta["target_days"][0] for p in points["test"]}
    assert all(day == test_day[p.participant] for p in points["test"] for day in p.meta["target_days"])
    assert all(e["day"] <= test_day[p.participant] for p in points["test"] for e in p.context)
    assert any(PLANTED in p.targets for p in points["test"])  # the plant is on the test day, so it is tested
    for name in HABIT_PREDICTORS:
        predicted, _ = habit_predictions(name, points["test"] + points["val"], module.history)
        texts = {t for candidates in predicted.values() if candidates for c in candidates for t in c}
        assert texts and PLANTED not in texts, name
    habits = [*module.history.personal.values(), *module.history.population.values()]
    assert all(PLANTED not in h.count for h in habits)


def test_the_backtest_cannot_be_combined_with_a_given_split(tmp_path):
    with pytest.raises(ConfigError, match="backtest_day"):
        ForecastDataModule(events="x.jsonl", split_file="split.json", backtest_day=2)


def test_a_backtest_runs_split_file_brings_its_window_back_so_eval_sees_no_later_day(tmp_path):
    """eval.py ckpt=<a d run> passes the run's split.json: the same points, the later days dropped again."""
    path = tmp_path / "events.jsonl"
    write_jsonl(path, _planted_world(3))
    settings = {"events": str(path), "levels": [3], "ks": [1], "n_context": 6, "max_train_points": None,
                "max_eval_points": None}
    built = ForecastDataModule(**settings, backtest_day=3)
    built.prepare_points()
    built.split.save(tmp_path / "split.json")
    again = ForecastDataModule(**settings, split_file=str(tmp_path / "split.json"))
    for name in ("train", "val", "test"):
        assert [p.id for p in again.prepare_points()[name]] == [p.id for p in built.points[name]]
    assert again.history.n_train_events == built.history.n_train_events
    fewer = [e for e in _planted_world(3) if not e.id.startswith("p2-00")]  # p2's first day gone
    with pytest.raises(DataError, match="field 'participants'"):
        window_for_split(fewer, built.split)
