"""The NextMe-800 forecasting score (SPEC §1): embedding-based soft edit distance, best of N,
invalid outputs, random-baseline normalisation per (source, level, K), and the repeat-last-K baseline.

Substitution cost ``c_ij = clip(1 - cos(e(g_i), e(a_j)), 0, 1)``, insertion/deletion 1, ``D`` the
minimum-cost alignment, ``S = 1 - D[m][n] / max(m, n)`` (1 when both are empty, 0 when one is).
With the ``exact`` embedder S is ``1 - Levenshtein / max(m, n)``.

Speed: every distinct string is embedded once per call (``EmbeddingTable``), and the dynamic program
runs over many pairs at once in numpy (one vector operation per reference row; the insertion chain
along a row is a running minimum, see ``soft_edit_distances``). Hand-written because no library
computes an edit distance with real-valued substitution costs over a batch.
"""

from __future__ import annotations

import logging
import zlib
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from egohorizon.backbones.embedders import Embedder, EmbeddingTable
from egohorizon.schema import ForecastPoint

log = logging.getLogger(__name__)

DEFAULT_CANDIDATES = 3  # N in the paper: each predictor returns three trajectories
_CHUNK_BYTES = 64 * 2**20  # gathered embeddings per vectorised chunk


def soft_edit_distances(costs: np.ndarray) -> np.ndarray:
    """``D[m][n]`` for a batch of substitution-cost matrices ``costs`` [B, m, n] (values in [0, 1]).

    Row i of the DP: ``entry[k] = min(D[i-1][k] + 1, D[i-1][k-1] + c_ik)`` (``entry[0] = i``), and
    with insertions ``D[i][j] = min_{k<=j} entry[k] + (j - k)``, i.e. a running minimum of
    ``entry[k] - k`` plus ``j``. So each row is a handful of vector operations over the batch.
    """
    costs = np.asarray(costs, dtype=np.float64)
    batch, m, n = costs.shape
    offsets = np.arange(n + 1, dtype=np.float64)
    previous = np.broadcast_to(offsets, (batch, n + 1))
    for i in range(1, m + 1):
        entry = np.empty((batch, n + 1))
        entry[:, 0] = i
        np.minimum(previous[:, 1:] + 1.0, previous[:, :-1] + costs[:, i - 1, :], out=entry[:, 1:])
        previous = np.minimum.accumulate(entry - offsets, axis=1) + offsets
    return np.array(previous[:, n])


def scores_from_costs(costs: np.ndarray) -> np.ndarray:
    """S for a batch of cost matrices [B, m, n]; handles empty sides (S = 1 if both, else 0)."""
    batch, m, n = costs.shape
    if m == 0 and n == 0:
        return np.ones(batch)
    if m == 0 or n == 0:
        return np.zeros(batch)
    return np.clip(1.0 - soft_edit_distances(costs) / max(m, n), 0.0, 1.0)


def _pair_scores(table: EmbeddingTable, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """S for each (reference rows, prediction rows) pair of table indices, batched by shape."""
    out = np.zeros(len(pairs))
    by_shape: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, (ref, pred) in enumerate(pairs):
        by_shape[(len(ref), len(pred))].append(index)
    matrix = table.matrix
    width = matrix.shape[1] if matrix.ndim == 2 else 1
    for (m, n), indices in by_shape.items():
        if m == 0 or n == 0:
            out[indices] = 1.0 if m == n else 0.0
            continue
        refs = np.stack([pairs[i][0] for i in indices])
        preds = np.stack([pairs[i][1] for i in indices])
        chunk = max(1, _CHUNK_BYTES // (8 * width * (m + n)))
        for start in range(0, len(indices), chunk):
            stop = start + chunk
            similarity = table.embedder.similarity(matrix[refs[start:stop]], matrix[preds[start:stop]])
            costs = np.clip(1.0 - similarity, 0.0, 1.0)
            out[indices[start:stop]] = scores_from_costs(costs)
    return out


def soft_edit_score(reference: Sequence[str], prediction: Sequence[str], embedder: Embedder) -> float:
    """S for one reference list and one predicted list of action texts (SPEC §1)."""
    table = EmbeddingTable(embedder)
    table.add(list(reference) + list(prediction))
    return float(_pair_scores(table, [(table.rows(list(reference)), table.rows(list(prediction)))])[0])


def repeat_last_k(point: ForecastPoint) -> list[str]:
    """The baseline: the last K context events of the point, oldest first (fewer if shorter)."""
    context = sorted(point.context, key=lambda event: (event["end"], event["start"]))
    return [event["text"] for event in context[-point.k :]] if point.k > 0 else []


def clean_candidates(candidates: Sequence[Sequence[str]] | None) -> list[list[str]] | None:
    """Strips action strings, drops empty ones and empty candidates; None if nothing is left."""
    if candidates is None:
        return None
    cleaned = [[a.strip() for a in cand if isinstance(a, str) and a.strip()] for cand in candidates]
    cleaned = [cand for cand in cleaned if cand]
    return cleaned or None


def _event_key(point: ForecastPoint, index: int) -> tuple:
    # Points whose target windows overlap share events; an event is its participant, window and text.
    window = point.windows[index] if index < len(point.windows) else (None, None)
    return (point.participant, window[0], window[1], point.targets[index])


def _random_pools(points: Sequence[ForecastPoint]) -> dict[tuple[str, int], tuple[list[str], dict]]:
    """(source, level) -> (texts of the distinct target events, event key -> position)."""
    pools: dict[tuple[str, int], tuple[list[str], dict]] = {}
    for point in points:
        texts, positions = pools.setdefault((point.source, point.level), ([], {}))
        for index, text in enumerate(point.targets):
            key = _event_key(point, index)
            if key not in positions:
                positions[key] = len(texts)
                texts.append(text)
    return pools


def _draw_random(
    point: ForecastPoint, pool: tuple[list[str], dict], n_draws: int, n_candidates: int, seed: int
) -> list[list[list[str]]] | None:
    """``n_draws`` x ``n_candidates`` random trajectories of len(targets) events, or None (empty pool).

    Each event is drawn uniformly from the pool of the point's (source, level) excluding its own
    target events; the generator is seeded by (seed, point id) so draws do not depend on file order.
    """
    texts, positions = pool
    own = np.array(
        sorted({positions[_event_key(point, i)] for i in range(len(point.targets))}), dtype=np.int64
    )
    if own.size >= len(texts):
        return None
    rng = np.random.default_rng([seed, zlib.crc32(point.id.encode("utf-8"))])
    length = max(1, len(point.targets))
    needed = n_draws * n_candidates * length
    if own.size * 2 > len(texts):  # small pool: list the allowed events
        allowed = np.setdiff1d(np.arange(len(texts)), own)
        picks = allowed[rng.integers(0, allowed.size, size=needed)]
    else:  # large pool: draw from all and reject the point's own events (uniform over the rest)
        picks = np.empty(0, dtype=np.int64)
        while picks.size < needed:
            draw = rng.integers(0, len(texts), size=2 * needed)
            picks = np.concatenate([picks, draw[~np.isin(draw, own)]])
        picks = picks[:needed]
    return [
        [[texts[i] for i in cand] for cand in draw] for draw in picks.reshape(n_draws, n_candidates, length)
    ]


def _normalise(s: float | None, s_rand: float | None) -> float | None:
    if s is None or s_rand is None or s_rand >= 1.0:
        return None
    return (s - s_rand) / (1.0 - s_rand)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def score_forecasts(
    points: Sequence[ForecastPoint],
    predictions: Mapping[str, Sequence[Sequence[str]] | None],
    embedder: Embedder,
    n_random_draws: int = 5,
    seed: int = 0,
    max_candidates: int = DEFAULT_CANDIDATES,
) -> dict:
    """Scores forecasts against points (SPEC §1, report shape of SPEC §6).

    predictions: point id -> candidate trajectories (lists of action texts), or None for an output
        that did not parse. A point missing from ``predictions`` is scored like None.
    Returns ``{"overall", "groups", "per_point", "settings"}``; S values are in [0, 1].

    Choices the SPEC leaves open, written down here:
    - invalid = no usable candidate (None, missing, or only empty actions); such a point scores 0.
    - only the first ``max_candidates`` candidates count (best-of-N with N = 3 by default), so a
      predictor cannot buy score with more guesses; ``truncated`` counts points that had more.
      A candidate longer or shorter than K is scored as is (the edit distance charges the difference).
    - the random pool of a (source, level) holds each distinct target event once (participant,
      window, text), so points with overlapping targets do not over-weight shared events; a random
      trajectory has as many events as the point has targets, N = ``max_candidates`` trajectories per
      draw, and the point's S_rand is the mean best-of-N over ``n_random_draws`` draws.
    - S_norm = (S - S_rand) / (1 - S_rand) per group, both means over the points that have a
      random pool (``no_random_pool`` counts the others; ``S`` itself is over all points);
      ``overall.S_norm`` pools all points that way, ``overall.S_norm_macro`` is the mean of the
      groups' S_norm.
    """
    if n_random_draws < 1 or max_candidates < 1:
        raise ValueError("n_random_draws and max_candidates must be >= 1")
    pools = _random_pools(points)
    table = EmbeddingTable(embedder)
    per_point, pairs, owners = [], [], []  # owners[i] = (point index, "cand" | draw number)
    texts: list[str] = []
    prepared = []
    for point in points:
        candidates = clean_candidates(predictions.get(point.id))
        truncated = candidates is not None and len(candidates) > max_candidates
        candidates = candidates[:max_candidates] if candidates else None
        draws = _draw_random(point, pools[(point.source, point.level)], n_random_draws, max_candidates, seed)
        prepared.append((point, candidates, truncated, draws))
        texts.extend(point.targets)
        for cand in candidates or []:
            texts.extend(cand)
        for draw in draws or []:
            for cand in draw:
                texts.extend(cand)
    table.add(texts)

    for index, (point, candidates, _, draws) in enumerate(prepared):
        ref = table.rows(point.targets)
        for cand in candidates or []:
            pairs.append((ref, table.rows(cand)))
            owners.append((index, "cand"))
        for number, draw in enumerate(draws or []):
            for cand in draw:
                pairs.append((ref, table.rows(cand)))
                owners.append((index, number))
    scores = _pair_scores(table, pairs)

    cand_scores: dict[int, list[float]] = defaultdict(list)
    draw_scores: dict[tuple[int, int], list[float]] = defaultdict(list)
    for (index, what), score in zip(owners, scores):
        if what == "cand":
            cand_scores[index].append(float(score))
        else:
            draw_scores[(index, what)].append(float(score))

    for index, (point, candidates, truncated, draws) in enumerate(prepared):
        own = cand_scores.get(index, [])
        best = int(np.argmax(own)) if own else None
        s_rand = float(np.mean([max(draw_scores[(index, d)]) for d in range(len(draws))])) if draws else None
        per_point.append(
            {
                "id": point.id,
                "S": own[best] if own else 0.0,
                "best": best,
                "S_rand": s_rand,
                "invalid": candidates is None,
                "n_candidates": len(candidates or []),
                "truncated": truncated,
                "source": point.source,
                "level": point.level,
                "k": point.k,
            }
        )
    return _aggregate(per_point, embedder, n_random_draws, seed, max_candidates)


def _summary(rows: Sequence[dict]) -> dict:
    s = _mean([r["S"] for r in rows])
    # S_norm compares S and S_rand on one point set: the points that have a random pool. Dividing
    # the mean S of all points by the mean S_rand of some would mix two populations.
    pooled = [r for r in rows if r["S_rand"] is not None]
    s_pooled = _mean([r["S"] for r in pooled])
    s_rand = _mean([r["S_rand"] for r in pooled])
    return {
        "S": s,
        "S_rand": s_rand,
        "S_norm": _normalise(s_pooled, s_rand),
        "n": len(rows),
        "invalid": sum(r["invalid"] for r in rows),
        "truncated": sum(r["truncated"] for r in rows),
        "no_random_pool": sum(r["S_rand"] is None for r in rows),
    }


def pooled_summary(rows: Sequence[dict]) -> dict:
    """``S, S_rand, S_norm, n, invalid, truncated, no_random_pool`` of any subset of a report's ``per_point``
    rows, pooled as ``overall`` is (e.g. all sources and levels of one K: NextMe-800's Table 3 columns)."""
    return _summary(rows)


def _aggregate(
    per_point: list[dict], embedder: Embedder, n_random_draws: int, seed: int, max_candidates: int
) -> dict:
    grouped: dict[tuple[str, int, int], list[dict]] = defaultdict(list)
    for row in per_point:
        grouped[(row["source"], row["level"], row["k"])].append(row)
    groups = [
        {"source": source, "level": level, "k": k, **_summary(rows)}
        for (source, level, k), rows in sorted(grouped.items())
    ]
    overall = _summary(per_point)
    overall["S_norm_macro"] = _mean([g["S_norm"] for g in groups])
    if overall["no_random_pool"]:
        log.warning(
            "%d point(s) have no other event of their (source, level) to draw a random baseline from",
            overall["no_random_pool"],
        )
    settings = {
        "embedder": embedder.name,
        "n_random_draws": n_random_draws,
        "seed": seed,
        "max_candidates": max_candidates,
    }
    return {"overall": overall, "groups": groups, "per_point": per_point, "settings": settings}
