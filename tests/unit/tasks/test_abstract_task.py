"""The abstract task: parsing, scoring against gold groups with both baselines (hand-computed), items
cut from a gold hierarchy at fixed positions, and the summary table."""

from __future__ import annotations

import itertools

import pytest

from egohorizon.backbones.embedders import ExactEmbedder
from egohorizon.data.events.abstract_items import AbstractItem, gold_compression, make_items
from egohorizon.errors import ConfigError
from egohorizon.formats.abstract import Group
from egohorizon.schema import Event
from egohorizon.tasks import get_task


def event(i: int, text: str, level: int = 1, parent: str | None = None, session: str = "p-2025-03-03-s1") -> Event:
    return Event(id=f"L{level}-{i}", participant="p", day="2025-03-03", session=session, level=level,
                 start=1740990000 + 60 * i, end=1740990000 + 60 * i + 50, text=text, parent=parent)


def item(texts: list[str], gold: list[Group], level: int = 1, name: str = "a") -> AbstractItem:
    return AbstractItem(id=name, participant="p", day="2025-03-03", level=level,
                        events=[event(i, t, level) for i, t in enumerate(texts)], gold=gold)


def test_parse_refuses_what_does_not_cover_the_run():
    task = get_task("abstract")
    run = item(["a x", "b x", "c x"], [Group(0, 2, "g")])
    assert task.parse(["0-1: make tea\n2-2: read"], run) == [Group(0, 1, "make tea"), Group(2, 2, "read")]
    assert task.parse(["0-1: make tea"], run) is None and task.parse([], run) is None


def test_scores_and_baselines_by_hand():
    task = get_task("abstract")
    # six L1 events; gold groups [0-2 make tea][3-5 read]: one gold boundary at 3
    texts = ["boil water", "pour water", "steep tea", "open book", "read page", "read page"]
    gold = [Group(0, 2, "make tea"), Group(3, 5, "read")]
    a = item(texts, gold, name="a")
    b = item(["open box", "open lid"], [Group(0, 1, "unpack")], level=2, name="b")
    predictions = {"a": [Group(0, 3, "make tea"), Group(4, 5, "study")], "b": None}
    evaluation = task.evaluate([a, b], predictions, "val", embedder=ExactEmbedder(), train_compression={1: 2.0})
    l2, l3 = evaluation.report["per_level"]["L2"], evaluation.report["per_level"]["L3"]
    # a: predicted boundary 4 is within one event of 3: P = R = F1 = 1; descriptions: gold (0-2) best
    # overlaps (0-3) "make tea" = 1, gold (3-5) overlaps (4-5) by 2 > 1: "study" vs "read" = 0
    assert (l2["f1"], l2["description"], l2["compression"], l2["gold_compression"]) == (1.0, 0.5, 3.0, 3.0)
    # b: invalid -> no boundary, no description, left out of the compression; gold has no boundary
    assert (l3["invalid"], l3["f1"], l3["description"]) == (1, 1.0, 0.0) and l3["gold_compression"] == 2.0
    assert evaluation.metrics["val/abstract_description"] == pytest.approx(1 / 3)
    assert evaluation.metrics["val/abstract_invalid_rate"] == 0.5
    # fixed chunks of 2 on a: boundaries 2, 4 vs gold 3 -> one match: P 1/2, R 1, F1 2/3; b has no L2
    # size: predicts nothing (no training compression for level 2) -> counted invalid
    fixed = evaluation.baselines["fixed_chunks"]["per_level"]
    assert fixed["L2"]["f1"] == pytest.approx(2 / 3) and fixed["L3"]["invalid"] == 1
    # verb change (+-2) on a: verbs boil pour steep open read read -> dominant per event
    # boil(own, tie) pour(own) steep(own) open? window pour steep open read read -> read; read read
    # boundaries at 1, 2, 3 -> one matched to gold 3 (3 itself) -> P 1/3, R 1, F1 1/2
    verb = evaluation.baselines["verb_change"]["per_level"]["L2"]
    assert (verb["precision"], verb["recall"], verb["f1"]) == (pytest.approx(1 / 3), 1.0, 0.5)
    assert evaluation.metrics["val/verb_change_abstract_boundary_f1_L2"] == 0.5
    summary = task.format_summary(task.summary_rows(evaluation))
    assert "L2" in summary and "verb change" in summary and "n/a" in summary  # L3's model compression


def test_items_are_cut_at_fixed_positions_with_clipped_gold():
    parents = [event(0, "make tea", 2), event(1, "read", 2)]
    children = [event(i, f"step {i}", parent="L2-0" if i < 3 else "L2-1") for i in range(5)]
    items = make_items(parents + children, levels=(1,), max_events=2)
    assert [len(i.events) for i in items] == [2, 2, 1]
    # window 2 holds events 2 (make tea) and 3 (read): the cut parent keeps its description
    assert items[1].gold == [Group(0, 0, "make tea"), Group(1, 1, "read")]
    assert gold_compression(items) == {1: 5 / 4}
    assert make_items(parents + children, days={"p/2025-03-04"}, levels=(1,)) == []


def test_training_runs_spread_over_every_length_with_valid_clipped_gold():
    # two sessions of 60 L1 events under L2 parents of 3 events each; windows of 2..8 events
    events = []
    for s in (1, 2):
        session = f"p-2025-03-03-s{s}"
        events += [event(100 * s + j, f"goal {s}-{j}", 2, session=session) for j in range(20)]
        events += [event(1000 * s + i, f"step {i}", parent=f"L2-{100 * s + i // 3}", session=session)
                   for i in range(60)]
    spread = make_items(events, levels=(1,), max_events=8, spread_lengths=True, seed=3)
    # windows are consecutive: each session's 60 events exactly once, in order
    for s in (1, 2):
        texts = [t for i in spread if i.id.startswith(f"p-2025-03-03-s{s}-") for t in i.texts]
        assert texts == [f"step {i}" for i in range(60)]
    lengths = [len(i.events) for i in spread]
    # every window but a session's last is 2..8 long; the draws reach both ends and vary
    inner = [len(i.events) for i, nxt in itertools.pairwise(spread) if i.id[:-4] == nxt.id[:-4]]
    assert all(2 <= n <= 8 for n in inner) and 2 in inner and 8 in inner and len(set(inner)) >= 5
    assert all(1 <= n <= 8 for n in lengths)
    for it in spread:  # gold groups cover the window, contiguous, clipped, each with its parent's text
        assert it.gold[0].first == 0 and it.gold[-1].last == len(it.events) - 1
        assert all(a.last + 1 == b.first for a, b in zip(it.gold, it.gold[1:]))
        assert all(g.text.startswith("goal ") and g.last - g.first < 3 for g in it.gold)
    # deterministic per seed; another seed cuts elsewhere; without spreading, fixed windows of 8
    again = make_items(events, levels=(1,), max_events=8, spread_lengths=True, seed=3)
    assert [(i.id, len(i.events)) for i in again] == [(i.id, len(i.events)) for i in spread]
    other = make_items(events, levels=(1,), max_events=8, spread_lengths=True, seed=4)
    assert [len(i.events) for i in other] != lengths
    assert [len(i.events) for i in make_items(events, levels=(1,), max_events=8)] == [8] * 7 + [4] + [8] * 7 + [4]
    with pytest.raises(ConfigError, match="min_events=9"):
        make_items(events, levels=(1,), max_events=8, spread_lengths=True, min_events=9)

def test_compare_rows_hold_the_model_and_both_baselines_overall_and_per_level():
    task = get_task("abstract")
    texts = ["boil water", "pour water", "steep tea", "open book", "read page", "read page"]
    a = item(texts, [Group(0, 2, "make tea"), Group(3, 5, "read")], name="a")
    b = item(["open box", "open lid"], [Group(0, 1, "unpack")], level=2, name="b")
    evaluation = task.evaluate([a, b], {"a": [Group(0, 3, "make tea"), Group(4, 5, "study")]}, "val",
                               embedder=ExactEmbedder(), train_compression={1: 2.0})
    assert task.item_ids(evaluation) == ["a", "b"]  # b has no prediction and is still listed
    rows = {(r["predictor"], r["level"]): r for r in task.compare_rows(evaluation)}
    assert set(rows) == {(p, lv) for p in ("model", "fixed-chunks", "verb-change") for lv in ("all", "L2", "L3")}
    # the same figures as the hand-checked report above
    assert (rows["model", "L2"]["f1"], rows["model", "L2"]["description"], rows["model", "L2"]["n"]) == (1.0, 0.5, 1)
    assert rows["model", "all"]["invalid"] == 1 and rows["model", "all"]["n"] == 2
    assert rows["fixed-chunks", "L2"]["f1"] == pytest.approx(2 / 3)
    assert rows["verb-change", "L2"]["f1"] == 0.5
