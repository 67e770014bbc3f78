"""Visual forecasting (issue 15, item 2): frames strictly before t0, the prompt with frames, M = 0 is the
text-only forecaster, and batches for the tiny VLM."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datamodules.forecast import ForecastDataModule
from datamodules.forecast_visual import VisualForecastDataModule, frames_before
from egohorizon.backbones.collate import IMAGE_PLACEHOLDER
from egohorizon.data.demo.writer import build_demo_world
from egohorizon.prompts.forecast import render_forecast_prompt
from egohorizon.prompts.forecast_visual import render_grounded_prompt

WORLD = {"seed": 0, "participants": 1, "weeks": 2}
DATA = {"levels": (1,), "ks": (1,), "n_context": 5, "min_history_days": 2, "max_train_points": 12,
        "max_eval_points": 4, "seed": 0}


@st.composite
def spans_and_t0(draw):
    gaps = draw(st.lists(st.tuples(st.integers(1, 50), st.integers(1, 80)), min_size=1, max_size=5))
    spans, t = [], 1_741_000_000
    for gap, length in gaps:
        spans.append((float(t + gap), float(t + gap + length)))
        t += gap + length
    t0 = draw(st.floats(spans[0][0] - 20, t + 20, allow_nan=False))
    return spans, t0


@settings(max_examples=300, deadline=None)
@given(spans_and_t0(), st.integers(0, 6), st.integers(1, 5))
def test_frames_are_strictly_before_t0_and_recorded(case, m, stride):
    spans, t0 = case
    times = frames_before(spans, t0, m, stride)
    assert len(times) <= m and times == sorted(times) and len(set(times)) == len(times)
    for t in times:
        assert t < t0 and t == int(t)
        assert any(s <= t < e for s, e in spans)
    # the chosen times are the grid's latest ones: the last whole second before t0, then stride apart
    latest = -(-t0 // 1) - 1
    assert all((latest - t) % stride == 0 and latest - t < m * stride for t in times)
    brute = [float(latest - i * stride) for i in range(m) if any(s <= latest - i * stride < e for s, e in spans)]
    assert times == sorted(brute)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_demo_world(tmp_path_factory.mktemp("visual") / "w", cue_switches=True, **WORLD).path


def _visual(world, **kwargs) -> VisualForecastDataModule:
    return VisualForecastDataModule(demo_dir=str(world), frame_size=64, crop_size=32, **{**DATA, **kwargs})


def test_prompt_without_frames_is_the_text_prompt(world):
    module = _visual(world, frames=0, gaze_crop=False)
    for point in module.prepare_points()["test"]:
        assert render_grounded_prompt(point) == render_forecast_prompt(point, n_candidates=1)


def test_prompt_with_frames_marks_each_image_before_now(world):
    module = _visual(world, frames=3, frame_stride=2)
    point = module.prepare_points()["test"][0]
    times, crop = module.frame_times(point), module.crop_time(point)
    assert times and all(t < point.t0 for t in times) and crop == times[-1]
    text = render_grounded_prompt(point, times, crop)
    assert text.count(IMAGE_PLACEHOLDER) == len(times) + 1
    assert text.index("Close-up around my gaze") < text.index("\nNow: ")
    assert text.replace(text[text.index("\n\nWhat I saw"):text.index("\nNow: ")], "") == \
        render_forecast_prompt(point, n_candidates=1)
    with pytest.raises(ValueError, match="future"):
        render_grounded_prompt(point, [point.t0])


_FRAME_MODULES: dict = {}


@settings(max_examples=100, deadline=None)
@given(fraction=st.floats(0, 1), m=st.integers(0, 5), stride=st.integers(1, 4), crop=st.booleans())
def test_the_datamodule_never_shows_a_frame_at_or_after_t0(world, fraction, m, stride, crop):
    """Frame selection as the datamodule does it (frames and close-up), at any t0 of the world: every image
    time is strictly before t0 and inside one of the participant's recordings."""
    from egohorizon.schema import ForecastPoint

    key = (str(world), m, stride, crop)  # one datamodule per setting: building it is most of the time
    module = _FRAME_MODULES.get(key) or _FRAME_MODULES.setdefault(key, _visual(world, frames=m, frame_stride=stride,
                                                                                 gaze_crop=crop))
    spans = [(r.start, r.end) for r in module.world().recordings if r.participant == "p01"]
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    t0 = lo - 5 + fraction * (hi - lo + 10)
    point = ForecastPoint(id=f"x/p01/L1/{t0}", participant="p01", level=1, k=1, t0=t0, context=[],
                          targets=["?"], windows=[[t0, t0 + 1]])
    times = module.frame_times(point) + ([module.crop_time(point)] if module.crop_time(point) is not None else [])
    assert len(times) <= m + crop
    for t in times:
        assert t < t0 and any(s <= t < e for s, e in spans)
    render_grounded_prompt(point, module.frame_times(point), module.crop_time(point))  # its own guard agrees


@pytest.mark.slow  # points of a 2-week world built twice (~10 s CPU; a minute on a loaded machine)
def test_frames_zero_is_the_text_only_forecaster(world):
    """Same points (cue marks aside), same prompts and corpus, and the parent's loaders."""
    text = ForecastDataModule(demo_dir=str(world), **DATA)
    visual = _visual(world, frames=0, gaze_crop=False, cue_switches=True, keep_cue_driven_eval=False)
    a, b = text.prepare_points(), visual.prepare_points()
    for name in ("train", "val", "test"):
        assert [p.id for p in a[name]] == [p.id for p in b[name]]
        assert [p.context for p in a[name]] == [p.context for p in b[name]]
    assert text.training_corpus() == visual.training_corpus()
    assert not visual.grounded


@pytest.mark.slow  # points of a 2-week world built twice (~10 s CPU; a minute on a loaded machine)
def test_cue_driven_held_out_points_are_all_kept(world):
    module = _visual(world)
    points = module.prepare_points()
    capped = _visual(world, keep_cue_driven_eval=False).prepare_points()
    for name in ("val", "test"):
        cue = [p for p in points[name] if p.meta["cue_driven"]]
        assert len(cue) >= sum(p.meta["cue_driven"] for p in capped[name])
        assert {p.id for p in capped[name]} <= {p.id for p in points[name]}
    assert any(p.meta["cue_driven"] for p in points["test"])


@pytest.mark.slow  # builds a tiny VLM and renders frames (~20 s on a loaded machine)
def test_batches_for_the_tiny_vlm(world, tmp_path):
    from egohorizon.backbones import TinyBackbone

    module = _visual(world, frames=2, frame_stride=3)
    backbone = TinyBackbone(cache_dir=str(tmp_path / "cache"), hidden_size=32, intermediate_size=64, num_layers=1,
                            num_heads=2, num_kv_heads=1, vocab_size=400, patch_size=8, vision_depth=1,
                            vision_hidden_size=16, min_pixels=256, max_pixels=4096)
    backbone.prepare(corpus=module.training_corpus)
    module.set_tokenizer(backbone.load_tokenizer())
    module.set_processor(backbone.load_processor())
    module.setup("fit")
    batch = next(iter(module.val_dataloader()))
    assert batch["ids"] and batch["prompt_ids"].shape[0] == len(batch["ids"]) == len(batch["k"])
    ordered = sorted(module.prepare_points()["val"], key=lambda p: (p.k, p.id))[: len(batch["ids"])]
    assert batch["ids"] == [p.id for p in ordered]
    assert batch["image_grid_thw"].shape[0] == sum(len(module.frame_times(p)) + 1 for p in ordered)
    train = next(iter(module.train_dataloader()))
    assert (train["labels"] != -100).any() and "pixel_values" in train


@pytest.mark.slow  # points of a 2-week world built three times and a tiny tokenizer (~1 min on a loaded machine)
def test_cue_driven_training_points_are_all_kept_and_repeated_alike(world, tmp_path):
    """keep_cue_driven_train adds every cue-driven training point to the capped sample, and
    cue_driven_train_repeat shows them as often in the text-only path as in the visual one."""
    from egohorizon.backbones import TinyBackbone

    every = _visual(world, max_train_points=None).prepare_points()["train"]
    capped = _visual(world).prepare_points()["train"]
    text = _visual(world, frames=0, gaze_crop=False, keep_cue_driven_train=True, cue_driven_train_repeat=3)
    train = text.prepare_points()["train"]
    cued = {p.id for p in every if p.meta["cue_driven"]}
    assert cued and cued <= {p.id for p in train}
    assert {p.id for p in capped} <= {p.id for p in train} and len(train) == len({p.id for p in train})
    backbone = TinyBackbone(cache_dir=str(tmp_path / "cache"), hidden_size=32, intermediate_size=64, num_layers=1,
                            num_heads=2, num_kv_heads=1, vocab_size=400, patch_size=8, vision_depth=1,
                            vision_hidden_size=16, min_pixels=256, max_pixels=4096)
    backbone.prepare(corpus=text.training_corpus)
    text.set_tokenizer(backbone.load_tokenizer())
    text.setup("fit")
    text.setup("fit")  # a second setup does not repeat them again
    shown = [item["id"] for item in text._datasets["train"].items]
    assert len(shown) == len(train) + 2 * len(cued) == len(text._train_points())
    assert all(shown.count(pid) == 3 for pid in cued)


@pytest.mark.slow  # points of a 2-week world (~10 s CPU; a minute on a loaded machine)
def test_hide_cues_renders_the_frames_as_if_no_cue_had_appeared(world):
    import numpy as np

    shown, hidden = _visual(world, frames=1), _visual(world, frames=1, hide_cues=True)
    cued = [p for p in shown.prepare_points()["test"] if p.meta["cue_driven"]]
    assert cued and [p.id for p in hidden.prepare_points()["test"]] == [p.id for p in shown.prepare_points()["test"]]
    for point in cued[:3]:
        (text, with_cue), (text_hidden, without) = shown.grounded_input(point), hidden.grounded_input(point)
        assert text == text_hidden and len(with_cue) == len(without) == 2
        assert not np.array_equal(np.asarray(with_cue[0]), np.asarray(without[0]))  # the cue was in the frame
    cues = shown.world().cues
    plain = next(p for p in shown.prepare_points()["test"]  # no cue of another switch in its frame either
                 if not any(cues.at(shown._session_at(p.participant, t), t) for t in shown.frame_times(p)))
    assert all(np.array_equal(np.asarray(a), np.asarray(b))
               for a, b in zip(shown.grounded_input(plain)[1], hidden.grounded_input(plain)[1], strict=True))
