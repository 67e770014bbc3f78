"""The caption job's window preparation: a window's tar sample -> the prompt and images the model sees
(frames and close-up decoded lazily, or kept as the shard's JPEG bytes for a server; the gaze ring), or
the ``Outcome`` that ends the window (no frames, an unusable sample). ``ShardReader`` yields the raw
samples of the planned shards, minus finished windows; both runners (``runners``) read and prepare their
windows here, and ``pipelines.hands.frames`` reads shards with ``ShardReader`` too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from egohorizon.pipelines.caption.results import INPUT
from egohorizon.pipelines.caption.settings import CaptionSettings


@dataclass
class Outcome:
    """One window's result from a runner: the model's text, or why there is none."""

    info: dict[str, Any]  # window, shard, participant, day, session, start, end, frames
    raw: str | None = None
    failure: tuple[str, str] | None = None  # (kind, reason)
    skipped: str | None = None
    elapsed_s: float = 0.0


def window_info(raw: dict[str, Any], shard: str) -> dict[str, Any]:
    """What a result line says about its window, from the sample's metadata when it parses."""
    info: dict[str, Any] = {"window": raw.get("__key__", ""), "shard": shard}
    try:
        meta = json.loads(raw["json"])
        info.update({k: meta.get(k) for k in ("participant", "day", "session", "start", "end")})
    except (KeyError, ValueError, TypeError, AttributeError):
        pass
    return info


class LazyImages(Sequence):
    """A window's frames (or crops) decoded on first access: a prompt uses a few of its ~30 frames and one
    close-up, and decoding all of them was most of the client's work (scripts/bench_caption.py).

    ``fit``, when given, maps an image's stored (height, width) to the smallest size the model needs (a
    local VLM's processor resizes to it anyway): the JPEG is then decoded straight at the smallest
    DCT scale (1/2, 1/4, ...) that is at least that large, which costs a fraction of a full decode and
    leaves the processor less to resize (a 448-px frame for the tiny backbone: decoded at 224)."""

    def __init__(self, sample: dict[str, Any], fields: list[str | None],
                 fit: Callable[[int, int], tuple[int, int] | None] | None = None):
        self.sample, self.fields, self.fit = sample, fields, fit
        self.decoded: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i):
        from egohorizon.data.shards.encode import CORRUPT_IMAGE, SampleError

        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if self.fields[i] is None:
            return None
        if i not in self.decoded:
            try:
                self.decoded[i] = self._decode(self.sample[self.fields[i]])
            except ValueError:
                raise SampleError(CORRUPT_IMAGE, f"sample {self.sample.get('__key__')!r}: image "
                                                 f"{self.fields[i]} is corrupt") from None
        return self.decoded[i]

    def _decode(self, data: bytes):
        from egohorizon.data.shards.encode import decode_jpeg, jpeg_shape

        if self.fit is None:
            return decode_jpeg(data)
        import simplejpeg

        needed = self.fit(*jpeg_shape(data))
        if needed is None:
            return decode_jpeg(data)
        # The same decoder and strictness as decode_jpeg, at a reduced DCT scale.
        return simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True, min_height=needed[0], min_width=needed[1])


class StoredJPEGs(LazyImages):
    """A window's images as the shard stores them (JPEG bytes), for a server: an image the job draws
    nothing on is sent as it is, neither decoded nor encoded again (``prepare_window(stored=True)``).
    Checked cheaply (a JPEG header, the end-of-image marker), so a corrupt image still fails its window
    as an input failure instead of a server error."""

    def _decode(self, data: bytes):
        from egohorizon.data.shards.encode import jpeg_shape

        jpeg_shape(data)  # ValueError without a JPEG header
        if not data.rstrip(b"\0").endswith(b"\xff\xd9"):
            raise ValueError("truncated JPEG (no end-of-image marker)")
        return bytes(data)


def window_images(raw: dict[str, Any], with_crop: bool,
                  fit: Callable[[int, int], tuple[int, int] | None] | None = None, stored: bool = False
                  ) -> tuple[dict[str, Any], LazyImages, LazyImages]:
    """The window's metadata (checked: every frame and crop it promises is in the sample) and its
    frames and crops, decoded when used (at the size ``fit`` asks for; see LazyImages), or with
    ``stored`` as their JPEG bytes (StoredJPEGs); SampleError for an unusable sample."""
    from egohorizon.data.shards.encode import check_fields, crop_field, frame_field, parse_meta

    meta = parse_meta(raw)
    check_fields(raw, meta)
    images = StoredJPEGs if stored else LazyImages
    frames = images(raw, [frame_field(i) for i in range(len(meta["frames"]))], fit)
    crops = images(raw, [crop_field(i) if with_crop and f.get("crop_box") else None
                         for i, f in enumerate(meta["frames"])], fit)
    return meta, frames, crops


def draw_gaze_on_stored(meta: dict[str, Any], chosen: list[int], images: list[Any]) -> None:
    """The chosen frames (stored JPEG bytes, ``images[:len(chosen)]``) that need the gaze ring, decoded
    and ringed in place, as ``caption_sample`` rings decoded frames (the same condition, the same
    ``draw_gaze``, at the stored size, so at the stored gaze point); the others stay bytes."""
    from egohorizon.data.shards.encode import CORRUPT_IMAGE, SampleError, decode_jpeg
    from egohorizon.data.windows.sample import draw_gaze

    if meta.get("gaze_drawn"):
        return
    for k, i in enumerate(chosen):
        gaze = meta["frames"][i].get("gaze")
        if gaze:
            try:
                frame = decode_jpeg(images[k])
            except ValueError:
                raise SampleError(CORRUPT_IMAGE, f"sample {meta.get('key')!r}: frame {i} is corrupt") from None
            images[k] = draw_gaze(frame, (gaze[0], gaze[1]))


def prepare_window(raw: dict[str, Any], shard: str, settings: CaptionSettings,
                   fit: Callable[[int, int], tuple[int, int] | None] | None = None, stored: bool = False
                   ) -> tuple[dict[str, Any], dict[str, Any] | None, Outcome | None]:
    """A raw tar sample -> (info, ``{text, images}``, None), or (info, None, the outcome that ends it).
    ``fit``: the image size the model needs (LazyImages), for a local model's processor. ``stored``
    (a server): images the job draws nothing on stay the shard's JPEG bytes (the close-up; frames
    without gaze); the others are decoded and ringed (arrays)."""
    from egohorizon.data.shards.encode import SampleError
    from egohorizon.prompts.caption import caption_sample, pick_frames

    info = window_info(raw, shard)
    try:
        meta, frames, crops = window_images(raw, settings.with_crop, fit, stored=stored)
        if not frames:
            return info, None, Outcome(info, skipped="no frames (shards built with --min-frames 0)")
        sample = caption_sample(meta, frames, crops, settings.frames_per_window, with_crop=settings.with_crop,
                                prompt=settings.prompt, draw_gaze=not stored)
        chosen = pick_frames(len(frames), settings.frames_per_window)
        if stored:
            draw_gaze_on_stored(meta, chosen, sample["images"])
        info["frames"] = [round(meta["frames"][i]["t"] - meta["start"], 3) for i in chosen]
        info["crop"] = len(sample["images"]) > len(chosen)  # the gaze close-up went in too
    except SampleError as error:
        return info, None, Outcome(info, failure=(INPUT, f"{error.reason}: {error}"))
    except (ValueError, KeyError, TypeError, IndexError) as error:  # metadata the sample cannot use
        return info, None, Outcome(info, failure=(INPUT, f"bad_metadata: {type(error).__name__}: {error}"))
    return info, sample, None


class ShardReader:
    """Raw samples of the planned shards, in order, minus finished windows (never decoded); counts
    unreadable shards and samples lost in them (``problems``)."""

    def __init__(self, index, entries: list[dict], done: set[str]):
        import webdataset.tariterators  # noqa: F401 - read_shards uses it; it imports torch: at set-up, not mid-run

        from egohorizon.data.shards import stages

        self._stages = stages
        self.urls = [str(index.path_of(e)) for e in entries]
        self.relative = {str(index.path_of(e)): e["path"] for e in entries}
        self.expected = {str(index.path_of(e)): int(e["samples"]) for e in entries}
        self.done = done

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        self.stats = self._stages.StreamStats()
        for raw in self._stages.read_shards(self.stats, self.expected)({"url": u} for u in self.urls):
            if raw.get("__key__") in self.done:
                continue
            yield self.relative[raw["__url__"]], raw

    def problems(self, stats=None) -> list[dict[str, Any]]:
        stats = stats or self.stats
        return [{"shard": self.relative.get(url, url), "lost": int(stats.bad_by_shard.get(url, 0)),
                 "reasons": reasons} for url, reasons in sorted(stats.reasons.items())]

