"""De-identification: the stage every real frame passes before the shard writer stores it.

Two things are hidden:
- **Faces**, found by MediaPipe's BlazeFace full-range model run offline on CPU
  (``egohorizon.pipelines.faces``) and blurred with a margin around the detected box. On real frames
  it finds the partner's face on 33 of 33 EgoHands face frames and fires on none of 23 face-free Aria
  frames; the OpenCV Haar cascades used before found 3 of 33 (docs/shards.md).
- **Sensitive on-screen text**: the frame is read by the ``tesseract`` command line (Debian package
  ``tesseract-ocr``) with word boxes (TSV output); each OCR line is matched against the patterns in
  ``SENSITIVE_PATTERNS`` and the boxes of the words in a match are filled with a flat colour.

"Sensitive" here means text that identifies or gives access to a person or an account:
- ``email``: e-mail addresses;
- ``phone``: phone numbers (8+ digits with the usual separators, optional +country code);
- ``url_token``: URLs whose query carries a secret (token, key, sig, auth, session, password, code,
  access_token, api_key);
- ``card``: payment card numbers (13-19 digits, spaces/dashes allowed, Luhn checksum valid);
- ``address``: street addresses (house number, 1-3 capitalised words, a street suffix);
- ``id_number``: US social security numbers (ddd-dd-dddd) and IBANs.
Plain words, prices, dates and times are left alone so the frames stay useful for captioning.

``Deidentifier(image) -> (image, counts)`` with counts ``{"faces": n, "text_boxes": m}``; the shard
writer adds them up per shard in the index.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np

from egohorizon.errors import ConfigError
from egohorizon.pipelines.faces import BlazeFaceDetector

log = logging.getLogger(__name__)

SENSITIVE_PATTERNS: dict[str, re.Pattern] = {
    "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    "phone": re.compile(r"(?<![\w])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){2,3}(?![\w])"),
    "url_token": re.compile(r"(?:https?://|www\.)\S*[?&#](?:token|key|sig|auth|session|password|code|"
                            r"access_token|api_key)=\S+", re.IGNORECASE),
    "card": re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)"),
    "address": re.compile(r"\b\d{1,5}\s+(?:[A-Z][a-z]+\.?\s+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|"
                          r"Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Close|Square)\b\.?"),
    "id_number": re.compile(r"\b\d{3}-\d{2}-\d{4}\b|\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}(?:\s?[A-Z0-9]{1,3})?\b"),
}
MIN_PHONE_DIGITS = 8
# Dates and times have phone-like digit runs; they are not sensitive and are left visible.
DATE_LIKE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")


def luhn_valid(digits: str) -> bool:
    """The payment-card checksum (ISO/IEC 7812); filters out most long numbers that are not cards."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def sensitive_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) character spans of sensitive text in one OCR line."""
    spans = []
    for kind, pattern in SENSITIVE_PATTERNS.items():
        for match in pattern.finditer(text):
            digits = re.sub(r"\D", "", match.group())
            if kind == "card" and not (13 <= len(digits) <= 19 and luhn_valid(digits)):
                continue
            if kind == "phone" and (len(digits) < MIN_PHONE_DIGITS or DATE_LIKE.fullmatch(match.group().strip())):
                continue
            spans.append((match.start(), match.end(), kind))
    return spans


@dataclass
class OcrWord:
    text: str
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive)
    line: tuple[int, int, int, int]  # page, block, paragraph, line numbers


def parse_tesseract_tsv(tsv: str) -> list[OcrWord]:
    """Words (level 5 rows with text) of tesseract's TSV output."""
    words = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("level") != "5" or not (row.get("text") or "").strip():
            continue
        left, top, width, height = (int(row[k]) for k in ("left", "top", "width", "height"))
        line = tuple(int(row[k]) for k in ("page_num", "block_num", "par_num", "line_num"))
        words.append(OcrWord(text=row["text"].strip(), box=(left, top, left + width, top + height), line=line))
    return words


def sensitive_boxes(words: list[OcrWord]) -> list[tuple[tuple[int, int, int, int], str]]:
    """Boxes of the words that take part in a sensitive match on their OCR line."""
    lines: dict[tuple, list[OcrWord]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word)
    boxes: dict[tuple[int, int, int, int], str] = {}  # one entry per word box, first kind found
    for line_words in lines.values():
        offsets, text = [], ""
        for word in line_words:
            offsets.append((len(text), len(text) + len(word.text)))
            text += word.text + " "
        for start, end, kind in sensitive_spans(text):
            for word, (a, b) in zip(line_words, offsets):
                if a < end and b > start:
                    boxes.setdefault(word.box, kind)
    return list(boxes.items())


def run_tesseract(image: np.ndarray, *, command: str = "tesseract", language: str = "eng",
                  timeout_s: float = 60.0) -> list[OcrWord]:
    """OCR words with boxes from the ``tesseract`` CLI (image sent as PNG on stdin)."""
    import cv2

    ok, png = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("cannot encode the frame as PNG for OCR")
    # --psm 11: sparse text, the layout of screens and signs seen in passing.
    result = subprocess.run([command, "stdin", "stdout", "-l", language, "--psm", "11", "tsv"],
                            input=png.tobytes(), capture_output=True, timeout=timeout_s, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"tesseract failed ({result.returncode}): {result.stderr.decode(errors='replace')[-300:]}")
    return parse_tesseract_tsv(result.stdout.decode("utf-8", errors="replace"))


def blur_boxes(image: np.ndarray, boxes, margin: float = 0.25) -> np.ndarray:
    """Strong Gaussian blur over each box grown by ``margin`` of its size on each side.

    BlazeFace's box runs from the brows to the chin and between the cheeks; the margin takes in the
    forehead, hairline and ears, which identify a person too. The kernel is half the blurred region's
    long side, so no facial feature survives at any face size."""
    import cv2

    out = image.copy()
    height, width = image.shape[:2]
    for x0, y0, x1, y1 in boxes:
        grow_x, grow_y = round((x1 - x0) * margin), round((y1 - y0) * margin)
        x0, y0 = max(0, x0 - grow_x), max(0, y0 - grow_y)
        x1, y1 = min(width, x1 + grow_x), min(height, y1 + grow_y)
        if x1 <= x0 or y1 <= y0:
            continue
        kernel = max(3, (max(x1 - x0, y1 - y0) // 2) | 1)  # odd
        out[y0:y1, x0:x1] = cv2.GaussianBlur(out[y0:y1, x0:x1], (kernel, kernel), kernel / 4)
    return out


def fill_boxes(image: np.ndarray, boxes, color=(0, 0, 0), pad: int = 2) -> np.ndarray:
    out = image.copy()
    height, width = image.shape[:2]
    for x0, y0, x1, y1 in boxes:
        out[max(0, y0 - pad):min(height, y1 + pad), max(0, x0 - pad):min(width, x1 + pad)] = color
    return out


class Deidentifier:
    """Blurs faces and masks sensitive text; ``__call__(image) -> (image, counts)``."""

    def __init__(self, blur_faces: bool = True, mask_text: bool = True, tesseract: str = "tesseract",
                 ocr_language: str = "eng", face_detector: BlazeFaceDetector | None = None):
        self.blur_faces = blur_faces
        self.mask_text = mask_text
        self.tesseract = tesseract
        self.ocr_language = ocr_language
        self.face_detector = face_detector or (BlazeFaceDetector() if blur_faces else None)
        if mask_text and shutil.which(tesseract) is None:
            raise ConfigError(f"text masking needs the {tesseract!r} command (Debian: apt-get install "
                              "tesseract-ocr); or turn it off with --deid faces")

    def __call__(self, image: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
        counts = {"faces": 0, "text_boxes": 0}
        if self.blur_faces:
            faces = self.face_detector(image)
            counts["faces"] = len(faces)
            if faces:
                image = blur_boxes(image, faces)
        if self.mask_text:
            boxes = sensitive_boxes(run_tesseract(image, command=self.tesseract, language=self.ocr_language))
            counts["text_boxes"] = len(boxes)
            if boxes:
                image = fill_boxes(image, [box for box, _ in boxes])
        return image, counts


DEID_MODES = ("auto", "on", "off", "faces", "text")


def make_deidentifier(mode: str, source: str) -> Deidentifier | None:
    """``auto``: off for the demo world (rendered, nobody in it), on (faces + text) for real recordings."""
    if mode not in DEID_MODES:
        raise ConfigError(f"deid: expected one of {', '.join(DEID_MODES)}, got {mode!r}")
    if mode == "off" or (mode == "auto" and source == "demo"):
        return None
    return Deidentifier(blur_faces=mode in ("auto", "on", "faces"), mask_text=mode in ("auto", "on", "text"))
