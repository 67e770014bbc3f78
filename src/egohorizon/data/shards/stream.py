"""Streaming window shards into a model: the pipeline of named stages, the loader, the health check.

    shard_list -> shard_shuffle -> split_by_node -> split_by_worker -> tar_to_samples
      -> sample_shuffle -> decode -> model_inputs -> batch

- ``WindowStream`` is the torch IterableDataset running these stages in each DataLoader worker.
  Without resampling, every sample of the selected shards is seen exactly once per epoch across
  ranks and workers (shards are dealt out by rank, then by worker; the shard order is reshuffled
  each epoch with the same seed on every rank). With ``resampled=True``, each rank and worker draws
  shards with replacement (WebDataset's ResampledShards, seeded by seed, epoch, rank, worker) and
  the loader stops after a fixed number of batches: the multi-node recipe, where equal batch counts
  per rank matter more than exact coverage.
- Evaluation streams (no shuffling, no resampling) on several ranks deal *samples*, not shards: every
  rank reads every shard and keeps the samples whose position in the split is its rank modulo the
  world size (``deal_samples``), so each item is generated exactly once whatever the rank count, also
  with fewer shards than ranks. A rank with fewer batches repeats its last one, marked ``padding``
  (the generation callback ignores those texts), so every rank runs the same number of steps.
- ``decode_into_batch=True`` (for a collate that takes the arena's buffer, as
  datamodules.caption.collate_windows does): images are decoded straight into the batch's memory,
  and in DataLoader workers that memory is reused shared memory (egohorizon.data.shards.arena,
  .buffers). The batches are the same either way.
- ``MonitoredLoader`` wraps the DataLoader in the main process: it strips the counters that every
  batch carries, sums them over workers, hands them to a logging callback, and raises DataError
  naming the bad shards when the share of bad samples passes ``max_bad_fraction``.

This module is the torch side of the shards package (it imports torch); the writer and index do not.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import webdataset as wds
from torch.utils.data import DataLoader, IterableDataset
from webdataset.utils import PipelineStage

from egohorizon.data.shards import buffers, stages
from egohorizon.data.shards.arena import DecodeArena
from egohorizon.data.shards.stages import FINAL_KEY, STATS_KEY, StreamStats
from egohorizon.errors import ConfigError, DataError

log = logging.getLogger(__name__)

PADDING_KEY = "padding"
BAD_REASONS = ("missing_field", "corrupt_image", "bad_metadata", "bad_model_input", stages.LOST_IN_SHARD)


def distributed_rank() -> tuple[int, int]:
    """(rank, world size) of this process: torch.distributed when initialised, else 0 and 1."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def identity(x: Any) -> Any:
    return x


def as_list(samples: list) -> dict:
    return {"samples": samples}


class WindowStream(IterableDataset):
    """The stages above over a list of shard paths; see the module docstring."""

    def __init__(self, urls: Sequence[str], *, expected_samples: dict[str, int] | None = None,
                 batch_size: int = 1, model_inputs: Callable = identity, collate: Callable = as_list,
                 shuffle: bool = True, shuffle_buffer: int = 32, seed: int = 0, resampled: bool = False,
                 crops: bool = True, rank: int | None = None, world_size: int | None = None,
                 partial_batches: bool = True, decode_into_batch: bool = False):
        super().__init__()
        if not urls:
            raise ConfigError("no shards selected: check the shard folder and the split's days")
        self.urls = list(urls)
        self.expected = dict(expected_samples or {})
        self.batch_size, self.model_inputs, self.collate = batch_size, model_inputs, collate
        self.shuffle, self.shuffle_buffer, self.seed = shuffle, shuffle_buffer, seed
        self.resampled, self.crops, self.partial_batches = resampled, crops, partial_batches
        self.decode_into_batch = decode_into_batch
        if rank is None or world_size is None:
            rank, world_size = distributed_rank()
        self.rank, self.world_size = rank, world_size
        # Shared with the workers (open_clip's SharedEpoch): the loader sets it before each epoch,
        # so the shard order changes per epoch even with persistent workers.
        self._epoch = multiprocessing.Value("i", 0)

    def set_epoch(self, epoch: int) -> None:
        self._epoch.value = epoch

    @property
    def epoch(self) -> int:
        return self._epoch.value

    def stages(self, stats: StreamStats, epoch: int) -> list[tuple[str, Callable]]:
        if self.resampled:
            # Resampling draws independently per rank and worker: no splitting (the seed differs).
            source = wds.ResampledShards(self.urls, seed=self.seed, deterministic=True,
                                         worker_seed=_RankWorkerSeed(self.rank))
            source.epoch = epoch - 1  # ResampledShards adds one before drawing
            pipeline = [("shard_list", source)]
        else:
            pipeline = [("shard_list", wds.SimpleShardList(self.urls))]
            if self.shuffle:
                n = len(self.urls)
                pipeline.append(("shard_shuffle", wds.detshuffle(bufsize=n, initial=n, seed=self.seed,
                                                                 epoch=epoch - 1)))
            if not self.deal_samples:
                pipeline.append(("split_by_node", stages.split_by_node(self.rank, self.world_size)))
            pipeline.append(("split_by_worker", wds.split_by_worker))
        pipeline.append(("tar_to_samples", stages.read_shards(stats, self.expected)))
        if self.deal_samples:
            pipeline.append(("deal_samples", deal_samples(self.rank, self.world_size, self.sample_offsets())))
        if self.shuffle and self.shuffle_buffer > 1:
            shuffle = stages.sample_shuffle(self.shuffle_buffer, self.seed, epoch, self.rank)
            pipeline.append(("sample_shuffle", shuffle))
        arena = DecodeArena(self.batch_size) if self.decode_into_batch else None
        pipeline += [("decode", stages.decode(stats, crops=self.crops, arena=arena)),
                     ("model_inputs", stages.model_inputs(self.model_inputs, stats)),
                     ("batch", stages.batch(self.batch_size, self.collate, stats, self.partial_batches, arena))]
        return pipeline

    @property
    def stage_names(self) -> list[str]:
        return [name for name, _ in self.stages(StreamStats(), 0)]

    def __iter__(self) -> Iterator[dict]:
        worker, _ = stages.worker_info()
        stats = StreamStats(rank=self.rank, worker=worker)
        pipeline = self.stages(stats, self.epoch)
        data = iter(pipeline[0][1])
        for _, stage in pipeline[1:]:
            data = stage.run(data) if isinstance(stage, PipelineStage) else stage(data)
        return data

    @property
    def deal_samples(self) -> bool:
        """Evaluation on several ranks: samples are dealt to ranks (module docstring)."""
        return not self.shuffle and not self.resampled and self.world_size > 1

    def sample_offsets(self) -> dict[str, int]:
        """Each shard's first sample's position in the split (the index's counts, in shard order)."""
        offsets, total = {}, 0
        for url in self.urls:
            offsets[url] = total
            total += self.expected.get(url, 0)
        return offsets

    def batches_per_rank(self, num_workers: int, epoch: int | None = None) -> list[int]:
        """Batches each rank yields in an epoch (no resampling), from the index's sample counts:
        the same shard order and dealing as the workers use."""
        epoch = self.epoch if epoch is None else epoch
        urls = iter(self.urls)
        if self.shuffle:
            n = len(self.urls)
            urls = (d["url"] for d in wds.detshuffle(bufsize=n, initial=n, seed=self.seed,
                                                     epoch=epoch - 1).run(iter({"url": u} for u in self.urls)))
        ordered = list(urls)
        counts, offsets = [], self.sample_offsets()
        for rank in range(self.world_size):
            mine = ordered if self.deal_samples else ordered[rank::self.world_size]
            total = 0
            for worker in range(max(1, num_workers)):
                shards = mine[worker::max(1, num_workers)]
                if self.deal_samples:
                    samples = sum(_dealt(offsets[u], self.expected.get(u, 0), rank, self.world_size) for u in shards)
                else:
                    samples = sum(self.expected.get(u, 0) for u in shards)
                full, rest = divmod(samples, self.batch_size)
                total += full + (1 if rest and self.partial_batches else 0)
            counts.append(total)
        return counts


def deal_samples(rank: int, world_size: int, offsets: dict[str, int]) -> Callable[[Iterator[dict]], Iterator[dict]]:
    """Keeps the samples at positions ``rank``, ``rank + world_size``, ... of the split."""

    def stage(samples: Iterator[dict]) -> Iterator[dict]:
        url, position = None, 0
        for sample in samples:
            if sample.get("__url__") != url:
                url = sample.get("__url__")
                position = offsets.get(url, 0)
            if position % world_size == rank:
                yield sample
            position += 1

    return stage


def _dealt(offset: int, n: int, rank: int, world_size: int) -> int:
    """How many of the positions offset .. offset + n - 1 are ``rank`` modulo ``world_size``."""

    def below(x: int) -> int:
        return max(0, (x - rank + world_size - 1) // world_size)

    return below(offset + n) - below(offset)


class _RankWorkerSeed:
    """Picklable ``worker_seed`` for ResampledShards: distinct per rank and worker."""

    def __init__(self, rank: int):
        self.rank = rank

    def __call__(self) -> int:
        return self.rank * 1000 + stages.worker_info()[0]


class StreamMonitor:
    """Sums the latest counters of every (rank, worker) and enforces the bad-sample limit."""

    def __init__(self, max_bad_fraction: float = 0.05, min_samples: int = 32):
        if not 0 <= max_bad_fraction <= 1:
            raise ConfigError(f"max_bad_fraction: expected a share in [0, 1], got {max_bad_fraction}")
        self.max_bad_fraction, self.min_samples = max_bad_fraction, min_samples
        self.latest: dict[tuple[int, int], dict[str, Any]] = {}

    def update(self, snapshot: dict[str, Any]) -> None:
        self.latest[(snapshot["rank"], snapshot["worker"])] = snapshot

    def counters(self) -> dict[str, float]:
        counts: Counter = Counter()
        for snap in self.latest.values():
            counts.update(snap["counts"])
        bad = sum(counts.get(r, 0) for r in BAD_REASONS)
        seen = counts.get("samples_ok", 0) + bad
        names = ("samples_ok", "shards_opened", "shard_errors", stages.IN_PLACE, stages.COPIED) + BAD_REASONS
        out = {name: float(counts.get(name, 0)) for name in names}
        out["samples_bad"] = float(bad)
        out["bad_fraction"] = bad / seen if seen else 0.0
        return out

    def bad_shards(self) -> dict[str, tuple[int, list[str]]]:
        """url -> (bad samples, first reasons), over all workers."""
        out: dict[str, tuple[int, list[str]]] = {}
        for snap in self.latest.values():
            for url in set(snap["bad_by_shard"]) | set(snap["reasons"]):
                count, reasons = out.get(url, (0, []))
                out[url] = (count + snap["bad_by_shard"].get(url, 0), reasons + snap["reasons"].get(url, []))
        return out

    def check(self, final: bool = False) -> None:
        counters = self.counters()
        seen = counters["samples_ok"] + counters["samples_bad"]
        if seen == 0 and final and counters["shard_errors"]:
            raise DataError(f"no usable sample: every shard failed. {self.describe_bad_shards()}")
        if seen == 0 or (not final and seen < self.min_samples):
            return
        if counters["bad_fraction"] > self.max_bad_fraction:
            raise DataError(f"{counters['bad_fraction']:.1%} of samples are bad ({int(counters['samples_bad'])} of "
                            f"{int(seen)}), above the limit of {self.max_bad_fraction:.1%} (max_bad_fraction). "
                            f"{self.describe_bad_shards()} Check them with `egohorizon shards verify`.")

    def describe_bad_shards(self, limit: int = 10) -> str:
        shards = sorted(self.bad_shards().items(), key=lambda kv: -kv[1][0])
        parts = [f"{url} ({count} bad: {'; '.join(reasons[:2]) or 'see counters'})"
                 for url, (count, reasons) in shards[:limit]]
        more = f" and {len(shards) - limit} more" if len(shards) > limit else ""
        return f"Bad shards: {', '.join(parts)}{more}." if parts else ""


class MonitoredLoader:
    """Iterates a DataLoader over a WindowStream: one pass = one epoch (the epoch is set first)."""

    def __init__(self, loader: DataLoader, stream: WindowStream, *, max_bad_fraction: float = 0.05,
                 min_samples: int = 32, max_batches: int | None = None,
                 on_counters: Callable[[dict[str, float], bool], None] | None = None, report_every: int = 50,
                 equalize_ranks: bool = False):
        self.loader, self.stream = loader, stream
        self.equalize_ranks = equalize_ranks
        self.max_bad_fraction, self.min_samples = max_bad_fraction, min_samples
        self.max_batches, self.on_counters, self.report_every = max_batches, on_counters, report_every
        self.epoch = 0
        self.monitor = StreamMonitor(max_bad_fraction, min_samples)

    def batch_limit(self, epoch: int) -> int | None:
        if self.max_batches is not None or not self.equalize_ranks:
            return self.max_batches
        counts = self.stream.batches_per_rank(self.loader.num_workers, epoch)
        if self.stream.deal_samples:  # evaluation: the others pad up to the largest rank
            if min(counts) == 0:
                raise DataError(f"{sum(self.stream.expected.get(u, 0) for u in self.stream.urls)} evaluation "
                                f"sample(s) for {self.stream.world_size} ranks: some rank would get none; "
                                "evaluate on fewer devices")
            return max(counts)
        return min(counts)

    def __len__(self) -> int:
        limit = self.batch_limit(self.epoch)
        if limit is None:
            raise TypeError("this stream's length is known only with a fixed or equalised epoch length")
        return limit

    def __iter__(self) -> Iterator[dict]:
        limit = self.batch_limit(self.epoch)
        self.stream.set_epoch(self.epoch)
        self.epoch += 1
        self.monitor = StreamMonitor(self.max_bad_fraction, self.min_samples)
        yielded, last = 0, None
        for item in self.loader:
            self.monitor.update(item.pop(STATS_KEY))
            if item.pop(FINAL_KEY, False):
                continue
            self.monitor.check()
            if self.on_counters and yielded % self.report_every == 0:
                self.on_counters(self.monitor.counters(), False)
            if self.stream.deal_samples and self.equalize_ranks:
                last = _copied(item)  # the arena may reuse the batch's memory for the next one
            yield item
            yielded += 1
            if limit is not None and yielded >= limit:
                break
        while last is not None and limit is not None and yielded < limit:
            yield {**last, PADDING_KEY: True}  # same modules, same steps as the other ranks
            yielded += 1
        if self.on_counters:
            self.on_counters(self.monitor.counters(), True)
        buffers.forget_exited_workers()  # workers that do not persist have exited by now
        self.monitor.check(final=limit is None)


def _copied(batch: dict) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def is_padding(batch: dict) -> bool:
    """A repeated batch that only keeps this rank stepping with the others: its outputs are dropped."""
    return bool(batch.get(PADDING_KEY, False))


def make_loader(stream: WindowStream, *, num_workers: int = 2, max_bad_fraction: float = 0.05,
                min_samples: int = 32, epoch_batches: int | None = None, equalize_ranks: bool = True,
                on_counters: Callable | None = None, report_every: int = 50, pin_memory: bool = False,
                prefetch_factor: int = 2, persistent_workers: bool = True) -> MonitoredLoader:
    """A MonitoredLoader for the stream; batches are made by the stream (DataLoader batch_size=None).

    ``epoch_batches``: fixed batches per epoch (required with resampling). Without resampling and with
    several ranks, ``equalize_ranks`` caps each rank at the smallest rank's batch count, so DDP ranks
    never wait on each other at the end of an epoch (a few training samples of the larger ranks are
    then not seen that epoch; evaluation streams pad the smaller ranks instead, so every item is
    generated). Workers persist across epochs (no re-fork per epoch); they read the epoch
    from the stream's shared value."""
    if stream.resampled and epoch_batches is None:
        raise ConfigError("resampled streams need a fixed epoch length (epoch_batches / epoch_samples)")
    # in_order=False: a batch is handed over as soon as any worker has it. With the default, the main
    # process holds a fast worker's batches until the slow worker's turn comes, which costs memory
    # (each batch is tens of MB) and time; the order across workers carries no meaning here.
    loader = DataLoader(stream, batch_size=None, num_workers=num_workers, pin_memory=pin_memory,
                        prefetch_factor=prefetch_factor if num_workers > 0 else None,
                        persistent_workers=persistent_workers and num_workers > 0,
                        in_order=num_workers == 0)
    return MonitoredLoader(loader, stream, max_bad_fraction=max_bad_fraction, min_samples=min_samples,
                           max_batches=epoch_batches, on_counters=on_counters, report_every=report_every,
                           equalize_ranks=equalize_ranks and stream.world_size > 1 and not stream.resampled)
