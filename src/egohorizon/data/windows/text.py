"""On-screen text of a window (SPEC §5: a captioner input): a few of its frames read by tesseract at
shard build, kept as unique lines in first-seen order with their time in the window.

- **Which frames**: the first frame of every ``every_s`` stretch of the window (default 10 s: frames
  at about 0, 10 and 20 s of a 30 s window). A screen is looked at for several seconds (the demo
  world's screen actions last 10 s or more, and real ones are similar), so one read per 10 s finds
  it, and three tesseract calls of ~0.15 s (measured on 224-448 px frames) bound the cost of a window
  to under half a second, where reading all 30 frames would cost ~5 s for mostly repeated lines.
- **Which image**: the native frame AFTER de-identification (``build_window`` calls the reader on
  the frame the de-identifier returned), downscaled to at most ``max_side`` px so an Aria frame
  costs what a demo frame does. Every line is then checked again with the sensitive-text classifier
  (``egohorizon.data.deid.sensitive``) and dropped when it flags anything (a masked box can leave a
  readable fragment): sensitive text never reaches a shard, so never a prompt.
- **Noise**: tesseract's sparse mode (``--psm 11``) reads textures as 2-3 letter scraps ("se f",
  "agi"); a line is kept when it has at least ``min_chars`` letters/digits and a word of 3 or more.
- **Repeats**: a line read again in a later frame is kept once; lines compare by their letters and
  digits only, and one that is a prefix of a kept one (or the other way round) counts as the same:
  a screen read twice gives "Document- the sle" and "Document: the slee".
- **Failures** (no tesseract, a timeout, an unreadable image) are counted, never fatal: the frame
  simply contributes no line.

OCR goes through the tesseract helpers of ``egohorizon.data.deid.screen_text``: its C-API wrapper
(``TesseractLib``, the model loaded once per process: 0.04 s of CPU for a 224-px demo frame, measured)
and, where the library cannot be loaded, the ``tesseract`` command (``run_tesseract``: 0.22 s of CPU a
frame, mostly starting the process and loading the model). Both read the whole grey frame in sparse
mode (``--psm 11``). ``SCREEN_TEXT_OCR_VERSION`` goes into the shard build settings, so shards read
with other settings are rebuilt, not mixed.
"""

from __future__ import annotations

import logging
import math
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

SCREEN_TEXT_OCR_VERSION = "tesseract --psm 11 full frame, grey, library or command, v1"

_WORD = re.compile(r"[A-Za-z0-9]{3,}")


@dataclass
class ScreenTextReader:
    """Reads the on-screen text of a window's frames (module docstring)."""

    every_s: float = 10.0
    names: Sequence[str] = ()  # names the sensitive-text classifier also hides (as for de-identification)
    max_side: int = 960
    max_lines: int = 16
    max_line_chars: int = 80
    min_chars: int = 4
    command: str = "tesseract"
    use_library: bool = True  # libtesseract in-process when it loads (6x less CPU than the command)
    timeout_s: float = 30.0
    _classifier: Any = field(init=False, repr=False, default=None)
    _missing_logged: bool = field(init=False, repr=False, default=False)

    def __post_init__(self):
        from egohorizon.data.deid.sensitive import SensitiveText

        if not self.every_s > 0:
            raise ValueError(f"screen text: every_s must be > 0, got {self.every_s}")
        self._classifier = SensitiveText(self.names)

    @property
    def setting(self) -> dict[str, Any]:
        """What the build settings record (a change rebuilds the shards)."""
        return {"ocr": SCREEN_TEXT_OCR_VERSION, "every_s": self.every_s, "max_side": self.max_side,
                "max_lines": self.max_lines, "min_chars": self.min_chars,
                "sensitive_names": len(self._classifier.names)}

    def slot(self, t_in_window: float) -> int:
        """The ``every_s`` stretch a frame falls in; the first frame of each stretch is read."""
        return math.floor(t_in_window / self.every_s + 1e-9)

    def lines(self, image: np.ndarray) -> list[str]:
        """The text lines tesseract reads in one frame (noise left out); raises when OCR fails."""
        import cv2

        from egohorizon.data.deid.screen_text import TesseractLib, run_tesseract

        height, width = image.shape[:2]
        if max(height, width) > self.max_side:
            scale = self.max_side / max(height, width)
            image = cv2.resize(image, (max(1, round(width * scale)), max(1, round(height * scale))),
                               interpolation=cv2.INTER_AREA)
        gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
        library = TesseractLib.shared() if self.use_library else None
        if library is not None:
            words = library.read(gray, psm=11, page=0)
        else:
            words = run_tesseract(gray, command=self.command, timeout_s=self.timeout_s, psm=11, single_thread=True)
        by_line: dict[tuple, list[str]] = {}
        for word in words:
            by_line.setdefault(word.line, []).append(word.text)
        out = []
        for texts in by_line.values():
            line = " ".join(" ".join(texts).split())[: self.max_line_chars]
            if sum(c.isalnum() for c in line) >= self.min_chars and _WORD.search(line):
                out.append(line)
        return out

    def read_window(self, frames: Sequence[tuple[float, np.ndarray]]) -> tuple[list[dict[str, Any]], Counter]:
        """``frames``: (time in the window, de-identified native image) in time order. Returns the unique
        lines in first-seen order as ``{"t": seconds in the window, "text": line}`` and the counts:
        ``frames`` read, ``failed`` reads, ``lines`` kept, ``sensitive_dropped`` lines."""
        counts: Counter = Counter()
        seen: list[str] = []
        found: list[dict[str, Any]] = []
        done: set[int] = set()
        for t, image in frames:
            slot = self.slot(t)
            if slot in done:
                continue
            done.add(slot)
            counts["frames"] += 1
            try:
                lines = self.lines(image)
            except Exception as error:  # noqa: BLE001  (a failed read is counted, never fatal)
                counts["failed"] += 1
                if shutil.which(self.command) is None:
                    if not self._missing_logged:
                        log.warning("screen text: the %r command is missing (Debian: apt-get install "
                                    "tesseract-ocr); windows get no on-screen text", self.command)
                        self._missing_logged = True
                else:
                    log.warning("screen text: OCR of a frame at %.1f s failed: %s", t, error)
                continue
            for line in lines:
                key = "".join(c for c in line.casefold() if c.isalnum())
                if any(key.startswith(old) or old.startswith(key) for old in seen):
                    continue
                seen.append(key)
                if self._classifier.spans(line):
                    counts["sensitive_dropped"] += 1
                    continue
                if len(found) < self.max_lines:
                    found.append({"t": round(float(t), 1), "text": line})
        counts["lines"] = len(found)
        return found, counts
