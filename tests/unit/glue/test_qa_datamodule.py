"""The QA datamodule (issue 13): items with frames sampled before their question time from the window
shards, uniformly or from the memory, timestamps in the prompt, batches for the tiny VLM."""

from __future__ import annotations

import re

import pytest
from qa_checks import assert_option_scores_are_summed_losses

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


def _tiny(tmp_path, corpus):
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(cache_dir=str(tmp_path / "cache"), hidden_size=32, intermediate_size=64, num_layers=1,
                            num_heads=2, num_kv_heads=1, vocab_size=400, patch_size=8, vision_depth=1,
                            vision_hidden_size=16, min_pixels=256, max_pixels=4096)
    backbone.prepare(corpus=corpus)
    return backbone


def test_option_targets_and_option_scores_match_the_training_loss(paths, tmp_path):
    """target: option teaches the right option's text; strategy: options scores each option with the
    same log-probability the training loss uses (images sliced per item, padding ignored), and answers
    with the best one's letter, which the qa task reads back."""
    from functools import partial

    import torch

    from egohorizon.backbones.collate import KeyedVisionTextCollator
    from egohorizon.tasks.qa import QATask
    from models.qa import QAModule

    m = _module(paths, frame_budget=3, target="option", prompt="qa_option")
    data = m.dataset("val")
    sample, item = data[0], data.items[0]
    assert sample["target"] == item.options["ABCD".index(item.answer)] and sample["options"] == item.options
    assert "word for word" in sample["text"]
    backbone = _tiny(tmp_path, m.training_corpus)
    m.set_tokenizer(backbone.load_tokenizer())
    m.set_processor(backbone.load_processor())
    model = QAModule(backbone, optimizer=partial(torch.optim.AdamW, lr=1e-3), prompt="qa_option",
                     generation={"strategy": "options", "option_score": "sum"})
    model.configure_model()
    model.eval()
    samples = [data[i] for i in range(3)]
    batch = KeyedVisionTextCollator(m.processor, True, fields=("frame_times", "options"))(samples)
    assert batch["image_grid_thw"].shape[0] == sum(len(s["images"]) for s in samples) > 0
    scores = model.option_log_likelihoods(batch)
    assert [len(s) for s in scores] == [4, 4, 4]
    one = KeyedVisionTextCollator(m.processor, False)
    assert_option_scores_are_summed_losses(model, samples, scores, one, abs_tol=1e-4)
    # Without images (a text-only prompt): the same agreement with the training loss.
    blind = {**samples[0], "images": [], "text": samples[0]["text"].replace(IMAGE_MARK, "")}
    blind_batch = KeyedVisionTextCollator(m.processor, True, fields=("frame_times", "options"))([blind])
    # issue 26 item 5: a batch without images carries one masked dummy image, so every rank runs the
    # vision tower; the scores below must still equal the text-only training loss.
    assert blind_batch["image_grid_thw"].shape[0] == 1
    (row,) = model.option_log_likelihoods(blind_batch)
    with torch.no_grad():
        b = one([{**blind, "target": blind["options"][0]}])
        assert float(row[0]) == pytest.approx(-float(model._loss(b)) * int((b["labels"] != -100).sum()), rel=1e-4)
    texts = model.generate_texts(batch)
    task = QATask()
    for i, (text, row) in enumerate(zip(texts, scores, strict=True)):
        assert task.parse(text, data.items[i]) == "ABCD"[int(row.argmax())]
    # calibrated: the same sum minus the option's summed log-probability after the content-free prompt
    # (the template with question "N/A" and nothing else), each computed as the training loss would.
    from egohorizon.prompts.qa import render_qa_prompt

    model.generation["option_score"] = "calibrated"
    calibrated = model.option_log_likelihoods(batch)
    free = render_qa_prompt("N/A", [], None, prompt="qa_option")
    assert "N/A" in free and "Memory notes" not in free and IMAGE_MARK not in free
    for sample, row, cal in zip(samples, scores, calibrated, strict=True):
        for k, option in enumerate(sample["options"]):
            b = one([{"text": free, "images": [], "target": option, "key": "content-free"}])
            with torch.no_grad():
                prior = -float(model._loss(b)) * int((b["labels"] != -100).sum())
            assert float(cal[k]) == pytest.approx(float(row[k]) - prior, rel=1e-4, abs=1e-4)


def test_a_text_only_backbone_answers_without_frames(paths, smollm2_backbone):
    """backbone=smollm2_135m, data.frame_budget=0: the same prompt text, tokenized as the composite's
    processor tokenizes a text with no images; option scores equal the training loss, as with frames;
    asking a text-only backbone for frames is refused by name."""
    from functools import partial

    import torch

    from datamodules.qa import TextQACollator
    from egohorizon.errors import ConfigError
    from models.qa import QAModule

    tokenizer = smollm2_backbone.load_tokenizer()
    m = _module(paths, frame_budget=0, target="option", prompt="qa_option", eval_batch_size=3)
    m.set_tokenizer(tokenizer)
    m.set_processor(smollm2_backbone.load_processor())  # None: a text-only backbone
    assert m.processor is None
    batch = next(iter(m.val_dataloader()))
    samples = [m.dataset("val")[i] for i in range(3)]
    assert batch["ids"] == [s["key"] for s in samples] and batch["options"] == [s["options"] for s in samples]
    prompt = batch["prompt_ids"][0][batch["prompt_mask"][0].bool()].tolist()
    assert prompt == tokenizer(samples[0]["text"], add_special_tokens=False)["input_ids"]
    assert "pixel_values" not in batch and IMAGE_MARK not in samples[0]["text"]
    model = QAModule(smollm2_backbone, optimizer=partial(torch.optim.AdamW, lr=1e-3), prompt="qa_option",
                     lora={"r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"]},
                     generation={"strategy": "options", "option_score": "sum"})
    model.configure_model()
    model.eval()
    scores = model.option_log_likelihoods(batch)
    assert [len(s) for s in scores] == [len(s["options"]) for s in samples]
    assert_option_scores_are_summed_losses(model, samples, scores, TextQACollator(tokenizer, False), abs_tol=1e-3)
    framed = _module(paths, frame_budget=2)
    framed.set_tokenizer(tokenizer)
    with pytest.raises(ConfigError, match="text-only backbone cannot take frames"):
        framed.train_dataloader()
