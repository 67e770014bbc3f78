"""Personal memory for forecasting (issue 15, item 3): nothing retrieved ends at or after t0, hits are
similar past moments with what followed them, and the lines fill a fixed token budget."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egohorizon.data.demo.writer import build_demo_world
from egohorizon.data.points.leakage import HistoryIndex
from egohorizon.memory import Entry, MemoryIndex, text_embedder
from egohorizon.prompts.forecast_visual_memory import PastSituation, memory_lines, past_situations
from egohorizon.schema import ForecastPoint


@pytest.fixture(scope="module")
def world():
    import tempfile
    from pathlib import Path

    folder = tempfile.mkdtemp(prefix="h6-memory-")
    world = build_demo_world(Path(folder), seed=1, participants=1, weeks=2)
    events = world.events
    return events, MemoryIndex.from_sources(events, embed=text_embedder("words")), HistoryIndex(events)


def _point(history: HistoryIndex, participant: str, level: int, t0: float) -> ForecastPoint:
    context = history.before(participant, level, t0, limit=5)
    return ForecastPoint(id=f"x/{participant}/L{level}/{t0}", participant=participant, level=level, k=1, t0=t0,
                         context=context, targets=["?"], windows=[[t0, t0 + 1]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(0, 1), level=st.integers(1, 3), k=st.integers(1, 6))
def test_nothing_at_or_after_t0_is_ever_retrieved(world, fraction, level, k):
    events, index, history = world
    mine = [e for e in events if e.level == level]
    lo, hi = min(e.start for e in mine), max(e.end for e in mine)
    t0 = lo + fraction * (hi - lo)
    point = _point(history, "p01", level, t0)
    found = past_situations(index, point, k=k)
    assert len(found) <= k
    for s in found:
        assert s.then.end < t0 and s.next.end < t0 and s.next.start >= s.then.end
        assert s.then.level == s.next.level == level and s.then.participant == s.next.participant == "p01"
        assert s.then.ref not in {c["id"] for c in point.context}


def test_hits_are_similar_moments_and_what_followed(world):
    events, index, history = world
    l1 = sorted((e for e in events if e.level == 1), key=lambda e: e.start)
    t0 = l1[len(l1) * 3 // 4].start
    point = _point(history, "p01", 1, t0)
    found = past_situations(index, point, k=3)
    assert found and [s.score for s in found] == sorted((s.score for s in found), reverse=True)
    by_id = {e.id: e for e in events}
    for s in found:  # "next" is the event right after the hit at the same level
        later = [e for e in l1 if e.start >= by_id[s.then.ref].end]
        assert s.next.ref == later[0].id


def test_lines_fill_a_fixed_budget():
    def entry(text, t):
        return Entry("event", "p", t, t + 60, text, f"e{t}", 1)

    situations = [PastSituation(entry("make tea", 1_741_000_000 + i * 600), entry("drink the tea", 1_741_000_100), 1.0)
                  for i in range(5)]
    lines = memory_lines(situations, budget=30)
    assert lines[0] == "Mon 2025-03-03 11:06 make tea -> then: drink the tea"
    assert len(lines) == 3 and sum(len(x.split()) for x in lines) <= 30  # 10 words each
    assert memory_lines(situations, budget=9) == []
    assert len(memory_lines(situations, budget=1000)) == 5
    assert memory_lines(situations, budget=25, count_tokens=len) == []  # a 52-character line costs 53


@pytest.mark.slow  # a 2-week world, its points and the memory index (~1 min on a loaded machine)
def test_the_datamodule_puts_memory_in_the_prompt(tmp_path):
    from datamodules.forecast_visual import VisualForecastDataModule

    build_demo_world(tmp_path / "w", seed=0, participants=1, weeks=2)
    module = VisualForecastDataModule(demo_dir=str(tmp_path / "w"), cue_switches=False, frames=0, gaze_crop=False,
                                      memory=True, memory_tokens=60, memory_items=4, levels=(2,), ks=(1,),
                                      n_context=5, min_history_days=2, max_train_points=5, max_eval_points=3)
    point = module.prepare_points()["test"][-1]
    text = module.grounded_text(point, image_mark="")
    block = text[text.index("Similar moments"):text.index("\nNow: ")].splitlines()[1:]
    assert 1 <= len(block) <= 4 and sum(len(x.split()) for x in block) <= 60
    assert all(" -> then: " in x for x in block)
    # memory only from an events file (EPIC-KITCHENS' way): no demo world is needed
    from_file = VisualForecastDataModule(events=str(tmp_path / "w" / "events.jsonl"), frames=0, gaze_crop=False,
                                         memory=True, memory_tokens=60, levels=(2,), ks=(1,), n_context=5,
                                         min_history_days=2, max_train_points=5, max_eval_points=3)
    assert from_file.grounded_text(from_file.prepare_points()["test"][-1], image_mark="") == text
