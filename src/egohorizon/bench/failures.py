"""When a zero-shot run (``bench run``, ``bench forecast``) stops early: the one rule both follow.

A model or server that does not work at all fails on every try: after ``FAIL_FAST_AFTER`` model
failures with nothing else seen yet the run stops. Past ``MIN_TRIED_FOR_CHECK`` tries, more than
``max_failures`` of them bad (model failures and, for QA items, unreadable inputs) stops it too. The rows
already written stay, so rerunning the same command resumes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from egohorizon.errors import ConfigError, DataError

FAIL_FAST_AFTER = 3  # model failures with no answer yet: the model or server is not working at all
MIN_TRIED_FOR_CHECK = 20


@dataclass
class FailureBudget:
    max_failures: float
    unit: str  # "items" | "points", for the messages
    tried: int = 0
    answered: int = 0
    input_failures: int = 0
    model_failures: int = 0
    first: str = field(default="")  # the first failure, for the messages

    def record(self, *, model_error: str | None = None, input_error: str | None = None, where: str = "") -> None:
        """One try: answered, or failed by the model or by its input (``where`` names the item)."""
        self.tried += 1
        problem = model_error or input_error
        if problem and not self.first:
            self.first = f"{where}: {problem}" if where else problem
        if model_error is not None:
            self.model_failures += 1
        elif input_error is not None:
            self.input_failures += 1
        else:
            self.answered += 1

    def check(self) -> None:
        """Raises DataError when the run should stop (see the module's docstring)."""
        if self.model_failures >= FAIL_FAST_AFTER and self.answered == 0 and self.input_failures == 0:
            raise DataError(f"the model failed on the first {self.model_failures} {self.unit}, stopping; first: "
                            f"{self.first}. Finished {self.unit} are kept: rerun the same command to resume")
        bad = self.input_failures + self.model_failures
        if self.tried >= MIN_TRIED_FOR_CHECK and bad / self.tried > self.max_failures:
            raise DataError(f"{bad} of {self.tried} {self.unit} failed ({bad / self.tried:.1%}), above --max-failures "
                            f"{self.max_failures:.1%}; first: {self.first}")


def ask_model(generate: Callable[[], str]) -> tuple[str | None, str | None]:
    """(reply, None), or (None, "Kind: message") when the model fails on this one try. A ConfigError (the
    model cannot be loaded at all) is not one try's failure: it stops the run."""
    try:
        return generate(), None
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001 - one try's model failure; FailureBudget decides when to stop
        return None, f"{type(error).__name__}: {error}"
