"""Draw a frame of a demo hand clip (``data.demo.hands.clips``): the place's background, the object of the
step in progress, and the two hands with their sleeves, the top hand drawn last (it occludes).

The colours of the places come from the window renderer's ``PLACES`` table, read only: that
renderer and its frames are not touched. Hand-written with PIL, like the window renderer.
"""

from __future__ import annotations

import math

import numpy as np

from egohorizon.data.demo.hands.clips import HANDS, OBJECTS, HandClip, hand_at, hand_outline
from egohorizon.data.demo.render import PLACES

SKIN = {"left": (224, 172, 140), "right": (214, 160, 126)}
SLEEVE = {"left": (40, 70, 150), "right": (150, 40, 50)}


def _background(draw, clip: HandClip) -> None:
    wall, floor, horizon, furniture = PLACES.get(clip.place, PLACES["kitchen"])
    w, h = clip.width, clip.height
    draw.rectangle([0, 0, w, horizon * h], fill=wall)
    draw.rectangle([0, horizon * h, w, h], fill=floor)
    for x0, y0, x1, y1, colour in furniture:
        draw.rectangle([x0 * w, y0 * h, x1 * w, y1 * h], fill=colour)
    # the work surface the hands act on
    draw.rectangle([0.05 * w, 0.62 * h, 0.95 * w, h], fill=(205, 190, 160), outline=(120, 100, 80))


def _object(draw, clip: HandClip, t: float) -> None:
    """The object of the step in progress, in the fingers (drawn over the hands: it is held)."""
    for start, end, x, y, name in clip.objects:
        if start <= t < end or (t >= clip.duration and end >= clip.duration):
            colour, shape = OBJECTS[name]
            length = clip.scale * clip.height
            size = 0.25 * length
            cx, cy = x * clip.width, y * clip.height - 0.45 * length
            box = [cx - size, cy - size * 0.6, cx + size, cy + size * 0.6]
            if shape == "round":
                draw.ellipse(box, fill=colour, outline=(30, 30, 30))
            elif shape == "bar":
                draw.rectangle([box[0], cy - size * 0.15, box[2], cy + size * 0.15], fill=colour, outline=(30, 30, 30))
            else:
                draw.rectangle(box, fill=colour, outline=(30, 30, 30))
            return


def _hand(draw, clip: HandClip, hand: str, t: float) -> None:
    pose = hand_at(clip, hand, t)
    length = clip.scale * clip.height
    wrist = (pose.x * clip.width - 0.2 * length * math.sin(pose.tilt),
             pose.y * clip.height + 0.2 * length * math.cos(pose.tilt))
    corner = (-0.1 * clip.width if hand == "left" else 1.1 * clip.width, 1.3 * clip.height)
    draw.line([wrist, corner], fill=SLEEVE[hand], width=max(2, int(0.42 * length)))
    draw.polygon(hand_outline(clip, hand, t), fill=SKIN[hand], outline=(120, 80, 60))


def render_hand_frame(clip: HandClip, t: float) -> np.ndarray:
    """The clip's frame at ``t`` seconds, (height, width, 3) uint8."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (clip.width, clip.height))
    draw = ImageDraw.Draw(image)
    _background(draw, clip)
    order = HANDS if clip.right_on_top else tuple(reversed(HANDS))
    for hand in order:
        _hand(draw, clip, hand, t)
    _object(draw, clip, t)
    return np.asarray(image)
