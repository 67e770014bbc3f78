"""QADataModule: month-scale multiple-choice items (issue 13) answered from frames of the wearer's past.

For each item, frames are chosen among everything recorded before its question time
(``meta.t_question``) under a frame budget (``frame_budget``), from the window shards through the
memory's ``FrameCatalog`` (one seek and one JPEG decode per frame, whatever the month's length):

- ``sampling: uniform``: spread evenly over all earlier frames (the EgoMonth paper's baselines);
- ``sampling: retrieval``: the windows most similar to the question and its options in the
  ``MemoryIndex`` (``frames_per_window`` frames each, best first) fill the same budget, and the
  ``notes`` best event descriptions (levels ``memory_levels``, with their times) go into the prompt.

Both only ever reach entries and frames strictly before the question time (tests/unit/data/test_memory.py);
the items themselves pass ``egohorizon.data.points.leakage.check_qa_items`` when loaded. The prompt
(``egohorizon.prompts.qa``) shows each frame's time. The target is the answer letter (``target:
letter``) or the right option's own text (``target: option``, with the ``qa_option`` prompt and the
model's ``generation.strategy: options``, which answers with the option whose text it finds most likely:
a small model learns what a right answer looks like from the text far sooner than which letter points
at it; docs/qa.md section 6).

Items come from ``items`` (JSONL of ``schema.QAItem`` with ``meta.t_question`` and ``meta.split``) or,
when unset, from ``egohorizon qa generate`` on the demo world (``demo_items``; ``demo_train_per_day``:
its ``--train-per-day``); shards from ``shards``
or, when unset, the demo world's (``demo_shards_dir``, every ``demo_window_stride``-th window, built on
first use). Batches are ``VisionTextCollator``'s plus ``ids``, ``frame_times`` and ``options``. A text-only
backbone (no processor, e.g. ``backbone=smollm2_135m``) takes ``frame_budget: 0``: the same prompt text,
tokenized as the composite VLM's processor tokenizes it (no special tokens), through ``TextQACollator``;
it is the fair text-only row of a VLM built on that LM (docs/qa.md).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

from torch.utils.data import DataLoader, Dataset

from datamodules.base import TaskDataModule
from egohorizon.backbones.collate import KeyedVisionTextCollator
from egohorizon.errors import ConfigError
from egohorizon.setting_bounds import LOADER_BOUNDS, UNSET, Bound

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
SAMPLINGS = ("uniform", "retrieval")
TARGETS = ("letter", "option")
# Per-sample fields the batches carry beside the tensors: frame times (reports) and the options (which
# the model scores one by one with generation.strategy: options).
BATCH_FIELDS = ("frame_times", "options")


def target_text(item, target: str) -> str:
    """What the model learns to write for ``item``: its answer letter, or the right option's text."""
    return item.options[ord(item.answer) - ord("A")] if target == "option" else item.answer


class QAItems(Dataset):
    """Item + its chosen frames -> ``{text, images, target, key, frame_times, notes, options}`` (picklable)."""

    def __init__(self, items: list, selections: dict, catalog, prompt: str | None, with_target: bool = True,
                 target: str = "letter"):
        self.items, self.selections, self.catalog = items, selections, catalog
        self.prompt, self.with_target, self.target = prompt, with_target, target

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        from egohorizon.prompts.qa import render_qa_prompt

        item = self.items[i]
        selection = self.selections[item.id]
        images = self.catalog.read(item.participant, selection.rows) if len(selection.rows) else []
        notes = [(n.start, n.end, n.text) for n in selection.notes]
        text = render_qa_prompt(item.question, item.options, item.meta["t_question"],
                                selection.times.tolist(), notes, prompt=self.prompt)
        return {"text": text, "images": images, "target": target_text(item, self.target), "key": item.id,
                "frame_times": selection.times.tolist(), "notes": notes, "options": list(item.options)}


class QADataModule(TaskDataModule):
    # serve and compare render as many frames per window as the adapter trained on
    PROMPT_SETTINGS: ClassVar[tuple[str, ...]] = (*TaskDataModule.PROMPT_SETTINGS, "frames_per_window")
    ADAPTER_SETTINGS: ClassVar[tuple[str, ...]] = (*TaskDataModule.ADAPTER_SETTINGS, "frames_per_window")
    SETTING_BOUNDS: ClassVar[tuple[Bound, ...]] = (
        *LOADER_BOUNDS,
        Bound("frame_budget", low=0),  # 0: the text-only QA baseline (qa_demo_x4)
        Bound("frames_per_window", low=1, also=UNSET),
        Bound("long_side", low=1),
        Bound("crop_size", low=1),
    )

    def __init__(
        self,
        items: str | None = None,
        shards: str | None = None,
        events: str | None = None,
        demo_dir: str | None = None,
        demo_items: str | None = None,
        demo_shards_dir: str | None = None,
        demo_window_stride: int = 60,
        demo_train_per_day: int = 0,
        long_side: int = 112,
        crop_size: int = 32,
        frame_budget: int = 8,
        sampling: str = "uniform",
        frames_per_window: int = 2,
        notes: int = 8,
        memory_levels: list[int] | None = None,
        embedder: str = "words",
        batch_size: int = 4,
        eval_batch_size: int | None = None,
        num_workers: int = 0,
        max_items: dict[str, int] | None = None,
        prompt: str | None = None,
        target: str = "letter",
        seed: int = 0,
    ):
        super().__init__()
        if sampling not in SAMPLINGS:
            raise ConfigError(f"data.sampling: expected one of {SAMPLINGS}, got {sampling!r}")
        if target not in TARGETS:
            raise ConfigError(f"data.target: expected one of {TARGETS}, got {target!r}")
        if frame_budget < 0:
            raise ConfigError(f"data.frame_budget: expected >= 0, got {frame_budget}")
        self.items_path, self.shards, self.events_path = items, shards, events
        self.demo_dir, self.demo_items, self.demo_shards_dir = demo_dir, demo_items, demo_shards_dir
        self.demo_window_stride, self.long_side, self.crop_size = demo_window_stride, long_side, crop_size
        self.demo_train_per_day = demo_train_per_day
        self.frame_budget, self.sampling, self.frames_per_window = frame_budget, sampling, frames_per_window
        self.notes, self.memory_levels = notes, list(memory_levels or [1, 2, 3, 4, 5])
        self.embedder = embedder
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size or batch_size
        self.num_workers, self.max_items = num_workers, dict(max_items or {})
        self.prompt_name, self.target, self.seed = prompt, target, seed
        self.by_split: dict[str, list] = {}
        self.selections: dict[str, Any] = {}
        self.catalog = None
        self._world = None

    # -- preparing -------------------------------------------------------------------------------------

    def _demo_world(self):
        if self._world is None:
            from egohorizon.data.demo import ensure_demo_world, load_demo_world

            # A world already in demo_dir is used as it is (a test's small one); else the default is ensured.
            ready = self.demo_dir and (Path(self.demo_dir) / "world.json").is_file()
            self._world = load_demo_world(self.demo_dir if ready else ensure_demo_world(self.demo_dir))
        return self._world

    def _items_file(self) -> Path:
        if self.items_path:
            return Path(self.items_path)
        path = Path(self.demo_items or "data/demo_qa/qa.jsonl")
        if not path.is_file():
            from egohorizon.data.demo.qa.items import generate_items
            from egohorizon.data.points.leakage import check_qa_items
            from egohorizon.data.splits import make_day_split
            from egohorizon.schema import write_jsonl

            world = self._demo_world()
            split = make_day_split(world.events, seed=self.seed)
            items, report = generate_items(world, split, seed=self.seed, train_per_day=self.demo_train_per_day)
            check_qa_items(items, split)
            write_jsonl(path, items)
            split.save(path.with_name(f"{path.stem}.splits.json"))
            log.info("demo QA items: %s", report["per_task"])
        return path

    def _shard_dir(self) -> Path:
        if self.shards:
            return Path(self.shards)
        out = Path(self.demo_shards_dir or "data/demo_shards_qa")
        if not (out / "index.json").is_file():
            from egohorizon.data.shards.sources import demo_sources
            from egohorizon.data.shards.writer import build_shards
            from egohorizon.data.windows.sample import WindowConfig

            world = self._demo_world()
            config = WindowConfig(long_side=self.long_side, crop_size=self.crop_size, stride=self.demo_window_stride)
            build_shards(demo_sources(world, frame_size=self.long_side), out, config=config, deid="auto")
        return out

    def _memory_events(self):
        if self.events_path:
            from egohorizon.schema import Event, load_jsonl

            return load_jsonl(self.events_path, Event)
        return self._demo_world().events

    def prepare(self) -> None:
        """Items (checked by the leakage guard), the frame catalog, the memory, and each item's frames."""
        if self.catalog is not None:
            return
        from egohorizon.data.points.leakage import check_qa_items
        from egohorizon.memory import FrameCatalog
        from egohorizon.schema import QAItem, load_jsonl

        items = load_jsonl(self._items_file(), QAItem)
        check_qa_items(items)
        for split in SPLITS:
            chosen = [i for i in items if i.meta.get("split") == split]
            limit = self.max_items.get(split)
            self.by_split[split] = chosen[:limit] if limit else chosen
        self.catalog = FrameCatalog.build(self._shard_dir(), participants={i.participant for i in items})
        memory = self._build_memory() if self.sampling == "retrieval" else None
        for item in (i for split in SPLITS for i in self.by_split[split]):
            self.selections[item.id] = self._select(item, memory)
        log.info("qa items per split: %s; %s sampling, %d frames each", {k: len(v) for k, v in self.by_split.items()},
                 self.sampling, self.frame_budget)

    def _build_memory(self):
        from egohorizon.memory import MemoryIndex, text_embedder

        return MemoryIndex.from_sources(self._memory_events(), self.catalog, embed=text_embedder(self.embedder),
                                        levels=self.memory_levels)

    def _select(self, item, memory):
        from egohorizon.memory import retrieved, uniform
        from egohorizon.prompts.qa import memory_query

        t_q = float(item.meta["t_question"])
        if memory is None:
            return uniform(self.catalog, item.participant, t_q, self.frame_budget)
        return retrieved(self.catalog, memory, item.participant, t_q, memory_query(item), self.frame_budget,
                         frames_per_window=self.frames_per_window, notes=self.notes, levels=self.memory_levels)

    # -- what run.py and the callback ask for -----------------------------------------------------------

    def dataset(self, split: str, with_target: bool = True) -> QAItems:
        if self.catalog is None:
            self.prepare()
        return QAItems(self.by_split[split], self.selections, self.catalog, self.prompt_name, with_target,
                       target=self.target)

    def training_corpus(self) -> list[str]:
        data = self.dataset("train")
        texts = []
        for i in range(len(data)):
            item = data.items[i]
            selection = self.selections[item.id]
            from egohorizon.prompts.qa import render_qa_prompt

            texts.append(render_qa_prompt(item.question, item.options, item.meta["t_question"],
                                          selection.times.tolist(),
                                          [(n.start, n.end, n.text) for n in selection.notes],
                                          prompt=self.prompt_name, image_mark=""))
            texts.append(target_text(item, self.target))
        return texts

    def day_split(self):
        """The split saved beside the items (``<items>.splits.json``, as the demo items and ``qa generate``
        write it), else the one the items spell out (each item's ``meta.day`` and ``meta.split``)."""
        from egohorizon.data.splits import DaySplit

        items_file = self._items_file()
        saved = items_file.with_name(f"{items_file.stem}.splits.json")
        if saved.is_file():
            return DaySplit.load(saved)
        days: dict[str, dict[str, str]] = {}
        for item in (i for name in SPLITS for i in self.by_split.get(name, [])):
            if item.meta.get("day") and item.meta.get("split") in SPLITS:
                days.setdefault(item.participant, {})[item.meta["day"]] = item.meta["split"]
        return DaySplit(days=days, settings={"from_items": str(items_file)}) if days else None

    def eval_items(self, split: str) -> dict[str, Any]:
        if self.catalog is None:
            self.prepare()
        return {item.id: item for item in self.by_split[split]}

    def eval_options(self, split: str) -> dict[str, Any]:
        """The baselines' training statistics: the majority position (the most frequent answer letter)
        and the answer prior (per task type, how often each option text was right; metrics.qa)."""
        from collections import Counter

        from egohorizon.metrics.qa import answer_prior

        train = self.by_split.get("train", [])
        counts = Counter(item.answer for item in train)
        if not counts:
            return {}
        return {"majority_letter": min(counts, key=lambda a: (-counts[a], a)), "answer_prior": answer_prior(train)}

    def _collator(self, train: bool):
        if self.processor is not None:
            return KeyedVisionTextCollator(self.processor, not train, fields=BATCH_FIELDS)
        if self.frame_budget:
            raise ConfigError(f"data.frame_budget={self.frame_budget}: a text-only backbone cannot take frames; "
                              "use a vision-language backbone or data.frame_budget=0")
        if self.tokenizer is None:
            raise ConfigError("the qa datamodule needs the backbone's tokenizer (set_tokenizer) before loading")
        return TextQACollator(self.tokenizer, not train)

    def _loader(self, split: str) -> DataLoader:
        train = split == "train"
        collate = self._collator(train)
        data = self.dataset(split)
        if not len(data):
            raise ConfigError(f"no QA items in the {split!r} split of {self._items_file()}")
        return DataLoader(data, batch_size=self.batch_size if train else self.eval_batch_size, shuffle=train,
                          num_workers=self.num_workers, collate_fn=collate, persistent_workers=self.num_workers > 0)

    def train_dataloader(self):
        return self._loader("train")

    def val_dataloader(self):
        return self._loader("val")

    def test_dataloader(self):
        return self._loader("test")


class TextQACollator:
    """QA samples without frames -> the batch a text-only LM trains and answers on: ``input_ids``,
    ``attention_mask`` and ``labels`` (the target + EOS), with ``with_prompts`` the left-padded
    ``prompt_ids``/``prompt_mask``, plus ``ids`` and ``BATCH_FIELDS``. The prompt is tokenized without
    special tokens, as ``CompositeProcessor`` tokenizes a text with no images (picklable: DataLoader workers)."""

    def __init__(self, tokenizer, with_prompts: bool):
        self.tokenizer, self.with_prompts = tokenizer, with_prompts

    def __call__(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        from datamodules.forecast_visual import TextGroundedCollator

        for s in samples:
            if s["images"]:
                raise ConfigError(f"QA item {s['key']}: {len(s['images'])} frames for a text-only backbone "
                                  "(data.frame_budget must be 0)")
        # The forecaster's text collator tokenizes prompt and target alike; QA items have no K.
        batch = TextGroundedCollator(self.tokenizer, self.with_prompts)([{**s, "k": None} for s in samples])
        batch.pop("k", None)
        batch["ids"] = [s["key"] for s in samples]
        for name in BATCH_FIELDS:
            batch[name] = [s[name] for s in samples]
        return batch
