"""Uncued points matched to cue-driven ones (issue 15): same kind of context, no cue-able switch next,
each chosen once, training days only; held-out points untouched."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egohorizon.data.demo.cues.matching import context_kind, cueable_switch_times, matched_uncued_points
from egohorizon.schema import Event, ForecastPoint

CONTEXTS = ["make a coffee", "hit send", "arrange components in Figma"]


def _point(i: int, level: int, last: str, t0: float, cued: bool) -> ForecastPoint:
    return ForecastPoint(id=f"p{i}", participant="p01", level=level, k=1, t0=t0,
                         context=[{"text": "open the laptop"}, {"text": last}], targets=["x"],
                         windows=[[t0, t0 + 1]], meta={"cue_driven": cued})


def _switch(t: float, key: str) -> Event:
    return Event(id=f"e{t}", participant="p01", day="2025-03-03", session="s", level=1, start=t, end=t + 5,
                 text=key, meta={"key": key})


@settings(max_examples=150, deadline=None)
@given(spec=st.lists(st.tuples(st.integers(1, 2), st.sampled_from(CONTEXTS), st.sampled_from(["cued", "switch", "plain"])),
                     min_size=1, max_size=40),
       n=st.integers(0, 3), seed=st.integers(0, 5))
def test_matched_points_share_the_context_and_have_no_cueable_switch_next(spec, n, seed):
    points = [_point(i, level, last, 1000.0 + 10 * i, kind == "cued") for i, (level, last, kind) in enumerate(spec)]
    # the cued points' switches and some unannounced ones ("switch") are cue-able; "plain" ones are not
    events = [_switch(p.t0, "glance_at_my_phone") for p, (_, _, kind) in zip(points, spec) if kind != "plain"]
    cued = [p for p in points if p.meta["cue_driven"]]
    chosen = matched_uncued_points(cued, points, events, n, seed, exclude=[p.id for p in cued])
    switches = cueable_switch_times(events)
    ids = [p.id for p in chosen]
    assert len(ids) == len(set(ids)) and not set(ids) & {p.id for p in cued}
    assert all((p.participant, p.t0) not in switches for p in chosen)
    kinds = [context_kind(p) for p in cued]
    for p in chosen:
        assert context_kind(p) in kinds
    for kind in set(kinds):  # at most n per cued point, and as many as there are when fewer
        available = sum(1 for p in points if context_kind(p) == kind and (p.participant, p.t0) not in switches)
        wanted = n * kinds.count(kind)
        assert sum(1 for p in chosen if context_kind(p) == kind) == min(wanted, available)
    assert chosen == matched_uncued_points(cued, points, events, n, seed, exclude=[p.id for p in cued])  # seeded


@pytest.mark.slow  # points of a 2-week world built twice (~10 s CPU; a minute on a loaded machine)
def test_the_datamodule_adds_matched_points_to_training_only(tmp_path_factory):
    from datamodules.forecast_visual import VisualForecastDataModule
    from egohorizon.data.demo.writer import build_demo_world

    world = build_demo_world(tmp_path_factory.mktemp("matched") / "w", cue_switches=True, seed=0, participants=1,
                             weeks=2).path
    data = {"demo_dir": str(world), "frame_size": 64, "crop_size": 32, "levels": (1,), "ks": (1,), "n_context": 5,
            "min_history_days": 2, "max_train_points": 12, "max_eval_points": 4, "seed": 0,
            "keep_cue_driven_train": True}
    plain = VisualForecastDataModule(**data).prepare_points()
    matched = VisualForecastDataModule(**data, cue_matched_uncued=1).prepare_points()
    for name in ("val", "test"):
        assert [p.id for p in matched[name]] == [p.id for p in plain[name]]
    added = {p.id for p in matched["train"]} - {p.id for p in plain["train"]}
    cued = [p for p in plain["train"] if p.meta["cue_driven"]]
    assert cued and added and len(added) <= len(cued)
    added_points = [p for p in matched["train"] if p.id in added]
    assert all(not p.meta["cue_driven"] and p.split == "train" for p in added_points)
    assert {context_kind(p) for p in added_points} <= {context_kind(p) for p in cued}


@pytest.mark.parametrize("bad", [-1, "abc", 1.5, True])
def test_the_datamodule_refuses_a_ratio_that_is_not_a_whole_number(bad):
    from datamodules.forecast_visual import VisualForecastDataModule
    from egohorizon.errors import ConfigError

    with pytest.raises(ConfigError, match=r"data\.cue_matched_uncued: expected an integer >= 0"):
        VisualForecastDataModule(demo_dir="unused", cue_matched_uncued=bad)
