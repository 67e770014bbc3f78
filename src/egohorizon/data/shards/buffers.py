"""Reusable memory for the batches that DataLoader workers assemble, and how a batch crosses to the
main process.

Why: a batch of decoded windows is tens of MB (4 windows of 30 frames at 448 px + 30 crops of 256 px:
96 MB). Written into fresh shared memory each time, as torch's default_collate does, every 4 kB page
costs a page fault in the worker (allocate and zero the page): about 3 us each on the development VM,
~17 ms per window, as much as decoding its 60 JPEGs. The main process pays again: it maps each batch
anew (a file descriptor passed over a socket, then a fault per page as the batch is read, then the
unmapping), and every small tensor of the batch gets its own shared-memory file and descriptor.

So a worker keeps a few buffers (``BufferPool``) and refills one once the main process has let go of
it, and the main process maps each buffer once (``_attach``): the buffer's file descriptor travels only
with its first batch; later batches carry its slot number, and the main process makes the batch's
tensors over its lasting mapping (``torch.frombuffer``: a new storage per batch over the same pages).
A finalizer on that storage, which dies with the last tensor, view or numpy array of the batch, clears
the buffer's flag in a small shared array that the worker reads before reusing the buffer. This holds
whoever unpickles the batch: the DataLoader's main thread, its pin-memory thread (which drops the batch
after copying it), or a reset that discards batches in flight. A batch that is never released (kept
by the user) keeps its buffer: the worker then allocates fresh memory, as before. Small tensors travel
by value (``InlineTensor``): a few bytes in the pipe cost less than a shared-memory file each.

Outside DataLoader workers (``num_workers=0``) there is no process boundary: buffers are plain memory,
and a buffer handed out with a batch belongs to the batch.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)

# Per worker: prefetch_factor (2) batches queued + what the consumer holds (2: Lightning fetches one
# ahead) + one being filled + one the decode arena may keep (egohorizon.data.shards.arena), and slack.
MAX_BUFFERS = 8
INLINE_BYTES = 1 << 16  # tensors up to this size travel by value
ALIGN = 64  # byte alignment of the tensors carved from one buffer


@dataclass(eq=False)
class Buffer:
    """Flat uint8 memory: ``tensor`` and ``array`` (numpy) over the same bytes. A pooled buffer (``pool``
    set) pickles as a reference to the main process's mapping of it (see the module docstring)."""

    tensor: torch.Tensor
    array: np.ndarray
    pool: BufferPool | None = None
    slot: int = -1
    generation: int = 0

    @property
    def nbytes(self) -> int:
        return self.tensor.numel()

    def view(self, offset: int, shape: Sequence[int], dtype: torch.dtype = torch.uint8,
             dims: Sequence[int] | None = None) -> torch.Tensor | SharedView:
        """The tensor of ``shape`` and ``dtype`` at byte ``offset`` (``dims``: then permuted so); for a
        pooled buffer, a SharedView that becomes that tensor in the process that unpickles it."""
        if self.pool is not None:
            return SharedView(self, offset, tuple(shape), dtype, None if dims is None else tuple(dims))
        return _view(self.tensor, offset, tuple(shape), dtype, dims)

    def __reduce__(self) -> tuple[Any, tuple]:
        if self.pool is None:
            raise TypeError("only pooled buffers are sent between processes")
        first = self.pool.sent[self.slot] != self.generation  # the main process has not mapped it yet
        self.pool.sent[self.slot] = self.generation
        return _attach, (os.getpid(), self.slot, self.generation,
                         self.tensor if first else None, self.pool.flags if first else None)


@dataclass(eq=False)
class SharedView:
    """Stands, in a worker's batch, for a tensor over a pooled buffer (Buffer.view)."""

    buffer: Buffer
    offset: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    dims: tuple[int, ...] | None

    def __reduce__(self) -> tuple[Any, tuple]:
        # The buffer is pickled once per batch (pickle's memo), so all views share one attachment.
        return _view, (self.buffer, self.offset, self.shape, self.dtype, self.dims)


@dataclass(eq=False)
class InlineTensor:
    """A small tensor sent by value (its bytes in the pickle) instead of through shared memory."""

    array: np.ndarray

    def __reduce__(self) -> tuple[Any, tuple]:
        return torch.from_numpy, (self.array,)


def _view(base: torch.Tensor, offset: int, shape: tuple[int, ...], dtype: torch.dtype,
          dims: Sequence[int] | None) -> torch.Tensor:
    nbytes = int(np.prod(shape, dtype=np.int64)) * torch.empty(0, dtype=dtype).element_size()
    tensor = base[offset:offset + nbytes].view(dtype).view(shape)
    return tensor.permute(*dims) if dims is not None else tensor


@dataclass
class BufferPool:
    """The reusable shared-memory buffers of one DataLoader worker process."""

    max_buffers: int = MAX_BUFFERS
    # flags[i] == 1 while buffer i is out (with the main process, or being filled here).
    flags: torch.Tensor = field(init=False)
    buffers: list[Buffer | None] = field(init=False)
    sent: list[int] = field(init=False)  # per slot, the generation the main process has mapped
    returned: list[Buffer] = field(default_factory=list)  # filled here, not sent: free once unreferenced
    generations: int = 0
    fresh_allocations: int = 0

    def __post_init__(self):
        self.flags = torch.zeros(self.max_buffers, dtype=torch.uint8).share_memory_()
        self.out = self.flags.numpy()  # the same memory, read without torch's indexing overhead
        self.buffers = [None] * self.max_buffers
        self.sent = [0] * self.max_buffers

    def take(self, nbytes: int) -> Buffer:
        """At least ``nbytes`` of shared memory (contents undefined), marked out until released."""
        self._collect_returned()
        free = [i for i, buffer in enumerate(self.buffers) if not self.out[i]]
        fitting = [i for i in free if self.buffers[i] is not None and self.buffers[i].nbytes >= nbytes]
        if fitting:
            slot = fitting[0]
        elif free:
            slot = free[0]  # a new buffer, or a larger one replacing one that is too small
            self.generations += 1
            tensor = _shared_bytes(nbytes)
            self.buffers[slot] = Buffer(tensor, tensor.numpy(), self, slot, self.generations)
        else:
            self.fresh_allocations += 1
            if self.fresh_allocations in (1, 10, 100, 1000):
                log.debug("all %d batch buffers are out: %d fresh allocations", len(self.buffers),
                          self.fresh_allocations)
            tensor = _shared_bytes(nbytes)
            return Buffer(tensor, tensor.numpy())
        self.out[slot] = 1
        return self.buffers[slot]

    def give_back(self, buffer: Buffer) -> None:
        """A buffer taken but not sent; it is reused once no numpy view of it is left (a decoded image
        may still refer to it, e.g. in a batch that the queue's feeder thread has yet to pickle)."""
        if self.buffers[buffer.slot] is buffer:
            self.returned.append(buffer)

    def _collect_returned(self) -> None:
        still = []
        for buffer in self.returned:
            # References: the Buffer's attribute and getrefcount's argument; more means a live view.
            if sys.getrefcount(buffer.array) <= 2:
                self.out[buffer.slot] = 0
            else:
                still.append(buffer)
        self.returned = still


def _shared_bytes(nbytes: int) -> torch.Tensor:
    # _new_shared is what default_collate uses to build batches in shared memory in workers.
    storage = torch.UntypedStorage._new_shared(max(1, nbytes))
    return torch.empty(0, dtype=torch.uint8).set_(storage)


_POOL: BufferPool | None = None  # one per worker process: buffers belong to the process, not to a stream


def in_worker() -> bool:
    return torch.utils.data.get_worker_info() is not None


def batch_buffer(nbytes: int, reuse: bool = True) -> Buffer:
    """Memory for a batch, contents undefined: pooled shared memory in a DataLoader worker, plain
    memory elsewhere. ``reuse=False``: fresh shared memory in a worker, as torch's default_collate."""
    global _POOL
    if not in_worker():
        tensor = torch.empty(max(1, nbytes), dtype=torch.uint8)
    elif not reuse:
        tensor = _shared_bytes(nbytes)
    else:
        if _POOL is None:
            _POOL = BufferPool()
        return _POOL.take(nbytes)
    return Buffer(tensor, tensor.numpy())


def give_back(buffer: Buffer) -> None:
    """Returns a buffer from batch_buffer that was not sent (plain memory is left to the collector)."""
    if buffer.pool is not None:
        buffer.pool.give_back(buffer)


def align(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


def small_tensors_by_value(item: dict[str, Any]) -> dict[str, Any]:
    """In a worker, wraps the item's small tensors so that they travel by value (see InlineTensor)."""
    if not in_worker():
        return item
    for key, value in item.items():
        if isinstance(value, torch.Tensor) and value.nbytes <= INLINE_BYTES and value.device.type == "cpu":
            item[key] = InlineTensor(value.numpy())
    return item


# ------------------------------------------------------------------------------------------------
# The receiving (main) process: lasting mappings of the workers' buffers
# ------------------------------------------------------------------------------------------------

# (worker pid, slot) -> (generation, the buffer as mapped here, the worker's flags)
_MAPPINGS: dict[tuple[int, int], tuple[int, torch.Tensor, torch.Tensor]] = {}
_LOCK = threading.Lock()  # batches may be unpickled by several pin-memory threads


def _release(flags: torch.Tensor, slot: int) -> None:
    flags[slot] = 0


def _attach(pid: int, slot: int, generation: int, buffer: torch.Tensor | None,
            flags: torch.Tensor | None) -> torch.Tensor:
    """A tensor over the whole buffer, with a storage of its own whose death releases the buffer."""
    if buffer is not None and not any(p == pid for p, _ in _MAPPINGS):
        forget_exited_workers()  # a new worker: perhaps the previous epoch's ones have exited
    with _LOCK:
        if buffer is not None:
            _MAPPINGS[(pid, slot)] = (generation, buffer, flags)
        entry = _MAPPINGS.get((pid, slot))
    if entry is None or entry[0] != generation:
        raise RuntimeError(f"batch buffer {slot} (generation {generation}) of DataLoader worker {pid} "
                           "arrived before its memory was mapped here")
    _, buffer, flags = entry
    base = torch.frombuffer(buffer.numpy(), dtype=torch.uint8)
    weakref.finalize(base.untyped_storage(), _release, flags, slot)
    return base


def forget_exited_workers() -> None:
    """Drops the mappings of workers that have exited (at the end of each epoch when workers do not
    persist); batches still held keep their own memory alive."""
    with _LOCK:
        for pid in {p for p, _ in _MAPPINGS}:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                for key in [k for k in _MAPPINGS if k[0] == pid]:
                    del _MAPPINGS[key]
            except PermissionError:  # alive, under another user
                pass
