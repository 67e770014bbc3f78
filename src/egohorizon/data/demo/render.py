"""Draw the 1 Hz first-person frame of a demo-world action at time t, and where the eyes look.

A frame is a pure function of (world seed, session, t, the level-1 event at t, size): the place
sets the background, the event's objects are drawn as labelled shapes (the one in the hands largest,
with a hand beside it), a phone or laptop in use fills the view with its screen text, drawn with
PIL's built-in scalable font so it stays legible at 224 px. The camera sways a little with time, as
a head does. Gaze sits on the object in the hands or the screen line being read, with noise; now
and then it is missing (no fix) or off the frame.

Hand-written with PIL: no library renders synthetic egocentric scenes.
"""

from __future__ import annotations

import math
import random
import zlib
from functools import lru_cache

from egohorizon.schema import Event

P_GAZE_MISSING = 0.03
P_GAZE_OUTSIDE = 0.03

# place -> (wall colour, floor colour, horizon as a fraction of height, furniture: (x0, y0, x1, y1, colour))
PLACES: dict[str, tuple[tuple[int, int, int], tuple[int, int, int], float, tuple]] = {
    "kitchen": ((236, 224, 200), (150, 120, 90), 0.55, ((0.0, 0.45, 1.0, 0.6, (200, 200, 205)),
                                                       (0.65, 0.1, 0.95, 0.45, (180, 150, 110)))),
    "living room": ((210, 220, 235), (160, 130, 100), 0.6, ((0.05, 0.45, 0.45, 0.7, (120, 90, 140)),
                                                           (0.7, 0.15, 0.9, 0.4, (90, 140, 90)))),
    "bedroom": ((225, 215, 235), (170, 150, 130), 0.6, ((0.1, 0.5, 0.8, 0.75, (240, 240, 250)),)),
    "bathroom": ((230, 240, 245), (200, 200, 210), 0.6, ((0.3, 0.35, 0.7, 0.6, (250, 250, 255)),)),
    "hallway": ((220, 210, 190), (130, 110, 90), 0.65, ((0.35, 0.05, 0.65, 0.65, (140, 100, 70)),)),
    "lab office": ((235, 235, 230), (120, 120, 130), 0.55, ((0.0, 0.55, 1.0, 0.7, (190, 170, 140)),)),
    "home office": ((240, 230, 215), (140, 115, 95), 0.55, ((0.0, 0.55, 1.0, 0.7, (160, 120, 80)),)),
    "studio desk": ((245, 245, 245), (110, 110, 115), 0.55, ((0.0, 0.55, 1.0, 0.7, (230, 230, 230)),)),
    "meeting room": ((225, 230, 240), (100, 100, 110), 0.5, ((0.2, 0.1, 0.8, 0.4, (250, 250, 250)),)),
    "street": ((170, 200, 230), (90, 90, 95), 0.5, ((0.0, 0.2, 0.25, 0.5, (180, 160, 140)),
                                                    (0.75, 0.15, 1.0, 0.5, (160, 150, 150)))),
    "bike lane": ((160, 195, 230), (80, 80, 85), 0.45, ((0.4, 0.45, 0.6, 1.0, (190, 60, 60)),)),
    "tram": ((200, 205, 210), (70, 70, 80), 0.6, ((0.05, 0.1, 0.95, 0.4, (150, 190, 220)),)),
    "supermarket": ((245, 245, 240), (200, 200, 195), 0.6, ((0.0, 0.1, 0.3, 0.6, (230, 120, 60)),
                                                            (0.7, 0.1, 1.0, 0.6, (60, 160, 80)))),
    "park": ((150, 200, 240), (90, 160, 80), 0.45, ((0.1, 0.2, 0.25, 0.45, (40, 110, 50)),)),
    "riverside path": ((150, 195, 235), (120, 170, 90), 0.45, ((0.0, 0.45, 1.0, 0.55, (70, 120, 170)),)),
}


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def _colour(text: str, low: int = 40, high: int = 220) -> tuple[int, int, int]:
    value = _crc(text)
    return tuple(low + (value >> shift) % (high - low) for shift in (0, 8, 16))  # type: ignore[return-value]


def _place_style(place: str):
    if place in PLACES:
        return PLACES[place]
    # Any other place gets a stable style of its own.
    return _colour(place, 150, 240), _colour(place + "/floor", 60, 160), 0.5 + (_crc(place) % 20) / 100, (
        (0.1 + (_crc(place) % 30) / 100, 0.15, 0.6, 0.5, _colour(place + "/thing")),)


@lru_cache(maxsize=32)
def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=max(7, size))


def _sway(session: str, t: float, size: int) -> tuple[float, float]:
    phase = (_crc(session) % 628) / 100
    return (0.025 * size * math.sin(2 * math.pi * t / 9 + phase),
            0.02 * size * math.sin(2 * math.pi * t / 13 + 2 * phase))


def _draw_background(draw, place: str, size: int, dx: float, dy: float) -> None:
    wall, floor, horizon, furniture = _place_style(place)
    y = horizon * size + dy
    draw.rectangle([0, 0, size, y], fill=wall)
    draw.rectangle([0, y, size, size], fill=floor)
    for x0, y0, x1, y1, colour in furniture:
        draw.rectangle([x0 * size + dx, y0 * size + dy, x1 * size + dx, y1 * size + dy], fill=colour)


def _object_boxes(event: Event, size: int, dx: float, dy: float) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Where each object sits: the first (in the hands) large near the lower centre, the others
    smaller around it; fixed for the whole event."""
    boxes = []
    for i, name in enumerate(event.meta.get("objects", [])[:5]):
        spot = _crc(f"{event.id}/{name}")
        if i == 0:
            w, cx, cy = 0.3 * size, (0.42 + (spot % 16) / 100) * size, 0.66 * size
        else:
            w = (0.12 + (spot % 8) / 100) * size
            cx = ((0.15 + 0.7 * ((i - 1) % 2)) + ((spot >> 4) % 10) / 100) * size
            cy = (0.35 + 0.25 * ((i - 1) // 2) + ((spot >> 8) % 10) / 100) * size
        boxes.append((name, (cx - w / 2 + dx, cy - w / 2 + dy, cx + w / 2 + dx, cy + w / 2 + dy)))
    return boxes


def _draw_objects(draw, boxes, size: int) -> None:
    font = _font(size // 20)
    for i, (name, (x0, y0, x1, y1)) in enumerate(boxes):
        colour, shape = _colour(name), _crc(name) % 3
        if shape == 0:
            draw.rectangle([x0, y0, x1, y1], fill=colour, outline=(30, 30, 30))
        elif shape == 1:
            draw.ellipse([x0, y0, x1, y1], fill=colour, outline=(30, 30, 30))
        else:
            draw.rounded_rectangle([x0, y0, x1, y1], radius=(x1 - x0) / 5, fill=colour, outline=(30, 30, 30))
        draw.text(((x0 + x1) / 2, y1 + 2), name, fill=(20, 20, 20), font=font, anchor="ma")
        if i == 0:  # the hand holding it
            draw.ellipse([x1 - 0.04 * size, y1 - 0.1 * size, x1 + 0.1 * size, y1 + 0.06 * size], fill=(224, 172, 140))


# draw.textlength by (text, font, the image mode): a pure function, remembered because the frames of one
# event show the same screen lines second after second, and _fit measures every prefix of a long line
# (most of a demo shard build's time went to measuring the same prefixes again). Cleared when full.
_LENGTHS: dict[tuple, float] = {}
_LENGTHS_MAX = 200_000


def _text_length(draw, text: str, font) -> float:
    key = (text, font, draw.mode)
    length = _LENGTHS.get(key)
    if length is None:
        if len(_LENGTHS) >= _LENGTHS_MAX:
            _LENGTHS.clear()
        length = _LENGTHS[key] = draw.textlength(text, font=font)
    return length


def _fit(draw, text: str, font, width: float) -> str:
    """``text`` shortened with "..." to fit ``width`` pixels."""
    if _text_length(draw, text, font) <= width:
        return text
    while text and _text_length(draw, text + "...", font) > width:
        text = text[:-1]
    return text + "..."


def _draw_screen(draw, screen: dict, size: int, dx: float, dy: float) -> list[tuple[float, float, float]]:
    """Draws the device and its text; returns each text line's (x start, x end, y centre)."""
    if screen.get("device") == "phone":
        box = (0.3 * size + dx, 0.12 * size + dy, 0.7 * size + dx, 0.98 * size + dy)
        glass = (box[0] + 0.02 * size, box[1] + 0.05 * size, box[2] - 0.02 * size, box[3] - 0.05 * size)
        font_px, step = size // 19, size // 13
    else:  # laptop
        box = (0.06 * size + dx, 0.14 * size + dy, 0.94 * size + dx, 0.72 * size + dy)
        glass = (box[0] + 0.02 * size, box[1] + 0.02 * size, box[2] - 0.02 * size, box[3] - 0.02 * size)
        draw.polygon([(box[0], box[3]), (box[2], box[3]), (box[2] + 0.04 * size, 0.9 * size + dy),
                      (box[0] - 0.04 * size, 0.9 * size + dy)], fill=(170, 170, 175))
        font_px, step = size // 17, size // 12
    draw.rounded_rectangle(box, radius=0.03 * size, fill=(25, 25, 30))
    draw.rectangle(glass, fill=(250, 250, 250))
    title_font, font = _font(font_px + 1), _font(font_px)
    draw.rectangle([glass[0], glass[1], glass[2], glass[1] + step], fill=(60, 110, 200))
    width = glass[2] - glass[0] - 6
    draw.text((glass[0] + 3, glass[1] + step / 2), _fit(draw, screen.get("app", ""), title_font, width),
              fill=(255, 255, 255), font=title_font, anchor="lm")
    lines = []
    y = glass[1] + 1.6 * step
    for line in screen.get("lines", []):
        if y > glass[3] - step / 2:
            break
        line = _fit(draw, line, font, width)
        draw.text((glass[0] + 3, y), line, fill=(10, 10, 10), font=font, anchor="lm")
        line_width = _text_length(draw, line, font)
        lines.append((glass[0] + 3, min(glass[2], glass[0] + 3 + line_width), y))
        y += step
    return lines


def _gaze(rng: random.Random, target: tuple[float, float], size: int) -> tuple[tuple[float, float] | None, float]:
    roll = rng.random()
    if roll < P_GAZE_MISSING:
        return None, 0.0
    x, y = target[0] + rng.gauss(0, 0.025 * size), target[1] + rng.gauss(0, 0.025 * size)
    confidence = rng.uniform(0.75, 1.0)
    if roll < P_GAZE_MISSING + P_GAZE_OUTSIDE:  # looking past the edge of the camera's view
        margin = size * rng.uniform(0.02, 0.15)
        x, y = [(-margin, y), (size + margin, y), (x, -margin), (x, size + margin)][rng.randrange(4)]
        confidence = rng.uniform(0.2, 0.5)
    return (round(x, 1), round(y, 1)), round(confidence, 3)


def render(event: Event, seed: int, session: str, t: float, size: int = 224):
    """(image, gaze (x, y) in pixels or None when missing, confidence 0-1) for the frame at ``t``.
    Gaze outside ``[0, size)`` means the eyes look beyond the camera's field of view."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size))
    draw = ImageDraw.Draw(image)
    dx, dy = _sway(session, t, size)
    rng = random.Random(f"{seed}:{session}:{round(t * 1000)}")
    _draw_background(draw, event.meta.get("place", ""), size, dx, dy)
    boxes = _object_boxes(event, size, dx, dy)
    screen = event.meta.get("screen")
    if screen:
        _draw_objects(draw, boxes[1:], size)  # the device is the thing in the hands
        lines = _draw_screen(draw, screen, size, dx, dy)
        if lines:
            x0, x1, y = lines[int(t // 3) % len(lines)]  # reading line after line
            target = (x0 + (x1 - x0) * ((t % 3) / 3), y)
        else:
            target = (size / 2 + dx, size / 2 + dy)
    else:
        _draw_objects(draw, boxes, size)
        if boxes:
            x0, y0, x1, y1 = boxes[0][1]
            target = ((x0 + x1) / 2, (y0 + y1) / 2)
        else:
            target = (size / 2 + dx, size * 0.45 + dy)
    gaze, confidence = _gaze(rng, target, size)
    return image, gaze, confidence


def draw_gaze(image, gaze: tuple[float, float] | None, confidence: float):
    """A copy of ``image`` with the gaze drawn as a red ring (for people looking at frames)."""
    from PIL import ImageDraw

    out = image.copy()
    if gaze is not None:
        r = max(3, out.width // 30)
        x = min(max(gaze[0], 0), out.width - 1)
        y = min(max(gaze[1], 0), out.height - 1)
        ImageDraw.Draw(out).ellipse([x - r, y - r, x + r, y + r], outline=(255, 0, 0), width=max(1, r // 3))
    return out
