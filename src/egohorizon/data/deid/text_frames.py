"""Frames with known sensitive text, to measure screen-text masking (scripts/bench_screen_text.py, tests).

A frame is a real background (e.g. an Aria RGB frame) with a few "screens": flat panels, light or
dark, holding lines of text at a random size and place. Some lines are sensitive (an e-mail, a phone
number, a Luhn-valid card number, a street address, a listed name), the others are distractors that
must stay visible (prices, dates, times, words, order numbers). Each line's ink is kept as a mask so
recall can ask "is this item's ink hidden?", independent of how a masker draws its boxes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NAMES = ("Maria Keller", "Tobias Brandt", "Aiko Tanaka", "Samuel Okafor")
FIRST = ("jane", "tom", "li", "sara", "omar", "eva", "noah", "mia")
LAST = ("doe", "smith", "wong", "meier", "haddad", "novak", "silva")
DOMAINS = ("example.com", "mail.example.org", "uni-bern.example.ch", "corp.example.co.uk")
STREETS = ("Baker Street", "Elm Avenue", "Mill Road", "Harbour Lane", "Oak Drive", "Station Road")
DISTRACTORS = ("Total 12.99", "Meeting at 10:30", "2024-03-05", "Chapter 3 Results", "Battery 85%",
               "Order 4471", "Settings", "Add to cart", "Mon 14 Oct", "Next stop: Central", "Volume",
               "Price 249.00", "Search", "Wednesday 09:15", "Page 12 of 40", "Download complete")
FONTS = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf")
FONT_DIRS = ("/usr/share/fonts/truetype/dejavu",)


@dataclass
class TextItem:
    text: str
    kind: str  # a sensitive kind (egohorizon.data.deid.sensitive.KINDS) or "distractor"
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 of the ink, exclusive
    ink: np.ndarray  # bool mask of the ink inside ``box``

    @property
    def sensitive(self) -> bool:
        return self.kind != "distractor"


def luhn_complete(digits: str) -> str:
    """``digits`` plus the check digit that makes the whole number Luhn-valid."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 0:  # these positions are doubled once the check digit is appended
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return digits + str((10 - total % 10) % 10)


def sensitive_item(kind: str, rng: random.Random) -> str:
    if kind == "email":
        return f"{rng.choice(FIRST)}.{rng.choice(LAST)}{rng.randint(1, 99)}@{rng.choice(DOMAINS)}"
    if kind == "phone":
        swiss = f"+41 {rng.randint(20, 79)} {rng.randint(100, 999)} {rng.randint(10, 99)} {rng.randint(10, 99)}"
        us = f"({rng.randint(200, 989)}) 555-{rng.randint(1000, 9999)}"
        return rng.choice((swiss, us, f"0{rng.randint(20, 79)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}"))
    if kind == "card":
        number = luhn_complete(rng.choice("45") + "".join(str(rng.randint(0, 9)) for _ in range(14)))
        return " ".join(number[i:i + 4] for i in range(0, 16, 4))
    if kind == "address":
        return f"{rng.randint(1, 999)} {rng.choice(STREETS)}"
    if kind == "name":
        return rng.choice(NAMES)
    raise ValueError(f"unknown sensitive kind {kind!r}")


def _font(size: int, rng: random.Random):
    from PIL import ImageFont

    names = list(FONTS)
    rng.shuffle(names)
    for directory in FONT_DIRS:
        for name in names:
            path = Path(directory) / name
            if path.is_file():
                return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size=size)  # Pillow's bundled font, where DejaVu is not installed


def _label(kind: str, rng: random.Random) -> str:
    """Sometimes a label before the item, as on a screen ("Email: ..."): drawn, not part of the item."""
    labels = {"email": "Email:", "phone": "Tel", "card": "Card", "address": "Ship to", "name": "From:"}
    return labels[kind] if rng.random() < 0.4 else ""


def make_text_frame(background: np.ndarray, rng: random.Random, *, panels: int = 2, lines: int = 4,
                    sensitive_share: float = 0.5, sizes: tuple[int, int] = (16, 44)
                    ) -> tuple[np.ndarray, list[TextItem]]:
    """``background`` (RGB uint8) with ``panels`` text panels drawn on it; the frame and its text items."""
    from PIL import Image, ImageDraw

    frame = Image.fromarray(background.copy())
    height, width = background.shape[:2]
    items: list[TextItem] = []
    kinds = ("email", "phone", "card", "address", "name")
    occupied: list[tuple[int, int, int, int]] = []
    for _ in range(panels):
        size = rng.randint(*sizes)
        font = _font(size, rng)
        texts = []
        for _ in range(lines):
            if rng.random() < sensitive_share:
                kind = rng.choice(kinds)
                texts.append((kind, _label(kind, rng), sensitive_item(kind, rng)))
            else:
                texts.append(("distractor", "", rng.choice(DISTRACTORS)))
        measure = ImageDraw.Draw(frame)
        boxes = [measure.textbbox((0, 0), f"{label} {text}".strip(), font=font) for _, label, text in texts]
        line_h = int(size * 1.6)
        panel_w = max(b[2] for b in boxes) + 2 * size
        panel_h = line_h * len(texts) + size
        if panel_w >= width or panel_h >= height:
            continue
        for _attempt in range(20):  # panels do not overlap, so every item stays readable
            x, y = rng.randint(0, width - panel_w), rng.randint(0, height - panel_h)
            if all(x + panel_w <= a or b <= x or y + panel_h <= c or d <= y for a, c, b, d in occupied):
                break
        else:
            continue
        occupied.append((x, y, x + panel_w, y + panel_h))
        dark = rng.random() < 0.4
        shade = rng.randint(15, 60) if dark else rng.randint(215, 250)
        panel = tuple(min(255, max(0, shade + rng.randint(-12, 12))) for _ in range(3))
        ink = rng.randint(215, 250) if dark else rng.randint(10, 60)
        draw = ImageDraw.Draw(frame)
        draw.rectangle((x, y, x + panel_w, y + panel_h), fill=panel)
        for number, (kind, label, text) in enumerate(texts):
            origin = (x + size, y + size // 2 + number * line_h)
            if label:
                draw.text(origin, label, font=font, fill=(ink, ink, ink))
                origin = (origin[0] + round(draw.textlength(label + " ", font=font)), origin[1])
            mask = Image.new("L", frame.size, 0)
            ImageDraw.Draw(mask).text(origin, text, font=font, fill=255)
            draw.text(origin, text, font=font, fill=(ink, ink, ink))
            m = np.asarray(mask) > 127
            ys, xs = np.nonzero(m)
            if len(xs) == 0:
                continue
            box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
            items.append(TextItem(text=text, kind=kind, box=box, ink=m[box[1]:box[3], box[0]:box[2]]))
    image = np.asarray(frame)
    # A camera's look: slight blur and sensor noise over the whole frame.
    import cv2

    image = cv2.GaussianBlur(image, (3, 3), 0.6)
    noise = np.random.default_rng(rng.randint(0, 2**31)).normal(0, 3, image.shape)
    return np.clip(image + noise, 0, 255).astype(np.uint8), items


def ink_hidden(item: TextItem, boxes, *, share: float = 0.9) -> bool:
    """Whether at least ``share`` of the item's ink pixels lie inside the masked ``boxes``."""
    x0, y0, x1, y1 = item.box
    covered = np.zeros(item.ink.shape, dtype=bool)
    for bx0, by0, bx1, by1 in boxes:
        ax0, ay0, ax1, ay1 = max(bx0, x0), max(by0, y0), min(bx1, x1), min(by1, y1)
        if ax1 > ax0 and ay1 > ay0:
            covered[ay0 - y0:ay1 - y0, ax0 - x0:ax1 - x0] = True
    ink = item.ink.sum()
    return ink > 0 and (covered & item.ink).sum() >= share * ink
