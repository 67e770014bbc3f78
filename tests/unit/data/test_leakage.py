"""The leakage guard must catch every hand-made leak, and retrieval must never see t0 or later."""

import copy
import dataclasses

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_points_properties import timelines  # the test's own folder is on sys.path (no __init__.py)

from egohorizon.data.points.build import build_points
from egohorizon.data.points.leakage import HistoryIndex, check_points, history_before
from egohorizon.data.splits import DaySplit, make_day_split
from egohorizon.errors import LeakageError
from egohorizon.schema import Event

BASE = 1_700_006_400.0
DAY_S = 86400.0


def _ev(id_, start, end, day="d0"):
    return Event(id=id_, participant="p", day=day, session="s", level=1, start=BASE + start,
                 end=BASE + end, text=f"do {id_}")


def _world():
    events = [_ev("a", 0, 10), _ev("b", 10, 20), _ev("c", 30, 40), _ev("d", 40, 50), _ev("e", 60, 70),
              _ev("f", DAY_S, DAY_S + 5, day="d1"), _ev("g", DAY_S + 5, DAY_S + 9, day="d1")]
    split = make_day_split(events, val_frac=0, test_frac=0, min_history_days=0)
    points = build_points(events, split, levels=(1,), ks=(2,), n_context=3)
    point = next(p for p in points["train"] if p.t0 == BASE + 40)  # context a b c, targets d e
    return events, split, point


def _catch(point, events, split, *messages):
    with pytest.raises(LeakageError) as error:
        check_points([point], events, split)
    text = str(error.value)
    assert point.id in text
    for message in messages:
        assert message in text, text
    return text


def test_the_good_point_passes():
    events, split, point = _world()
    assert [c["id"] for c in point.context] == ["a", "b", "c"] and point.meta["target_ids"] == ["d", "e"]
    assert check_points([point], events, split) == 1


def test_context_event_moved_to_t0_is_caught():
    events, split, point = _world()
    point.context[-1]["start"] = point.t0
    _catch(point, events, split, "event 'c'", f"starts at or after t0 {point.t0!r}")


def test_context_event_extended_past_t0_is_caught():
    events, split, point = _world()
    point.context[-1]["end"] = point.t0 + 1
    _catch(point, events, split, f"event 'c' ({BASE + 30!r}-{point.t0 + 1!r}), ends after t0")


def test_event_record_extended_past_t0_is_caught():
    # The point is unchanged but the truth says c runs past t0: it should not have been in the context.
    events, split, point = _world()
    events = [dataclasses.replace(e, end=BASE + 45) if e.id == "c" else e for e in events]
    _catch(point, events, split, "differs from the event record in ['end']")


def test_future_event_in_context_is_caught():
    events, split, point = _world()
    point.context.append({"id": "d", "start": BASE + 40, "end": BASE + 50, "text": "do d", "day": "d0",
                          "session": "s"})
    _catch(point, events, split, "event 'd'", "ends after t0", "starts at or after t0")


def test_skipped_context_event_is_caught():
    events, split, point = _world()
    del point.context[1]  # b
    _catch(point, events, split, "context holds 2 events, but 3 events of L1 end")
    del point.meta["n_context"]  # even without knowing N, a gap in the recent history is visible
    _catch(point, events, split, "context skips 1 more recent event(s)", "event 'b'")


def test_context_carrying_extra_fields_is_caught():
    events, split, point = _world()
    point.context[0]["parent"] = "L2-future"
    _catch(point, events, split, "carries fields ['parent']")


def test_wrong_targets_and_t0_are_caught():
    events, split, point = _world()
    bad = copy.deepcopy(point)
    bad.meta["target_ids"] = ["d", "f"]
    bad.targets[1], bad.windows[1] = "do f", [BASE + DAY_S, BASE + DAY_S + 5]
    _catch(bad, events, split, "are not the 2 events following t0", "expected ['d', 'e']")
    bad = copy.deepcopy(point)
    bad.t0 -= 5
    bad.context = bad.context[:2]  # keep the context honest, so only t0 is wrong
    _catch(bad, events, split, "is not the start of the first target")
    bad = copy.deepcopy(point)
    bad.targets[0] = "do something else"
    _catch(bad, events, split, "target 0 differs from the record of event 'd'")


def test_target_day_in_another_split_is_caught():
    events, split, point = _world()
    moved = DaySplit(days={"p": {"d0": "test", "d1": "train"}})
    _catch(point, events, moved, "point's split is 'train', but target event 'd'", "split 'test'")
    straddle = build_points(events, split, levels=(1,), ks=(2,), n_context=3)["train"]
    last = next(p for p in straddle if p.t0 == BASE + 60)  # targets e (d0) and f (d1)
    halves = DaySplit(days={"p": {"d0": "train", "d1": "val"}})
    _catch(last, events, halves, "targets fall on days of 2 splits", "event 'f'", "'val'")
    with pytest.raises(LeakageError, match="the expected split is 'test'"):
        check_points([point], events, split, expected_split="test")


def test_history_index_only_returns_the_strict_past():
    events, _, _ = _world()
    index = HistoryIndex(events)
    assert [e["id"] for e in index.before("p", 1, BASE + 40)] == ["a", "b"]  # c ends at 40: not before
    assert [e["id"] for e in index.before("p", 1, BASE + 40.5, limit=2)] == ["b", "c"]
    assert index.before("p", 2, BASE + 100) == [] and index.before("nobody", 1, BASE) == []
    assert set(index.before("p", 1, BASE + 100)[0]) == {"id", "start", "end", "text", "day", "session"}
    assert history_before(events, "p", 1, BASE + 60.0) == index.before("p", 1, BASE + 60.0)


MUTATIONS = ["start_at_t0", "end_after_t0", "drop_newest", "add_target", "swap_target", "shift_split"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=timelines(), k=st.sampled_from([1, 3]), n=st.integers(1, 5), mutation=st.sampled_from(MUTATIONS),
       pick=st.integers(0, 10_000))
def test_guard_catches_random_leaks(events, k, n, mutation, pick):
    split = make_day_split(events, val_frac=0.3, test_frac=0.3, seed=0, min_history_days=0)
    points = [p for pts in build_points(events, split, levels=(1, 2), ks=(k,), n_context=n).values()
              for p in pts]
    assume(points)
    point = copy.deepcopy(points[pick % len(points)])
    if mutation == "start_at_t0":
        point.context[pick % len(point.context)]["start"] = point.t0
    elif mutation == "end_after_t0":
        point.context[pick % len(point.context)]["end"] = point.t0 + 0.5
    elif mutation == "drop_newest":  # the most recent by end; without N, dropping the oldest is legal
        point.context.remove(max(point.context, key=lambda c: (c["end"], c["start"], c["id"])))
        del point.meta["n_context"]
    elif mutation == "add_target":
        first = next(e for e in events if e.id == point.meta["target_ids"][0])
        point.context.append({key: getattr(first, key) for key in ("id", "start", "end", "text", "day", "session")})
    elif mutation == "swap_target":
        later = [e for e in events if (e.participant, e.level) == (point.participant, point.level)
                 and e.start > point.windows[-1][0] and e.id not in point.meta["target_ids"]]
        assume(later)
        point.meta["target_ids"][-1] = later[0].id
        point.targets[-1], point.windows[-1] = later[0].text, [later[0].start, later[0].end]
    elif mutation == "shift_split":
        day = point.meta["target_days"][-1]
        other = next(s for s in ("train", "val", "test") if s != point.split)
        split = DaySplit(days={p: dict(days) for p, days in split.days.items()})
        split.days[point.participant][day] = other
    with pytest.raises(LeakageError) as error:
        check_points([point], events, split)
    assert point.id in str(error.value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=timelines(), t0_offset=st.integers(-3600, 10 * DAY_S), limit=st.sampled_from([None, 1, 4]))
def test_retrieval_never_returns_anything_ending_at_or_after_t0(events, t0_offset, limit):
    t0 = BASE + t0_offset
    index = HistoryIndex(events)
    for participant in {e.participant for e in events}:
        for level in (1, 2):
            got = index.before(participant, level, t0, limit=limit)
            assert all(e["end"] < t0 and e["start"] < t0 for e in got)
            past = sorted((e for e in events if (e.participant, e.level) == (participant, level) and e.end < t0),
                          key=lambda e: (e.end, e.start, e.id))
            expected = past if limit is None else past[-limit:] if past else []
            assert sorted(e["id"] for e in got) == sorted(e.id for e in expected)
