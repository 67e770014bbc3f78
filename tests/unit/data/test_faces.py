"""Face de-identification: BlazeFace decoding (hand-computed), recall and false positives on real
frames, the blur margin, and the ``egohorizon deid`` command."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from egohorizon.cli import main
from egohorizon.data.deid.deid import Deidentifier, blur_boxes
from egohorizon.data.deid.faces import BlazeFaceDetector, decode_boxes, ssd_anchors, weighted_nms
from egohorizon.owned_output import LOCK, MARKER

# The frame sets of scripts/face_recall.py (docs/shards.md): faces/ plus the images/ video whose every
# frame shows the partner's face; the Aria sample frames hold no face.
FACE_VIDEO = "CARDS_LIVINGROOM_B_T"


def read_rgb(path) -> np.ndarray:
    import cv2

    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


@pytest.fixture(scope="module")
def face_frames(shared_data):
    egohands = shared_data / "egohands-frames"
    frames = sorted((egohands / "faces").glob("*.jpg")) + sorted((egohands / "images").glob(f"{FACE_VIDEO}_*.jpg"))
    assert len(frames) == 33
    return frames


@pytest.fixture(scope="module")
def face_free_frames(shared_data):
    frames = sorted((shared_data / "projectaria-tools-testdata" / "derived_frames").glob("*.jpg"))
    assert len(frames) == 23
    return frames


def test_anchor_layout_matches_mediapipe():
    full = ssd_anchors(192, (4,))  # one 48 x 48 grid, one anchor per cell
    assert full.shape == (2304, 2)
    assert np.allclose(full[0], [0.5 / 48, 0.5 / 48]) and np.allclose(full[49], [1.5 / 48, 1.5 / 48])
    short = ssd_anchors(128, (8, 16, 16, 16))  # 16 x 16 x 2, then 8 x 8 x 6 (three layers share a grid)
    assert short.shape == (896, 2)
    assert np.allclose(short[0], short[1]) and np.allclose(short[0], [1 / 32, 1 / 32])
    assert np.allclose(short[512:518], [1 / 16, 1 / 16]) and np.allclose(short[518], [3 / 16, 1 / 16])


def test_box_decoding_by_hand():
    raw = np.zeros((1, 16), np.float32)
    raw[0, :4] = [19.2, -9.6, 48.0, 96.0]  # dx, dy, w, h in input pixels of a 192 px input
    box = decode_boxes(raw, np.array([[0.5, 0.5]], np.float32), 192)
    # centre (0.5 + 0.1, 0.5 - 0.05), half size (0.125, 0.25)
    assert np.allclose(box, [[0.475, 0.2, 0.725, 0.7]])


def test_weighted_nms_by_hand():
    boxes = np.array([[1, 0, 11, 10], [0, 0, 10, 10], [50, 50, 60, 60]], np.float64)
    scores = np.array([0.6, 0.9, 0.7])
    merged = weighted_nms(boxes, scores, iou_threshold=0.3)
    # The first two overlap (IoU 90/110): one box at their 0.9/0.6-weighted mean, with the best score.
    assert len(merged) == 2
    assert np.allclose(merged[0][0], [0.4, 0, 10.4, 10]) and merged[0][1] == pytest.approx(0.9)
    assert np.allclose(merged[1][0], [50, 50, 60, 60]) and merged[1][1] == pytest.approx(0.7)


def test_a_face_on_every_real_face_frame_and_none_on_face_free_frames(face_frames, face_free_frames):
    """Issue 9's bar (docs/shards.md): the Haar cascades used before found 3 of the 33 face frames."""
    deid = Deidentifier(mask_text=False)
    missed = [path.name for path in face_frames if deid(read_rgb(path))[1]["faces"] == 0]
    fired = [path.name for path in face_free_frames if deid(read_rgb(path))[1]["faces"] > 0]
    assert missed == [], f"no face found in {len(missed)} of {len(face_frames)} face frames: {missed}"
    assert fired == [], f"faces reported on face-free frames: {fired}"


def test_face_box_lies_on_the_face_and_is_blurred(face_frames):
    image = read_rgb(face_frames[0])  # faces/..._0096: the partner's face at the top, right of centre
    (box, score), = BlazeFaceDetector().detect(image)
    x0, y0, x1, y1 = box
    assert score >= 0.6 and 600 < (x0 + x1) / 2 < 900 and y1 < 250 and 100 < x1 - x0 < 300
    out, counts = Deidentifier(mask_text=False)(image)
    assert counts["faces"] == 1
    face = (slice(y0, y1), slice(x0, x1))
    assert np.abs(out[face].astype(int) - image[face]).mean() > 10  # the face changed, strongly
    assert np.array_equal(out[400:], image[400:])  # the table and hands did not


def test_blur_covers_the_box_plus_a_quarter_on_each_side():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (300, 300, 3), dtype=np.uint8)
    out = blur_boxes(image, [(100, 100, 200, 200)])
    changed = (out != image).any(axis=2)
    # 25 px (a quarter of the box) of margin on each side: forehead, hairline and ears are covered.
    assert changed[80, 80] and changed[220, 220] and changed[150, 78] and changed[78, 150]
    assert not changed[:74].any() and not changed[:, 226:].any()


def test_deid_command_writes_copies_and_counts(tmp_path, face_frames, face_free_frames, capsys):
    src, out = tmp_path / "frames", tmp_path / "out"
    src.mkdir()
    for path in (face_frames[0], face_frames[20], face_free_frames[3]):
        shutil.copy(path, src / path.name)
    (src / "truncated.jpg").write_bytes(face_frames[1].read_bytes()[:20000])
    (src / "notes.png").write_text("not an image")
    (src / "README.txt").write_text("ignored: not an image suffix")

    assert main(["deid", str(src), "--out", str(out), "--no-text"]) == 1  # 1: some files were skipped
    lines = [json.loads(line) for line in (out / "counts.jsonl").read_text().splitlines()]
    names = sorted(p.name for p in (face_frames[0], face_frames[20], face_free_frames[3]))
    assert [line["image"] for line in lines] == names
    by_name = {line["image"]: line for line in lines}
    assert by_name[face_frames[0].name] == {"image": face_frames[0].name, "faces": 1, "text_boxes": 0}
    assert by_name[face_frames[20].name]["faces"] >= 1 and by_name[face_free_frames[3].name]["faces"] == 0
    # the copies, the counts and the owner marker and lock (issue 36), nothing else
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, "counts.jsonl", MARKER, LOCK])
    # The Aria frame (no face) comes back as it was, up to JPEG re-encoding; the face frame does not.
    aria, aria_out = read_rgb(face_free_frames[3]), read_rgb(out / face_free_frames[3].name)
    assert np.abs(aria.astype(int) - aria_out).mean() < 2
    face, face_out = read_rgb(face_frames[0]), read_rgb(out / face_frames[0].name)
    assert np.abs(face[:190, 650:850].astype(int) - face_out[:190, 650:850]).mean() > 5
    err = capsys.readouterr().err
    assert "skipped" in err and "truncated.jpg" in err and "notes.png" in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed (apt-get install tesseract-ocr)")
def test_deid_command_counts_text_boxes(tmp_path):
    import cv2

    src = tmp_path / "frames"
    src.mkdir()
    screen = np.full((200, 1000, 3), 255, np.uint8)
    cv2.putText(screen, "john.doe@example.com", (20, 110), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.imwrite(str(src / "screen.png"), screen)
    assert main(["deid", str(src), "--out", str(tmp_path / "out"), "--no-faces"]) == 0
    line = json.loads((tmp_path / "out" / "counts.jsonl").read_text())
    assert line["image"] == "screen.png" and line["faces"] == 0 and line["text_boxes"] >= 1
    masked = cv2.imread(str(tmp_path / "out" / "screen.png"))
    assert (masked[80:120, 40:600] == 0).mean() > 0.9  # the address is blacked out


def test_deid_command_refuses_to_overwrite_originals(tmp_path, capsys):
    (tmp_path / "a.png").write_bytes(b"")
    assert main(["deid", str(tmp_path), "--out", str(tmp_path)]) == 2
    # refused by the owned-output rule before anything is read (issue 36): the input folder itself
    assert "is the input" in capsys.readouterr().err and (tmp_path / "a.png").read_bytes() == b""


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed (apt-get install tesseract-ocr)")
def test_deid_command_hides_the_names_the_user_lists(tmp_path):
    import cv2

    src = tmp_path / "frames"
    src.mkdir()
    screen = np.full((200, 1000, 3), 255, np.uint8)
    cv2.putText(screen, "Maria Keller", (20, 110), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.imwrite(str(src / "screen.png"), screen)
    names = tmp_path / "names.txt"
    names.write_text("# people to hide\nMaria Keller\n")
    assert main(["deid", str(src), "--out", str(tmp_path / "plain"), "--no-faces"]) == 0
    assert json.loads((tmp_path / "plain" / "counts.jsonl").read_text())["text_boxes"] == 0  # not listed
    assert main(["deid", str(src), "--out", str(tmp_path / "out"), "--no-faces", "--names", str(names)]) == 0
    assert json.loads((tmp_path / "out" / "counts.jsonl").read_text())["text_boxes"] >= 1
