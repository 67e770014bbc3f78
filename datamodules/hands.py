"""HandsDataModule: short first-person clips (issue 14) -> frames sampled at ``fps`` -> the hands text.

Clips, gold boxes and segments come from a folder written by ``egohorizon.data.demo.hands.clips`` (built on
first use into ``demo_dir``) or, for real frames with MediaPipe's pseudo-labels, by ``egohorizon hands
clips`` (``clips_dir``; ``pipelines.hands.pseudo``); the split is its ``split.json`` (whole days held
out). Frames are drawn from a demo clip's record, or read from a real clip's frame files, when a
sample is read, at ``fps`` frames per second over the clip (the sampling rate sent to the model). The target is ``formats.hands``'s text: the gold boxes of
the sampled frames (the nearest annotated frame) in the pixels of the image the processor makes
(``backbones.boxes.ResizeMapping``), then every gold segment of the clip.

Still frames without sides (the EgoHands frames, ``frames_dir``; ``pipelines.hands.egohands``) are one-frame
clips with ``hand`` boxes, split by video (``test_video``, ``val_video``; the rest train, ``train_fraction`` of
them in a seeded order, so 25 % of the frames are inside 50 %); with no ``test_video`` every frame trains and
``val_video`` only says when to stop (its frames are trained on too). ``augment`` flips and crops the
training frames, boxes moved with them (``egohorizon.data.frame_augment``).

``eval_options`` hands the task the training clips' segments (the training-prior baselines' labels)
and the MediaPipe baseline's boxes on the same sampled frames (``pipelines.hands.detector``), computed
once per split.

Why one file: it is one LightningDataModule (the TaskDataModule interface over demo clips, real clips
and still frames, the clip samples it reads, their collation); clips, splits and augmentation come from
egohorizon.data and egohorizon.pipelines.hands.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, ClassVar

from torch.utils.data import DataLoader, Dataset

from datamodules.base import TaskDataModule
from egohorizon.backbones.collate import KeyedVisionTextCollator
from egohorizon.data.frame_augment import draw_flip_crop
from egohorizon.errors import ConfigError, DataError
from egohorizon.setting_bounds import LOADER_BOUNDS, Bound

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
FPS = 30


def frame_times(duration: float, fps: float) -> list[float]:
    """Sample times 0, 1/fps, ... before the clip's end (seconds, 2 decimals)."""
    if fps <= 0:
        raise ConfigError(f"data.fps: expected > 0 frames per second, got {fps}")
    count = max(1, int(duration * fps - 1e-9) + 1)
    return [round(k / fps, 2) for k in range(count) if k / fps < duration]


def target_boxes(item, mapping) -> list[tuple[float, str, list[int]]]:
    """The gold boxes of the sampled frames (each time's nearest annotated frame) in model pixels."""
    by_frame: dict[int, dict[str, list[list[float]]]] = {}
    grid = 1
    for box in item.boxes:
        named = by_frame.setdefault(box["frame"], {})
        # one box per side and frame; hand-agnostic ("hand") boxes all stay
        named[box["hand"]] = [*named.get(box["hand"], []), box["box"]] if box["hand"] == "hand" else [box["box"]]
        grid = box.get("grid") or grid
    out = []
    for t in item.frame_times:
        frame = grid * round(FPS * t / grid)
        for hand, boxes in sorted(by_frame.get(frame, {}).items()):
            out += [(t, hand, mapping.to_model(box)) for box in boxes]
    return out


def clip_images(record: dict, folder: Path | None, times: list[float]) -> list:
    """The clip's frames at ``times``: a real-frame clip (``egohorizon hands clips``) lists its frame
    files by 30 fps index (each time takes the nearest one); a demo clip is drawn from its seed."""
    if "frames" in record:
        import numpy as np
        from PIL import Image

        if folder is None:
            raise ConfigError(f"clip {record['clip']}: its frame files need the clip folder")
        listed = {int(index): file for index, file in record["frames"].items()}
        if not listed:
            raise ConfigError(f"{folder / 'clips.jsonl'}: clip {record['clip']} lists no frame files")
        images = []
        for t in times:
            file = listed[min(listed, key=lambda index: (abs(index - FPS * t), index))]
            try:
                with Image.open(folder / file) as opened:
                    images.append(np.asarray(opened.convert("RGB")))
            except OSError as error:
                raise DataError(f"clip {record['clip']}: cannot read frame {folder / file} ({error})") from None
        return images
    from egohorizon.data.demo.hands.clips import clip_from_record
    from egohorizon.data.demo.hands.render import render_hand_frame

    clip = clip_from_record(record)
    return [render_hand_frame(clip, t) for t in times]


class HandClipSamples(Dataset):
    """Clip -> ``{text, images, target, key}`` (picklable: frames are drawn or read in the worker); None for
    a clip with an unreadable frame file, which the collator leaves out and counts."""

    def __init__(self, items: list, clips: dict[str, dict], mapping, prompt: str | None, folder: Path | None = None,
                 augment: dict[str, Any] | None = None):
        self.items, self.clips, self.mapping, self.prompt, self.folder = items, clips, mapping, prompt, folder
        self.augment = augment  # draw_flip_crop's settings (training only), or None

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        from egohorizon.formats.hands import render_hand_text
        from egohorizon.prompts.hands import render_hands_prompt

        item = self.items[i]
        record = self.clips[item.id]
        try:
            images = clip_images(record, self.folder, item.frame_times)
        except DataError as error:
            # A damaged frame file: the clip leaves its batch and is counted there (collate's "skipped";
            # the module logs <split>/skipped_samples, an unscored held-out clip is scored invalid).
            log.warning("%s: the clip is skipped", error)
            return None
        if self.augment:
            images, item = self._augmented(images, item)
        text = render_hands_prompt(item.frame_times, record["duration"], self.mapping.resized, prompt=self.prompt)
        target = render_hand_text(target_boxes(item, self.mapping), item.segments)
        return {"text": text, "images": images, "target": target, "key": item.id}

    def _augmented(self, images: list, item):
        """One flip and crop for the clip's frames and boxes (torch's generator draws the seed, so
        Lightning's seed and the workers' seeds decide it)."""
        import dataclasses

        import numpy as np
        import torch

        rng = np.random.default_rng(int(torch.randint(0, 2**31 - 1, ()).item()))
        change = draw_flip_crop(rng, tuple(item.original), **self.augment)
        boxes = []
        for box in item.boxes:
            moved = change.box(box["box"])
            if moved is not None:
                boxes.append({**box, "hand": change.hand(box["hand"]), "box": moved})
        return [change.image(image) for image in images], dataclasses.replace(item, boxes=boxes)


class HandsDataModule(TaskDataModule):
    SETTING_BOUNDS: ClassVar[tuple[Bound, ...]] = (*LOADER_BOUNDS, Bound("fps", integer=False, low=0, above=True))
    # saved beside adapters: how `hands detect --model` shows a still image (still_clip) and at what rate
    ADAPTER_SETTINGS: ClassVar[tuple[str, ...]] = (*TaskDataModule.ADAPTER_SETTINGS, "fps", "still_clip")

    def __init__(
        self,
        clips_dir: str | None = None,
        demo_dir: str | None = None,
        demo_days: int = 20,
        demo_clips_per_day: int = 15,
        demo_extra_train_days: int = 0,
        fps: float = 1.0,
        batch_size: int = 4,
        eval_batch_size: int | None = None,
        num_workers: int = 0,
        max_clips: dict[str, int] | None = None,
        mediapipe_baseline: bool = True,
        prompt: str | None = None,
        seed: int = 0,
        frames_dir: str | None = None,
        val_video: str | None = None,
        test_video: str | None = None,
        train_fraction: float = 1.0,
        augment: dict[str, Any] | None = None,
        still_clip: dict[str, Any] | None = None,
    ):
        super().__init__()
        if not 0 < float(train_fraction) <= 1:
            raise ConfigError(f"data.train_fraction: expected a number in (0, 1], got {train_fraction}")
        if frames_dir and clips_dir:
            raise ConfigError("data.frames_dir and data.clips_dir: give one source of frames, not both")
        # still_clip: how `hands detect --model` shows a still image to an adapter trained here (saved with it)
        self.frames_dir, self.val_video, self.test_video = frames_dir, val_video, test_video
        self.train_fraction, self.augment = float(train_fraction), dict(augment) if augment else None
        self._frames_folder: Path | None = None
        frame_times(1.0, fps)  # checks fps
        self.clips_dir, self.demo_dir = clips_dir, demo_dir
        self.demo_days, self.demo_clips_per_day = demo_days, demo_clips_per_day
        self.demo_extra_train_days = demo_extra_train_days
        self.fps, self.batch_size = fps, batch_size
        self.eval_batch_size, self.num_workers = eval_batch_size or batch_size, num_workers
        self.max_clips, self.mediapipe_baseline = dict(max_clips or {}), mediapipe_baseline
        self.prompt_name, self.seed = prompt, seed
        self.clips: dict[str, dict] = {}
        self.by_split: dict[str, list] = {}
        self.mapping = None
        self._baseline: dict[str, list[dict]] = {}

    def _folder(self) -> Path:
        if self.frames_dir:
            return self._frames_root() / "images"
        if self.clips_dir:
            return Path(self.clips_dir)
        out = Path(self.demo_dir or "data/demo_hands")
        held_out = max(1, round(0.15 * self.demo_days))  # validation days, and as many test days
        if not (out / "clips.jsonl").is_file():
            from egohorizon.data.demo.hands.clips import build_hand_clips

            log.info("demo hand clips: %s", build_hand_clips(out, seed=self.seed, days=self.demo_days,
                                                             clips_per_day=self.demo_clips_per_day,
                                                             extra_train_days=self.demo_extra_train_days,
                                                             val_days=held_out, test_days=held_out))
        elif (out / "split.json").is_file():
            # a folder built earlier with other settings would be used silently: compare the day counts
            from egohorizon.data.splits import DaySplit

            days = [name for by_day in DaySplit.load(out / "split.json").days.values() for name in by_day.values()]
            found = {name: days.count(name) for name in SPLITS}
            wanted = {"train": self.demo_days - 2 * held_out + self.demo_extra_train_days, "val": held_out,
                      "test": held_out}
            if found != wanted:
                raise ConfigError(f"{out}: built with {found} days per split, the config asks for {wanted} "
                                  f"(data.demo_days, data.demo_extra_train_days): set data.demo_dir to another folder")
        return out

    def prepare(self) -> None:
        """Clip records, gold boxes and segments by split (each clip's split is its day's)."""
        if self.by_split:
            return
        if self.frames_dir:
            self._prepare_frames()
            return
        from egohorizon.data.splits import DaySplit
        from egohorizon.schema import HandBox, Segment, load_jsonl
        from egohorizon.tasks.hands import HandItem

        folder = self._folder()
        split = DaySplit.load(folder / "split.json")
        boxes: dict[str, list[dict]] = {}
        for box in load_jsonl(folder / "boxes.jsonl", HandBox):
            boxes.setdefault(box.clip, []).append({"clip": box.clip, "frame": box.frame, "hand": box.hand,
                                                   "box": box.box, "grid": box.grid})
        segments: dict[str, list[dict]] = {}
        for s in load_jsonl(folder / "segments.jsonl", Segment):
            segments.setdefault(s.clip, []).append({"kind": s.kind, "hand": s.hand, "start": s.start, "end": s.end,
                                                    "label": s.label})
        self.by_split = {name: [] for name in SPLITS}
        with (folder / "clips.jsonl").open() as handle:
            for line_no, line in enumerate(handle, start=1):
                record = json.loads(line)
                name = split.split_of(record["participant"], record["day"])
                if name not in self.by_split:
                    raise ConfigError(f"{folder / 'clips.jsonl'}, line {line_no}: day {record['day']!r} is in "
                                      f"no split of {folder / 'split.json'}")
                self.clips[record["clip"]] = record
                self.by_split[name].append(HandItem(
                    id=record["clip"], boxes=boxes.get(record["clip"], []), segments=segments.get(record["clip"], []),
                    frame_times=frame_times(record["duration"], self.fps),
                    original=(record["height"], record["width"])))
        for name, limit in self.max_clips.items():
            self.by_split[name] = self.by_split[name][:limit]
        log.info("hand clips per split: %s, %g frames per second", {k: len(v) for k, v in self.by_split.items()},
                 self.fps)

    def _frames_root(self) -> Path:
        from egohorizon.pipelines.hands.egohands import find_frames

        if self._frames_folder is None:
            self._frames_folder = find_frames(self.frames_dir)
        return self._frames_folder

    def _prepare_frames(self) -> None:
        """Each still frame is a one-frame clip (time 0) of its video; gold boxes are ``hand`` boxes."""
        import random

        from egohorizon.pipelines.hands.egohands import fold_videos, read_frames
        from egohorizon.tasks.hands import HandItem

        frames = read_frames(self._frames_root())
        videos = sorted({f.video for f in frames})
        if self.val_video is None:
            raise ConfigError(f"data.val_video: name the video that chooses the checkpoint (one of {videos})")
        if self.test_video is None:
            if self.val_video not in videos:
                raise ConfigError(f"data.val_video={self.val_video!r}: not one of the frames' videos {videos}")
            splits = dict.fromkeys(videos, "train")
        else:
            splits = fold_videos(videos, self.test_video, self.val_video)
        self.by_split = {name: [] for name in SPLITS}
        duration = 1.0 / self.fps  # one frame, at time 0
        for frame in frames:
            clip = frame.name.rsplit(".", 1)[0]
            self.clips[clip] = {"clip": clip, "frames": {"0": frame.name}, "duration": duration,
                                "height": frame.height, "width": frame.width, "participant": frame.video,
                                "day": frame.video}
            item = HandItem(id=clip, boxes=[{"clip": clip, "frame": 0, "hand": "hand", "box": box}
                                            for box in frame.boxes],
                            frame_times=[0.0], original=(frame.height, frame.width), agnostic=True)
            self.by_split[splits[frame.video]].append(item)
            if self.test_video is None and frame.video == self.val_video:
                self.by_split["val"].append(item)  # trained on too: it only says when to stop
        train = self.by_split["train"]
        random.Random(self.seed).shuffle(train)  # one order per seed: a smaller fraction is a prefix
        keep = max(1, round(self.train_fraction * len(train)))
        self.by_split["train"] = sorted(train[:keep], key=lambda item: item.id)
        for name, limit in self.max_clips.items():
            self.by_split[name] = self.by_split[name][:limit]
        log.info("still frames per split (videos %s): %s", splits, {k: len(v) for k, v in self.by_split.items()})

    def set_processor(self, processor) -> None:
        from egohorizon.backbones.boxes import ResizeMapping

        self.processor = processor
        if processor is None:
            return
        self.prepare()
        sizes = {item.original for items in self.by_split.values() for item in items}
        if len(sizes) != 1:
            raise ConfigError(f"hand clips of several frame sizes {sorted(sizes)}: one size per run")
        self.mapping = ResizeMapping.for_processor(processor, *sizes.pop())
        for items in self.by_split.values():
            for item in items:
                item.resized, item.letterbox = self.mapping.resized, self.mapping.letterbox

    def training_corpus(self) -> list[str]:
        """Prompts and targets of the training clips (boxes in frame pixels: same words and digits)."""
        from egohorizon.backbones.boxes import ResizeMapping
        from egohorizon.formats.hands import render_hand_text
        from egohorizon.prompts.hands import render_hands_prompt

        self.prepare()
        texts = []
        for item in self.by_split["train"]:
            identity = ResizeMapping(item.original, item.original)
            texts.append(render_hands_prompt(item.frame_times, self.clips[item.id]["duration"], item.original,
                                             prompt=self.prompt_name, image_mark=""))
            texts.append(render_hand_text(target_boxes(item, identity), item.segments))
        return texts

    def day_split(self):
        """The clip folder's own ``split.json`` (whole days held out); for still frames, each video is a day."""
        from egohorizon.data.splits import DaySplit

        if self.frames_dir:
            self.prepare()
            days: dict[str, dict[str, str]] = {}
            for name in ("train", "val", "test"):  # a video both trained on and validated on is a training day
                for item in self.by_split[name]:
                    video = self.clips[item.id]["participant"]
                    days.setdefault(video, {}).setdefault(video, name)
            return DaySplit(days=days, settings={"source": str(self._frames_root()), "test_video": self.test_video,
                                                 "val_video": self.val_video})

        return DaySplit.load(self._folder() / "split.json")

    def item_days(self, split: str) -> dict[str, set[tuple[str, str]]]:
        """A clip's day is in its ``clips.jsonl`` record (the HandItem does not carry it)."""
        return {item_id: {(self.clips[item_id]["participant"], self.clips[item_id]["day"])}
                for item_id in self.eval_items(split)}

    def eval_items(self, split: str) -> dict[str, Any]:
        self.prepare()
        return {item.id: item for item in self.by_split[split]}

    def eval_options(self, split: str) -> dict[str, Any]:
        """The training clips' segments and boxes (for the training-prior baselines) and the MediaPipe
        baseline's boxes on the frames the model saw (t = frame time, computed once per split)."""
        self.prepare()
        scored = {item.id for item in self.by_split[split]}
        # still frames trained on and validated on (no test video) give the prior none of their own boxes
        train = [item for item in self.by_split["train"] if item.id not in scored]
        options: dict[str, Any] = {
            "prior_segments": [{"clip": item.id, **s} for item in train for s in item.segments],
            "prior_boxes": [{"clip": item.id, "hand": b["hand"], "box": b["box"], "size": list(item.original)}
                            for item in train for b in item.boxes],
        }
        if not self.mediapipe_baseline:
            return options
        if split not in self._baseline:
            self._baseline[split] = self._mediapipe_boxes(self.by_split[split])
        return {**options, "baseline_boxes": self._baseline[split], "baseline_name": "mediapipe"}

    def _mediapipe_boxes(self, items) -> list[dict]:
        from egohorizon.pipelines.hands.detector import MediaPipeHands

        detector = MediaPipeHands()
        out = []
        for item in items:
            try:
                images = clip_images(self.clips[item.id], self._folder(), item.frame_times)
            except DataError as error:
                log.warning("%s: no MediaPipe boxes for this clip", error)
                continue
            for t, image in zip(item.frame_times, images):
                out += [{"clip": item.id, "t": t, "hand": h.hand, "box": list(h.box)} for h in detector.detect(image)]
        return out

    def _loader(self, split: str) -> DataLoader:
        if self.processor is None or self.mapping is None:
            raise ConfigError("the hands datamodule feeds frames: it needs a vision-language backbone (processor)")
        self.prepare()
        train = split == "train"
        data = HandClipSamples(self.by_split[split], self.clips, self.mapping, self.prompt_name, self._folder(),
                               augment=self.augment if train else None)
        if not len(data):
            raise ConfigError(f"no hand clips in the {split!r} split of {self._folder()}")
        return DataLoader(data, batch_size=self.batch_size if train else self.eval_batch_size, shuffle=train,
                          num_workers=self.num_workers, collate_fn=KeyedVisionTextCollator(self.processor, not train),
                          persistent_workers=self.num_workers > 0)

    def train_dataloader(self):
        return self._loader("train")

    def val_dataloader(self):
        return self._loader("val")

    def test_dataloader(self):
        return self._loader("test")
