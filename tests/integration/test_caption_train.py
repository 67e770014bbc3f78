"""The task core end to end on images: ``train.py``'s run trains the tiny Qwen2.5-VL captioner
(task=caption) on image+text batches streamed from the demo world's window shards (frames with the
gaze drawn, the gaze close-up, speech -> the window's gold L1 actions as timed JSON lines), the vision
path learns, and the caption metrics and both baselines are logged on val and test (objective
val/caption_f1)."""

from __future__ import annotations

import json

import pytest
import torch
from hydra import compose, initialize_config_dir

from egohorizon.run import train

pytestmark = pytest.mark.slow  # builds demo shards and trains (~1 min on 2 cores)


def _compose(overrides: list[str]):
    from conftest import REPO_ROOT

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=overrides)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("caption")
    cfg = _compose(
        [
            "task=caption",
            "experiment=caption_demo",
            f"paths.run_dir={tmp}/run",
            f"paths.cache_dir={tmp}/cache",
            f"backbone.cache_dir={tmp}/cache",
            f"data.demo_shards_dir={tmp}/shards",
            "data.demo_days=4",
            # every 90th window of 4 days: 36 train, 28 val, 25 test windows, more than the 16, 8 and 8
            # the batch limits below read (every 30th built three times as many: 2/3 of this test's time
            # went to rendering and reading the screen text of windows no step saw)
            "data.demo_window_stride=90",
            "data.frames_per_window=2",
            "data.num_workers=0",
            "data.batch_size=2",
            "logger=csv",
            "trainer.max_epochs=1",
            "trainer.check_val_every_n_epoch=1",
            "+trainer.limit_train_batches=8",
            "+trainer.limit_val_batches=2",
            "+trainer.limit_test_batches=2",
            "data.eval_batch_size=4",
            "model.generation.max_new_tokens=48",
            "trainer.enable_progress_bar=false",
            "model.optimizer.lr=5e-3",
        ]
    )
    return tmp, cfg, train(cfg)


def test_the_run_trains_on_images_and_ranks_checkpoints_by_caption_f1(trained):
    tmp, _cfg, result = trained
    metrics = json.loads((tmp / "run" / "metrics.json").read_text())
    assert metrics["objective"]["name"] == "val/caption_f1" and metrics["objective"]["mode"] == "max"
    assert 0.0 <= metrics["objective"]["value"] <= 1.0
    val, test = metrics["metrics"]["val"], metrics["metrics"]["test"]
    for split in (val, test):
        prefix = "val" if split is val else "test"
        for name in ("f1", "precision", "recall", "f1_macro", "soft_edit", "invalid_rate", "dropped", "n"):
            for who in ("caption", "repeat_previous_caption", "most_frequent_caption"):
                assert f"{prefix}/{who}_{name}" in split, f"{prefix}/{who}_{name}"
    assert val["val/caption_n"] > 0 and 0.0 <= val["val/caption_soft_edit"] <= 1.0
    # the most frequent training action reached the baseline: it predicts something for every window
    assert val["val/most_frequent_caption_invalid_rate"] == 0.0
    assert "Checkpoint chosen on validation: val/caption_f1" in result["summary_text"]
    assert "repeat previous" in result["summary_text"] and "most frequent" in result["summary_text"]
    report = json.loads((tmp / "run" / "reports" / "test.json").read_text())
    assert report["task"] == "caption" and set(report["baselines"]) == {"repeat_previous", "most_frequent"}
    assert report["baselines"]["most_frequent"]["action"] and report["per_activity"]
    rows = [json.loads(line) for line in (tmp / "run" / "predictions" / "test.jsonl").read_text().splitlines()]
    from egohorizon.prompts import load_prompt

    version = load_prompt("caption").version  # the bundled prompt's (3: the on-screen text line)
    assert rows and all(r["prompt"] == "caption" and r["prompt_version"] == version for r in rows)
    adapter = tmp / "run" / "checkpoints" / "last.adapter"
    assert (adapter / "caption.txt").read_text().startswith(f"# version: {version}\n")
    assert json.loads((adapter / "adapter_config.json").read_text())["target_modules"]


def test_the_vision_tower_learned(trained):
    """caption_demo trains the whole vision tower (modules_to_save): every one of its weights is in the
    checkpoint, and the patch embedding, every block and the merger moved from the untrained model's."""
    tmp, cfg, _ = trained
    from egohorizon.run.setup import build_backbone, build_datamodule, build_model

    state = torch.load(tmp / "run" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    vision = {k: v for k, v in state["state_dict"].items() if ".visual." in k}
    assert vision, "the vision tower is not trained"
    datamodule = build_datamodule(cfg)
    untrained = build_model(cfg, build_backbone(cfg, datamodule), datamodule)
    untrained.configure_model()
    start = untrained.state_dict()
    moved = {k for k, v in vision.items() if not torch.equal(v, start[k])}
    for part in ("patch_embed", "blocks.0.", "blocks.1.", "merger"):
        assert any(part in k for k in moved), f"no weight of the vision tower's {part} moved"


def test_the_trained_captioner_reads_the_images(trained):
    """On a real validation batch: the trained model's logits change when the images are swapped, and
    differ from the untrained model's."""
    tmp, cfg, _ = trained
    from hydra.utils import instantiate

    from egohorizon.run.setup import build_backbone, build_datamodule, build_model

    datamodule = build_datamodule(cfg)
    backbone = build_backbone(cfg, datamodule)
    batch = next(iter(datamodule.val_dataloader()))
    assert batch["pixel_values"].ndim == 2 and batch["image_grid_thw"].shape[1] == 3
    assert (batch["mm_token_type_ids"] == 1).any() and (batch["labels"] != -100).any()

    def logits(module, pixel_values):
        module.configure_model()
        module.eval()
        with torch.no_grad():
            vision = {"pixel_values": pixel_values, "image_grid_thw": batch["image_grid_thw"]}
            return module(batch["input_ids"], batch["attention_mask"], mm_token_type_ids=batch["mm_token_type_ids"],
                          **vision).logits

    untrained = build_model(cfg, backbone, datamodule)
    trained_model = instantiate(cfg.model, backbone=backbone, adapter=str(tmp / "run" / "checkpoints" / "last.adapter"),
                                lora=None, _convert_="all")
    shuffled = batch["pixel_values"].flip(0)  # other images' patches, same shapes
    base = logits(trained_model, batch["pixel_values"])
    assert not torch.allclose(base, logits(trained_model, shuffled), atol=1e-5)
    assert not torch.allclose(base, logits(untrained, batch["pixel_values"]), atol=1e-5)
