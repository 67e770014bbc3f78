"""The captioner's prompt and answer: a window's frames (gaze drawn), the gaze close-up, the speech and
the on-screen text in, the wearer's timed actions and the scene out (``egohorizon.formats.caption``).

Each frame is preceded by its time in the window, then the image marker that the backbone's processor
expands into the image's tokens (``egohorizon.backbones.collate``); the close-up comes last. The answer
is the caption format: one JSON line per action (times relative to the window, oldest first), from the
window's gold level-1 events when it has any (the demo world knows them; a real recording has none), then
the gold scene line when the events say where they happen (``gold_scene``: the place, "A, then B" when
it changes). The on-screen text is the shard's ``screen_text`` (read from the de-identified frames at
shard build, egohorizon.data.windows.text), one "Text on screen:" line grouped by time, "none" without.

``caption_sample`` is the one place a window becomes a model input: the training datamodule
(``datamodules.caption.CaptionSamples``) and the offline ``egohorizon caption`` job both call it, so
they render exactly the same prompt. It is torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from egohorizon.formats.caption import render_caption_answer
from egohorizon.prompts import load_prompt

CAPTION_PROMPT_NAME = "caption"
# The marker egohorizon.backbones.collate expands into image tokens (kept equal to its IMAGE_PLACEHOLDER;
# a test checks it), here so that rendering a prompt needs no backbone import.
IMAGE_MARK = "<|vision_start|><|image_pad|><|vision_end|>"


def render_caption_prompt(
    times: Sequence[float],
    transcript: str,
    window_s: float = 30.0,
    with_crop: bool = False,
    prompt: str | None = None,
    screen_text: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The prompt of one window with ``len(times)`` frames (and a gaze close-up when ``with_crop``);
    ``screen_text``: the window's on-screen text lines (``{"t", "text"}``, a shard sample's)."""
    template = load_prompt(prompt or CAPTION_PROMPT_NAME)
    frames = "".join(f"t={t:.0f}s {IMAGE_MARK}\n" for t in times)
    crop = f"close-up around the gaze point: {IMAGE_MARK}\n" if with_crop else ""
    text = template.render(
        n_frames=len(times),
        window_s=f"{window_s:g}",
        crop_note="The last image is a close-up around the gaze point." if with_crop else "",
        transcript=transcript.strip() or "(none)",
        screen_text=render_screen_text(screen_text),
    )
    return frames + crop + text


def render_screen_text(lines: Sequence[Mapping[str, Any]], max_chars: int = 400) -> str:
    """``t=0s: Terminal / $ pytest -q tests/; t=10s: 47 passed`` (lines grouped by the second they were
    first read), at most ``max_chars`` (whole lines only); ``none`` without any."""
    groups: dict[str, list[str]] = {}
    used = 0
    for line in lines:
        text = " ".join(str(line.get("text", "")).split())
        if not text or used + len(text) > max_chars:
            continue
        used += len(text)
        groups.setdefault(f"t={float(line.get('t', 0.0)):.0f}s", []).append(text)
    return "; ".join(f"{t}: {' / '.join(texts)}" for t, texts in groups.items()) or "none"


def pick_frames(count: int, frames_per_window: int | None, rng=None) -> list[int]:
    """Indices of ``frames_per_window`` frames spread evenly over ``count`` (all when unset or fewer).

    With ``rng`` (a numpy Generator; training only) one random frame of each of ``frames_per_window``
    equal stretches of the window instead: each epoch shows other frames of the same window, so the
    model cannot learn a window by its two pictures (evaluation keeps the even spread)."""
    from itertools import pairwise

    import numpy as np

    if frames_per_window is None or count <= frames_per_window:
        return list(range(count))
    if rng is not None:
        edges = np.linspace(0, count, frames_per_window + 1).astype(int)
        return [int(rng.integers(lo, hi)) for lo, hi in pairwise(edges)]
    return sorted(set(np.rint(np.linspace(0, count - 1, frames_per_window)).astype(int).tolist()))


def _scaled(gaze: Sequence[float], info: Mapping[str, Any], image) -> tuple[float, float]:
    """The gaze point (stored in the frame's pixels, ``info["size"]`` = [w, h]) in ``image``'s pixels:
    the offline job may decode a frame at a reduced scale (egohorizon.pipelines.caption.windows.LazyImages)."""
    size = info.get("size")
    if not size or (image.shape[1], image.shape[0]) == tuple(size):
        return gaze[0], gaze[1]
    return gaze[0] * image.shape[1] / size[0], gaze[1] * image.shape[0] / size[1]


def caption_sample(
    window_meta: Mapping[str, Any],
    frames: Sequence[Any],
    crops: Sequence[Any] | None = None,
    frames_per_window: int | None = None,
    with_crop: bool = True,
    prompt: str | None = None,
    draw_gaze: bool = True,
    rng=None,
) -> dict[str, Any]:
    """One window -> ``{"text", "images", "target", "key"}`` for a vision-language captioner.

    ``window_meta`` is the shard sample's JSON (``egohorizon.data.windows.sample.Window.meta``), ``frames``
    its HWC uint8 frames and ``crops`` its gaze crops (None where a frame has none), both in frame
    order. The chosen frames get the gaze ring drawn unless the shard already drew it; the close-up is
    the crop of the chosen frame nearest the middle that has one. ``target`` is None when the window
    has no gold level-1 event (inference only). ``rng`` picks random frames (``pick_frames``; training)."""
    if not frames:
        raise ValueError(f"window {window_meta.get('key')} has no frames (shards built with min_frames=0)")
    start, end = window_meta["start"], window_meta["end"]
    chosen = pick_frames(len(frames), frames_per_window, rng)
    infos = window_meta["frames"]
    images = [frames[i] for i in chosen]
    if draw_gaze and not window_meta.get("gaze_drawn"):
        # the ring drawn at training must be the one the shard writer draws
        from egohorizon.data.windows.sample import draw_gaze as ring

        images = [ring(im, _scaled(infos[i]["gaze"], infos[i], im)) if infos[i].get("gaze") else im
                  for im, i in zip(images, chosen)]
    crop = None
    if with_crop and crops:
        middle = sorted(chosen, key=lambda i: abs(i - chosen[len(chosen) // 2]))
        crop = next((crops[i] for i in middle if i < len(crops) and crops[i] is not None), None)
    text = render_caption_prompt([infos[i]["t"] - start for i in chosen], window_meta.get("transcript", ""),
                                 window_s=end - start, with_crop=crop is not None, prompt=prompt,
                                 screen_text=window_meta.get("screen_text") or ())
    return {"text": text, "images": images + ([crop] if crop is not None else []),
            "target": render_caption_answer(window_meta.get("events", []), start, end),
            "key": window_meta["key"]}
