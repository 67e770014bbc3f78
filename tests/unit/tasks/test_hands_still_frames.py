"""The hand annotator on real still frames (issue 40, item 2): the hand-agnostic ``hand [x1,y1,x2,y2]``
item, its score and box prior by hand-computed values, flips and crops with the boxes moved with them (box
arithmetic checked by hand, and the pixels checked to land inside the moved box), the EgoHands frames split
by video, a corrupt frame skipped and counted, and, slow, ``experiment=hands_effnet_smollm2`` end to end
on a few real frames with ``hands detect --model``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from egohorizon.errors import ConfigError
from egohorizon.formats.hands import parse_hand_text, render_hand_text
from egohorizon.metrics.hand_agnostic import (
    bootstrap_difference,
    bootstrap_fraction,
    frame_hits,
    half_prior_boxes,
    pooled_fraction,
    prior_predictions,
)
from egohorizon.tasks import get_task
from egohorizon.tasks.hands import HandItem

REPO_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO_ROOT))  # datamodules/ lives at the repository root, as train.py sees it

from egohorizon.data.frame_augment import FlipCrop, draw_flip_crop

# -- the text item -------------------------------------------------------------------------------------

def test_hand_items_render_left_to_right_and_parse_back():
    text = render_hand_text([(0, "hand", [700, 10, 800, 90]), (0, "hand", [5, 20, 60, 80]),
                             (0, "hand", [300, 40, 400, 99])], [])
    assert text == "0s hand [5,20,60,80] hand [300,40,400,99] hand [700,10,800,90]"
    parse = parse_hand_text(text + "\n0s hand [9,9,1,1] hand [1,2,3,4] extra")
    assert [box for _, hand, box in parse.boxes if hand == "hand"] == [
        [5, 20, 60, 80], [300, 40, 400, 99], [700, 10, 800, 90], [1, 2, 3, 4]]
    assert parse.invalid == 2  # the swapped corners, and the stray word after the items


# -- the score -----------------------------------------------------------------------------------------

def test_hit_fraction_by_hand():
    gold = {"a": [[0, 0, 10, 10], [20, 0, 30, 10]], "b": [[0, 0, 10, 10]]}
    # a: one hit (centroid (5, 5)), one box in no gold box; b: a hit and a second box on the same gold box
    rows = frame_hits(gold, {"a": [[0, 0, 10, 10], [50, 50, 60, 60]], "b": [[2, 2, 8, 8], [0, 0, 10, 10]],
                             "unlisted": [[0, 0, 1, 1]]})
    assert [(r["frame"], r["hits"], r["false_positives"]) for r in rows] == [("a", 1, 1), ("b", 1, 0)]
    pooled = pooled_fraction(rows)
    assert pooled["chf"] == pytest.approx(2 / (3 + 1)) and pooled["predicted"] == 4 and pooled["n_frames"] == 2
    low, high = bootstrap_fraction(rows, n_boot=200)
    assert 0 <= low <= 0.5 <= high <= 1
    assert bootstrap_difference(rows, rows, n_boot=50) == (0.0, 0.0)
    with pytest.raises(ValueError, match="different frames"):
        bootstrap_difference(rows, rows[:1])


def test_the_box_prior_is_each_halfs_mean_box():
    size = (100, 200)  # height, width
    relative = half_prior_boxes([([0, 50, 40, 100], size), ([20, 60, 60, 100], size), ([120, 40, 200, 80], size)])
    assert np.ravel(relative).tolist() == pytest.approx([0.05, 0.55, 0.25, 1.0, 0.6, 0.4, 1.0, 0.8])
    assert np.ravel(prior_predictions(relative, (50, 100))).tolist() == pytest.approx([5, 27.5, 25, 50, 60, 20, 100, 40])


def test_the_task_scores_still_frames_hand_agnostically():
    task = get_task("hands")
    items = [HandItem(id=f"f{i}", boxes=[{"clip": f"f{i}", "frame": 0, "hand": "hand", "box": [0, 0, 100, 100]}],
                      frame_times=[0.0], original=(200, 200), resized=(100, 100), agnostic=True) for i in (1, 2)]
    # model pixels are half the frame's: [10,10,40,40] -> [20,20,80,80], centroid (50, 50) inside the gold box
    predictions = {"f1": task.parse(["0s hand [10,10,40,40] left [90,90,99,99]"], items[0]),
                   "f2": task.parse(["nothing"], items[1])}
    prior = [{"clip": "t", "hand": "hand", "box": [0, 0, 100, 100], "size": [200, 200]}]
    evaluation = task.evaluate(items, predictions, "test", prior_boxes=prior,
                               baseline_boxes=[{"clip": "f2", "t": 0, "hand": "left", "box": [10, 10, 20, 20]}])
    boxes = evaluation.report["boxes"]
    assert (boxes["hits"], boxes["annotated"], boxes["false_positive_frames"]) == (1, 2, 1)
    assert evaluation.metrics["test/hands_chf"] == pytest.approx(1 / 3) == evaluation.metrics["test/hands_score"]
    assert evaluation.report["invalid"] == 1 and [r["hits"] for r in boxes["per_frame"]] == [1, 0]
    assert evaluation.baselines["boxes"]["train_prior_box"]["chf"] == 1.0  # the prior box is the gold box
    assert evaluation.baselines["boxes"]["mediapipe"]["hits"] == 1
    with pytest.raises(ValueError, match="scored frames' own boxes"):
        task.evaluate(items, predictions, "test", prior_boxes=[{**prior[0], "clip": "f1"}])


# -- augmentation ---------------------------------------------------------------------------------------

def test_flip_and_crop_move_the_boxes_by_hand():
    change = FlipCrop(flip=False, crop=(20, 10, 180, 90), size=(100, 200))  # 160 x 80 -> 200 x 100: x 1.25
    assert change.box([40, 30, 60, 50]) == pytest.approx([25, 25, 50, 50])
    assert change.box([0, 0, 40, 40]) is None  # 20 x 30 of 40 x 40 left inside: 37.5 % < 40 %
    assert change.box([10, 20, 40, 40]) == pytest.approx([0, 12.5, 25, 37.5])  # 2/3 inside: cut to the crop
    flipped = FlipCrop(flip=True, crop=(20, 10, 180, 90), size=(100, 200))
    assert flipped.box([40, 30, 60, 50]) == pytest.approx([150, 25, 175, 50])
    assert (flipped.hand("left"), flipped.hand("hand"), change.hand("left")) == ("right", "hand", "left")


@pytest.mark.parametrize("seed", range(4))
def test_the_moved_box_holds_the_moved_pixels(seed):
    size = (120, 200)
    image = np.zeros((*size, 3), np.uint8)
    image[40:80, 120:160] = 255  # the "hand"
    change = draw_flip_crop(np.random.default_rng(seed), size, min_scale=0.7)
    box = change.box([120, 40, 160, 80])
    out = change.image(image)
    assert out.shape == image.shape and box is not None
    ys, xs = np.nonzero(out[..., 0] > 127)
    # the bright pixels' extent is the moved box, within a pixel of resampling
    assert [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1] == pytest.approx(box, abs=1.5)


# -- the EgoHands frames as data ---------------------------------------------------------------------------

def _frames_folder(shared_data, tmp_path, per_video: int = 2) -> Path:
    """A few real frames of each video, with their boxes.csv rows."""
    source = shared_data / "egohands-frames"
    rows = (source / "boxes.csv").read_text().splitlines()
    names = sorted({line.split(",")[0] for line in rows[1:]})
    chosen = []
    for video in sorted({n.split("_frame_")[0] for n in names}):
        chosen += [n for n in names if n.startswith(video)][:per_video]
    folder = tmp_path / "frames"
    (folder / "images").mkdir(parents=True)
    for name in chosen:
        shutil.copy(source / "images" / name, folder / "images" / name)
    (folder / "boxes.csv").write_text("\n".join([rows[0], *[r for r in rows[1:] if r.split(",")[0] in chosen]]) + "\n")
    return folder


def _datamodule(folder, **options):
    from datamodules.hands import HandsDataModule

    return HandsDataModule(frames_dir=str(folder), prompt="hands_still", mediapipe_baseline=False, **options)


def test_frames_split_by_video_and_fractions_nest(shared_data, tmp_path):
    folder = _frames_folder(shared_data, tmp_path, per_video=4)
    dm = _datamodule(folder, test_video="CARDS_OFFICE_S_B", val_video="CHESS_COURTYARD_B_T")
    dm.prepare()
    videos = {name: {dm.clips[i.id]["participant"] for i in items} for name, items in dm.by_split.items()}
    assert videos == {"train": {"CARDS_LIVINGROOM_B_T", "PUZZLE_LIVINGROOM_T_B"}, "val": {"CHESS_COURTYARD_B_T"},
                      "test": {"CARDS_OFFICE_S_B"}}
    item = dm.by_split["test"][0]
    assert item.agnostic and item.frame_times == [0.0] and item.original == (720, 1280)
    assert {b["hand"] for b in item.boxes} == {"hand"}
    assert dm.day_split().days["CARDS_OFFICE_S_B"] == {"CARDS_OFFICE_S_B": "test"}
    full = {i.id for i in dm.by_split["train"]}
    quarter = _datamodule(folder, test_video="CARDS_OFFICE_S_B", val_video="CHESS_COURTYARD_B_T",
                          train_fraction=0.25)
    half = _datamodule(folder, test_video="CARDS_OFFICE_S_B", val_video="CHESS_COURTYARD_B_T", train_fraction=0.5)
    quarter.prepare(), half.prepare()
    small, middle = {i.id for i in quarter.by_split["train"]}, {i.id for i in half.by_split["train"]}
    assert (len(small), len(middle), len(full)) == (2, 4, 8) and small < middle < full
    # every frame trains when no video is held out for testing; the validation video is then trained on too
    everything = _datamodule(folder, val_video="CHESS_COURTYARD_B_T")
    everything.prepare()
    assert len(everything.by_split["train"]) == 16 and not everything.by_split["test"]
    assert everything.eval_options("val")["prior_boxes"]  # the prior leaves out the validation frames' boxes
    with pytest.raises(ConfigError, match="not one of the frames' videos"):
        _datamodule(folder, test_video="KITCHEN", val_video="CHESS_COURTYARD_B_T").prepare()


def test_missing_frames_name_where_they_come_from(tmp_path):
    with pytest.raises(ConfigError, match="jake25fuller/HandDetection.*../shared/data"):
        _datamodule(tmp_path / "nowhere", val_video="X").prepare()


def test_the_frames_name_is_found_in_shared_data_beside_a_fresh_checkout(tmp_path, monkeypatch):
    """The experiment's `data.frames_dir: egohands-frames` (no path typed): looked for in ../shared/data beside
    the checkout; absent, the error names each place looked in and where the frames come from."""
    from egohorizon.pipelines.hands.egohands import find_frames

    checkout = tmp_path / "egohorizon"
    for folder in ("conf", "models", "datamodules"):
        (checkout / folder).mkdir(parents=True)
    monkeypatch.setenv("EGOHORIZON_CONF", str(checkout / "conf"))
    for name in ("EGOHORIZON_DATA", "EGOHORIZON_SHARED_DATA"):
        monkeypatch.delenv(name, raising=False)
    shared = tmp_path / "shared" / "data" / "egohands-frames"
    with pytest.raises(ConfigError) as error:
        find_frames("egohands-frames")
    assert f"../shared/data = {shared}" in str(error.value)
    assert "jake25fuller/HandDetection" in str(error.value)
    (shared / "images").mkdir(parents=True)
    (shared / "boxes.csv").write_text("filename,width,height,class,xmin,ymin,xmax,ymax\n")
    assert find_frames("egohands-frames") == shared


def test_a_corrupt_frame_is_skipped_and_counted(shared_data, tmp_path):
    from egohorizon.backbones import TinyBackbone

    folder = _frames_folder(shared_data, tmp_path)
    broken = min((folder / "images").iterdir())
    broken.write_bytes(b"not a jpeg")
    dm = _datamodule(folder, test_video="CARDS_OFFICE_S_B", val_video="CHESS_COURTYARD_B_T", batch_size=4,
                     augment={"min_scale": 0.8})
    backbone = TinyBackbone(cache_dir=str(tmp_path / "tiny"), hidden_size=32, intermediate_size=64, num_layers=1,
                            num_heads=2, num_kv_heads=1, vocab_size=300)
    backbone.prepare(corpus=dm.training_corpus)
    dm.set_tokenizer(backbone.load_tokenizer())
    dm.set_processor(backbone.load_processor())
    batch = next(iter(dm.train_dataloader()))
    assert len(batch["ids"]) == 3 and batch["skipped"] == 1


def test_the_experiment_composes_and_finds_the_frames_with_no_path_typed(shared_data, tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from egohorizon.run.resolvers import register_resolvers

    register_resolvers()  # as train.py does before Hydra composes (${task_objective:}); alone, no other test has

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", ["experiment=hands_effnet_smollm2", f"paths.run_dir={tmp_path}", "logger=csv"])
    assert cfg.backbone._target_.endswith("EffnetSmolLM2Backbone") and cfg.backbone.image_size == 160
    assert cfg.objective == "val/hands_score" and not cfg.test_after_fit
    datamodule = instantiate(cfg.data, _convert_="all")
    datamodule.prepare()
    assert {k: len(v) for k, v in datamodule.by_split.items()} == {"train": 100, "val": 24, "test": 0}
    assert datamodule._frames_root().resolve() == (shared_data / "egohands-frames").resolve()


# -- end to end (slow) ---------------------------------------------------------------------------------------

@pytest.mark.slow  # the composite (224 px: the folder the backbone tests build) trains 2 steps, tests, detects 3 frames
def test_experiment_trains_tests_and_detects_on_real_frames(shared_data, smollm2_backbone, tmp_path):
    folder = _frames_folder(shared_data, tmp_path, per_video=1)
    run = tmp_path / "run"
    command = [sys.executable, "train.py", "experiment=hands_effnet_smollm2", "logger=csv", f"paths.run_dir={run}",
               f"data.frames_dir={folder}", "data.test_video=CARDS_OFFICE_S_B", "data.val_video=CHESS_COURTYARD_B_T",
               "test_after_fit=true", "data.mediapipe_baseline=false", "trainer.max_steps=2",
               "trainer.val_check_interval=1", "data.batch_size=2", "model.generation.max_new_tokens=24",
               "backbone.image_size=224", f"backbone.cache_dir={Path(smollm2_backbone.path).parent}",
               f"backbone.smollm2.cache_dir={Path(smollm2_backbone.path).parent}"]
    # The timeout only guards against a hang: ~50 s on idle cores, over 400 s on 2 loaded ones.
    done = subprocess.run(command, check=False, cwd=REPO_ROOT, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((run / "reports" / "test.json").read_text())
    assert [r["frame"] for r in report["boxes"]["per_frame"]] == [p.stem for p in (folder / "images").glob("CARDS_O*")]
    assert report["boxes"]["annotated"] == sum(r["gold"] for r in report["boxes"]["per_frame"]) > 0
    adapter = next((run / "checkpoints").glob("*.adapter"))
    meta = json.loads((adapter / "egohorizon_adapter.json").read_text())
    assert meta["data"]["still_clip"] == {"frames": 1, "seconds": 1} and meta["prompt"]["name"] == "hands_still"

    from egohorizon.cli import main

    out = tmp_path / "boxes.jsonl"
    assert main(["hands", "detect", str(folder / "images"), "--out", str(out), "--model", str(run)]) == 0
    for line in out.read_text().splitlines():
        record = json.loads(line)
        assert record["score"] is None and 0 <= record["box"][0] <= record["box"][2] <= 1280


def test_the_target_lists_every_hand_of_a_frame():
    from datamodules.hands import target_boxes
    from egohorizon.backbones.boxes import ResizeMapping

    item = HandItem(id="f", boxes=[{"frame": 0, "hand": "hand", "box": [600, 20, 800, 200]},
                                   {"frame": 0, "hand": "hand", "box": [0, 100, 200, 300]},
                                   {"frame": 0, "hand": "hand", "box": [300, 100, 500, 300]}],
                    frame_times=[0.0], original=(720, 1280))
    mapping = ResizeMapping((720, 1280), (160, 160), letterbox=True)  # 1280 -> 160: x 1/8, 35 px bar above; halves round to even
    text = render_hand_text(target_boxes(item, mapping), [])
    assert text == "0s hand [0,48,25,72] hand [38,48,62,72] hand [75,38,100,60]"
