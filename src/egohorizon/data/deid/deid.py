"""De-identification: the stage every real frame passes before the shard writer stores it.

Two things are hidden:
- **Faces**, found by MediaPipe's BlazeFace full-range model run offline on CPU
  (``egohorizon.data.deid.faces``) and blurred with a margin around the detected box. On real frames
  it finds the partner's face on 33 of 33 EgoHands face frames and fires on none of 23 face-free Aria
  frames; the OpenCV Haar cascades used before found 3 of 33 (docs/shards.md).
- **Sensitive on-screen text**, found region-first and OCR'd by tesseract, then masked
  (``egohorizon.data.deid.screen_text``); what counts as sensitive is defined once, for screen text and
  speech alike, in ``egohorizon.data.deid.sensitive`` (e-mails, phone numbers, card numbers, street
  addresses, ID numbers, URLs with secrets, and the names the user lists).
- **Sensitive speech**: ``Deidentifier.scrub_words`` replaces the same classes in a recording's
  transcript by ``[kind]`` before the shard writer stores it (``egohorizon.data.deid.speech``).

``Deidentifier(image) -> (image, counts)`` with counts ``{"faces": n, "text_boxes": m}``; the shard
writer adds them up per shard in the index, with ``speech_items`` from ``scrub_words``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import numpy as np

from egohorizon.data.deid.faces import FACE_DETECTOR_VERSION, BlazeFaceDetector
from egohorizon.data.deid.screen_text import (  # noqa: F401  (public names of this module before the move)
    SCREEN_TEXT_VERSION,
    OcrWord,
    ScreenTextMasker,
    fill_boxes,
    parse_tesseract_tsv,
    run_tesseract,
    sensitive_boxes,
)
from egohorizon.data.deid.sensitive import (  # noqa: F401
    DATE_LIKE,
    MIN_PHONE_DIGITS,
    SENSITIVE_PATTERNS,
    SensitiveText,
    luhn_valid,
    sensitive_spans,
)
from egohorizon.data.deid.speech import scrub_words
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

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


class Deidentifier:
    """Blurs faces and masks sensitive text; ``__call__(image) -> (image, counts)``."""

    def __init__(self, blur_faces: bool = True, mask_text: bool = True, tesseract: str = "tesseract",
                 ocr_language: str = "eng", face_detector: BlazeFaceDetector | None = None,
                 names: Sequence[str] = (), scrub_speech: bool = True):
        self.blur_faces = blur_faces
        self.mask_text = mask_text
        self.scrub_speech = scrub_speech
        self.tesseract = tesseract
        self.ocr_language = ocr_language
        self.face_detector = face_detector or (BlazeFaceDetector() if blur_faces else None)
        self.classifier = SensitiveText(names)
        self.text_masker = ScreenTextMasker(names, tesseract=tesseract, language=ocr_language) if mask_text else None

    @property
    def speech_setting(self) -> str:
        """What the shard build settings record about speech: scrubbed or kept, and which names."""
        if not self.scrub_speech:
            return "kept"
        names = sorted({" ".join(n.split()).lower() for n in self.classifier.names})
        digest = hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:16] if names else "none"
        return f"scrubbed (names: {digest})"  # a digest: the build settings must not list the names

    @property
    def detector_setting(self) -> str:
        """Which detectors ran, for the shard build settings: shards de-identified by another detector
        (the Haar cascades before issue 9) are rebuilt, not reused."""
        faces = f"faces: {FACE_DETECTOR_VERSION}" if self.blur_faces else "faces: off"
        text = f"text: {SCREEN_TEXT_VERSION}" if self.mask_text else "text: off"
        return f"{faces}; {text}"

    def scrub_words(self, words):
        """A recording's words with sensitive speech replaced by ``[kind]``, and the number of items
        (``egohorizon.data.deid.speech``); the words as they are when ``scrub_speech`` is off."""
        return scrub_words(words, self.classifier) if self.scrub_speech else (list(words), 0)

    def __call__(self, image: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
        counts = {"faces": 0, "text_boxes": 0}
        if self.blur_faces:
            faces = self.face_detector(image)
            counts["faces"] = len(faces)
            if faces:
                image = blur_boxes(image, faces)
        if self.text_masker is not None:
            image, counts["text_boxes"] = self.text_masker(image)
        return image, counts


DEID_MODES = ("auto", "on", "off", "faces", "text")


def make_deidentifier(mode: str, source: str, names: Sequence[str] = ()) -> Deidentifier | None:
    """``auto``: off for the demo world (rendered, nobody in it), on (faces + text) for real recordings.
    Speech is scrubbed in every mode but ``off``: it costs next to nothing and is never wanted kept."""
    if mode not in DEID_MODES:
        raise ConfigError(f"deid: expected one of {', '.join(DEID_MODES)}, got {mode!r}")
    if mode == "off" or (mode == "auto" and source == "demo"):
        return None
    return Deidentifier(blur_faces=mode in ("auto", "on", "faces"), mask_text=mode in ("auto", "on", "text"),
                        names=names)
