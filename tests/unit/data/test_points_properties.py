"""Property tests: on random messy timelines the builder agrees with a brute-force reading of SPEC §2.

Timelines have overlapping events, zero-length events, identical timestamps, events running past
midnight, several sessions with gaps, days without events, two participants and two levels.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egohorizon.data.points.build import build_points
from egohorizon.data.points.leakage import check_points
from egohorizon.data.splits import make_day_split
from egohorizon.schema import Event

BASE = 1_700_006_400.0  # midnight UTC
DAY_S = 86400.0


@st.composite
def timelines(draw):
    """A list of events over a few days; starts on a coarse grid so that ties are common."""
    events = []
    for participant in draw(st.sampled_from([["p"], ["p", "q"]])):
        days = sorted(draw(st.sets(st.integers(0, 9), min_size=1, max_size=6)))  # gaps = days without events
        for day in days:
            for session in range(draw(st.integers(1, 3))):
                session_start = day * DAY_S + draw(st.sampled_from([0, 8, 13, 21, 23.9])) * 3600
                for i in range(draw(st.integers(1, 6))):
                    start = session_start + draw(st.integers(0, 12)) * 600  # 23.9 h + 2 h crosses midnight
                    length = draw(st.sampled_from([0, 0, 1, 30, 600, 1800, 7200]))
                    level = draw(st.sampled_from([1, 1, 2]))
                    events.append(Event(
                        id=f"{participant}-{day}-{session}-{i}", participant=participant, day=f"day{day}",
                        session=f"{participant}-{day}-{session}", level=level, start=BASE + start,
                        end=BASE + start + length, text=f"act {i % 3}"))
    return events


def brute_force_points(events, split, level, k, n):
    """SPEC §2 read literally, by full scans: {(participant, t0): (context ids, target ids, split)}."""
    expected = {}
    for participant in {e.participant for e in events}:
        mine = sorted((e for e in events if e.participant == participant and e.level == level),
                      key=lambda e: (e.start, e.end, e.id))
        for t0 in sorted({e.start for e in mine}):
            targets = [e for e in mine if e.start >= t0][:k]
            past = [e for e in mine if e.end <= t0 and e.start < t0]
            context = sorted(sorted(past, key=lambda e: (e.end, e.start, e.id))[-n:],
                             key=lambda e: (e.start, e.end, e.id))
            splits = {split.split_of(participant, e.day) for e in targets}
            if len(targets) == k and context and len(splits) == 1:
                expected[(participant, t0)] = ([e.id for e in context], [e.id for e in targets], splits.pop())
    return expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=timelines(), k=st.sampled_from([1, 2, 3, 10]), n=st.integers(1, 6),
       seed=st.integers(0, 3), strategy=st.sampled_from(["random", "last"]))
def test_builder_matches_brute_force_and_passes_the_guard(events, k, n, seed, strategy):
    split = make_day_split(events, val_frac=0.3, test_frac=0.3, seed=seed, strategy=strategy,
                           min_history_days=1)
    points = build_points(events, split, levels=(1, 2), ks=(k,), n_context=n)
    for level in (1, 2):
        got = {(p.participant, p.t0): ([c["id"] for c in p.context], p.meta["target_ids"], s)
               for s, split_points in points.items() for p in split_points if p.level == level}
        assert got == brute_force_points(events, split, level, k, n)
    for split_name, split_points in points.items():
        for point in split_points:
            assert all(c["end"] <= point.t0 and c["start"] < point.t0 for c in point.context)
            assert all(w[0] >= point.t0 for w in point.windows) and point.windows[0][0] == point.t0
            assert {split.split_of(point.participant, d) for d in point.meta["target_days"]} == {split_name}
        assert check_points(split_points, events, split, expected_split=split_name) == len(split_points)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=timelines(), seed=st.integers(0, 3), max_points=st.sampled_from([None, 1, 3]))
def test_splits_never_share_a_target_day(events, seed, max_points):
    split = make_day_split(events, val_frac=0.25, test_frac=0.25, seed=seed, min_history_days=0)
    points = build_points(events, split, levels=(1, 2), ks=(1, 3), n_context=4, max_points=max_points,
                          seed=seed)
    target_days = {s: {(p.participant, d) for p in pts for d in p.meta["target_days"]}
                   for s, pts in points.items()}
    assert not target_days["train"] & target_days["val"]
    assert not target_days["train"] & target_days["test"]
    assert not target_days["val"] & target_days["test"]
    if max_points is not None:
        counts = {}
        for s, pts in points.items():
            for p in pts:
                counts[(s, p.level, p.k)] = counts.get((s, p.level, p.k), 0) + 1
        assert all(c <= max_points for c in counts.values())
    ids = [p.id for pts in points.values() for p in pts]
    assert len(ids) == len(set(ids))
