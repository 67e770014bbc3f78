"""What a numeric setting may be: a ``Bound`` names the key, its type and range, and the special values
allowed besides, and says what is wrong with a value (``Bound.problem``). The owner of a setting declares
it: each datamodule lists the bounds of its own constructor arguments (``SETTING_BOUNDS``, keys relative
to ``data.``), so a new task declares its bounds in its own file; ``config_checks`` gathers them from the
configured datamodule class beside the bounds of the settings every run has (trainer, optimiser, eval.py).
"""

from __future__ import annotations

from collections.abc import MutableSequence
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

    def problem(self, value: Any) -> str | None:
        """What is wrong with one value ('must be ..., got ...'), or None. For an ``each`` bound, one item."""
        if value in self.also and type(value) is not bool:
            return None
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or (self.integer and not isinstance(value, int)):
            kind = "an integer" if self.integer else "a number"
            return f"must be {kind} ({self.range_text()}), got {value!r} ({kind_of(value)})"
        too_low = self.low is not None and (value <= self.low if self.above else value < self.low)
        too_high = self.high is not None and value > self.high
        if too_low or too_high:
            return f"must be {self.range_text()}, got {value!r}"
        return None

    def range_text(self) -> str:
        """``>= 1 and <= 5 or null for unset``: the values allowed, in words."""
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.above else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        text = " and ".join(parts)
        special = {-1: "-1 for no limit", None: "null for unset"}
        return " or ".join([text, *(special[v] for v in self.also)]) if self.also else text


def kind_of(value: Any) -> str:
    """What a value is, in words (``a string``, ``null``, ``a list``) for a message."""
    names = {str: "a string", bool: "a boolean", float: "a float", int: "an integer", type(None): "null"}
    # a MutableSequence: a list or omegaconf's ListConfig (this module imports only the standard library)
    return names.get(type(value), "a list" if isinstance(value, MutableSequence) else type(value).__name__)


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
