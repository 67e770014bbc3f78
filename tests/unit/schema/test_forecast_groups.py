"""Issue 39 §3: a forecast group's key and its K rule are spelled once (schema.forecast_groups); the
task's log keys and the lmms-eval export use that spelling."""

from __future__ import annotations

import pytest

from egohorizon.schema.forecast_groups import ks_problem, metric_key
from egohorizon.tasks.forecast import group_suffix


def test_the_key_is_level_then_k():
    assert metric_key(3, 10) == "L3_K10"
    assert group_suffix({"source": "epic", "level": 2, "k": 1}, several_sources=False) == "L2_K1"
    assert group_suffix({"source": "epic", "level": 2, "k": 1}, several_sources=True) == "epic_L2_K1"


@pytest.mark.parametrize("ks, problem", [
    ([1, 10], None),
    ([], "ks=[]: expected integers >= 1"),
    ([1, 0], "ks=[1, 0]: expected integers >= 1"),
    ([2.5], "ks=[2.5]: expected integers >= 1"),
    ([True], "ks=[True]: expected integers >= 1"),  # KS_BOUND's rule: a boolean is no count
])
def test_the_k_rule(ks, problem):
    assert ks_problem(ks) == problem
