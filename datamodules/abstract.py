"""AbstractDataModule: runs of level-L events and their gold groups (egohorizon.data.events.abstract_items),
rendered with the abstract prompt and tokenised for a causal LM, split by held-out days.

Training examples are ``prompt + answer + EOS`` with the loss on the answer only (the forecast
datamodule's collators and length buckets). Prompts are raw text, no chat template: that is how
``egohorizon abstract`` feeds a trained adapter (egohorizon.llm.vision_local). The gold hierarchy is the
demo world's unless ``events`` names another file with L1-L5 events.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler

from datamodules.base import TaskDataModule, load_events
from datamodules.forecast import BucketBatchSampler, EncodedPoints, TrainCollator, _pad
from egohorizon.data.events.abstract_items import AbstractItem, gold_compression, make_items
from egohorizon.errors import ConfigError
from egohorizon.schema import LEVELS, Event
from egohorizon.setting_bounds import LOADER_BOUNDS, SPLIT_BOUNDS, UNSET, Bound

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")


class AbstractDataModule(TaskDataModule):
    SETTING_BOUNDS: ClassVar[tuple[Bound, ...]] = (
        *LOADER_BOUNDS,
        Bound("max_length", low=1),
        *SPLIT_BOUNDS,
        Bound("bucket_factor", low=1),
        Bound("levels", low=LEVELS[0], high=LEVELS[-1], each=True),
        Bound("max_events", low=1, also=UNSET),
    )

    @classmethod
    def takes_split_file(cls) -> bool:
        return True  # split_file: a day split file instead of one drawn from the fractions and seed

    def __init__(
        self,
        events: str | None = None,
        demo_dir: str | None = None,
        levels: Sequence[int] = (1, 2, 3, 4),
        max_events: int = 24,
        train_lengths: str = "fixed",
        min_events: int = 2,
        train_stride: int = 1,
        eval_stride: int = 1,
        max_eval_items: int | None = None,
        val_frac: float = 0.15,
        test_frac: float = 0.15,
        split_strategy: str = "random",
        min_history_days: int = 1,
        prompt: str | None = None,
        max_length: int = 1024,
        batch_size: int = 8,
        eval_batch_size: int = 16,
        bucket_factor: int = 50,
        num_workers: int = 0,
        seed: int = 0,
        split_file: str | None = None,
    ):
        """``split_file``: a day split file (a run's ``split.json``) instead of one drawn from the fractions
        and seed (eval.py passes the evaluated run's own); ``levels``: the levels whose runs are grouped (1 builds L2, ..., 4 builds L5); ``max_events``:
        events per item (the job's --max-events); ``train_lengths``: ``spread`` cuts training runs with
        lengths drawn from ``min_events..max_events`` (deterministic per seed), ``fixed`` every
        ``max_events`` events (val/test runs are always cut at fixed positions); ``*_stride``: every n-th window of a session;
        ``max_eval_items``: at most this many val/test items, spread evenly over the sorted ids."""
        super().__init__()
        self.events_path, self.demo_dir = events, demo_dir
        self.levels, self.max_events = tuple(levels), max_events
        if train_lengths not in ("spread", "fixed"):
            raise ConfigError(f"data.train_lengths={train_lengths!r}: must be 'spread' or 'fixed'")
        self.spread_lengths, self.min_events = train_lengths == "spread", min_events
        self.train_stride, self.eval_stride, self.max_eval_items = train_stride, eval_stride, max_eval_items
        self.split_args = {"val_frac": val_frac, "test_frac": test_frac, "seed": seed,
                           "strategy": split_strategy, "min_history_days": min_history_days}
        self.prompt_name, self.max_length = prompt, max_length
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.bucket_factor, self.num_workers, self.seed = bucket_factor, num_workers, seed
        self.items: dict[str, list[AbstractItem]] | None = None
        self.split = None
        self.split_file = split_file
        self._datasets: dict[str, EncodedPoints] = {}

    # -- items ---------------------------------------------------------------------------------

    def load_events(self) -> list[Event]:
        return load_events(self.events_path, self.demo_dir)

    def prepare(self) -> None:
        if self.items is not None:
            return
        from egohorizon.data.splits import DaySplit, make_day_split

        events = self.load_events()
        self.split = DaySplit.load(self.split_file) if self.split_file else make_day_split(events, **self.split_args)
        items = {}
        for name in SPLITS:
            days = {f"{p}/{d}" for p, d in self.split.days_in(name)}
            stride = self.train_stride if name == "train" else self.eval_stride
            # held-out runs keep their fixed positions, so their scores compare with earlier runs'
            spread = self.spread_lengths and name == "train"
            chosen = make_items(events, days, self.levels, self.max_events, stride, spread_lengths=spread,
                                min_events=self.min_events, seed=self.seed)
            if name != "train" and self.max_eval_items and len(chosen) > self.max_eval_items:
                step = len(chosen) / self.max_eval_items
                chosen = [chosen[int(i * step)] for i in range(self.max_eval_items)]
            items[name] = chosen
        if not items["train"]:
            raise ConfigError("data: no abstraction items on training days; do the events have levels above "
                              f"{min(self.levels)} (parents)?")
        self.items = items
        log.info("abstraction items: %s (levels %s, %d events each at most; training lengths %s)",
                 ", ".join(f"{n} {len(items[n])}" for n in SPLITS), self.levels, self.max_events,
                 f"{self.min_events}..{self.max_events}" if self.spread_lengths else "fixed")

    def train_compression(self) -> dict[int, float]:
        """Per level, the training days' gold events per group."""
        self.prepare()
        return gold_compression(self.items["train"])

    # -- text ----------------------------------------------------------------------------------

    def render_prompt(self, item: AbstractItem) -> str:
        from egohorizon.prompts.abstract import render_abstract_prompt

        return render_abstract_prompt(item.events, self.prompt_name)

    @staticmethod
    def render_answer(item: AbstractItem) -> str:
        from egohorizon.formats.abstract import render_groups

        return render_groups(item.gold)

    def training_corpus(self) -> list[str]:
        self.prepare()
        return [text for item in self.items["train"] for text in (self.render_prompt(item), self.render_answer(item))]

    def set_tokenizer(self, tokenizer) -> None:
        super().set_tokenizer(tokenizer)
        self._datasets.clear()

    def encode(self, item: AbstractItem) -> dict[str, Any]:
        prompt = self.tokenizer(self.render_prompt(item), add_special_tokens=False)["input_ids"]
        answer = self.tokenizer(self.render_answer(item), add_special_tokens=False)["input_ids"]
        answer = answer + [self.tokenizer.eos_token_id]
        if len(prompt) + len(answer) > self.max_length:
            raise ConfigError(f"item {item.id}: prompt and answer take {len(prompt) + len(answer)} tokens, more "
                              f"than data.max_length={self.max_length}; lower data.max_events")
        # "k": the forecast datasets sort eval items by K first; one group of abstraction items here.
        # "n_events": what constrained decoding (model.generation.constrained) needs to know of the run.
        return {"id": item.id, "k": 0, "prompt_ids": prompt, "answer_ids": answer, "n_events": len(item.events)}

    def setup(self, stage: str | None = None) -> None:
        if self.tokenizer is None:
            raise ConfigError("AbstractDataModule: set_tokenizer() must be called before setup()")
        self.prepare()
        wanted = {"fit": ("train", "val"), "validate": ("val",), "test": ("test",)}.get(stage or "", SPLITS)
        for name in wanted:
            if name not in self._datasets:
                self._datasets[name] = EncodedPoints([self.encode(item) for item in self.items[name]])

    # -- loaders -------------------------------------------------------------------------------

    def train_dataloader(self) -> DataLoader:
        dataset = self._datasets["train"]
        sampler = BucketBatchSampler(RandomSampler(dataset, generator=torch.Generator().manual_seed(self.seed)),
                                     batch_size=self.batch_size, drop_last=False, lengths=dataset.lengths,
                                     bucket_factor=self.bucket_factor, seed=self.seed)
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=TrainCollator(self.tokenizer.pad_token_id),
                          num_workers=self.num_workers)

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test")

    def _eval_loader(self, name: str) -> DataLoader:
        dataset = self._datasets[name].sorted_for_generation()
        return DataLoader(dataset, batch_size=self.eval_batch_size, sampler=SequentialSampler(dataset),
                          collate_fn=EvalCollator(self.tokenizer.pad_token_id), num_workers=self.num_workers)

    def eval_items(self, split: str) -> dict[str, AbstractItem]:
        self.prepare()
        return {item.id: item for item in self.items[split]}

    def eval_options(self, split: str) -> dict[str, Any]:
        """The fixed-chunks baseline's sizes: the training days' gold compression per level."""
        return {"train_compression": self.train_compression()}


class EvalCollator(TrainCollator):
    """The training fields (a held-out loss) plus left-padded prompts for generation and the item ids."""

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super().__call__(items)
        prompts = [i["prompt_ids"] for i in items]
        batch.update(prompt_ids=_pad(prompts, self.pad_id, left=True),
                     prompt_mask=_pad([[1] * len(p) for p in prompts], 0, left=True), ids=[i["id"] for i in items],
                     n_events=[i["n_events"] for i in items])
        return batch
