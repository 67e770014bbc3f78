"""Errors a person can act on: raised by library code, printed (without a traceback) by the CLI."""

from __future__ import annotations

from collections.abc import Sequence


class EgohorizonError(Exception):
    """A problem with the user's input or setup; the message says what to fix."""


class ConfigError(EgohorizonError):
    """A configuration that cannot work (missing file, wrong combination of options)."""


class DataError(EgohorizonError):
    """Input data that is malformed, corrupt or missing; the message names the file and field."""


class LeakageError(DataError):
    """A point lets the future (or another split's day) reach the model; lists every problem found. Raised by
    the leakage guard (``data.points.leakage``) and by whoever finds a late event (the NextMe prompt)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        shown = "\n".join(self.problems[:20])
        more = f"\n... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        super().__init__(f"leakage guard: {len(self.problems)} problem(s):\n{shown}{more}")
