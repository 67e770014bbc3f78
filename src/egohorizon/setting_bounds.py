"""What a numeric setting may be: a ``Bound`` names the key, its type and range, and the special values
allowed besides. The owner of a setting declares it: each datamodule lists the bounds of its own
constructor arguments (``SETTING_BOUNDS``, keys relative to ``data.``), so a new task declares its
bounds in its own file; ``config_checks`` gathers them from the configured datamodule class beside the
bounds of the settings every run has (trainer, optimiser, eval.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bound:
    """A key that must be a number (``integer``: a whole one) of at least ``low`` (``above``: strictly
    above it), at most ``high``; ``also`` lists the special values allowed besides (``-1``: no limit,
    ``None``: unset); ``each``: the key is a list and every item is checked."""

    key: str
    integer: bool = True
    low: float | None = None
    high: float | None = None
    above: bool = False
    also: tuple[Any, ...] = ()
    each: bool = False


UNSET = (None,)
NO_LIMIT = (-1,)

# The DataLoader settings every datamodule takes.
LOADER_BOUNDS = (
    Bound("batch_size", low=1),
    Bound("eval_batch_size", low=1),
    Bound("num_workers", low=0),
)
# The held-out-day split settings (egohorizon.data.splits) of the datamodules that draw their own split.
SPLIT_BOUNDS = (
    Bound("val_frac", integer=False, low=0, high=1),
    Bound("test_frac", integer=False, low=0, high=1),
    Bound("min_history_days", low=0),
)
