"""De-identification: what counts as sensitive text, OCR masking with tesseract, face blurring with
BlazeFace (egohorizon.data.deid.faces; real-frame recall in test_faces.py), and the counts in the shard index."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from egohorizon.data.deid.deid import (
    Deidentifier,
    luhn_valid,
    make_deidentifier,
    parse_tesseract_tsv,
    sensitive_boxes,
    sensitive_spans,
)
from egohorizon.data.deid.faces import BlazeFaceDetector

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None,
                                     reason="tesseract not installed (apt-get install tesseract-ocr)")


def kinds(text: str) -> set[str]:
    return {kind for _, _, kind in sensitive_spans(text)}


@pytest.mark.parametrize("text, expected", [
    ("write to jane.doe+work@example.co.uk today", {"email"}),
    ("call +44 20 7946 0958", {"phone"}),
    ("call (415) 555-0132", {"phone"}),
    ("https://bank.example.com/login?session=ab12cd&x=1", {"url_token"}),
    ("card 4111 1111 1111 1111", {"card", "phone"}),
    ("221B Baker Street is closed", set()),  # "221B" is not a house number the pattern accepts
    ("meet at 22 Baker Street", {"address"}),
    ("SSN 078-05-1120", {"id_number", "phone"}),
    ("IBAN GB82 WEST 1234 5698 7654 32", {"id_number", "phone"}),
    ("total 12.99 on 2024-03-05 at 10:30", set()),  # prices, dates, times stay visible
    ("order 1234 5678 9012 3456", {"phone"}),  # 16 digits failing Luhn: not a card (still phone-like)
    ("see https://example.com/docs", set()),
])
def test_sensitive_patterns(text, expected):
    assert kinds(text) == expected


def test_luhn():
    assert luhn_valid("4111111111111111") and luhn_valid("79927398713")
    assert not luhn_valid("4111111111111112")


TSV = """level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext
5\t1\t1\t1\t1\t1\t10\t10\t50\t20\t95\tmail
5\t1\t1\t1\t1\t2\t70\t10\t200\t20\t93\tann@example.org
5\t1\t2\t1\t1\t1\t10\t50\t40\t20\t90\tCall
5\t1\t2\t1\t1\t2\t60\t50\t40\t20\t90\t415
5\t1\t2\t1\t1\t3\t110\t50\t40\t20\t90\t555
5\t1\t2\t1\t1\t4\t160\t50\t50\t20\t90\t0132
5\t1\t3\t1\t1\t1\t10\t90\t40\t20\t90\t415
"""


def test_boxes_of_matched_words_across_a_line():
    boxes = sensitive_boxes(parse_tesseract_tsv(TSV))
    # The e-mail word, and the three words of the phone number; not "mail", "Call" or the lone 415.
    assert boxes == [((70, 10, 270, 30), "email"), ((60, 50, 100, 70), "phone"), ((110, 50, 150, 70), "phone"),
                     ((160, 50, 210, 70), "phone")]


def render_text(lines: list[str]) -> np.ndarray:
    import cv2

    image = np.full((80 * len(lines) + 40, 1000, 3), 255, dtype=np.uint8)
    for i, line in enumerate(lines):
        cv2.putText(image, line, (20, 70 + 80 * i), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (0, 0, 0), 3, cv2.LINE_AA)
    return image


@needs_tesseract
def test_ocr_masks_sensitive_text_only():
    image = render_text(["Hello world", "john.doe@example.com", "Call 415-555-0132"])
    out, counts = Deidentifier(blur_faces=False)(image)
    assert counts == {"faces": 0, "text_boxes": 2}
    # The greeting is untouched; the e-mail line is blacked out where the text was.
    assert np.array_equal(out[20:100], image[20:100])
    assert (out[115:165, 30:500] == 0).all()


def synthetic_face(size: int = 400) -> np.ndarray:
    """A drawn face (skin oval, eyes, brows, nose, mouth) that BlazeFace detects (score 0.87)."""
    import cv2

    image = np.full((size, size, 3), 200, dtype=np.uint8)
    c = (size // 2, size // 2)
    cv2.ellipse(image, c, (80, 105), 0, 0, 360, (205, 170, 150), -1)
    for dx in (-32, 32):
        cv2.ellipse(image, (c[0] + dx, c[1] - 25), (16, 8), 0, 0, 360, (40, 40, 40), -1)
        cv2.line(image, (c[0] + dx - 20, c[1] - 45), (c[0] + dx + 20, c[1] - 45), (60, 60, 60), 5)
    cv2.line(image, (c[0], c[1] - 20), (c[0], c[1] + 20), (175, 140, 120), 6)
    cv2.ellipse(image, (c[0], c[1] + 50), (30, 10), 0, 0, 360, (120, 60, 60), -1)
    return cv2.GaussianBlur(image, (9, 9), 0)


def test_face_is_found_and_blurred():
    image = synthetic_face()
    boxes = BlazeFaceDetector()(image)
    assert len(boxes) >= 1
    x0, y0, x1, y1 = boxes[0]
    assert x0 < 200 < x1 and y0 < 200 < y1
    out, counts = Deidentifier(mask_text=False)(image)
    assert counts["faces"] >= 1
    eyes = (slice(165, 185), slice(150, 250))
    assert out[eyes].std() < image[eyes].std() / 2  # the eyes are smeared
    assert np.array_equal(out[:20, :20], image[:20, :20])  # far from the face nothing changes


def test_blank_frame_is_left_alone():
    image = np.full((120, 160, 3), 90, dtype=np.uint8)
    out, counts = Deidentifier(mask_text=False)(image)
    assert counts["faces"] == 0 and np.array_equal(out, image)


def test_modes():
    assert make_deidentifier("auto", "demo") is None
    assert make_deidentifier("off", "real") is None
    faces_only = make_deidentifier("faces", "real")
    assert faces_only.blur_faces and not faces_only.mask_text
    with pytest.raises(Exception, match="expected one of"):
        make_deidentifier("sometimes", "real")


@needs_tesseract
def test_deid_counts_reach_the_shard_index(tmp_path):
    import functools

    from egohorizon.data.shards.sources import RecordingSource
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import SourceFrame, WindowConfig
    from egohorizon.schema import Recording

    screen = render_text(["pay to", "4111 1111 1111 1111"])
    face = synthetic_face()

    def load(k):
        return screen if k % 2 == 0 else np.pad(face, ((0, 0), (0, 600), (0, 0)), constant_values=200)[:, :1000]

    frames = [SourceFrame(t=100.0 + k, load=functools.partial(load, k)) for k in range(4)]
    recording = Recording(id="r", participant="p", day="2024-01-01", session="s", start=100.0, end=104.0)
    source = RecordingSource(recording=recording, frames=frames, words=[], kind="ingested")
    index = build_shards([source], tmp_path / "shards", config=WindowConfig(long_side=64, crop_size=16))
    assert index.build["deid"] == "on"  # real recordings: on by default
    deid = index.shards[0]["deid"]
    assert deid["frames"] == 4 and deid["text_boxes"] >= 2 and deid["faces"] >= 2
    assert index.totals()["deid"] == deid


def test_deid_command_names_unreadable_files_and_exits_1_unless_allowed(tmp_path, monkeypatch, capsys):
    """One rule for every command that reads images (issue 22, item 26; hands detect too,
    tests/unit/pipelines/test_hands_inputs.py): skipped, counted, the first five named, exit 1 unless --allow-bad."""
    from PIL import Image

    import egohorizon.data.deid.deid as deid_module
    from egohorizon.cli import main

    class Unchanged:  # no detector: the rule is about reading the files
        def __init__(self, **kwargs):
            pass

        def __call__(self, image):
            return image, {"faces": 0, "text_boxes": 0}

    monkeypatch.setattr(deid_module, "Deidentifier", Unchanged)
    src = tmp_path / "frames"
    src.mkdir()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(src / "good.png")
    for i in range(6):
        (src / f"bad_{i}.jpg").write_bytes(b"not a jpeg")
    assert main(["deid", str(src), "--out", str(tmp_path / "out"), "--no-text"]) == 1
    err = capsys.readouterr().err
    assert ("6 of 7 file(s) skipped, not readable as images: bad_0.jpg, bad_1.jpg, bad_2.jpg, bad_3.jpg, "
            "bad_4.jpg and 1 more (exit status 1; --allow-bad accepts them)") in err
    assert main(["deid", str(src), "--out", str(tmp_path / "out2"), "--no-text", "--allow-bad"]) == 0
    assert "6 of 7 file(s) skipped" in capsys.readouterr().err
    assert (tmp_path / "out2" / "counts.jsonl").read_text().count("\n") == 1
