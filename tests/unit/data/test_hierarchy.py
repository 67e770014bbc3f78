"""Hierarchy invariants, checked on small hand-built trees."""

from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.schema import Event


def _ev(id_, level, start, end, parent=None, children=()):
    return Event(id=id_, participant="p", day="d", session="s", level=level, start=start, end=end,
                 text=id_, parent=parent, children=list(children))


def _good_tree():
    return [
        _ev("a", 1, 0, 2, "A"), _ev("b", 1, 2, 5, "A"), _ev("c", 1, 5, 6, "B"),
        _ev("A", 2, 0, 5, None, ["a", "b"]), _ev("B", 2, 5, 6, None, ["c"]),
    ]


def test_good_tree_and_figures():
    report = check_hierarchy(_good_tree())
    assert report.ok, report.problems
    assert report.levels[1].count == 3 and report.levels[2].count == 2
    assert report.levels[1].mean_duration_s == 2.0
    assert report.compression == {"L1/L2": 1.5}


def test_parent_must_span_children_exactly():
    events = _good_tree()
    events[3] = _ev("A", 2, 0, 4, None, ["a", "b"])
    assert any("spans 0-4 but its children span 0-5" in p for p in check_hierarchy(events).problems)


def test_children_must_be_consecutive_and_ordered():
    events = [
        _ev("a", 1, 0, 1, "A"), _ev("b", 1, 1, 2, "B"), _ev("c", 1, 2, 3, "A"),
        _ev("A", 2, 0, 3, None, ["c", "a"]), _ev("B", 2, 1, 2, None, ["b"]),
    ]
    problems = check_hierarchy(events).problems
    assert any("not listed in time order" in p for p in problems)
    assert any("not consecutive" in p for p in problems)


def test_every_event_below_top_needs_one_parent():
    events = _good_tree()
    events[2] = _ev("c", 1, 5, 6, None)
    problems = check_hierarchy(events).problems
    assert any("'c'" in p and "has no parent" in p for p in problems)
    assert any("'B'" in p and "name another parent" in p for p in problems)
