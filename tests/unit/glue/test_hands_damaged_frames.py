"""A damaged frame file in a batch (issue 40): the hands dataset leaves that clip out (None, with a warning
naming the file), the collator drops it and counts it (``skipped``), and the LoRA module logs the count and
steps over a batch with nothing left, instead of a traceback ending the run."""

from __future__ import annotations

import functools
import json
import logging
import shutil

import pytest
import torch

from datamodules.hands import HandClipSamples
from egohorizon.backbones.boxes import ResizeMapping
from egohorizon.backbones.collate import KeyedVisionTextCollator
from egohorizon.tasks.hands import HandItem

FRAME = "CARDS_LIVINGROOM_B_T_frame_0032.jpg"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(cache_dir=str(tmp_path_factory.mktemp("tiny")), hidden_size=32, intermediate_size=64,
                            num_layers=1, num_heads=2, num_kv_heads=1, vocab_size=320, vision_depth=1,
                            vision_hidden_size=16)
    backbone.prepare(corpus=lambda: ["left hand right hand 0s 1s [1,2,3,4]", "frames at"] * 4)
    return backbone


@pytest.fixture(scope="module")
def processor(tiny):
    return tiny.load_processor()


@pytest.fixture
def clips(tmp_path, shared_data):
    """Two one-frame clips of a real EgoHands frame; the second's file is cut in half."""
    source = shared_data / "egohands-frames" / "images" / FRAME
    shutil.copy(source, tmp_path / "good.jpg")
    (tmp_path / "cut.jpg").write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    records = {name: {"clip": name, "participant": "p", "day": "d", "duration": 1.0, "height": 720, "width": 1280,
                      "frames": {"0": f"{name}.jpg"}} for name in ("good", "cut")}
    (tmp_path / "clips.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records.values()))
    return tmp_path, records


def test_a_damaged_frame_leaves_its_clip_out_and_is_counted(clips, processor, caplog):
    folder, records = clips
    mapping = ResizeMapping.for_processor(processor, 720, 1280)
    items = [HandItem(id=name, frame_times=[0.0], original=(720, 1280)) for name in records]
    data = HandClipSamples(items, records, mapping, None, folder)
    with caplog.at_level(logging.WARNING):
        samples = [data[0], data[1]]
    assert samples[0]["key"] == "good" and samples[1] is None
    assert f"cannot read frame {folder / 'cut.jpg'}" in caplog.text and "the clip is skipped" in caplog.text

    collate = KeyedVisionTextCollator(processor, with_prompts=True)
    batch = collate(samples)
    assert batch["skipped"] == 1 and batch["ids"] == ["good"] and batch["input_ids"].shape[0] == 1
    assert batch["image_grid_thw"].shape[0] == 1
    assert "skipped" not in collate([samples[0]])  # a whole batch carries no count
    assert collate([None, None]) == {"skipped": 2, "ids": []}


def test_the_module_steps_over_a_batch_with_nothing_left(processor):
    from models.hands import HandModule

    module = HandModule(backbone=None, optimizer=functools.partial(torch.optim.AdamW, lr=1e-3))
    empty = {"skipped": 2, "ids": []}
    assert module.training_step(empty, 0) is None  # Lightning then skips backward: no gradient, no update
    assert module.validation_step(empty, 0) is None
    assert module.generate_texts(empty, 0) == []


def test_a_training_epoch_counts_the_skipped_clips(clips, tiny, processor):
    import lightning as L
    from torch.utils.data import DataLoader

    from models.hands import HandModule

    folder, records = clips
    mapping = ResizeMapping.for_processor(processor, 720, 1280)
    items = [HandItem(id=name, frame_times=[0.0], original=(720, 1280)) for name in ("good", "cut", "cut")]
    data = HandClipSamples(items, records, mapping, None, folder)
    loader = DataLoader(data, batch_size=2, collate_fn=KeyedVisionTextCollator(processor))  # [good, cut], [cut]
    torch.manual_seed(0)
    module = HandModule(tiny, functools.partial(torch.optim.AdamW, lr=1e-3),
                        lora={"r": 2, "target_modules": ["q_proj", "v_proj"]})
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, train_dataloaders=loader)
    assert float(trainer.callback_metrics["train/skipped_samples"]) == 2.0
    assert "train/loss" in trainer.callback_metrics  # the good clip trained
