"""CaptionDataModule: 30-second windows (frames, gaze, gaze crops, transcript, captions) streamed
from WebDataset shards, as raw window tensors or, once the backbone's processor is set
(``set_processor``), as vision-language model inputs for the captioner.

Shards come from ``egohorizon shards build`` (``shards``: the folder with index.json) or, when unset,
are built from the demo world on first use (``demo_shards_dir``). Held-out days pick whole shards:
a day split file (egohorizon.data.splits, ``split_file``) or one made from the index's days with the
project's split rules. Each batch is a dict (B windows, T frames padded to the longest window):

    frames        uint8   [B, T, 3, H, W]  downscaled frames (padded with zeros)
    frame_mask    bool    [B, T]           real frames
    times         float32 [B, T]           seconds from the window start
    gaze          float32 [B, T, 2]        gaze in frame pixels (NaN where missing)
    gaze_norm     float32 [B, T, 2]        gaze as a fraction of the frame's width and height
    gaze_valid    bool    [B, T]
    gaze_confidence float32 [B, T]         NaN where the source gives none
    crops         uint8   [B, T, 3, C, C]  native-resolution gaze crops (zeros where none)
    crop_valid    bool    [B, T]
    transcript, captions, key, participant, day, session, start, end: lists of length B

With a processor, each window becomes ``{text, images, target}`` (``CaptionSamples``, which calls
``egohorizon.prompts.caption.caption_sample``): the chosen frames (gaze ring drawn) and the close-up at
the middle frame's fixation, the prompt (frame times, speech) and the target, the window's gold L1
actions as timed JSON lines (``egohorizon.formats.caption``; the demo world knows them; a real
recording has none). Batches are then what ``egohorizon.backbones.collate.VisionTextCollator`` makes
(``input_ids``, ``labels``, ``pixel_values``, ``image_grid_thw``, ``mm_token_type_ids``, ...) plus
``ids`` (window keys).

Counters of skipped and corrupt samples are logged as ``<split>/data_<counter>`` and the run stops
with a DataError naming the shards when more than ``max_bad_fraction`` of the samples are bad.

Why one file: it is one LightningDataModule (the TaskDataModule interface, the shard streams of each
split, their bad-sample counters) plus the small dataset and collate classes only it uses; the window
decoding, prompts and batching it calls live in egohorizon.data.shards, prompts and backbones.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from datamodules.base import TaskDataModule
from egohorizon.backbones.collate import KeyedVisionTextCollator
from egohorizon.errors import ConfigError
from egohorizon.setting_bounds import LOADER_BOUNDS, SPLIT_BOUNDS, UNSET, Bound
from egohorizon.tasks.caption import caption_window  # the gold record the caption task scores

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")


class CaptionInputs:
    """Decoded window -> tensors for one sample (runs in the DataLoader workers; picklable)."""

    def __init__(self, frames_per_window: int | None = None, crops: bool = True):
        self.frames_per_window, self.crops = frames_per_window, crops

    def pick(self, count: int) -> list[int]:
        from egohorizon.prompts.caption import pick_frames

        return pick_frames(count, self.frames_per_window)

    def __call__(self, window) -> dict[str, Any]:
        meta = window.meta
        if not window.frames:
            raise ValueError(f"window {window.key} has no frames (shards built with min_frames=0)")
        chosen = self.pick(len(window.frames))
        frames, infos = [window.frames[i] for i in chosen], [meta["frames"][i] for i in chosen]
        gaze = np.array([f["gaze"] if f["gaze"] else (np.nan, np.nan) for f in infos], dtype=np.float32)
        sizes = np.array([[im.shape[1], im.shape[0]] for im in frames], dtype=np.float32)
        out = {
            "frames": frames,  # HWC uint8 arrays; collate_windows copies each once, into the batch
            "times": torch.tensor([f["t"] - meta["start"] for f in infos], dtype=torch.float32),
            "gaze": torch.from_numpy(gaze),
            "gaze_norm": torch.from_numpy((gaze + 0.5) / sizes),
            "gaze_valid": torch.from_numpy(~np.isnan(gaze[:, 0])),
            "gaze_confidence": torch.tensor([np.nan if f["gaze_confidence"] is None else f["gaze_confidence"]
                                             for f in infos], dtype=torch.float32),
            "transcript": meta["transcript"], "captions": list(meta["captions"]),
            **{k: meta[k] for k in ("key", "participant", "day", "session", "start", "end")},
        }
        if self.crops:
            out["crops"] = [window.crops[i] for i in chosen]
        return out


class CaptionSamples:
    """Decoded window -> ``{text, images, target, key}`` for a vision-language captioner: a thin
    picklable wrapper of ``egohorizon.prompts.caption.caption_sample`` (the offline caption job renders
    windows with the same function, so training and inference see the same prompt).

    ``random_frames`` (training windows): each call picks one random frame from each stretch of the
    window (``pick_frames``), drawn from ``seed``, the window's key and this copy's call count, so
    every epoch shows other frames of the window; evaluation keeps the evenly spread frames."""

    def __init__(self, frames_per_window: int | None = None, crops: bool = True, prompt: str | None = None,
                 random_frames: bool = False, seed: int = 0):
        self.frames_per_window, self.crops, self.prompt = frames_per_window, crops, prompt
        self.random_frames, self.seed, self.calls = random_frames, seed, 0

    def __call__(self, window) -> dict[str, Any]:
        import zlib

        from egohorizon.prompts.caption import caption_sample

        rng = None
        if self.random_frames:
            rng = np.random.default_rng([self.seed, zlib.crc32(str(window.meta["key"]).encode()), self.calls])
            self.calls += 1
        return caption_sample(window.meta, window.frames, window.crops, self.frames_per_window,
                              with_crop=self.crops, prompt=self.prompt, rng=rng)


def _fill_images(target: np.ndarray, images_per_sample: list[list[np.ndarray | None]]) -> None:
    """Puts each HWC image into its slot of ``target`` [B, T, H, W, 3] and zeroes the rest of the
    slots: the memory is reused and may hold an older batch. An image decoded in place (see
    egohorizon.data.shards.arena) is not copied; any other is one plain copy (channels-last)."""
    from egohorizon.data.shards.arena import in_slot

    _, length, height, width, _ = target.shape
    for b, images in enumerate(images_per_sample):
        for t in range(length):
            image = images[t] if t < len(images) else None
            if image is None:
                target[b, t] = 0
                continue
            h, w = image.shape[:2]
            if not in_slot(image, target[b, t]):
                target[b, t, :h, :w] = image  # numpy copies from read-only arrays (PIL's) without fuss
            if h < height:
                target[b, t, h:] = 0
            if w < width:
                target[b, t, :h, w:] = 0


def _image_batches(groups: list[list[list[np.ndarray | None]]], length: int, reuse: bool) -> list[Any]:
    """One uint8 tensor [B, T, 3, H, W] per group of images (frames, crops), all in one buffer laid out
    as egohorizon.data.shards.arena.BatchLayout says.

    When the stream decoded the images straight into a buffer of this layout (its decode arena), that
    buffer is the batch and nothing is copied. In a DataLoader worker the buffer is reusable shared
    memory, and the tensors are stand-ins that become tensors in the main process
    (egohorizon.data.shards.buffers). Stored channels-last, they are channel-first views of it."""
    from egohorizon.data.shards import buffers
    from egohorizon.data.shards.arena import BatchLayout, active_arena, largest

    shapes = [[None if im is None else im.shape[:2] for ims in images for im in ims] for images in groups]
    layout = BatchLayout(len(groups[0]), length, largest(shapes[0]), largest(shapes[1]) if len(groups) > 1 else None)
    arena = active_arena()
    buffer = arena.claim(layout, groups) if arena is not None and reuse else None
    if buffer is None:
        buffer = buffers.batch_buffer(layout.nbytes, reuse=reuse)
    for target, images in zip(layout.views(buffer.array), groups):
        _fill_images(target, images)
    return [buffer.view(offset, shape, dims=(0, 1, 4, 2, 3)) for offset, shape in layout.offsets()]


def collate_windows(samples: list[dict[str, Any]], reuse_buffers: bool = True) -> dict[str, Any]:
    """Pads frames (and crops) to the longest window and the largest frame of the batch.
    ``reuse_buffers=False``: fresh memory per batch (the benchmark's naive loader)."""
    length = max(len(s["frames"]) for s in samples)

    def padded(key: str, fill: float, dtype: torch.dtype, tail: tuple = ()) -> torch.Tensor:
        out = torch.full((len(samples), length, *tail), fill, dtype=dtype)
        for b, s in enumerate(samples):
            out[b, :len(s[key])] = s[key]
        return out

    with_crops = "crops" in samples[0]
    groups = [[s["frames"] for s in samples]] + ([[s["crops"] for s in samples]] if with_crops else [])
    images = _image_batches(groups, length, reuse_buffers)
    batch = {
        "frames": images[0],
        "frame_mask": torch.zeros(len(samples), length, dtype=torch.bool),
        "times": padded("times", 0.0, torch.float32),
        "gaze": padded("gaze", math.nan, torch.float32, (2,)),
        "gaze_norm": padded("gaze_norm", math.nan, torch.float32, (2,)),
        "gaze_valid": padded("gaze_valid", False, torch.bool),
        "gaze_confidence": padded("gaze_confidence", math.nan, torch.float32),
    }
    for b, s in enumerate(samples):
        batch["frame_mask"][b, :len(s["frames"])] = True
    if with_crops:
        batch["crops"] = images[1]
        batch["crop_valid"] = torch.zeros(len(samples), length, dtype=torch.bool)
        for b, s in enumerate(samples):
            batch["crop_valid"][b, :len(s["crops"])] = torch.tensor([c is not None for c in s["crops"]])
    for key in ("transcript", "captions", "key", "participant", "day", "session", "start", "end"):
        batch[key] = [s[key] for s in samples]
    return batch


class CaptionDataModule(TaskDataModule):
    @classmethod
    def takes_split_file(cls) -> bool:
        return True  # split_file: a day split file instead of one drawn from the fractions and seed

    # the offline caption job, serve and compare render the frames and close-up the adapter trained on
    PROMPT_SETTINGS: ClassVar[tuple[str, ...]] = (*TaskDataModule.PROMPT_SETTINGS, "frames_per_window", "crops")
    ADAPTER_SETTINGS: ClassVar[tuple[str, ...]] = (*TaskDataModule.ADAPTER_SETTINGS, "frames_per_window", "crops")
    SETTING_BOUNDS: ClassVar[tuple[Bound, ...]] = (
        *LOADER_BOUNDS,
        *SPLIT_BOUNDS,
        Bound("frames_per_window", low=1, also=UNSET),
        Bound("long_side", low=1),
        Bound("crop_size", low=1),
        Bound("shuffle_buffer", low=1),
        Bound("epoch_samples", low=1, also=UNSET),
    )

    def __init__(
        self,
        shards: str | None = None,
        demo_dir: str | None = None,
        demo_shards_dir: str | None = None,
        demo_days: int | None = 4,
        demo_window_stride: int = 10,
        split_file: str | None = None,
        val_frac: float = 0.15,
        test_frac: float = 0.15,
        split_strategy: str = "random",
        min_history_days: int = 1,
        long_side: int = 448,
        crop_size: int = 256,
        frames_per_window: int | None = None,
        crops: bool = True,
        batch_size: int = 2,
        eval_batch_size: int | None = None,
        num_workers: int = 2,
        shuffle_buffer: int = 16,
        resampled: bool = False,
        epoch_samples: int | None = None,
        max_bad_fraction: float = 0.05,
        min_samples_for_check: int = 32,
        log_every: int = 50,
        prompt: str | None = None,
        max_corpus_windows: int = 2000,
        random_train_frames: bool = False,
        seed: int = 0,
    ):
        super().__init__()
        if resampled and not epoch_samples:
            raise ConfigError("data.resampled=true needs data.epoch_samples (samples per epoch over all ranks)")
        self.shards, self.demo_dir, self.demo_shards_dir = shards, demo_dir, demo_shards_dir
        self.demo_days, self.demo_window_stride = demo_days, demo_window_stride
        self.split_file = split_file
        self.split_args = {"val_frac": val_frac, "test_frac": test_frac, "seed": seed, "strategy": split_strategy,
                           "min_history_days": min_history_days}
        self.long_side, self.crop_size = long_side, crop_size
        self.inputs = CaptionInputs(frames_per_window, crops)
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size or batch_size
        self.num_workers, self.shuffle_buffer = num_workers, shuffle_buffer
        self.resampled, self.epoch_samples = resampled, epoch_samples
        self.max_bad_fraction, self.min_samples_for_check = max_bad_fraction, min_samples_for_check
        self.log_every, self.seed = log_every, seed
        self.prompt_name, self.max_corpus_windows = prompt, max_corpus_windows
        self.frames_per_window, self.random_train_frames = frames_per_window, random_train_frames
        self.index = None
        self.selected: dict[str, list[dict]] = {}
        self.split = None
        self._eval_items: dict[str, dict[str, Any]] = {}
        self._most_frequent: tuple[str, str] | None = None

    # -- shards ---------------------------------------------------------------------------------

    def shard_dir(self) -> Path:
        if self.shards:
            return Path(self.shards)
        return Path(self.demo_shards_dir or "data/demo_shards")

    def prepare_data(self) -> None:
        """Builds the demo world's shards on first use (rank 0 only; resumable)."""
        if self.shards or getattr(self, "_demo_shards_ready", False):
            return
        from egohorizon.data.demo import ensure_demo_world, load_demo_world
        from egohorizon.data.shards.sources import demo_sources
        from egohorizon.data.shards.writer import build_shards
        from egohorizon.data.windows.sample import WindowConfig

        world = load_demo_world(ensure_demo_world(self.demo_dir))
        days = sorted({r.day for r in world.recordings})[: self.demo_days] if self.demo_days else None
        recordings = [r for r in world.recordings if days is None or r.day in days]
        config = WindowConfig(long_side=self.long_side, crop_size=self.crop_size, stride=self.demo_window_stride)
        build_shards(demo_sources(world, frame_size=self.long_side, recordings=recordings), self.shard_dir(),
                     config=config, deid="auto")
        self._demo_shards_ready = True  # prepare() built them; Lightning's prepare_data call finds them

    def prepare(self) -> None:
        """The shards (the demo world's are built on first use) and the day split."""
        self.prepare_data()
        self.setup()

    @property
    def prompt(self):
        from egohorizon.prompts import load_prompt
        from egohorizon.prompts.caption import CAPTION_PROMPT_NAME

        return load_prompt(self.prompt_name or CAPTION_PROMPT_NAME)

    def window_metas(self, split: str, limit: int | None = None):
        """The JSON members (window metadata: times, transcript, events) of the split's shards, in
        shard order, without decoding an image; at most ``limit``."""
        import json
        import tarfile

        if self.index is None:
            self.setup()
        count = 0
        for url in self.index.urls(self.selected[split]):
            with tarfile.open(url) as tar:
                for member in tar:
                    if limit is not None and count >= limit:
                        return
                    if member.name.endswith(".json"):
                        count += 1
                        yield json.loads(tar.extractfile(member).read())

    def training_corpus(self) -> list[str]:
        """Prompts and answers of up to ``max_corpus_windows`` training windows, read from the shards'
        JSON members only (no image is decoded): what the tiny backbone's tokenizer learns from."""
        from egohorizon.formats.caption import render_caption_answer
        from egohorizon.prompts.caption import render_caption_prompt

        texts: list[str] = []
        for meta in self.window_metas("train", limit=self.max_corpus_windows):
            times = [f["t"] - meta["start"] for f in meta["frames"]]
            texts.append(render_caption_prompt(times, meta["transcript"], prompt=self.prompt_name,
                                               screen_text=meta.get("screen_text") or ()))
            texts.append(render_caption_answer(meta["events"], meta["start"], meta["end"]) or "")
        return texts

    def training_answers(self) -> list[str]:
        """The distinct targets of the training windows (their gold actions in the caption format), in
        a fixed order: the answer set of ``model.generation.answer_set=train`` (models.caption)."""
        from egohorizon.formats.caption import render_caption_answer

        answers = {render_caption_answer(m["events"], m["start"], m["end"]) for m in self.window_metas("train")}
        return sorted(a for a in answers if a)

    def eval_items(self, split: str) -> dict[str, Any]:
        """The split's windows that have gold level-1 actions, by window key, as ``CaptionWindow``
        records (what the caption task scores); the activity type is the window's longest level-4
        event (``egohorizon.metrics.captions.activity_of``)."""
        if split not in self._eval_items:
            windows = [w for w in map(caption_window, self.window_metas(split)) if w.actions]
            self._eval_items[split] = {w.id: w for w in windows}
        return self._eval_items[split]

    def eval_options(self, split: str) -> dict[str, Any]:
        """What scoring needs from the training days: their most frequent gold action and scene (the
        baseline)."""
        if self._most_frequent is None:
            from egohorizon.metrics.captions import most_frequent_action, most_frequent_scene

            train = list(map(caption_window, self.window_metas("train")))
            self._most_frequent = (most_frequent_action(train) or "", most_frequent_scene(train) or "")
        action, scene = self._most_frequent
        return {"most_frequent_action": action or None, "most_frequent_scene": scene or None}

    def setup(self, stage: str | None = None) -> None:
        from egohorizon.data.shards.index import ShardIndex

        if self.index is not None:
            return
        self.index = ShardIndex.load(self.shard_dir())
        self.index.require_screen_text()  # the prompt's "Text on screen:" line comes from the shards
        split = self.split = self._day_split()  # day_split() hands it to the run's split record
        for name in SPLITS:
            self.selected[name] = self.index.select(days=split.days_in(name))
        unknown = [e["path"] for e in self.index.shards if split.get(e["participant"], e["day"]) is None]
        if unknown:
            log.warning("%d shard(s) of days the split does not know are left out: %s", len(unknown), unknown[:5])
        log.info("caption shards per split: %s", {k: len(v) for k, v in self.selected.items()})

    def _day_split(self):
        from egohorizon.data.splits import DaySplit, make_day_split
        from egohorizon.schema import Event

        if self.split_file:
            return DaySplit.load(self.split_file)
        # One stand-in event per (participant, day) at the day's first window: make_day_split orders
        # and draws days exactly as it does for the event files.
        stand_ins = [Event(id=f"{p}/{d}", participant=p, day=d, session="", level=1, start=t, end=t, text="")
                     for (p, d), t in sorted(self.index.participant_days().items())]
        return make_day_split(stand_ins, **self.split_args)

    # -- loaders --------------------------------------------------------------------------------

    def _loader(self, split: str):
        from egohorizon.data.shards.stream import WindowStream, make_loader

        if self.index is None:
            self.setup()
        train = split == "train"
        entries = self.selected[split]
        if not entries:
            raise ConfigError(f"no shards for the {split!r} split in {self.shard_dir()}: the split has no days "
                              "with shards (check data.split_file or the val/test fractions)")
        if self.processor is not None:  # model inputs for a vision-language model
            model_inputs = CaptionSamples(self.frames_per_window, self.inputs.crops, self.prompt_name,
                                          random_frames=train and self.random_train_frames, seed=self.seed)
            collate, into_batch = KeyedVisionTextCollator(self.processor, with_prompts=not train), False
        else:  # raw window tensors, decoded straight into the batch (egohorizon.data.shards.arena)
            model_inputs, collate, into_batch = self.inputs, collate_windows, True
        stream = WindowStream(self.index.urls(entries), expected_samples=self.index.expected_samples(),
                              batch_size=self.batch_size if train else self.eval_batch_size,
                              model_inputs=model_inputs, collate=collate, shuffle=train,
                              shuffle_buffer=self.shuffle_buffer, seed=self.seed,
                              resampled=self.resampled and train, crops=self.inputs.crops,
                              decode_into_batch=into_batch)
        epoch_batches = None
        if train and self.resampled:
            epoch_batches = max(1, self.epoch_samples // (self.batch_size * stream.world_size))
        return make_loader(stream, num_workers=self.num_workers, max_bad_fraction=self.max_bad_fraction,
                           min_samples=self.min_samples_for_check, epoch_batches=epoch_batches,
                           report_every=self.log_every,
                           on_counters=lambda counters, final: self._log_counters(split, counters, final))

    def train_dataloader(self):
        return self._loader("train")

    def val_dataloader(self):
        return self._loader("val")

    def test_dataloader(self):
        return self._loader("test")

    def _log_counters(self, split: str, counters: dict[str, float], final: bool) -> None:
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.logger is not None:
            trainer.logger.log_metrics({f"{split}/data_{k}": v for k, v in counters.items()},
                                       step=trainer.global_step)
        if final and (trainer is None or trainer.is_global_zero):
            log.info("%s stream: %d samples, %d bad (%.2f%%), %d shard errors", split, counters["samples_ok"],
                     counters["samples_bad"], 100 * counters["bad_fraction"], counters["shard_errors"])
