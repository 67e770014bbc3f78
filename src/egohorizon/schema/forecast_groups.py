"""A forecast group's name and its K rule, written once.

A forecast point belongs to a group: its hierarchy level L (1-5) and K, the number of next actions it
forecasts. SPEC §1 reports every per-group figure under ``L<level>_K<k>`` (``val/forecast_S_norm_L3_K10``);
the forecast task's log keys, the lmms-eval export and the run's objective all spell it with
``metric_key``. The K rule is ``KS_BOUND``: the forecast datamodules' ``data.ks`` and eval.py's
``sweep.ks`` (run/config_checks) and ``build_points`` (``ks_problem``) all hold K to it. Standard
library only, like the rest of ``schema/`` (``setting_bounds`` is one of the root's small modules).
"""

from __future__ import annotations

from collections.abc import Sequence

from egohorizon.setting_bounds import Bound

MIN_K = 1  # a point forecasts at least one action
# The K rule as a setting bound (a list of whole numbers >= MIN_K); users give it their own key.
KS_BOUND = Bound("ks", low=MIN_K, each=True)


def metric_key(level: int, k: int) -> str:
    """``L3_K10``: the suffix of every per-group metric and log key."""
    return f"L{level}_K{k}"


def ks_problem(ks: Sequence[int]) -> str | None:
    """What is wrong with a list of K (empty, or an item ``KS_BOUND`` refuses), or None."""
    if not ks or any(KS_BOUND.problem(k) for k in ks):
        return f"ks={list(ks)}: expected integers >= {MIN_K}"
    return None
