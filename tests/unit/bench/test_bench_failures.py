"""The one early-stop rule of the zero-shot runs (bench run, bench forecast), by hand."""

import pytest

from egohorizon.bench.failures import FAIL_FAST_AFTER, MIN_TRIED_FOR_CHECK, FailureBudget
from egohorizon.errors import DataError


def test_a_model_that_never_answers_stops_the_run_after_three_tries():
    budget = FailureBudget(max_failures=0.5, unit="points")
    for n in range(FAIL_FAST_AFTER - 1):
        budget.record(model_error="connection refused", where=f"point 'p{n}'")
        budget.check()
    budget.record(model_error="connection refused", where="point 'p2'")
    with pytest.raises(DataError, match=r"failed on the first 3 points, stopping; first: point 'p0': connection"):
        budget.check()


def test_one_answer_first_means_only_the_share_of_failures_stops_it():
    budget = FailureBudget(max_failures=0.25, unit="items")
    budget.record()
    for _ in range(4):
        budget.record(model_error="timeout")
        budget.check()  # 4 of 5 bad, but fewer than MIN_TRIED_FOR_CHECK tries
    for _ in range(MIN_TRIED_FOR_CHECK - 6):
        budget.record()
        budget.check()  # 4 of 19 bad
    budget.record(input_error="truncated mp4", where="item 'q9'")  # 5 of 20 = 25 %: not above
    budget.check()
    budget.record(input_error="truncated mp4")
    with pytest.raises(DataError, match=r"6 of 21 items failed \(28\.6%\), above --max-failures 25\.0%; first: timeout"):
        budget.check()
    assert (budget.tried, budget.answered, budget.model_failures, budget.input_failures) == (21, 15, 4, 2)
