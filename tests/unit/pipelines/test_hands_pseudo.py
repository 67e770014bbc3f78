"""Real-frame training clips from pseudo-labels (``egohorizon hands clips``, issue 14): shard frames and
``hands label`` records -> the clip folder the hands datamodule trains on; slow: Aria shards labelled
by the bundled detector, turned into clips and trained on with ``train.py task=hands``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from toy_backbone import TOY_BACKBONE

from egohorizon.cli import main
from egohorizon.errors import ConfigError
from egohorizon.pipelines.hands.frames import shard_frames

REPO_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO_ROOT))  # datamodules/ lives at the repository root, as train.py sees it


@pytest.fixture(scope="module")
def demo_shards(tmp_path_factory) -> Path:
    """Two demo days, a few 30 s windows of 1 Hz frames (160 px long side)."""
    root = tmp_path_factory.mktemp("pseudo")
    assert main(["shards", "build", "--demo", "--demo-days", "2", "--stride", "1000", "--deid", "off",
                 "--long-side", "160", "--out", str(root / "shards"), "--demo-dir", str(root / "demo")]) == 0
    return root / "shards"


def _labels(shards: Path, path: Path) -> list[dict]:
    """One left box in every third frame of every window (in the shard frames' pixels), a bad line and a
    window the shards do not have."""
    records = []
    for key, _, frames in shard_frames(shards, []):
        for t, image in frames[::3]:
            h, w = image.shape[:2]
            records.append({"clip": key, "frame": round(30 * t), "hand": "left",
                            "box": [0.25 * w, 0.5 * h, 0.5 * w, 0.75 * h], "grid": 30, "score": 0.9,
                            "source": "test"})
    lines = [json.dumps(r) for r in records]
    lines += ['{"clip": "x", "frame": -3, "hand": "left", "box": [1, 2, 3, 4]}', "not json",
              json.dumps({**records[0], "clip": "elsewhere_w00000"})]
    path.write_text("\n".join(lines) + "\n")
    return records


def test_clips_from_pseudo_labels_feed_the_hands_datamodule(demo_shards, tmp_path, capsys):
    from datamodules.hands import HandClipSamples, HandsDataModule
    from egohorizon.backbones.boxes import ResizeMapping
    from egohorizon.formats.hands import parse_hand_text

    labels = _labels(demo_shards, tmp_path / "labels.jsonl")
    out = tmp_path / "clips"
    capsys.readouterr()
    assert main(["hands", "clips", str(demo_shards), "--labels", str(tmp_path / "labels.jsonl"), "--out", str(out),
                 "--size", "320x240", "--val-days", "1", "--test-days", "0"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["skipped_labels"] == 2 and len(result["label_problems"]) == 2
    assert "line" in result["label_problems"][0] and result["unknown_windows"] == ["elsewhere_w00000"]
    assert result["boxes"] == len(labels) and result["clips"]["train"] > 0 and result["clips"]["val"] > 0
    clips = [json.loads(line) for line in (out / "clips.jsonl").read_text().splitlines()]
    # whole (participant, day)s held out; 30 s windows -> five 6 s clips of 6 frames each
    days = {split: {(c["participant"], c["day"]) for c in clips if c["split"] == split} for split in ("train", "val")}
    assert days["train"] and days["val"] and not days["train"] & days["val"]
    assert {len(c["frames"]) for c in clips} == {6} and {c["duration"] for c in clips} == {6.0}
    for clip in clips:
        for file in clip["frames"].values():
            with Image.open(out / file) as image:
                assert image.size == (320, 240)
    boxes = [json.loads(line) for line in (out / "boxes.jsonl").read_text().splitlines()]
    # 160 x 160 -> 320 x 240: a quarter-to-half box scales per axis; frames every third second, grid 30
    assert {tuple(b["box"]) for b in boxes} == {(80.0, 120.0, 160.0, 180.0)}
    assert {b["frame"] for b in boxes} == {0, 90}  # labelled at window seconds 0, 3, 6, ...: clip seconds 0, 3
    assert {b["grid"] for b in boxes} == {30} and (out / "segments.jsonl").read_text() == ""

    data = HandsDataModule(clips_dir=str(out), fps=1.0, mediapipe_baseline=False)
    data.prepare()
    item = data.by_split["train"][0]
    mapping = ResizeMapping((240, 320), (96, 144))
    sample = HandClipSamples([item], data.clips, mapping, None, out)[0]
    assert len(sample["images"]) == 6 and sample["images"][0].shape == (240, 320, 3)
    parsed = parse_hand_text(sample["target"])
    assert parsed.invalid == 0 and parsed.segments == []
    expected = {(round(b["frame"] / 30, 2), b["hand"]) for b in item.boxes}
    assert {(t, hand) for t, hand, _ in parsed.boxes} == expected and expected
    assert {tuple(box) for _, _, box in parsed.boxes} == {tuple(mapping.to_model([80, 120, 160, 180]))}


def test_clips_need_enough_days_and_a_real_labels_file(demo_shards, tmp_path):
    from egohorizon.pipelines.hands.pseudo import build_pseudo_clips

    with pytest.raises(ConfigError, match="no such labels file"):
        build_pseudo_clips(demo_shards, tmp_path / "missing.jsonl", tmp_path / "a")
    (tmp_path / "labels.jsonl").write_text("")
    # three (participant, day)s with frames: holding out three leaves no training day
    with pytest.raises(ConfigError, match="3 days of frames cannot hold out 1 validation and 2 test days"):
        build_pseudo_clips(demo_shards, tmp_path / "labels.jsonl", tmp_path / "b", val_days=1, test_days=2)
    with pytest.raises(ConfigError, match="a held-out day needs a labelled hand"):
        build_pseudo_clips(demo_shards, tmp_path / "labels.jsonl", tmp_path / "b", val_days=1, test_days=0)
    assert main(["hands", "clips", str(demo_shards), "--labels", str(tmp_path / "labels.jsonl"),
                 "--out", str(tmp_path / "c"), "--size", "wide"]) != 0
    # labels of another shard folder: every window unknown, and the message says so with a name of each
    (tmp_path / "other.jsonl").write_text('{"clip": "elsewhere-w0", "frame": 0, "hand": "left", "box": [1, 1, 5, 5]}\n')
    with pytest.raises(ConfigError, match="none of the 1 labelled windows is in .*'elsewhere-w0', shard window"):
        build_pseudo_clips(demo_shards, tmp_path / "other.jsonl", tmp_path / "d", val_days=1, test_days=0)


@pytest.mark.slow
def test_the_hand_vlm_trains_on_detector_labels_of_real_aria_frames(shared_data, tmp_path, capsys):
    pytest.importorskip("projectaria_tools")
    data = shared_data / "projectaria-tools-testdata/data"
    ingested = tmp_path / "ingested"
    # three recordings, three participant-days: one each for training, validation and test
    for args in ([str(data / "gen1/aria_everyday_activities_test_data/recording.vrs"), "--participant", "aea1"],
                 [str(data / "gen1/aria_digital_twin_test_data/video.vrs"), "--participant", "adt", "--day",
                  "2021-01-01", "--time-base", "device"],
                 [str(data / "gen2/aria_gen2_unit_test_sequence_with_bluetooth.vrs"), "--participant", "g2"]):
        assert main(["ingest", "aria", *args, "--rate", "0", "--out", str(ingested / args[2])]) == 0
    assert main(["shards", "build", "--ingested", str(ingested), "--out", str(tmp_path / "shards"),
                 "--deid", "off", "--min-frames", "0"]) == 0
    assert main(["hands", "label", str(tmp_path / "shards"), "--out", str(tmp_path / "labels.jsonl")]) == 0
    capsys.readouterr()
    assert main(["hands", "clips", str(tmp_path / "shards"), "--labels", str(tmp_path / "labels.jsonl"),
                 "--out", str(tmp_path / "clips"), "--clip-seconds", "2", "--val-days", "1", "--test-days", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["boxes"] > 0 and result["skipped_labels"] == 0 and all(result["clips"].values())
    run = tmp_path / "run"
    command = [sys.executable, "train.py", "task=hands", "experiment=hands_demo", "logger=csv", f"paths.run_dir={run}",
               f"data.clips_dir={tmp_path / 'clips'}", "data.fps=1", "trainer.max_epochs=1",
               "trainer.check_val_every_n_epoch=1", "model.generation.max_new_tokens=32",
               *TOY_BACKBONE,
               f"paths.cache_dir={tmp_path / 'cache'}"]
    done = subprocess.run(command, check=False, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = json.loads((run / "metrics.json").read_text())
    val = outputs["metrics"]["val"] if "metrics" in outputs else outputs["val"]
    # boxes only: real frames carry no segment annotation, so the score is the box CHF alone
    assert "val/hands_chf" in val and "val/mediapipe_hands_chf" in val
    assert val["val/hands_score"] == val["val/hands_chf"]
    images = tmp_path / "images"
    images.mkdir()
    Image.fromarray(np.full((90, 160, 3), 120, np.uint8)).save(images / "grey.png")
    assert main(["hands", "detect", str(images), "--out", str(tmp_path / "boxes.jsonl"), "--model", str(run)]) == 0
