"""The stages of the streaming pipeline and the counters they keep.

Each stage is a callable ``stage(source_iterator) -> iterator`` (the first one takes nothing), so
a pipeline is a list of ``(name, stage)`` pairs, as in open_clip's WebDataset loader. WebDataset's own
stages are used where they fit (SimpleShardList, ResampledShards, detshuffle, split_by_worker, the tar
readers, shuffle); the ones written here add what they lack:
- ``split_by_node`` takes the rank resolved in the main process (DataLoader workers started with
  ``spawn`` do not see the process group, and WebDataset's version would then give every rank all
  shards);
- ``read_shards`` reads one shard at a time with WebDataset's tar readers, so an error names its
  shard, and it compares the samples read with the index's count: what a damaged shard lost is counted;
- ``decode`` checks every sample against its own metadata (a truncated tar yields partial samples
  without raising) and skips and counts what is unusable;
- ``batch`` attaches the worker's counters to every batch and sends a last counters-only item when
  the worker runs dry, so the main process sees the counts of workers that produced nothing usable;
- ``decode`` and ``batch`` share a DecodeArena (egohorizon.data.shards.arena) when the stream has one:
  images are decoded straight into the memory of the batch they will form, not copied there.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from egohorizon.data.shards.encode import SampleError, decode_window

if TYPE_CHECKING:
    from egohorizon.data.shards.arena import DecodeArena

STATS_KEY = "stream_stats"
FINAL_KEY = "stream_final"  # marks the counters-only item a worker sends when it is done
LOST_IN_SHARD = "lost_in_shard"
IN_PLACE, COPIED = "batches_in_place", "batches_copied"  # with a decode arena: was the batch copied?
MAX_REASONS_PER_SHARD = 3
READ_BUFFER = 1 << 20


def worker_info() -> tuple[int, int]:
    """(worker id, number of workers) of the current DataLoader worker; (0, 1) in the main process."""
    import torch.utils.data

    info = torch.utils.data.get_worker_info()
    return (info.id, info.num_workers) if info is not None else (0, 1)


def make_seed(*parts: int) -> int:
    """One 63-bit seed from several integers (seed, epoch, rank, worker), stable across processes."""
    value = 0x9E3779B97F4A7C15
    for part in parts:
        value = (value * 6364136223846793005 + int(part) + 1442695040888963407) % (1 << 63)
    return value


@dataclass
class StreamStats:
    """Counters of one worker for one epoch; plain data so they cross process boundaries."""

    rank: int = 0
    worker: int = 0
    counts: Counter = field(default_factory=Counter)
    bad_by_shard: Counter = field(default_factory=Counter)
    reasons: dict[str, list[str]] = field(default_factory=dict)

    def bad(self, reason: str, url: str, message: str, samples: int = 1) -> None:
        self.counts[reason] += samples
        self.bad_by_shard[url] += samples
        notes = self.reasons.setdefault(url, [])
        if len(notes) < MAX_REASONS_PER_SHARD:
            notes.append(message)

    def snapshot(self) -> dict[str, Any]:
        return {"rank": self.rank, "worker": self.worker, "counts": dict(self.counts),
                "bad_by_shard": dict(self.bad_by_shard), "reasons": {k: list(v) for k, v in self.reasons.items()}}


# ----------------------------------------------------------------------------------------------
# Shard-level stages
# ----------------------------------------------------------------------------------------------


def split_by_node(rank: int, world_size: int) -> Callable[[Iterable], Iterator]:
    def stage(src: Iterable) -> Iterator:
        return islice(src, rank, None, world_size) if world_size > 1 else iter(src)

    return stage


def _worker_seed(rank: int) -> int:
    return rank * 1000 + worker_info()[0]


def read_shards(stats: StreamStats, expected: dict[str, int]) -> Callable[[Iterable[dict]], Iterator[dict]]:
    """Shard urls -> raw samples (dicts of bytes), one shard at a time, with WebDataset's readers."""
    from webdataset.filters import reraise_exception
    from webdataset.tariterators import group_by_keys, tar_file_expander, url_opener

    def stage(src: Iterable[dict]) -> Iterator[dict]:
        for item in src:
            url = item["url"]
            read = 0
            stats.counts["shards_opened"] += 1
            try:
                # 1 MB reads: a shard is read front to back, and 8 kB reads cost a fifth of the time.
                opened = url_opener([{"url": url}], handler=reraise_exception, bufsize=READ_BUFFER)
                files = tar_file_expander(opened, handler=reraise_exception)
                for sample in group_by_keys(files, handler=reraise_exception):
                    read += 1
                    yield sample
            # Any failure of one shard (tarfile.ReadError, OSError, ValueError...) is counted, not fatal.
            except Exception as error:  # noqa: BLE001
                stats.counts["shard_errors"] += 1
                stats.reasons.setdefault(url, []).append(f"unreadable after {read} samples: "
                                                         f"{type(error).__name__}: {str(error)[:160]}")
            lost = expected.get(url, read) - read
            if lost > 0:
                stats.bad(LOST_IN_SHARD, url, f"{lost} of {expected[url]} samples missing", samples=lost)

    return stage


def sample_shuffle(bufsize: int, seed: int, epoch: int, rank: int) -> Callable[[Iterable], Iterator]:
    from webdataset.filters import _shuffle

    def stage(src: Iterable) -> Iterator:
        rng = random.Random(make_seed(seed, epoch, rank, worker_info()[0]))
        return _shuffle(iter(src), bufsize=bufsize, initial=max(1, bufsize // 2), rng=rng)

    return stage


# ----------------------------------------------------------------------------------------------
# Sample-level stages
# ----------------------------------------------------------------------------------------------


def decode(stats: StreamStats, *, crops: bool = True, arena: DecodeArena | None = None
           ) -> Callable[[Iterable[dict]], Iterator]:
    """Raw samples -> DecodedWindow; with an arena, images go straight into the batch being assembled."""
    def stage(src: Iterable[dict]) -> Iterator:
        for sample in src:
            try:
                window = decode_window(sample, crops=crops, arena=arena)
            except SampleError as error:
                stats.bad(error.reason, sample.get("__url__", "?"), str(error))
                continue
            stats.counts["samples_ok"] += 1
            yield window

    return stage


def model_inputs(function: Callable[[Any], Any], stats: StreamStats) -> Callable[[Iterable], Iterator]:
    """Applies the task's conversion; a sample it rejects with ValueError is skipped and counted."""
    def stage(src: Iterable) -> Iterator:
        for window in src:
            try:
                yield function(window)
            except ValueError as error:
                stats.counts["samples_ok"] -= 1
                stats.bad("bad_model_input", getattr(window, "url", "?"), str(error)[:200])

    return stage


def batch(batch_size: int, collate: Callable[[list], dict], stats: StreamStats, partial: bool = True,
          arena: DecodeArena | None = None) -> Callable[[Iterable], Iterator[dict]]:
    """Collates every ``batch_size`` samples (within the arena's ``collating``, so the collate can take
    the arena's buffer). Written here rather than WebDataset's _batched, which reads the next batch's
    first sample before collating: with an arena, that window would be decoded into the wrong batch."""
    from egohorizon.data.shards import buffers  # imports torch: this module stays light for `shards verify`

    def collated(samples: list) -> dict:
        if arena is None:
            item = collate(samples)
        else:
            claimed = arena.claimed_batches
            with arena.collating():
                item = collate(samples)
            stats.counts[IN_PLACE if arena.claimed_batches > claimed else COPIED] += 1
        item[STATS_KEY] = stats.snapshot()
        return buffers.small_tensors_by_value(item)

    def stage(src: Iterable) -> Iterator[dict]:
        samples: list = []
        try:
            for sample in src:
                samples.append(sample)
                if len(samples) == batch_size:
                    item, samples = collated(samples), []
                    yield item
            if samples and partial:
                item, samples = collated(samples), []
                yield item
        finally:
            if arena is not None:
                arena.close()
        yield {STATS_KEY: stats.snapshot(), FINAL_KEY: True}

    return stage
