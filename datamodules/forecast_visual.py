"""VisualForecastDataModule (issue 15): forecast points whose prompt also carries what the wearer saw.

The points, the day split, the leakage guard, the answer and the scoring are those of
``ForecastDataModule``; what is added is the vision input of the task core (``VisionTextCollator``):

- ``frames`` (M): the last M frames strictly before ``t0``, ``frame_stride`` seconds apart (1 Hz frames
  of the participant's recordings; a frame time in a pause of recording is skipped), gaze drawn as a
  red ring, ``frame_size`` pixels;
- ``gaze_crop``: a ``crop_size`` close-up around the gaze in the latest of those frames (rendered at
  twice ``frame_size``; when the gaze is missing or off the frame, the centre).

``frames_before`` chooses the times and never returns one at or after ``t0`` (tests/unit/glue/test_forecast_visual.py).
Frames come from a demo world rendered on demand: ``demo_dir`` (generated on first use, with
``cue_switches`` when set: then points are marked ``meta.cue_driven``). With ``frames: 0`` and
``gaze_crop: false`` the module is the text-only ``ForecastDataModule``, batch for batch.

``memory`` (issue 15, item 3) adds the person's past moments most like the present one and what followed
them (``egohorizon.prompts.forecast_visual_memory`` over ``egohorizon.memory.MemoryIndex``), at most
``memory_items`` of them within ``memory_tokens`` tokens; everything retrieved ends before ``t0``.
"""

from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from torch.utils.data import DataLoader, Dataset

from datamodules.forecast import ForecastDataModule
from egohorizon.errors import ConfigError
from egohorizon.schema import ForecastPoint
from egohorizon.setting_bounds import Bound

log = logging.getLogger(__name__)


def frames_before(recordings: Sequence[tuple[float, float]], t0: float, m: int, stride: int) -> list[float]:
    """The times of the last ``m`` 1 Hz frames strictly before ``t0``, ``stride`` s apart, oldest first.

    ``recordings`` are the participant's ``(start, end)`` spans sorted by start; frames are at whole
    seconds ``start <= t < end`` (``DemoWorld.frame_times``). A time that falls in a pause is skipped, so
    fewer than ``m`` come back at the start of a recording."""
    if m <= 0:
        return []
    if stride < 1:
        raise ConfigError(f"data.frame_stride: expected >= 1, got {stride}")
    latest = math.ceil(t0) - 1  # the last whole second before t0
    starts = [s for s, _ in recordings]
    times = []
    for i in range(m):
        t = latest - i * stride
        j = bisect.bisect_right(starts, t) - 1
        if j >= 0 and recordings[j][0] <= t < recordings[j][1]:
            times.append(float(t))
    return sorted(times)


class GroundedPoints(Dataset):
    """Point -> ``{text, images, target, key, k}`` for ``VisionTextCollator`` (frames rendered here)."""

    def __init__(self, module: VisualForecastDataModule, points: list[ForecastPoint], with_target: bool):
        self.module, self.points, self.with_target = module, points, with_target

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, index: int) -> dict[str, Any]:
        point = self.points[index]
        text, images = self.module.grounded_input(point)
        return {"text": text, "images": images, "key": point.id, "k": point.k,
                "target": self.module.render_answer(point) if self.with_target else None}


class GroundedCollator:
    def __init__(self, processor, with_prompts: bool):
        from egohorizon.backbones.collate import VisionTextCollator

        self.collate = VisionTextCollator(processor, with_prompts=with_prompts)

    def __call__(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        batch = self.collate(samples)
        batch["ids"] = [s["key"] for s in samples]
        batch["k"] = [s["k"] for s in samples]
        return batch


class VisualForecastDataModule(ForecastDataModule):
    # 0 frames is the text-only variant; a stride or size must be positive
    SETTING_BOUNDS: ClassVar[tuple[Bound, ...]] = (
        *ForecastDataModule.SETTING_BOUNDS,
        Bound("frames", low=0),
        Bound("frame_stride", integer=False, low=0, above=True),
        Bound("frame_size", low=1),
        Bound("crop_size", low=1),
        Bound("memory_items", low=0),
    )

    def __init__(self, frames: int = 4, frame_stride: int = 2, gaze_crop: bool = True, frame_size: int = 112,
                 crop_size: int = 56, cue_switches: bool = True, cue_driven_train_repeat: int = 1,
                 memory: bool = False, memory_tokens: int = 256, memory_items: int = 4,
                 memory_embedder: str = "words", keep_cue_driven_eval: bool = True,
                 keep_cue_driven_train: bool = False, hide_cues: bool = False, cue_matched_uncued: int = 0,
                 **kwargs):
        """``cue_driven_train_repeat``: each cue-driven training point is shown that many times per
        epoch (they are ~3% of the points), by the text-only path too, so every variant trains on the
        same examples; ``keep_cue_driven_eval``: every cue-driven val/test point joins the capped sample
        (their own rows need them; the all-points rows then over-represent them, so the study reports
        both); ``keep_cue_driven_train``: every cue-driven training point joins the capped training
        sample (a cap of 300 points per level leaves ~7 of them: too few to learn what a cue means);
        ``hide_cues``: the frames are rendered as if no cue had appeared (no overlay, the renderer's own
        gaze; the points and their cue marks unchanged): the counterfactual that tells whether a model's
        answer comes from the cue; ``cue_matched_uncued`` (with ``keep_cue_driven_train``): per cue-driven
        training point, up to that many training points of the same kind of context whose next action
        is not a cue-able switch (``egohorizon.data.demo.cues.matching``), so that the context alone cannot
        tell whether the switch comes."""
        super().__init__(**kwargs)
        if isinstance(cue_matched_uncued, bool) or not isinstance(cue_matched_uncued, int) or cue_matched_uncued < 0:
            raise ConfigError(f"data.cue_matched_uncued: expected an integer >= 0, got {cue_matched_uncued!r}")
        if frames < 0 or frame_size < 16 or crop_size < 8 or cue_driven_train_repeat < 1 or memory_tokens < 0:
            raise ConfigError(f"data: expected frames >= 0, frame_size >= 16, crop_size >= 8, "
                              f"cue_driven_train_repeat >= 1, memory_tokens >= 0; got {frames}, {frame_size}, "
                              f"{crop_size}, {cue_driven_train_repeat}, {memory_tokens}")
        self.frames, self.frame_stride, self.gaze_crop = frames, frame_stride, gaze_crop
        self.frame_size, self.crop_size, self.cue_switches = frame_size, crop_size, cue_switches
        self.cue_driven_train_repeat, self.keep_cue_driven_eval = cue_driven_train_repeat, keep_cue_driven_eval
        self.keep_cue_driven_train, self.hide_cues = keep_cue_driven_train, hide_cues
        self.cue_matched_uncued = cue_matched_uncued
        self.memory, self.memory_tokens, self.memory_items = memory, memory_tokens, memory_items
        self.memory_embedder = memory_embedder
        self._world = None
        self._spans: dict[str, list[tuple[float, float]]] = {}
        self._memory = None

    @property
    def grounded(self) -> bool:
        """False: the text-only forecaster (the parent's datasets and collators, unchanged)."""
        return self.frames > 0 or self.gaze_crop or self.memory

    @property
    def visual(self) -> bool:
        return self.frames > 0 or self.gaze_crop

    # -- the world, its frames and the cue marks ----------------------------------------------------

    def world(self):
        if self._world is None:
            from egohorizon.data.demo import ensure_demo_world, load_demo_world

            if self.events_path:
                raise ConfigError("the visual forecaster renders frames of a demo world: set data.demo_dir, "
                                  "not data.events")
            path = self._ready_world()
            self._world = load_demo_world(path or ensure_demo_world(self.demo_dir, cue_switches=self.cue_switches))
            spans: dict[str, list[tuple[float, float]]] = {}
            for r in self._world.recordings:
                spans.setdefault(r.participant, []).append((r.start, r.end))
            self._spans = {p: sorted(s) for p, s in spans.items()}
        return self._world

    def _ready_world(self):
        """A world already in ``demo_dir`` with the wanted cue option is used as it is (a test's small one,
        or one of other arguments); otherwise the default-sized one is ensured there."""
        import json
        from pathlib import Path

        if not self.demo_dir or not (Path(self.demo_dir) / "world.json").is_file():
            return None
        meta = json.loads((Path(self.demo_dir) / "world.json").read_text(encoding="utf-8"))
        return self.demo_dir if ("cue_switches" in meta) == bool(self.cue_switches) else None

    def load_events(self):
        if self.events_path:
            return super().load_events()
        return self.world().events

    def _build_points(self):
        points, events, split = super()._build_points()
        world = self.world() if self.events_path is None else None
        if world is not None and world.cues is not None:  # marked before the points are saved
            from egohorizon.data.demo.cues.switches import mark_cue_points

            for name in ("train", "val", "test"):
                mark_cue_points(points[name], world.cues)
        kept = [name for name, keep in (("train", self.keep_cue_driven_train), ("val", self.keep_cue_driven_eval),
                                        ("test", self.keep_cue_driven_eval)) if keep]
        if world is not None and world.cues is not None and kept:
            # The caps sample ~3% cue-driven points; every cue-driven point of the kept splits is added so
            # the model can learn them and the cue-driven rows have enough points. The other points stay
            # the capped, seeded sample.
            from egohorizon.data.demo.cues.switches import mark_cue_points
            from egohorizon.data.points.build import build_points

            every = build_points(events, split, levels=self.levels, ks=self.ks, n_context=self.n_context,
                                 seed=self.seed, source=self.source, max_points=None)
            for name in kept:
                mark_cue_points(every[name], world.cues)
                have = {p.id for p in points[name]}
                points[name] = sorted(points[name] + [p for p in every[name]
                                                      if p.meta["cue_driven"] and p.id not in have],
                                      key=lambda p: (p.participant, p.level, p.k, p.t0))
            if "train" in kept and self.cue_matched_uncued > 0:
                points["train"] = self._with_matched_uncued(points["train"], every["train"], events)
        return points, events, split

    def _with_matched_uncued(self, train: list[ForecastPoint], every: list[ForecastPoint], events) -> list[ForecastPoint]:
        from egohorizon.data.demo.cues.matching import matched_uncued_points

        cued = [p for p in train if p.meta["cue_driven"]]
        matched = matched_uncued_points(cued, every, events, self.cue_matched_uncued, self.seed,
                                        exclude=(p.id for p in train))
        log.info("matched uncued training points: %d for %d cue-driven ones (%d per point at most)",
                 len(matched), len(cued), self.cue_matched_uncued)
        return sorted(train + matched, key=lambda p: (p.participant, p.level, p.k, p.t0))

    def prepare_points(self):
        first = self.points is None
        points = super().prepare_points()
        if first and self.events_path is None and self.world().cues is not None:
            from egohorizon.data.demo.cues.switches import mark_cue_points

            counts = {name: mark_cue_points(points[name], self.world().cues) for name in ("train", "val", "test")}
            log.info("cue-driven points: %s", counts)
        return points

    def frame_times(self, point: ForecastPoint) -> list[float]:
        if self.frames == 0:  # memory only: no world needed (an events file such as EPIC-KITCHENS works)
            return []
        self.world()
        return frames_before(self._spans.get(point.participant, []), point.t0, self.frames, self.frame_stride)

    def crop_time(self, point: ForecastPoint) -> float | None:
        if not self.gaze_crop:
            return None
        self.world()
        latest = frames_before(self._spans.get(point.participant, []), point.t0, 1, 1)
        return latest[0] if latest else None

    def _session_at(self, participant: str, t: float) -> str:
        world = self.world()
        for r in world.recordings:  # few hundred recordings: a scan is fine next to rendering
            if r.participant == participant and r.start <= t < r.end:
                return r.session
        raise ConfigError(f"no recording of {participant} at t={t}")

    def _render(self, participant: str, t: float, size: int):
        world, session = self.world(), self._session_at(participant, t)
        if self.hide_cues:  # the world's frame before its cue overlay (DemoWorld.render_frame's first step)
            from egohorizon.data.demo.render import render

            return render(world.action_at(session, t), world.seed, session, t, size)
        return world.render_frame(session, t, size)

    def _frame(self, participant: str, t: float):
        from egohorizon.data.demo.render import draw_gaze

        image, gaze, confidence = self._render(participant, t, self.frame_size)
        return draw_gaze(image, gaze, confidence)

    def _crop(self, participant: str, t: float):
        size = 2 * self.frame_size
        image, gaze, _ = self._render(participant, t, size)
        inside = gaze is not None and 0 <= gaze[0] < size and 0 <= gaze[1] < size
        cx, cy = gaze if inside else (size / 2, size / 2)
        half = self.crop_size / 2
        cx, cy = min(max(cx, half), size - half), min(max(cy, half), size - half)
        return image.crop((round(cx - half), round(cy - half), round(cx - half) + self.crop_size,
                           round(cy - half) + self.crop_size))

    # -- prompts -------------------------------------------------------------------------------------

    def memory_lines(self, point: ForecastPoint) -> list[str]:
        if not self.memory:
            return []
        from egohorizon.prompts.forecast_visual_memory import memory_lines, past_situations

        if self._memory is None:
            from egohorizon.memory import MemoryIndex, text_embedder

            self._memory = MemoryIndex.from_sources(self.load_events(), embed=text_embedder(self.memory_embedder),
                                                    levels=self.levels)
        count = None
        if self.tokenizer is not None:
            count = lambda text: len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return memory_lines(past_situations(self._memory, point, k=self.memory_items), self.memory_tokens, count)

    def grounded_text(self, point: ForecastPoint, image_mark: str | None = None) -> str:
        from egohorizon.backbones.collate import IMAGE_PLACEHOLDER
        from egohorizon.prompts.forecast_visual import render_grounded_prompt

        text = render_grounded_prompt(point, self.frame_times(point), self.crop_time(point), self.memory_lines(point),
                                      prompt=self.prompt_name, n_candidates=1,
                                      image_mark=IMAGE_PLACEHOLDER if image_mark is None else image_mark)
        if image_mark is None and self._chat_template_on():
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                      add_generation_prompt=True, enable_thinking=False)
        return text

    def grounded_input(self, point: ForecastPoint) -> tuple[str, list]:
        images = [self._frame(point.participant, t) for t in self.frame_times(point)]
        crop = self.crop_time(point)
        if crop is not None:
            images.append(self._crop(point.participant, crop))
        return self.grounded_text(point), images

    def training_corpus(self) -> list[str]:
        if not self.grounded:
            return super().training_corpus()
        texts = []
        for point in self.prepare_points()["train"]:
            texts += [self.grounded_text(point, image_mark=""), self.render_answer(point)]
        return texts

    # -- loaders -------------------------------------------------------------------------------------

    def setup(self, stage: str | None = None) -> None:
        if not self.grounded:
            fresh = "train" not in self._datasets
            super().setup(stage)
            if fresh and "train" in self._datasets and self.cue_driven_train_repeat > 1:
                self._repeat_encoded_train()
            return
        if self.visual and self.processor is None:
            raise ConfigError("data.frames / data.gaze_crop feed images: the backbone needs an image processor")
        self.prepare_points()

    def _repeat_encoded_train(self) -> None:
        """The text-only path's ``cue_driven_train_repeat``: the same extra examples as ``_train_points``."""
        from datamodules.forecast import EncodedPoints

        cued = {p.id for p in self.points["train"] if p.meta.get("cue_driven")}
        items = self._datasets["train"].items
        extra = [i for i in items if i["id"] in cued] * (self.cue_driven_train_repeat - 1)
        self._datasets["train"] = EncodedPoints(items + extra)

    def _train_points(self) -> list[ForecastPoint]:
        points = self.points["train"]
        extra = [p for p in points if p.meta.get("cue_driven")] * (self.cue_driven_train_repeat - 1)
        return points + extra

    def _collator(self, with_prompts: bool):
        if self.processor is not None:
            return GroundedCollator(self.processor, with_prompts)
        return TextGroundedCollator(self.tokenizer, with_prompts)

    def train_dataloader(self) -> DataLoader:
        if not self.grounded:
            return super().train_dataloader()
        import torch

        data = GroundedPoints(self, self._train_points(), with_target=True)
        return DataLoader(data, batch_size=self.batch_size, shuffle=True, collate_fn=self._collator(False),
                          num_workers=self.num_workers, generator=torch.Generator().manual_seed(self.seed))

    def _eval_loader(self, name: str) -> DataLoader:
        if not self.grounded:
            return super()._eval_loader(name)
        points = sorted(self.points[name], key=lambda p: (p.k, p.id))  # one K per batch where possible
        return DataLoader(GroundedPoints(self, points, with_target=True), batch_size=self.eval_batch_size,
                          shuffle=False, collate_fn=self._collator(True), num_workers=self.num_workers)

    def mean_context_shown(self, name: str = "test") -> float | None:
        points = self.prepare_points()[name]
        return sum(len(p.context) for p in points) / len(points) if points else None

    def cue_driven_ids(self, name: str) -> set[str]:
        return {p.id for p in self.prepare_points()[name] if p.meta.get("cue_driven")}


class TextGroundedCollator:
    """Memory without frames on a text-only backbone: the text collators of the forecast datamodule."""

    def __init__(self, tokenizer, with_prompts: bool):
        self.tokenizer, self.with_prompts = tokenizer, with_prompts

    def __call__(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        from datamodules.forecast import EvalCollator, TrainCollator

        items = []
        for s in samples:
            if s["images"]:
                raise ConfigError("a text-only backbone cannot take frames (data.frames=0, data.gaze_crop=false)")
            answer = self.tokenizer(s["target"], add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            items.append({"prompt_ids": self.tokenizer(s["text"], add_special_tokens=False)["input_ids"],
                          "answer_ids": answer, "id": s["key"], "k": s["k"]})
        collate = EvalCollator if self.with_prompts else TrainCollator
        return collate(self.tokenizer.pad_token_id)(items)
