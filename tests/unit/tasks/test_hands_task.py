"""The hands task (parse, map back, score next to the baselines), the hands datamodule (frames at a
configured rate, targets in the processor image's pixels) and, slow, ``train.py task=hands``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from toy_backbone import TOY_BACKBONE

from egohorizon.backbones.boxes import ResizeMapping
from egohorizon.errors import ConfigError
from egohorizon.tasks import get_task
from egohorizon.tasks.hands import HandItem

REPO_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO_ROOT))  # datamodules/ lives at the repository root, as train.py sees it


def _item() -> HandItem:
    boxes = [{"frame": f, "hand": "left", "box": [10, 10, 50, 50], "grid": 30} for f in (0, 30, 60)]
    boxes += [{"frame": 30, "hand": "right", "box": [200, 100, 240, 140], "grid": 30}]
    segments = [{"kind": "subtask", "hand": None, "start": 0, "end": 2, "label": "make tea"},
                {"kind": "hand_action", "hand": "left", "start": 0, "end": 2, "label": "hold cup"},
                {"kind": "hand_caption", "hand": "left", "start": 0, "end": 2, "label": "the left hand holds the cup"}]
    return HandItem(id="c1", boxes=boxes, segments=segments, frame_times=[0, 1, 2], original=(240, 320),
                    resized=(96, 144))


# training clips' segments for the training-prior baselines: "wipe the table" is the training days' subtask
PRIOR = [{"clip": "t1", "kind": "subtask", "hand": None, "start": 0, "end": 6, "label": "wipe the table"},
         {"clip": "t1", "kind": "hand_action", "hand": "left", "start": 0, "end": 6, "label": "hold cloth"}]


def _scored(task, item: HandItem):
    """The clip scored with every left box right, the right box hit, subtask and caption right, the action
    wrong, next to one MediaPipe box outside the gold and the training-prior baselines."""
    mapping = ResizeMapping(item.original, item.resized)
    text = "\n".join([f"{t}s left [{','.join(map(str, mapping.to_model([10, 10, 50, 50])))}]" for t in (0, 1, 2)]
                     + ["1s right [90,40,108,56]", "subtask 0-2 make tea", "action left 0-2 take cup",
                        "caption left 0-2 the left hand holds the cup"])
    return task.evaluate([item], {"c1": task.parse([text], item)}, "val",
                         baseline_boxes=[{"clip": "c1", "t": 1.0, "hand": "left", "box": [0, 0, 5, 5]}],
                         prior_segments=PRIOR)


def test_parse_maps_model_pixels_back_to_the_frame():
    task = get_task("hands")
    parsed = task.parse(["0s left [9,8,18,20]\nsubtask 0-2 make tea\nnonsense"], _item())
    # 320 x 240 -> 144 x 96: sx = 0.45, sy = 0.4
    assert parsed["boxes"] == [{"clip": "c1", "t": 0.0, "hand": "left", "box": [20.0, 20.0, 40.0, 50.0]}]
    assert parsed["segments"][0]["label"] == "make tea" and parsed["invalid"] == 1
    with pytest.raises(ValueError, match="frame sizes"):
        task.parse(["x"], None)


def test_evaluate_perfect_empty_and_baselines():
    task = get_task("hands")
    item = _item()
    evaluation = _scored(task, item)
    metrics = evaluation.metrics
    # left: every annotated frame 0, 30, 60 hit; right: frame 30 hit (centre 220, 120); 4 / 4
    assert metrics["val/hands_chf"] == 1.0
    assert metrics["val/hands_subtask_psj"] == 1.0 and metrics["val/hands_caption_psj"] == 1.0
    assert metrics["val/hands_action_psj"] == 0.0  # "take cup" is not the verb of "hold cup"
    assert metrics["val/hands_score"] == pytest.approx(0.75)
    assert metrics["val/mediapipe_hands_chf"] == 0.0  # one box at frame 30, not in the gold box
    assert metrics["val/most_common_whole_hands_subtask_psj"] == 1.0
    # the training days' "wipe the table" is not this clip's subtask; their "hold" verb is its action's
    assert metrics["val/train_prior_whole_hands_subtask_psj"] == 0.0
    assert metrics["val/train_prior_whole_hands_action_psj"] == 1.0
    rows = task.summary_rows(evaluation)
    assert {(r["annotation"], r["predictor"]) for r in rows} >= {("boxes", "model"), ("boxes", "mediapipe"),
                                                                ("subtask", "generic_whole"),
                                                                ("subtask", "train_prior_windows")}
    assert {r["predictor"] for r in rows if r.get("oracle")} == {"most_common_whole"}
    summary = task.format_summary(rows)
    assert "Held-out test days: hands" in summary
    assert all("oracle" in line for line in summary.splitlines() if "most_common_whole" in line)
    with pytest.raises(ValueError, match="scored clips' own"):
        task.evaluate([item], {}, "val", prior_segments=[{**PRIOR[0], "clip": "c1"}])

    empty = task.evaluate([item], {}, "test")
    assert empty.metrics["test/hands_chf"] == 0.0 and empty.report["missing"] == 1
    assert task.prediction_fields(None) is None


def test_compare_rows_hold_the_overall_score_then_each_annotation_type():
    task = get_task("hands")
    item = _item()
    evaluation = _scored(task, item)
    rows = task.compare_rows(evaluation)
    assert rows[0] == {"predictor": "model", "annotation": "all", "n": 1, "score": 0.75, "semantic_f1": None}
    by = {(r["predictor"], r["annotation"]): r for r in rows}
    # the same figures as the hand-checked test above: 4 of 4 annotated boxes, subtask PSJ 1, action PSJ 0
    assert by["model", "boxes"]["score"] == 1.0 and by["model", "boxes"]["n"] == 4
    assert by["mediapipe", "boxes"]["score"] == 0.0
    assert by["model", "subtask"]["score"] == 1.0 and by["model", "hand_action"]["score"] == 0.0
    assert by["oracle-most-common-whole", "subtask"]["score"] == 1.0 and by["train-prior-whole", "subtask"]["score"] == 0
    assert task.item_ids(task.evaluate([item], {}, "test")) == ["c1"]  # listed without any output


def test_frame_times_follow_the_rate():
    from datamodules.hands import frame_times

    assert frame_times(6.0, 1.0) == [0, 1, 2, 3, 4, 5]
    assert frame_times(2.0, 2.0) == [0, 0.5, 1, 1.5]
    assert frame_times(6.0, 0.5) == [0, 2, 4]
    with pytest.raises(ConfigError, match="data.fps"):
        frame_times(6.0, 0)


def test_a_demo_folder_built_with_other_days_is_refused(tmp_path):
    from datamodules.hands import HandsDataModule

    HandsDataModule(demo_dir=str(tmp_path), demo_days=3, demo_clips_per_day=1, mediapipe_baseline=False).prepare()
    more = HandsDataModule(demo_dir=str(tmp_path), demo_days=3, demo_clips_per_day=1, demo_extra_train_days=2,
                           mediapipe_baseline=False)
    with pytest.raises(ConfigError, match="data.demo_dir to another folder"):
        more.prepare()


@pytest.fixture(scope="module")
def datamodule(tmp_path_factory):
    from datamodules.hands import HandsDataModule
    from egohorizon.backbones import TinyBackbone
    from egohorizon.data.demo.hands.clips import build_hand_clips

    folder = tmp_path_factory.mktemp("hands")
    build_hand_clips(folder, days=3, clips_per_day=2, val_days=1, test_days=1)
    data = HandsDataModule(clips_dir=str(folder), fps=2.0, mediapipe_baseline=False)
    data.prepare()
    backbone = TinyBackbone(cache_dir=str(tmp_path_factory.mktemp("tiny")), hidden_size=32, intermediate_size=64,
                            num_layers=1, num_heads=2, num_kv_heads=1, vocab_size=300)
    backbone.prepare(corpus=data.training_corpus)
    data.set_tokenizer(backbone.load_tokenizer())
    data.set_processor(backbone.load_processor())
    return data


def test_gold_targets_score_perfectly_on_segments_and_nearly_on_boxes(datamodule):
    from datamodules.hands import HandClipSamples

    assert {k: len(v) for k, v in datamodule.by_split.items()} == {"train": 2, "val": 2, "test": 2}
    assert datamodule.mapping.original == (240, 320)
    items = list(datamodule.eval_items("val").values())
    samples = HandClipSamples(items, datamodule.clips, datamodule.mapping, None)
    task = get_task("hands")
    predictions = {}
    for i, item in enumerate(items):
        sample = samples[i]
        assert len(sample["images"]) == len(item.frame_times) == 12  # 6 s at 2 frames per second
        assert sample["text"].count("<|image_pad|>") == 12
        assert f"{datamodule.mapping.resized[1]} x {datamodule.mapping.resized[0]} pixels" in sample["text"]
        predictions[item.id] = task.parse([sample["target"]], item)
        assert predictions[item.id]["invalid"] == 0
    options = datamodule.eval_options("val")
    # the training-prior baselines get the training clips' segments, none of the scored clips'
    assert {s["clip"] for s in options["prior_segments"]} == {i.id for i in datamodule.by_split["train"]}
    metrics = task.evaluate(items, predictions, "val", **options).metrics
    assert "val/train_prior_windows_hands_caption_psj" in metrics
    assert metrics["val/hands_subtask_psj"] == 1.0 and metrics["val/hands_action_psj"] == 1.0
    assert metrics["val/hands_caption_psj"] == 1.0
    # boxes written at 2 fps and interpolated to the 10 fps gold, through whole model pixels and back
    assert metrics["val/hands_chf"] > 0.8


def test_a_batch_goes_through_the_collator(datamodule):
    batch = next(iter(datamodule.val_dataloader()))
    assert len(batch["ids"]) == 2 and batch["image_grid_thw"].shape[0] == 24
    assert (batch["labels"] != -100).any()


def test_hands_demo_composes_and_instantiates(tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from egohorizon.run.setup import build_callbacks, build_model

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", ["task=hands", "experiment=hands_demo", f"paths.run_dir={tmp_path}", "logger=csv",
                                "backbone.hidden_size=32", "backbone.intermediate_size=64", "backbone.num_layers=1",
                                "backbone.num_heads=2", "backbone.num_kv_heads=1", "backbone.vocab_size=300"])
    assert cfg.objective == "val/hands_score" and cfg.eval_task == "hands" and cfg.task_name == "hands_demo"
    datamodule = instantiate(cfg.data, _convert_="all")
    assert type(datamodule).__name__ == "HandsDataModule" and datamodule.fps == 1.0
    assert datamodule.demo_extra_train_days == 14 and cfg.trainer.max_epochs == 12
    model = build_model(cfg, instantiate(cfg.backbone, _convert_="all"))
    assert type(model).__name__ == "HandModule" and model.lora_vision
    callbacks = build_callbacks(cfg)
    checkpoint = next(c for c in callbacks if type(c).__name__ == "AdapterCheckpoint")
    assert checkpoint.monitor == "val/hands_score" and checkpoint.mode == "max"
    evaluation = next(c for c in callbacks if type(c).__name__ == "GenerationEvalCallback")
    assert evaluation.task_name == "hands" and evaluation.score_options["judges"]["hand_action"] == "verb"


@pytest.mark.slow
def test_train_py_runs_the_hands_task(tmp_path):
    run = tmp_path / "run"
    command = [sys.executable, "train.py", "task=hands", "experiment=hands_demo", "logger=csv",
               f"paths.run_dir={run}", f"data.demo_dir={tmp_path / 'clips'}", "data.demo_days=3",
               "data.demo_clips_per_day=4", "data.demo_extra_train_days=1", "trainer.max_epochs=1", "trainer.check_val_every_n_epoch=1",
               "model.generation.max_new_tokens=32", "model.generation.num_beams=1",
               *TOY_BACKBONE,
               f"paths.cache_dir={tmp_path / 'cache'}"]
    done = subprocess.run(command, check=False, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = json.loads((run / "metrics.json").read_text())
    val = outputs["metrics"]["val"] if "metrics" in outputs else outputs["val"]
    for key in ("val/hands_score", "val/hands_chf", "val/mediapipe_hands_chf",
                "val/generic_whole_hands_subtask_psj", "val/hands_invalid"):
        assert key in val, sorted(val)
    assert "Held-out test days: hands" in outputs["summary_text"]

    # the trained adapter as `hands detect --model`: boxes (if any) in the image's pixels, scored
    from egohorizon.cli import main

    images = tmp_path / "images"
    images.mkdir()
    Image.fromarray(np.full((90, 160, 3), 120, np.uint8)).save(images / "grey.png")
    assert main(["hands", "detect", str(images), "--out", str(tmp_path / "boxes.jsonl"), "--model", str(run)]) == 0
    for line in (tmp_path / "boxes.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert record["score"] is None and 0 <= record["box"][0] <= record["box"][2] <= 160
