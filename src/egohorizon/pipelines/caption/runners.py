"""The captioning job's two ways of running a model over windows; each yields ``Outcome``s.

- ``HTTPRunner``: an OpenAI-compatible server (vLLM, Ollama, ...). ``2 x concurrency`` worker threads
  each prepare a window (decode, gaze ring, JPEG data URLs) and send it; the client's own semaphore
  keeps at most ``concurrency`` requests in flight, so preparing the next windows overlaps the
  requests and the server never waits on the client (scripts/bench_caption.py measures it).
- ``LocalRunner``: a local VLM (``egohorizon.llm.vision_local``) in batches. With ``workers >= 1`` a
  DataLoader worker process reads the shards, decodes, renders the prompts and runs the processor for
  the next batches while the model generates (on a CPU, on a core of its own), so the job takes about
  the model's own time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from egohorizon.pipelines.caption.results import INPUT, MODEL
from egohorizon.pipelines.caption.settings import CaptionSettings
from egohorizon.pipelines.caption.windows import Outcome, ShardReader, prepare_window

log = logging.getLogger(__name__)


class HTTPRunner:
    """``concurrency``: requests in flight. A server queues what it cannot serve yet, so a couple more
    than its own batch keep it busy while a finished request's reply and the next request's upload and
    parsing pass (scripts/bench_caption.py measures both)."""

    def __init__(self, backend, concurrency: int = 8):
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.backend, self.concurrency = backend, concurrency
        # What preparing a window imports (OpenCV for the gaze ring, ~80 ms), at set-up, not in the
        # first window's time.
        import cv2  # noqa: F401
        import simplejpeg  # noqa: F401

        import egohorizon.llm.images
        import egohorizon.prompts.caption  # noqa: F401

    def window(self, shard: str, raw: dict[str, Any], settings: CaptionSettings) -> Outcome:
        from egohorizon.llm.images import sample_messages

        start = time.perf_counter()
        info, sample, ended = prepare_window(raw, shard, settings, stored=True)
        if ended is not None:
            return ended
        try:
            messages = sample_messages(sample["text"], sample["images"], settings.jpeg_quality)
        except ValueError as error:
            return Outcome(info, failure=(INPUT, f"image: {error}"))
        try:
            text = self.backend.generate(messages, max_new_tokens=settings.max_new_tokens,
                                         temperature=settings.temperature, seed=settings.seed)[0]
        except Exception as error:  # noqa: BLE001 - any failure of one request is that window's failure
            return Outcome(info, failure=(MODEL, f"{type(error).__name__}: {error}"))
        return Outcome(info, raw=text, elapsed_s=time.perf_counter() - start)

    def run(self, reader: ShardReader, settings: CaptionSettings) -> Iterator[Outcome]:
        workers = 2 * self.concurrency
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="caption")
        pending: set[Future] = set()
        try:
            for shard, raw in reader:
                if len(pending) >= 2 * workers:  # bounded read-ahead: memory stays flat over months of shards
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    yield from (f.result() for f in finished)
                pending.add(pool.submit(self.window, shard, raw, settings))
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield from (f.result() for f in finished)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def shard_problems(self, reader: ShardReader) -> list[dict[str, Any]]:
        return reader.problems() if hasattr(reader, "stats") else []


def _identity(item: Any) -> Any:
    return item


class _EncodedBatches:
    """Windows -> ``{"infos", "batch"}`` items (and ``{"outcomes"}`` for windows that end early), then
    one ``{"stats"}`` item with the reader's counters; iterated in a DataLoader worker."""

    def __init__(self, reader: ShardReader, settings: CaptionSettings, encoder, batch_size: int):
        self.reader, self.settings, self.encoder, self.batch_size = reader, settings, encoder, batch_size
        # Decode no larger than the processor needs (pipelines.caption.windows.LazyImages): about halves the
        # worker's CPU per window on 448-px frames for the tiny backbone (docs/captioning.md).
        self.fit = getattr(encoder, "image_size", None)

    def encode(self, infos: list[dict], samples: list[dict]) -> list[dict[str, Any]]:
        """The batch, or, when the processor refuses it, each window alone: one bad image fails one window."""
        try:
            return [{"infos": infos, "batch": self.encoder(samples)}]
        except Exception as error:  # noqa: BLE001
            if len(samples) == 1:
                reason = f"processor: {type(error).__name__}: {error}"
                return [{"outcomes": [Outcome(infos[0], failure=(INPUT, reason))]}]
        return [item for info, sample in zip(infos, samples) for item in self.encode([info], [sample])]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        infos: list[dict] = []
        samples: list[dict] = []
        for shard, raw in self.reader:
            info, sample, ended = prepare_window(raw, shard, self.settings, self.fit)
            if ended is not None:
                yield {"outcomes": [ended]}
                continue
            infos.append(info)
            samples.append(sample)
            if len(samples) == self.batch_size:
                yield from self.encode(infos, samples)
                infos, samples = [], []
        if samples:
            yield from self.encode(infos, samples)
        yield {"stats": self.reader.stats}


class LocalRunner:
    def __init__(self, backend, batch_size: int = 8, workers: int = 1, prefetch_batches: int = 2):
        self.backend, self.batch_size = backend, batch_size
        self.workers, self.prefetch_batches = workers, prefetch_batches
        self.generation_s = 0.0
        self._stats = None
        self._threads_set = False

    def batches(self, reader: ShardReader, settings: CaptionSettings) -> Iterator[dict[str, Any]]:
        """Encoded batches (and early outcomes) of the reader's windows, prepared ahead in a worker."""
        import torch.utils.data

        items = _EncodedBatches(reader, settings, self.backend.encoder(), self.batch_size)
        if self.workers <= 0:
            yield from items
            return

        class Stream(torch.utils.data.IterableDataset):
            def __iter__(self):
                return iter(items)

        loader = torch.utils.data.DataLoader(Stream(), batch_size=None, num_workers=1, collate_fn=_identity,
                                             prefetch_factor=self.prefetch_batches)
        yield from loader

    def share_cores(self) -> None:
        """On a CPU, the model's threads leave one core per prefetch worker: torch's default (one thread
        per core) made the workers and the model take turns (tiny model on 2 cores: 1 thread generated
        faster than 2 even alone, docs/captioning.md)."""
        import torch

        if self.workers > 0 and self.backend.device_type() == "cpu" and not self._threads_set:
            torch.set_num_threads(max(1, torch.get_num_threads() - self.workers))
            self._threads_set = True

    def run(self, reader: ShardReader, settings: CaptionSettings) -> Iterator[Outcome]:
        self.share_cores()
        for item in self.batches(reader, settings):
            if "stats" in item:
                self._stats = item["stats"]
                continue
            if "outcomes" in item:
                yield from item["outcomes"]
                continue
            start = time.perf_counter()
            try:
                texts = self.backend.generate_batch(item["batch"], max_new_tokens=settings.max_new_tokens,
                                                    temperature=settings.temperature, seed=settings.seed,
                                                    num_beams=settings.num_beams)
            except Exception as error:  # noqa: BLE001 - e.g. out of memory: these windows fail, the job goes on
                yield from (Outcome(info, failure=(MODEL, f"{type(error).__name__}: {error}")) for info in item["infos"])
                continue
            elapsed = time.perf_counter() - start
            self.generation_s += elapsed
            for info, text in zip(item["infos"], texts):
                yield Outcome(info, raw=text, elapsed_s=elapsed / len(texts))

    def shard_problems(self, reader: ShardReader) -> list[dict[str, Any]]:
        return reader.problems(self._stats) if self._stats is not None else []
