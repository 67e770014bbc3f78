"""Held-out-day splits: every participant-day in one split, history days kept, saved and reloaded."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egohorizon.data.splits import DaySplit, make_day_split, participant_days
from egohorizon.errors import ConfigError, DataError
from egohorizon.schema import Event

DAY_S = 86400.0
BASE = 1_700_006_400.0  # 2023-11-15 00:00 UTC


def _events(participant, n_days, per_day=2, skip=()):
    events = []
    for d in range(n_days):
        if d in skip:
            continue
        for i in range(per_day):
            start = BASE + d * DAY_S + 3600 * (8 + i)
            events.append(Event(id=f"{participant}-{d}-{i}", participant=participant, day=f"day{d:02d}",
                                session=f"s{d}", level=1, start=start, end=start + 60, text="x"))
    return events


def test_twenty_days_random_strategy():
    split = make_day_split(_events("p", 20), val_frac=0.15, test_frac=0.15, seed=3, min_history_days=3)
    days = split.days["p"]
    assert split.counts() == {"train": 14, "val": 3, "test": 3}  # round(0.15 * 20) = 3 each
    assert all(days[f"day{d:02d}"] == "train" for d in range(3))
    # One held-out day per run of the 17 eligible days cut into 6 runs: spread over the period.
    held = sorted(int(d[3:]) for d, s in days.items() if s != "train")
    runs = [range(3 + i * 17 // 6, 3 + (i + 1) * 17 // 6) for i in range(6)]
    assert [sum(h in run for h in held) for run in runs] == [1] * 6
    assert make_day_split(_events("p", 20), seed=3).days == split.days  # seeded
    assert make_day_split(_events("p", 20), seed=4).days != split.days


def test_last_strategy_and_small_participants():
    split = make_day_split(_events("p", 10) + _events("q", 4) + _events("r", 3), strategy="last",
                           min_history_days=3)
    # p: round(1.5) = 2 test days, the final ones, and 2 val days before them.
    assert split.days["p"] == {**{f"day{d:02d}": "train" for d in range(6)},
                               "day06": "val", "day07": "val", "day08": "test", "day09": "test"}
    # q: one day left after the history days goes to test; r has none to spare.
    assert list(split.days["q"].values()) == ["train", "train", "train", "test"]
    assert set(split.days["r"].values()) == {"train"}


def test_days_are_ordered_by_time_not_by_name():
    events = _events("p", 2)
    events[0].day = events[1].day = "zzz"  # day 0 has the name that sorts last
    assert participant_days(events) == {"p": ["zzz", "day01"]}


def test_explicit_days_and_errors():
    events = _events("p", 6) + _events("q", 5)
    split = make_day_split(events, val_days={"p": ["day01"]}, test_days={"p": ["day04", "day05"]})
    assert split.days["p"] == {"day00": "train", "day01": "val", "day02": "train", "day03": "train",
                               "day04": "test", "day05": "test"}
    assert split.days["q"]["day04"] == "test"  # q is drawn as usual
    with pytest.raises(ConfigError, match="both val and test"):
        make_day_split(events, val_days={"p": ["day04"]}, test_days={"p": ["day04"]})
    with pytest.raises(ConfigError, match="'day99' of participant 'p' has no events"):
        make_day_split(events, test_days={"p": ["day99"]})
    with pytest.raises(ConfigError, match="sum to less than 1"):
        make_day_split(events, val_frac=0.5, test_frac=0.5)
    with pytest.raises(ConfigError, match="strategy"):
        make_day_split(events, strategy="first")
    events[0].day = ""
    with pytest.raises(DataError, match="empty 'day'"):
        make_day_split(events)


def test_save_load_roundtrip_and_unknown_day(tmp_path):
    split = make_day_split(_events("p", 8) + _events("q", 6), seed=1)
    path = split.save(tmp_path / "splits.json")
    loaded = DaySplit.load(path)
    assert loaded.days == split.days
    assert loaded.settings["seed"] == 1 and loaded.settings["path"] == str(path)
    assert loaded.split_of("p", "day00") == "train"
    with pytest.raises(DataError, match="participant 'p' day 'day42' is not in the day split"):
        loaded.split_of("p", "day42")


def test_load_rejects_a_day_in_two_splits(tmp_path):
    path = tmp_path / "splits.json"
    path.write_text(json.dumps({"participants": {"p": {"train": ["d1", "d2"], "test": ["d2"]}}}))
    with pytest.raises(DataError, match="day 'd2' is in both 'train' and 'test'"):
        DaySplit.load(path)
    path.write_text(json.dumps({"participants": {"p": {"holdout": ["d1"]}}}))
    with pytest.raises(DataError, match="participants.p"):
        DaySplit.load(path)
    path.write_text("{not json")
    with pytest.raises(DataError, match="not a JSON split file"):
        DaySplit.load(path)


@settings(max_examples=60, deadline=None)
@given(
    n_days=st.lists(st.integers(1, 25), min_size=1, max_size=4),
    skipped=st.sets(st.integers(0, 24), max_size=8),
    val_frac=st.sampled_from([0.0, 0.1, 0.15, 0.3]),
    test_frac=st.sampled_from([0.0, 0.1, 0.15, 0.3]),
    strategy=st.sampled_from(["random", "last"]),
    min_history=st.integers(0, 4),
    seed=st.integers(0, 5),
)
def test_every_participant_day_in_exactly_one_split(n_days, skipped, val_frac, test_frac, strategy,
                                                    min_history, seed):
    events = [e for i, n in enumerate(n_days) for e in _events(f"p{i}", n, skip=skipped)]
    split = make_day_split(events, val_frac=val_frac, test_frac=test_frac, seed=seed, strategy=strategy,
                           min_history_days=min_history)
    ordered = participant_days(events)
    pairs = {(e.participant, e.day) for e in events}
    by_split = {s: split.days_in(s) for s in ("train", "val", "test")}
    assert set().union(*by_split.values()) == pairs
    assert sum(len(v) for v in by_split.values()) == len(pairs)  # disjoint
    for participant, days in ordered.items():
        assert all(split.split_of(participant, d) == "train" for d in days[:min_history])
        held = [d for d in days if split.split_of(participant, d) != "train"]
        assert len(held) <= max(0, len(days) - min_history)
        if test_frac > 0 and len(days) > min_history:
            assert any(split.split_of(participant, d) == "test" for d in days)
