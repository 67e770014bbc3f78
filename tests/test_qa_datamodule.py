"""The QA datamodule (issue 13): items with frames sampled before their question time from the window
shards, uniformly or from the memory, timestamps in the prompt, batches for the tiny VLM."""

from __future__ import annotations

import re

import pytest

from datamodules.qa import QADataModule
from egohorizon.data.demo import ensure_demo_world
from egohorizon.prompts.qa import IMAGE_MARK

pytestmark = pytest.mark.slow  # builds two weeks of demo shards (~30 s CPU)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qa")
    world = ensure_demo_world(tmp / "world", seed=0, participants=1, weeks=2)
    return {"demo_dir": str(world), "demo_items": str(tmp / "items" / "qa.jsonl"),
            "demo_shards_dir": str(tmp / "shards"), "demo_window_stride": 120, "long_side": 32, "crop_size": 8}


def _module(paths, **kwargs) -> QADataModule:
    module = QADataModule(**paths, **kwargs)
    module.prepare()
    return module


@pytest.fixture(scope="module")
def uniform_module(paths):
    return _module(paths, frame_budget=6)


def test_items_split_by_day_and_frames_before_the_question(uniform_module):
    m = uniform_module
    assert all(len(m.by_split[s]) > 0 for s in ("train", "val", "test"))
    data = m.dataset("val")
    for i in range(len(data)):
        sample = data[i]
        item = data.items[i]
        t_q = item.meta["t_question"]
        assert len(sample["images"]) == len(sample["frame_times"]) <= 6
        assert all(t < t_q for t in sample["frame_times"])
        assert sample["text"].count(IMAGE_MARK) == len(sample["images"])
        assert sample["target"] == item.answer and item.question in sample["text"]
    # A question late in the record has a long past: the whole budget, spread over several days.
    late = max(m.by_split["test"], key=lambda it: it.meta["t_question"])
    times = m.selections[late.id].times
    assert len(times) == 6 and times[-1] - times[0] > 3 * 86400


def test_retrieval_fills_the_same_budget_with_notes_before_the_question(paths):
    m = _module(paths, frame_budget=6, sampling="retrieval", notes=5)
    data = m.dataset("test")
    for i in range(len(data)):
        sample, item = data[i], data.items[i]
        t_q = item.meta["t_question"]
        assert 0 < len(sample["images"]) <= 6
        assert all(t < t_q for t in sample["frame_times"])
        assert sample["notes"] and all(end < t_q for _, end, _ in sample["notes"])
        assert "Memory notes:" in sample["text"]
    assert len(re.findall(r"^- ", data[0]["text"], flags=re.MULTILINE)) == 5


def test_batches_for_the_tiny_vlm(uniform_module, tmp_path):
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(cache_dir=str(tmp_path / "cache"), hidden_size=32, intermediate_size=64, num_layers=1,
                            num_heads=2, num_kv_heads=1, vocab_size=400, patch_size=8, vision_depth=1,
                            vision_hidden_size=16, min_pixels=256, max_pixels=4096)
    backbone.prepare(corpus=uniform_module.training_corpus)
    uniform_module.set_tokenizer(backbone.load_tokenizer())
    uniform_module.set_processor(backbone.load_processor())
    batch = next(iter(uniform_module.val_dataloader()))
    assert batch["ids"] and batch["prompt_ids"].shape[0] == len(batch["ids"])
    assert batch["image_grid_thw"].shape[0] == sum(len(t) for t in batch["frame_times"])
    assert set(uniform_module.eval_items("val")) == {i.id for i in uniform_module.by_split["val"]}
