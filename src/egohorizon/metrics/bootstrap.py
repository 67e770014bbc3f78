"""S_norm over a set of points and its percentile bootstrap interval, paired across predictors.

Paired: every predictor is resampled on the same draws of points, so the interval of a difference
(predictor minus baseline) reflects how often the predictor wins on the same points, not the spread
of two independent samples. Plain numpy; used by the grounding study and ``score forecast-table``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def s_norm(s: np.ndarray, s_rand: np.ndarray) -> float:
    """SPEC §1's S_norm of a set of points: (mean S - mean S_rand) / (1 - mean S_rand)."""
    r = float(np.mean(s_rand))
    return (float(np.mean(s)) - r) / (1 - r) if r < 1 else float("nan")


# Fewest resamples a reported percentile interval may rest on: with a few hundred, the 2.5th and
# 97.5th percentiles are a handful of draws and move with the seed; with 1 the "95% CI" need not
# even hold its own estimate (issue 36, item 8). Efron & Tibshirani suggest 1,000 or more.
MIN_BOOT = 1000

def bootstrap(s: Mapping[str, np.ndarray], s_rand: np.ndarray, n_boot: int, seed: int,
              baseline: str | None = None, level: float = 0.95) -> dict[str, dict[str, float]]:
    """S_norm of each variant (arrays aligned on the same points) with a percentile interval over
    resampled points, and each variant's paired difference to ``baseline`` on the same resamples."""
    n = len(s_rand)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_boot, n))
    lo, hi = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    samples = {name: np.array([s_norm(v[d], s_rand[d]) for d in draws]) for name, v in s.items()}
    out = {}
    for name, values in s.items():
        row = {"S_norm": s_norm(values, s_rand), "lo": float(np.percentile(samples[name], lo)),
               "hi": float(np.percentile(samples[name], hi))}
        if baseline in s and name != baseline:
            diff = samples[name] - samples[baseline]
            row.update(diff=row["S_norm"] - s_norm(s[baseline], s_rand), diff_lo=float(np.percentile(diff, lo)),
                       diff_hi=float(np.percentile(diff, hi)))
        out[name] = row
    return out
