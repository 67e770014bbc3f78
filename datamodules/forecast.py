"""ForecastDataModule: forecast points from event files, rendered and tokenised for a causal LM.

Training examples are ``prompt + answer + EOS`` with the loss on the answer tokens only (labels -100
on the prompt and padding). A fine-tuned forecaster learns to emit one trajectory
(``render_forecast_prompt(point, n_candidates=1)`` -> ``render_forecast_answer([targets])``); at
evaluation it samples several sequences and each parsed one becomes a candidate. Batches are bucketed
by length (similar lengths together, bucket order shuffled) rather than packed: packing needs
cross-document attention masks that not every attention kernel honours.

Points come from ``events`` (a file or a folder with ``events.jsonl``; the demo world when unset) split
by held-out days, or from a folder of ``points_{train,val,test}.jsonl`` and ``splits.json``
(``points_dir``, with ``events`` for the leakage guard). The guard checks every point before anything
is tokenised whenever the events are at hand.

Why one file: it is one LightningDataModule (the TaskDataModule interface, point loading with its
leakage guard, tokenising and length bucketing of each split); points, prompts and splits come from
egohorizon.data and egohorizon.prompts.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler

from datamodules.base import EvalSetup, TaskDataModule, load_events
from egohorizon.errors import ConfigError
from egohorizon.schema import LEVELS, Event, ForecastPoint, load_jsonl, write_jsonl
from egohorizon.schema.forecast_groups import KS_BOUND
from egohorizon.setting_bounds import LOADER_BOUNDS, SPLIT_BOUNDS, UNSET, Bound

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
IGNORE_INDEX = -100


class ForecastDataModule(TaskDataModule):
    PROMPT_SETTINGS: ClassVar[tuple[str, ...]] = (*TaskDataModule.PROMPT_SETTINGS, "n_context",
                                                  "eval_prompt_candidates")
    # eval.py warns when it evaluates with another context length than the adapter trained with
    ADAPTER_SETTINGS: ClassVar[tuple[str, ...]] = (*TaskDataModule.ADAPTER_SETTINGS, "levels", "ks", "n_context",
                                                   "eval_prompt_candidates")
    # config_checks holds data.<key> to these before anything is built (egohorizon.setting_bounds)
    SETTING_BOUNDS: ClassVar[tuple[Bound, ...]] = (
        *LOADER_BOUNDS,
        Bound("max_length", low=1),
        Bound("n_context", low=1),
        Bound("max_train_points", low=1, also=UNSET),
        Bound("max_eval_points", low=1, also=UNSET),
        Bound("eval_prompt_candidates", low=1),
        *SPLIT_BOUNDS,
        Bound("bucket_factor", low=1),
        Bound("levels", low=LEVELS[0], high=LEVELS[-1], each=True),
        KS_BOUND,  # the one K rule (schema/forecast_groups)
    )

    @classmethod
    def in_context_settings(cls, generation: dict[str, Any]) -> dict[str, Any]:
        """In context the untrained backbone is asked for every candidate in one answer (NextMe's protocol)."""
        return {"eval_prompt_candidates": int(generation["num_candidates"])}

    @classmethod
    def takes_split_file(cls) -> bool:
        return True

    @classmethod
    def evaluation_setup(cls, split, points_file=None, split_file=None, data=None) -> EvalSetup:
        """Any held-out split goes into the test slot (``eval_split``), a points file replaces it
        (``points_file``; a split file then gives the habit baselines their training days), and the
        training points are capped at ``max_eval_points`` (only an in-context tiny backbone's tokenizer
        reads them)."""
        arguments: dict[str, Any] = {"split_file": split_file} if split_file else {}
        if "max_eval_points" in (data or {}):
            arguments["max_train_points"] = data["max_eval_points"]
        arguments["eval_split"] = split
        if points_file:
            arguments["points_file"] = points_file
        return EvalSetup(arguments, slot="test")

    def __init__(
        self,
        events: str | None = None,
        points_dir: str | None = None,
        demo_dir: str | None = None,
        source: str | None = None,
        levels: Sequence[int] = (3,),
        ks: Sequence[int] = (1, 10),
        n_context: int = 50,
        val_frac: float = 0.15,
        test_frac: float = 0.15,
        split_strategy: str = "random",
        min_history_days: int = 3,
        max_train_points: int | None = None,
        max_eval_points: int | None = 100,
        max_eval_points_by_k: dict[int, int] | None = None,
        max_test_points_by_k: dict[int, int] | None = None,
        prompt: str | None = None,
        eval_prompt_candidates: int = 1,
        use_chat_template: bool | None = None,
        max_length: int = 2048,
        batch_size: int = 8,
        eval_batch_size: int = 16,
        bucket_factor: int = 50,
        num_workers: int = 0,
        seed: int = 0,
        save_points_to: str | None = None,
        eval_split: str = "test",
        points_file: str | None = None,
        split_file: str | None = None,
        convert_from: dict | None = None,
        backtest_day: int | None = None,
        backtest_min_days: int | None = None,
    ):
        """``eval_split``: the held-out split that the test loop evaluates (eval.py's ``split=val``);
        ``points_file``: a JSONL file of points evaluated instead of any split (eval.py's ``points=``);
        ``max_eval_points_by_k``: ``{K: cap}`` overriding ``max_eval_points`` for that K on val and test
        (K = 1 generation is ~10x cheaper than K = 10 and needs ~3x the points for a paired interval
        to clear zero: docs/real-model.md, the demo); ``max_test_points_by_k``: the same on the test
        split only (the demo validates on equal counts per K, so the pooled objective weighs each K
        alike, and reports K = 1 on 120 test points);
        ``split_file``: a day split file (``splits.json``, a run's ``split.json``) used instead of one
        drawn from the fractions and seed (eval.py passes the evaluated run's own); with ``points_file``
        only its training days are read, for the habit baselines (``eval_options``);
        ``convert_from``: ``{source, root}``, a real data set converted into ``events`` on first use
        (``egohorizon.data.sources.on_first_use``), so its experiment needs no path typed;
        ``backtest_day``: d of the rolling backtest (``egohorizon.data.backtest``): each participant's
        days 1..d-1 train, day d validates, day d + 1 is test, later days are dropped; ``backtest_min_days``:
        only participants with at least that many dated days (the same cohort at every d)."""
        super().__init__()
        self.events_path, self.points_dir, self.demo_dir, self.source = events, points_dir, demo_dir, source
        self.levels, self.ks, self.n_context = tuple(levels), tuple(ks), n_context
        self.split_args = {
            "val_frac": val_frac,
            "test_frac": test_frac,
            "seed": seed,
            "strategy": split_strategy,
            "min_history_days": min_history_days,
        }
        self.max_train_points, self.max_eval_points = max_train_points, max_eval_points
        val_caps = {k: (max_eval_points_by_k or {}).get(k, max_eval_points) for k in self.ks}
        self.eval_caps = {"val": val_caps,
                          "test": {k: (max_test_points_by_k or {}).get(k, val_caps[k]) for k in self.ks}}
        self.prompt_name, self.eval_prompt_candidates = prompt, eval_prompt_candidates
        self.use_chat_template, self.max_length = use_chat_template, max_length
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.bucket_factor, self.num_workers, self.seed = bucket_factor, num_workers, seed
        self.save_points_to = save_points_to
        if eval_split not in ("val", "test"):
            raise ConfigError(f"split: expected 'val' or 'test', got {eval_split!r}")
        self.eval_split, self.points_file, self.split_file = eval_split, points_file, split_file
        self.convert_from = dict(convert_from) if convert_from else None
        if backtest_day is not None and (split_file or points_dir or points_file):
            raise ConfigError("data.backtest_day: the backtest makes its own day split from the events; "
                              "it cannot be combined with a split file, points_dir or points")
        self.backtest_day, self.backtest_min_days = backtest_day, backtest_min_days
        self.points: dict[str, list[ForecastPoint]] | None = None
        self.split = None
        self.history = None  # metrics.habits.HabitHistory of the split's training days, when events are at hand
        self.tokenizer = None
        self._datasets: dict[str, Dataset] = {}

    # -- points --------------------------------------------------------------------------------

    def prepare(self) -> None:
        self.prepare_points()

    def prepare_points(self) -> dict[str, list[ForecastPoint]]:
        """Builds or loads the points once (deterministic, so every rank gets the same ones)."""
        if self.points is not None:
            return self.points
        if self.points_file:
            return self._points_from_file()
        # build_points runs the leakage guard on every point it makes; loaded points are checked here.
        points, events, split = self._load_points() if self.points_dir else self._build_points()
        if self.points_dir and events is not None and split is not None:
            from egohorizon.data.points.leakage import check_points

            for name in SPLITS:  # a point in the wrong file is caught as a target day of another split
                check_points(points[name], events, split, expected_split=name)
        self.points, self.split = points, split
        if events is not None and split is not None:  # learned from the training days only (SPEC §1)
            from egohorizon.metrics.habits import learn_habits

            self.history = learn_habits(events, split.days_in("train"), source=self.source)
        counts = ", ".join(f"{name} {len(points[name])}" for name in SPLITS)
        log.info(
            "forecast points: %s (levels %s, K %s, context %d)", counts, self.levels, self.ks, self.n_context
        )
        if not points["train"] and not points["test"]:
            raise ConfigError(
                "data: no forecast points were made; check data.levels/data.ks against the events"
            )
        if self.save_points_to:
            self._save_points(Path(self.save_points_to))
        if self.eval_split != "test":  # the test loop evaluates the chosen split; test stays unseen
            self.points = {**points, "test": points[self.eval_split]}
        return self.points

    def _points_from_file(self) -> dict[str, list[ForecastPoint]]:
        points = load_jsonl(self.points_file, ForecastPoint)
        if not points:
            raise ConfigError(f"points: {self.points_file} holds no forecast points")
        log.warning(
            "points=%s: evaluated as given; the leakage guard needs the events and the day split "
            "(use data=forecast_points with data.events to have them re-checked)",
            self.points_file,
        )
        self.points = {"train": [], "val": [], "test": points}
        if self.split_file:  # the evaluated run's own day split: the habit baselines learn its training days
            self.history = self._history_for_points_file()
        return self.points

    def _history_for_points_file(self):
        """The habit baselines' history beside a points file; None, said, when the events are not at hand
        (the points are still evaluated: they never needed the events)."""
        from egohorizon.data.splits import DaySplit
        from egohorizon.errors import DataError
        from egohorizon.metrics.habits import learn_habits

        try:
            train_days = DaySplit.load(self.split_file).days_in("train")
            return learn_habits(self.load_events(), train_days, source=self.source)
        except (ConfigError, DataError) as error:
            log.warning("habit baselines: not computed beside points=%s (%s)", self.points_file, error)
            return None

    def load_events(self) -> list[Event]:
        if self.convert_from and self.events_path:
            from egohorizon.data.sources.on_first_use import ensure_converted

            ensure_converted(self.events_path, **self.convert_from)
        return load_events(self.events_path, self.demo_dir)

    def _build_points(self):
        from egohorizon.data.points.build import build_points
        from egohorizon.data.splits import make_day_split

        events = self.load_events()
        if self.backtest_day is not None:  # later days dropped here, before any point or habit is made
            from egohorizon.data.backtest import backtest_window

            events, split = backtest_window(events, self.backtest_day, self.backtest_min_days)
        elif self.split_file:
            from egohorizon.data.backtest import window_for_split
            from egohorizon.data.splits import DaySplit

            split = DaySplit.load(self.split_file)
            events = window_for_split(events, split)  # a backtest run's split: its later days stay dropped
        else:
            split = make_day_split(events, **self.split_args)
        common = {
            "levels": self.levels,
            "ks": self.ks,
            "n_context": self.n_context,
            "seed": self.seed,
            "source": self.source,
        }
        # The cap of build_points applies per split, level and K; training takes every point unless capped.
        built = build_points(events, split, max_points=self.max_train_points, **common)
        points = {"train": built["train"], "val": [], "test": []}
        # One build per distinct cap, over the K it applies to: sampling is seeded per (split, level,
        # K), so a K's points are the same whichever other K are built beside it.
        caps = {cap for by_k in self.eval_caps.values() for cap in by_k.values()}
        for cap in sorted(caps, key=lambda c: (c is None, c or 0)):
            ks = tuple(k for k in self.ks if cap in (self.eval_caps["val"][k], self.eval_caps["test"][k]))
            if cap != self.max_train_points or ks != self.ks:
                built = build_points(events, split, max_points=cap, **{**common, "ks": ks})
            for name in ("val", "test"):
                points[name] += [p for p in built[name] if self.eval_caps[name][p.k] == cap]
        return points, events, split

    def _load_points(self):
        """``points_{split}.jsonl`` of ``points_dir`` (filtered to the configured levels and K); with
        ``events`` set and a ``splits.json`` beside them, the leakage guard re-checks every point."""
        folder = Path(self.points_dir)
        if not folder.is_dir():
            raise ConfigError(f"data.points_dir: {folder} is not a folder")
        points = {}
        for name in SPLITS:
            path = folder / f"points_{name}.jsonl"
            loaded = load_jsonl(path, ForecastPoint) if path.is_file() else []
            points[name] = [p for p in loaded if p.level in self.levels and p.k in self.ks]
        split = events = None
        if (folder / "splits.json").is_file() and self.events_path:
            from egohorizon.data.splits import DaySplit

            split, events = DaySplit.load(folder / "splits.json"), self.load_events()
        else:
            log.warning(
                "data.points_dir %s: without data.events and a splits.json there, the leakage guard "
                "cannot re-check these points against the events",
                folder,
            )
        return points, events, split

    def _save_points(self, folder: Path) -> None:
        """The held-out points and the day split; training points are left out (they can be rebuilt from
        the events and the split, and on a large data set they would fill the disk: EPIC-KITCHENS makes
        ~116,000 training points of 50 context events each, about 1 GB)."""
        for name in ("val", "test"):
            write_jsonl(folder / f"points_{name}.jsonl", self.points[name])
        if self.split is not None:
            self.split.save(folder / "splits.json")

    # -- text ----------------------------------------------------------------------------------

    @property
    def prompt(self):
        from egohorizon.prompts import load_prompt
        from egohorizon.prompts.forecast import FORECAST_PROMPT_NAME

        return load_prompt(self.prompt_name or FORECAST_PROMPT_NAME)

    def render_prompt(
        self, point: ForecastPoint, n_candidates: int = 1, max_context: int | None = None
    ) -> str:
        from egohorizon.prompts.forecast import render_forecast_prompt

        text = render_forecast_prompt(
            point, prompt=self.prompt_name, n_candidates=n_candidates, max_context=max_context
        )
        if self._chat_template_on():
            messages = [{"role": "user", "content": text}]
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
            )
        return text

    @staticmethod
    def render_answer(point: ForecastPoint) -> str:
        from egohorizon.prompts.forecast import render_forecast_answer

        return render_forecast_answer([point.targets])

    def training_corpus(self) -> list[str]:
        """Prompts and answers of the training points: what the tiny backbone's tokenizer learns from."""
        points = self.prepare_points()["train"]
        from egohorizon.prompts.forecast import render_forecast_prompt

        texts = []
        for point in points:
            texts.append(render_forecast_prompt(point, prompt=self.prompt_name, n_candidates=1))
            texts.append(self.render_answer(point))
        return texts

    def _chat_template_on(self) -> bool:
        if self.use_chat_template is None:
            return bool(getattr(self.tokenizer, "chat_template", None))
        return self.use_chat_template

    # -- tokenisation --------------------------------------------------------------------------

    def set_tokenizer(self, tokenizer) -> None:
        super().set_tokenizer(tokenizer)
        self._datasets.clear()

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def encode_point(self, point: ForecastPoint, n_candidates: int = 1) -> dict[str, Any]:
        """prompt ids, answer ids (+EOS); drops the oldest context events until both fit ``max_length``."""
        answer = self._encode(self.render_answer(point)) + [self.tokenizer.eos_token_id]
        budget = self.max_length - len(answer)
        kept = len(point.context)
        prompt = self._encode(self.render_prompt(point, n_candidates))
        if len(prompt) > budget:  # binary search for the most recent events that fit
            low, high, best = 0, kept - 1, None
            while low <= high:
                middle = (low + high) // 2
                candidate = self._encode(self.render_prompt(point, n_candidates, max_context=middle))
                if len(candidate) <= budget:
                    low, best = middle + 1, (middle, candidate)
                else:
                    high = middle - 1
            if best is None:
                raise ConfigError(
                    f"point {point.id}: even without context its prompt and answer take more than "
                    f"data.max_length={self.max_length} tokens"
                )
            kept, prompt = best
        return {
            "id": point.id,
            "k": point.k,
            "prompt_ids": prompt,
            "answer_ids": answer,
            "context_kept": kept,
            "context_total": len(point.context),
        }

    def setup(self, stage: str | None = None) -> None:
        if self.tokenizer is None:
            raise ConfigError("ForecastDataModule: set_tokenizer() must be called before setup()")
        self.prepare_points()
        wanted = {"fit": ("train", "val"), "validate": ("val",), "test": ("test",)}.get(stage or "", SPLITS)
        for name in wanted:
            if name not in self._datasets:
                n_candidates = 1 if name == "train" else self.eval_prompt_candidates
                items = [self.encode_point(p, n_candidates) for p in self.points[name]]
                truncated = sum(item["context_kept"] < item["context_total"] for item in items)
                if truncated:
                    log.info(
                        "%s: %d of %d points had their oldest context events dropped to fit max_length=%d",
                        name,
                        truncated,
                        len(items),
                        self.max_length,
                    )
                self._datasets[name] = EncodedPoints(items)

    # -- loaders -------------------------------------------------------------------------------

    def train_dataloader(self) -> DataLoader:
        dataset = self._datasets["train"]
        generator = torch.Generator().manual_seed(self.seed)
        sampler = BucketBatchSampler(
            RandomSampler(dataset, generator=generator),
            batch_size=self.batch_size,
            drop_last=False,
            lengths=dataset.lengths,
            bucket_factor=self.bucket_factor,
            seed=self.seed,
        )
        return DataLoader(
            dataset,
            batch_sampler=sampler,
            collate_fn=TrainCollator(self.tokenizer.pad_token_id),
            num_workers=self.num_workers,
        )

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test")

    def _eval_loader(self, name: str) -> DataLoader:
        dataset = self._datasets[name].sorted_for_generation()
        return DataLoader(
            dataset,
            batch_size=self.eval_batch_size,
            sampler=SequentialSampler(dataset),
            collate_fn=EvalCollator(self.tokenizer.pad_token_id),
            num_workers=self.num_workers,
        )

    def mean_context_shown(self, name: str = "test") -> float | None:
        """Mean number of context events the prompts of a split kept after truncation to ``max_length``
        (the points' own context when nothing was tokenised: baselines only)."""
        dataset = self._datasets.get(name)
        if dataset is None:
            points = self.prepare_points()[name]
            return sum(len(p.context) for p in points) / len(points) if points else None
        items = dataset.items
        return sum(i["context_kept"] for i in items) / len(items) if items else None

    def eval_options(self, split: str) -> dict[str, Any]:
        """The habit baselines' training-day history (SPEC §1), and for the test slot the validation points
        that choose the strongest rival; none for points read from a file (no day split at hand)."""
        self.prepare_points()
        if self.history is None:
            return {}
        options: dict[str, Any] = {"history": self.history}
        if split == "test" and self.points.get("val"):
            options["validation_points"] = self.points["val"]
        return options

    def eval_items(self, name: str) -> dict[str, ForecastPoint]:
        """The held-out points of a split by id (what the evaluation callback scores)."""
        return {p.id: p for p in self.prepare_points()[name]}


class EncodedPoints(Dataset):
    def __init__(self, items: list[dict[str, Any]]):
        self.items = items
        self.lengths = [len(i["prompt_ids"]) + len(i["answer_ids"]) for i in items]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.items[index]

    def sorted_for_generation(self) -> EncodedPoints:
        """Same K and similar prompt lengths together: a batch's generation budget depends on its K."""
        return EncodedPoints(sorted(self.items, key=lambda i: (i["k"], len(i["prompt_ids"]), i["id"])))


class BucketBatchSampler(BatchSampler):
    """Batches of similar length: takes ``batch_size * bucket_factor`` indices from ``sampler``, sorts
    them by length, cuts batches and yields them in a seeded shuffled order (new order each epoch).

    A ``BatchSampler`` subclass with a ``sampler`` argument, so Lightning can swap in a
    ``DistributedSampler`` under DDP and each rank buckets its own share.
    """

    def __init__(
        self,
        sampler,
        batch_size: int,
        drop_last: bool,
        lengths: Sequence[int] = (),
        bucket_factor: int = 50,
        seed: int = 0,
    ):
        super().__init__(sampler, batch_size, drop_last)
        self.lengths, self.bucket_factor, self.seed = list(lengths), bucket_factor, seed
        self._epoch = 0

    def __iter__(self) -> Iterator[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + self._epoch)
        self._epoch += 1
        indices = list(self.sampler)
        chunk = self.batch_size * max(1, self.bucket_factor)
        batches = []
        for start in range(0, len(indices), chunk):
            bucket = sorted(indices[start : start + chunk], key=lambda i: self.lengths[i])
            for first in range(0, len(bucket), self.batch_size):
                batch = bucket[first : first + self.batch_size]
                if len(batch) == self.batch_size or not self.drop_last:
                    batches.append(batch)
        rng.shuffle(batches)
        yield from batches


def _pad(rows: list[list[int]], value: int, left: bool = False) -> torch.Tensor:
    width = max(len(r) for r in rows)
    padded = [([value] * (width - len(r)) + r) if left else (r + [value] * (width - len(r))) for r in rows]
    return torch.tensor(padded, dtype=torch.long)


class TrainCollator:
    """Right-padded ``input_ids``/``attention_mask``; ``labels`` are -100 except on the answer."""

    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        inputs = [i["prompt_ids"] + i["answer_ids"] for i in items]
        labels = [[IGNORE_INDEX] * len(i["prompt_ids"]) + i["answer_ids"] for i in items]
        input_ids = _pad(inputs, self.pad_id)
        mask = _pad([[1] * len(r) for r in inputs], 0)
        return {"input_ids": input_ids, "attention_mask": mask, "labels": _pad(labels, IGNORE_INDEX)}


class EvalCollator(TrainCollator):
    """The training fields (for a held-out loss) plus left-padded prompts for generation."""

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super().__call__(items)
        prompts = [i["prompt_ids"] for i in items]
        batch.update(
            prompt_ids=_pad(prompts, self.pad_id, left=True),
            prompt_mask=_pad([[1] * len(p) for p in prompts], 0, left=True),
            ids=[i["id"] for i in items],
            k=[i["k"] for i in items],
        )
        return batch
