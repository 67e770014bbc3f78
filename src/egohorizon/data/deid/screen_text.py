"""Sensitive on-screen text: find text regions, OCR only those, mask what the classifier flags.

Region-first (the default, ``method="regions"``):
1. ``find_text_regions``: a morphological stage in OpenCV. Text strokes give dense, strong local
   contrast (morphological gradient), arranged in short runs along a line; long straight edges
   (screen borders, furniture) are removed, horizontal closing joins letters into words, and words
   on one baseline are joined into lines. What is left is a few dozen candidate lines, not the frame.
2. Each line crop is normalised (grey, dark text on light, small text upscaled to a height tesseract
   reads well, a margin) and read by tesseract as one line.
3. Each OCR line is matched by ``egohorizon.data.deid.sensitive.SensitiveText``; the boxes of the
   words in a match are filled black.

Tesseract is called through its C API (``libtesseract.so.5``, part of Debian's ``tesseract-ocr``) with
the model loaded once per process: starting the ``tesseract`` command costs 0.1-0.3 s by itself, as
much as the whole budget of a frame. Where the library cannot be loaded, the crops go to the command as
one multi-page TIFF per frame. ``method="full"`` is the previous behaviour (the command reads the whole
frame, ``--psm 11``), kept as the reference that scripts/bench_screen_text.py compares against.
"""

from __future__ import annotations

import atexit
import csv
import ctypes
import ctypes.util
import io
import logging
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from egohorizon.data.deid.sensitive import SensitiveText
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive)
METHODS = ("regions", "full")


# Recorded in the shard build settings (see FACE_DETECTOR_VERSION in faces.py).
SCREEN_TEXT_VERSION = "region-first tesseract v1"


@dataclass
class OcrWord:
    text: str
    box: Box
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


def sensitive_boxes(words: list[OcrWord], classifier: SensitiveText | None = None) -> list[tuple[Box, str]]:
    """Boxes of the words that take part in a sensitive match on their OCR line."""
    classifier = classifier or SensitiveText()
    lines: dict[tuple, list[OcrWord]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word)
    boxes: dict[Box, str] = {}  # one entry per word box, first kind found
    for line_words in lines.values():
        offsets, text = [], ""
        for word in line_words:
            offsets.append((len(text), len(text) + len(word.text)))
            text += word.text + " "
        for start, end, kind in classifier.spans(text):
            for word, (a, b) in zip(line_words, offsets):
                if a < end and b > start:
                    boxes.setdefault(word.box, kind)
    return list(boxes.items())


def run_tesseract(image: np.ndarray, *, command: str = "tesseract", language: str = "eng",
                  timeout_s: float = 60.0, psm: int = 11, single_thread: bool = False) -> list[OcrWord]:
    """OCR words with boxes from the ``tesseract`` CLI (image sent as PNG on stdin); ``single_thread``
    sets ``OMP_THREAD_LIMIT=1`` for it."""
    import cv2

    code = cv2.COLOR_GRAY2BGR if image.ndim == 2 else cv2.COLOR_RGB2BGR
    ok, png = cv2.imencode(".png", cv2.cvtColor(image, code))
    if not ok:
        raise ValueError("cannot encode the frame as PNG for OCR")
    # --psm 11: sparse text, the layout of screens and signs seen in passing.
    return _run_cli(png.tobytes(), command=command, language=language, timeout_s=timeout_s, psm=psm,
                    single_thread=single_thread)


def _run_cli(data: bytes, *, command: str, language: str, timeout_s: float, psm: int,
             single_thread: bool) -> list[OcrWord]:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"} if single_thread else None
    result = subprocess.run([command, "stdin", "stdout", "-l", language, "--psm", str(psm), "tsv"],
                            input=data, capture_output=True, timeout=timeout_s, check=False, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"tesseract failed ({result.returncode}): {result.stderr.decode(errors='replace')[-300:]}")
    return parse_tesseract_tsv(result.stdout.decode("utf-8", errors="replace"))


def _openmp_loaded() -> bool:
    try:
        return "libgomp" in Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: nothing to tell
        return False


class TesseractLib:
    """Tesseract's C API through ctypes: the model is loaded once, then each crop costs only its reading."""

    _instances: ClassVar[dict[str, TesseractLib | None]] = {}

    def __init__(self, language: str = "eng"):
        path = ctypes.util.find_library("tesseract")
        if path is None:
            raise OSError("libtesseract not found")
        # One OpenMP thread: on one short line tesseract's threads cost far more than they give (10 ms
        # instead of 60 ms of CPU per line here, tesseract-ocr/tesseract#3109). libgomp reads the limit
        # once, when it is loaded, so it is set around loading the library and put back after.
        if _openmp_loaded():
            # torch's wheels bundle a libgomp.so.1 of the same name, which tesseract then shares; it was
            # started without the limit, so tesseract will use every core (~7x the CPU per frame, measured).
            log.warning("OpenMP was loaded before tesseract (by torch?): OCR runs multi-threaded here; "
                        "de-identify in a process without torch (egohorizon shards build) for 1-thread OCR")
        previous = os.environ.get("OMP_THREAD_LIMIT")
        os.environ["OMP_THREAD_LIMIT"] = "1"
        try:
            lib = ctypes.CDLL(path)
        finally:
            if previous is None:
                del os.environ["OMP_THREAD_LIMIT"]
            else:
                os.environ["OMP_THREAD_LIMIT"] = previous
        vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        for name, args, result in (
            ("TessBaseAPICreate", [], vp), ("TessBaseAPIInit3", [vp, cp, cp], i),
            ("TessBaseAPISetPageSegMode", [vp, i], None), ("TessBaseAPISetVariable", [vp, cp, cp], i),
            ("TessBaseAPISetImage", [vp, vp, i, i, i, i], None), ("TessBaseAPISetSourceResolution", [vp, i], None),
            ("TessBaseAPIRecognize", [vp, vp], i), ("TessBaseAPIGetTsvText", [vp, i], vp),
            ("TessDeleteText", [vp], None), ("TessBaseAPIEnd", [vp], None), ("TessBaseAPIDelete", [vp], None),
        ):
            function = getattr(lib, name)
            function.argtypes, function.restype = args, result
        self.lib, self.api = lib, lib.TessBaseAPICreate()
        if lib.TessBaseAPIInit3(self.api, None, language.encode()) != 0:
            lib.TessBaseAPIDelete(self.api)
            raise OSError(f"libtesseract cannot load language {language!r}")
        atexit.register(self.close)  # ends the API cleanly (else tesseract prints LEAK warnings at exit)

    @classmethod
    def shared(cls, language: str = "eng") -> TesseractLib | None:
        """One per process and language; None where the library cannot be loaded."""
        if language not in cls._instances:
            try:
                cls._instances[language] = cls(language)
            except OSError as error:
                log.warning("tesseract's library is not usable (%s); running the tesseract command instead", error)
                cls._instances[language] = None
        return cls._instances[language]

    def read(self, gray: np.ndarray, psm: int, page: int) -> list[OcrWord]:
        gray = np.ascontiguousarray(gray, dtype=np.uint8)
        height, width = gray.shape
        self.lib.TessBaseAPISetPageSegMode(self.api, psm)
        self.lib.TessBaseAPISetImage(self.api, gray.ctypes.data, width, height, 1, width)
        self.lib.TessBaseAPISetSourceResolution(self.api, 300)
        if self.lib.TessBaseAPIRecognize(self.api, None) != 0:
            return []
        pointer = self.lib.TessBaseAPIGetTsvText(self.api, page)
        try:
            return parse_tesseract_tsv(TSV_HEADER + ctypes.string_at(pointer).decode("utf-8", errors="replace"))
        finally:
            self.lib.TessDeleteText(pointer)

    def close(self):
        if self.api:
            self.lib.TessBaseAPIEnd(self.api)
            self.lib.TessBaseAPIDelete(self.api)
            self.api = None


TSV_HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"


@dataclass
class RegionFinder:
    """Candidate text lines of a frame (see the module docstring); sizes in pixels of the frame.

    ``min_height``/``max_height`` bound the height of one line of text; below about 8 px tesseract
    cannot read it anyway. ``contrast`` is the least morphological gradient of a stroke edge."""

    min_height: int = 8
    max_height: int = 120
    contrast: int = 48
    min_aspect: float = 2.0
    max_regions: int = 48

    def __call__(self, image: np.ndarray) -> list[Box]:
        import cv2

        gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
        gradient = cv2.morphologyEx(gray, cv2.MORPH_GRADIENT, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)))
        edges = (gradient >= self.contrast).astype(np.uint8)
        # Long straight edges (screen borders, shelves, door frames) are not text and would join
        # every line near them into one block.
        long_edges = cv2.morphologyEx(edges, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, 2 * self.max_height)))
        long_edges |= cv2.morphologyEx(edges, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (3 * self.max_height, 1)))
        edges &= ~long_edges & 1
        joined = cv2.morphologyEx(edges, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_RECT, (9, 3)))
        _, _, stats, _ = cv2.connectedComponentsWithStats(joined, connectivity=8)
        integral = cv2.integral(edges)
        words = []
        for x, y, w, h, _area in stats[1:]:
            if not (self.min_height <= h <= self.max_height) or w < 4:
                continue
            ink = integral[y + h, x + w] - integral[y, x + w] - integral[y + h, x] + integral[y, x]
            if 0.12 <= ink / (w * h) <= 0.85:  # strokes: neither a faint texture nor a solid blob
                words.append([x, y, x + w, y + h])
        lines = _join_lines(words)
        lines = [b for b in lines if (b[2] - b[0]) >= self.min_aspect * (b[3] - b[1]) and b[2] - b[0] >= 24
                 and _crosses_strokes(edges, b)]
        lines.sort(key=lambda b: (b[2] - b[0]) * (b[3] - b[1]), reverse=True)
        return [tuple(int(v) for v in b) for b in lines[: self.max_regions]]


def _crosses_strokes(edges: np.ndarray, box: list[int]) -> bool:
    """Whether a line through the middle of the box crosses strokes as often as text does: about two
    edge runs per character (one character is at most about one line height wide). A stretch of a
    straight edge or a shadow band is one long run."""
    x0, y0, x1, y1 = box
    middle = edges[y0 + (y1 - y0) * 2 // 5:y0 + (y1 - y0) * 3 // 5 + 1, x0:x1]
    runs = (np.diff(middle.astype(np.int8), axis=1) == 1).sum(axis=1).max(initial=0)
    return runs >= 0.8 * (x1 - x0) / (y1 - y0)


def _join_lines(boxes: list[list[int]]) -> list[list[int]]:
    """Joins boxes that sit on one line (vertical overlap of most of the smaller one, similar heights)
    and are closer than about one line height: words into lines."""
    boxes = sorted(boxes)
    changed = True
    while changed:
        changed, out = False, []
        for box in boxes:
            for other in out:
                h_small, h_big = sorted((box[3] - box[1], other[3] - other[1]))
                overlap = min(box[3], other[3]) - max(box[1], other[1])
                gap = max(box[0], other[0]) - min(box[2], other[2])
                if overlap >= 0.6 * h_small and h_big <= 2.2 * h_small and gap <= 1.2 * h_big:
                    other[:] = [min(box[0], other[0]), min(box[1], other[1]), max(box[2], other[2]),
                                max(box[3], other[3])]
                    changed = True
                    break
            else:
                out.append(box)
        boxes = out
    return boxes


def normalise_crop(gray: np.ndarray, target_height: int = 40, margin: int = 10, max_width: int = 1200
                   ) -> tuple[np.ndarray, float]:
    """The crop as black text on white, upscaled to about ``target_height``, with a white margin; and
    the scale used. Tesseract reads lines of 20-40 px best. The crop is smoothed and binarised here
    (Otsu on the crop alone): tesseract's own binarisation of a small noisy crop misread digits on
    the made frames ("+41 35" as "441-35)") depending on a pixel of padding."""
    import cv2

    # Capped by width too: tesseract's time grows with the line's length.
    scale = min(4.0, max_width / max(1, gray.shape[1]), max(1.0, target_height / max(1, gray.shape[0])))
    gray = cv2.GaussianBlur(gray, (3, 3), 0)
    if scale != 1.0:
        gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
    _, binary = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    if binary.mean() < 127.5:  # the ground is the darker side: light text
        binary = 255 - binary
    return cv2.copyMakeBorder(binary, margin, margin, margin, margin, cv2.BORDER_CONSTANT, value=255), scale


def _to_frame(word: OcrWord, origin: tuple[int, int], scale: float, margin: int, page: int) -> OcrWord:
    x0, y0, x1, y1 = word.box
    ox, oy = origin
    box = (ox + int((x0 - margin) / scale), oy + int((y0 - margin) / scale),
           ox + int(np.ceil((x1 - margin) / scale)), oy + int(np.ceil((y1 - margin) / scale)))
    return OcrWord(text=word.text, box=box, line=(page, *word.line[1:]))


class ScreenTextMasker:
    """``__call__(image) -> (image, masked_boxes)``: hides sensitive on-screen text (module docstring).

    ``names``: the names the user lists (``egohorizon.data.deid.sensitive``); ``method``: ``regions``
    (find text first, OCR only there) or ``full`` (the tesseract command on the whole frame)."""

    MARGIN = 10

    def __init__(self, names: Sequence[str] = (), *, method: str = "regions", tesseract: str = "tesseract",
                 language: str = "eng", finder: RegionFinder | None = None, use_library: bool = True):
        if method not in METHODS:
            raise ConfigError(f"screen text: method: expected one of {', '.join(METHODS)}, got {method!r}")
        self.classifier = SensitiveText(names)
        self.method, self.tesseract, self.language = method, tesseract, language
        self.finder = finder or RegionFinder()
        self.library = TesseractLib.shared(language) if (use_library and method == "regions") else None
        if self.library is None and shutil.which(tesseract) is None:
            raise ConfigError(f"text masking needs the {tesseract!r} command (Debian: apt-get install "
                              "tesseract-ocr); or turn text masking off (shards build --deid faces, "
                              "egohorizon deid --no-text)")

    def words(self, image: np.ndarray) -> list[OcrWord]:
        """OCR words with boxes in the frame's pixels."""
        if self.method == "full":
            return run_tesseract(image, command=self.tesseract, language=self.language)
        import cv2

        gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
        height, width = gray.shape
        crops = []
        for x0, y0, x1, y1 in self.finder(gray):
            pad = max(3, (y1 - y0) // 4)
            x0, y0, x1, y1 = max(0, x0 - pad), max(0, y0 - pad), min(width, x1 + pad), min(height, y1 + pad)
            crop, scale = normalise_crop(gray[y0:y1, x0:x1], margin=self.MARGIN)
            crops.append((crop, scale, (x0, y0)))
        if self.library is not None:
            pages = [self.library.read(crop, psm=7, page=0) for crop, _, _ in crops]
        else:
            pages = self._read_with_command([crop for crop, _, _ in crops])
        return [_to_frame(word, origin, scale, self.MARGIN, number)
                for number, ((_, scale, origin), page) in enumerate(zip(crops, pages), start=1) for word in page]

    def _read_with_command(self, crops: list[np.ndarray]) -> list[list[OcrWord]]:
        """All crops of a frame as the pages of one TIFF, so the command starts once per frame."""
        from PIL import Image

        if not crops:
            return []
        buffer = io.BytesIO()
        images = [Image.fromarray(crop) for crop in crops]
        images[0].save(buffer, format="TIFF", save_all=True, append_images=images[1:])
        words = _run_cli(buffer.getvalue(), command=self.tesseract, language=self.language, timeout_s=60.0, psm=7,
                         single_thread=True)
        pages: list[list[OcrWord]] = [[] for _ in crops]
        for word in words:
            pages[word.line[0] - 1].append(word)
        return pages

    def find(self, image: np.ndarray) -> list[tuple[Box, str]]:
        """(box, kind) of every word box that takes part in a sensitive match."""
        return sensitive_boxes(self.words(image), self.classifier)

    def __call__(self, image: np.ndarray) -> tuple[np.ndarray, int]:
        boxes = self.find(image)
        if boxes:
            image = fill_boxes(image, [box for box, _ in boxes])
        return image, len(boxes)


def fill_boxes(image: np.ndarray, boxes, color=(0, 0, 0), pad: int = 2) -> np.ndarray:
    out = image.copy()
    height, width = image.shape[:2]
    for x0, y0, x1, y1 in boxes:
        out[max(0, y0 - pad):min(height, y1 + pad), max(0, x0 - pad):min(width, x1 + pad)] = color
    return out


def mask_screen_text(image: np.ndarray, names: Sequence[str] = (), *, method: str = "regions"
                     ) -> tuple[np.ndarray, int]:
    """One frame with its sensitive text masked, and the number of masked text boxes (for
    ``egohorizon deid``; build a ``ScreenTextMasker`` once to mask many frames)."""
    return ScreenTextMasker(names, method=method)(image)
