"""Bad inputs of the ``egohorizon hands`` commands end in a message naming the file, line and field,
never in a silently wrong number (issue 22): a gold CSV that lists none of the images (items 5), an
events file or a broken line given as hand labels (item 16), and unreadable images (item 26). The
detector is replaced by a stub: these tests are about the inputs, not MediaPipe."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from egohorizon.cli import main
from egohorizon.pipelines.hands import frames as hands_frames

HEADER = "filename,width,height,class,xmin,ymin,xmax,ymax\n"


@pytest.fixture
def stub_detector(monkeypatch):
    """One right-hand box at the top left of every image."""
    def finder(settings=None):
        return lambda image: [("right", [0.0, 0.0, 10.0, 10.0], 0.9)]

    monkeypatch.setattr(hands_frames, "mediapipe_finder", finder)


def image_folder(tmp_path, names=("frame_0001.jpg", "frame_0002.jpg"), bad=()):
    folder = tmp_path / "images"
    folder.mkdir(parents=True)
    for name in names:
        Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(folder / name)
    for name in bad:
        (folder / name).write_bytes(b"not an image")
    return folder


def detect(tmp_path, folder, *extra):
    return main(["hands", "detect", str(folder), "--out", str(tmp_path / "boxes.jsonl"), *map(str, extra)])


def test_a_gold_csv_listing_none_of_the_images_is_refused_with_both_names(tmp_path, stub_detector, capsys):
    folder = image_folder(tmp_path)
    gold = tmp_path / "boxes.csv"
    gold.write_text(HEADER + "CARDS_COURTYARD_B_T_frame_0011.jpg,32,32,hand,1,1,9,9\n")
    assert detect(tmp_path, folder, "--gold", gold) == 2
    err = capsys.readouterr().err
    assert f"--gold {gold}: none of the 2 images looked up is in it" in err
    assert "'frame_0001.jpg'" in err and "'CARDS_COURTYARD_B_T_frame_0011.jpg'" in err and "--allow-unlisted" in err
    assert not (tmp_path / "boxes.jsonl").exists()  # refused before any detection

    # asked for: scored as images without hands, every box a false positive
    assert detect(tmp_path, folder, "--gold", gold, "--allow-unlisted") == 0
    score = json.loads(capsys.readouterr().out)["score"]
    assert (score["gold_boxes"], score["false_positives"], score["images_not_in_gold"]) == (0, 2, 2)


def test_a_gold_csv_listing_some_of_the_images_is_warned_about_with_the_count(tmp_path, stub_detector, capsys,
                                                                               caplog):
    folder = image_folder(tmp_path)
    gold = tmp_path / "boxes.csv"
    gold.write_text(HEADER + "frame_0001.jpg,32,32,hand,0,0,10,10\n")
    assert detect(tmp_path, folder, "--gold", gold) == 0
    score = json.loads(capsys.readouterr().out)["score"]
    assert (score["hits"], score["false_positives"], score["images_not_in_gold"]) == (1, 1, 1)
    assert "1 of 2 scored images are not in it (e.g. 'frame_0002.jpg'" in caplog.text


def test_a_missing_gold_csv_is_named(tmp_path, stub_detector, capsys):
    assert detect(tmp_path, image_folder(tmp_path), "--gold", tmp_path / "nope.csv") == 2
    assert "nope.csv: no such file" in capsys.readouterr().err


def test_unreadable_images_are_skipped_named_and_exit_1_unless_allowed(tmp_path, stub_detector, capsys):
    bad = [f"broken_{i}.png" for i in range(7)]
    folder = image_folder(tmp_path, bad=bad)
    assert detect(tmp_path, folder) == 1
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert [s["image"] for s in result["skipped"]] == bad and result["boxes"] == 2
    assert "7 of 9 file(s) skipped, not readable as images: broken_0.png, broken_1.png, broken_2.png, " \
           "broken_3.png, broken_4.png and 2 more (exit status 1; --allow-bad accepts them)" in captured.err
    assert detect(tmp_path, folder, "--allow-bad") == 0
    assert "7 of 9 file(s) skipped" in capsys.readouterr().err
    assert detect(tmp_path, image_folder(tmp_path / "good")) == 0


# -- hands clips --labels: the wrong file or a broken line --------------------------------------------


def clips(tmp_path, labels):
    return main(["hands", "clips", str(tmp_path / "no-shards"), "--labels", str(labels), "--out", str(tmp_path / "c")])


def test_an_events_file_given_as_labels_is_named_as_such(tmp_path, capsys):
    labels = tmp_path / "events.jsonl"
    event = {"id": "e1", "participant": "p1", "day": "2025-03-03", "session": "s1", "level": 1,
             "start": 0.0, "end": 1.0, "text": "open the door", "source": "test"}
    labels.write_text(json.dumps(event) + "\n" + '{"id": "e2", "level": 1,\n')
    assert clips(tmp_path, labels) == 2
    err = capsys.readouterr().err
    assert f"{labels}: an events file (Event records, SPEC §5), not hand box labels" in err
    assert "egohorizon hands label" in err and "Traceback" not in err


def test_a_labels_file_without_one_valid_line_names_the_first_bad_line_and_field(tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    good = {"clip": "w1", "frame": 0, "hand": "left", "box": [1, 2, 3, 4], "grid": 30}
    labels.write_text(json.dumps({**good, "hand": "middle"}) + "\n" + "{not json\n")
    assert clips(tmp_path, labels) == 2
    err = capsys.readouterr().err
    assert f"{labels}: no valid hand box label in 2 lines; first problems: {labels}, line 1: field 'hand':" in err
    assert f"{labels}, line 2: invalid JSON" in err


def test_hands_label_names_damaged_shards_and_exits_1_unless_allowed(tmp_path, stub_detector, monkeypatch, capsys):
    """The same rule for frames read from shards: a damaged sample is skipped, its shard named."""
    def label_shards(shards, find, source, problems):
        problems.append({"shard": "p1/2025-03-03/shard-000001.tar", "lost": 2, "reasons": {"bad_jpeg": 2}})
        yield {"clip": "w0", "frame": 0, "hand": "left", "box": [1, 1, 5, 5], "grid": 30, "score": 0.9,
               "source": source}

    monkeypatch.setattr(hands_frames, "label_shards", label_shards)
    args = ["hands", "label", str(tmp_path / "shards"), "--out", str(tmp_path / "labels.jsonl")]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["damaged_shards"][0]["lost"] == 2
    assert ("2 damaged sample(s) skipped in 1 shard(s): p1/2025-03-03/shard-000001.tar (2 lost) "
            "(exit status 1; --allow-bad accepts them)") in captured.err
    assert main([*args, "--allow-bad"]) == 0
