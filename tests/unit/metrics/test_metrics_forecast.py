"""The forecasting score (SPEC §1): hand-computed values, Levenshtein equivalence, best-of-N,
invalid counting, random-baseline normalisation and the repeat-last-K baseline."""

from __future__ import annotations

import csv
import math

import editdistance
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from egohorizon.backbones.embedders import EmbeddingTable, ExactEmbedder, PrecomputedEmbedder, get_embedder
from egohorizon.metrics.forecast import (
    _pair_scores,
    repeat_last_k,
    score_forecasts,
    soft_edit_distances,
    soft_edit_score,
)
from egohorizon.schema import ForecastPoint


def unit(angle_degrees: float) -> list[float]:
    """A 2-D unit vector: cosines between such vectors are cos(angle difference)."""
    radians = math.radians(angle_degrees)
    return [math.cos(radians), math.sin(radians)]


def point(
    pid: str,
    targets: list[str],
    *,
    source="demo",
    level=1,
    k=None,
    participant="P1",
    context=None,
    start=100.0,
) -> ForecastPoint:
    windows = [[start + 10 * i, start + 10 * i + 5] for i in range(len(targets))]
    return ForecastPoint(
        id=pid,
        source=source,
        participant=participant,
        level=level,
        k=k or len(targets),
        t0=start,
        context=context or [],
        targets=targets,
        windows=windows,
    )


# ------------------------------------------------------------------------ hand-computed values


def test_hand_computed_soft_edit_scores():
    # cos(g1, a1) = cos 60deg = 0.5 -> c = 0.5 ; cos(g2, a1) = cos 90deg = 0 -> c = 1 ;
    # cos(g1, g2) = cos 150deg < 0 -> c = 1
    embedder = PrecomputedEmbedder({"g1": unit(0), "g2": unit(150), "a1": unit(60)})
    # [g1, g2] vs [a1]: substitute g1->a1 (0.5) + delete g2 (1) = 1.5 ; S = 1 - 1.5 / 2 = 0.25
    assert soft_edit_score(["g1", "g2"], ["a1"], embedder) == pytest.approx(0.25)
    # [g1] vs [a1, a1]: 0.5 + insertion 1 = 1.5 ; S = 0.25
    assert soft_edit_score(["g1"], ["a1", "a1"], embedder) == pytest.approx(0.25)
    # [g1, g2] vs [g2, g1]: two substitutions cost 1 + 1 = 2 = delete+insert paths; S = 0
    assert soft_edit_score(["g1", "g2"], ["g2", "g1"], embedder) == pytest.approx(0.0)
    # [g1, g2, g1] vs [g2, g1]: delete the first g1 (1), then exact matches: S = 1 - 1/3
    assert soft_edit_score(["g1", "g2", "g1"], ["g2", "g1"], embedder) == pytest.approx(2 / 3)
    # empty sides (SPEC: m = n = 0 gives 1; one side empty gives 0)
    assert soft_edit_score([], [], embedder) == 1.0
    assert soft_edit_score(["g1"], [], embedder) == 0.0
    assert soft_edit_score([], ["g1"], embedder) == 0.0


def test_k1_is_the_clipped_cosine():
    angles = {"ref": 0, "near": 25, "orth": 90, "opposite": 160}
    embedder = PrecomputedEmbedder({name: unit(a) for name, a in angles.items()})
    for name, angle in angles.items():
        expected = min(1.0, max(0.0, math.cos(math.radians(angle))))
        assert soft_edit_score(["ref"], [name], embedder) == pytest.approx(expected, abs=1e-6)
    assert soft_edit_score(["ref"], ["opposite"], embedder) == 0.0  # negative cosine clipped to cost 1


# ------------------------------------------------------------------------ against Levenshtein

actions = st.lists(
    st.sampled_from(["take cup", "Take cup.", "open fridge", "wash plate", "cut onion", "stir pot"]),
    max_size=12,
)


def levenshtein_score(reference: list[str], prediction: list[str]) -> float:
    """The independent reference: 1 - Levenshtein / max(m, n) by two packages that must agree."""
    # "Take cup." and "take cup" are the same action after normalisation (case, punctuation)
    norm = [[a.lower().rstrip(".") for a in seq] for seq in (reference, prediction)]
    distance = editdistance.eval(norm[0], norm[1])
    assert distance == Levenshtein.distance(norm[0], norm[1])
    return 1.0 if not reference and not prediction else 1 - distance / max(len(reference), len(prediction))


@settings(max_examples=300, deadline=None)
@given(reference=actions, prediction=actions)
def test_exact_embedder_gives_normalised_levenshtein(reference, prediction):
    expected = levenshtein_score(reference, prediction)
    assert soft_edit_score(reference, prediction, ExactEmbedder()) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(pairs=st.lists(st.tuples(actions, actions), min_size=25, max_size=50))
def test_batched_exact_scores_are_normalised_levenshtein(pairs):
    # ~1,500 hypothesis-generated sequence pairs per run, scored the way score_forecasts scores them
    table = EmbeddingTable(ExactEmbedder())
    table.add([a for pair in pairs for seq in pair for a in seq])
    scores = _pair_scores(table, [(table.rows(r), table.rows(p)) for r, p in pairs])
    for (reference, prediction), score in zip(pairs, scores):
        assert score == pytest.approx(levenshtein_score(reference, prediction), abs=1e-12)


def naive_distance(costs: np.ndarray) -> float:
    m, n = costs.shape
    d = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(m + 1):
        d[i][0] = float(i)
    for j in range(n + 1):
        d[0][j] = float(j)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + costs[i - 1, j - 1])
    return d[m][n]


@settings(max_examples=300, deadline=None)
@given(m=st.integers(1, 9), n=st.integers(1, 9), seed=st.integers(0, 2**31))
def test_vectorised_dp_equals_the_textbook_recurrence(m, n, seed):
    costs = np.random.default_rng(seed).random((5, m, n))
    got = soft_edit_distances(costs)
    for b in range(5):
        assert got[b] == pytest.approx(naive_distance(costs[b]), abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(-180, 180), min_size=1, max_size=8),
    st.lists(st.floats(-180, 180), min_size=0, max_size=8),
)
def test_score_stays_in_unit_interval(ref_angles, pred_angles):
    vectors = {f"r{i}": unit(a) for i, a in enumerate(ref_angles)}
    vectors.update({f"p{i}": unit(a) for i, a in enumerate(pred_angles)})
    score = soft_edit_score(
        [f"r{i}" for i in range(len(ref_angles))],
        [f"p{i}" for i in range(len(pred_angles))],
        PrecomputedEmbedder(vectors),
    )
    assert 0.0 <= score <= 1.0


# ------------------------------------------------------------------------ best of N, invalid


def test_best_of_n_and_invalid_counting():
    embedder = ExactEmbedder()
    points = [
        point("p1", ["a", "b", "c"]),
        point("p2", ["d", "e", "f"], start=200),
        point("p3", ["a", "e"], start=300),
        point("p4", ["b"], start=400, k=1),
    ]
    predictions = {
        "p1": [["x", "y", "z"], ["a", "b", "x"], ["a", "b", "c"], ["a"]],  # 4th is beyond N=3
        "p2": None,  # unparseable output
        "p3": [[" ", ""], ["a", " e "]],  # empty candidate dropped
        "unknown": [["a"]],
    }  # p4 missing
    report = score_forecasts(points, predictions, embedder, n_random_draws=2, seed=1)
    rows = {r["id"]: r for r in report["per_point"]}
    assert rows["p1"]["S"] == 1.0 and rows["p1"]["best"] == 2 and rows["p1"]["truncated"]
    assert rows["p2"]["S"] == 0.0 and rows["p2"]["invalid"] and rows["p2"]["best"] is None
    assert rows["p3"]["S"] == 1.0 and rows["p3"]["n_candidates"] == 1 and not rows["p3"]["invalid"]
    assert rows["p4"]["invalid"]
    overall = report["overall"]
    assert overall["n"] == 4 and overall["invalid"] == 2 and overall["truncated"] == 1
    assert overall["S"] == pytest.approx((1 + 0 + 1 + 0) / 4)
    # best-of-N is the maximum of the individual scores
    singles = [soft_edit_score(["a", "b", "c"], cand, embedder) for cand in predictions["p1"][:3]]
    assert rows["p1"]["S"] == max(singles)
    assert {(g["source"], g["level"], g["k"]) for g in report["groups"]} == {
        ("demo", 1, 3),
        ("demo", 1, 2),
        ("demo", 1, 1),
    }


def test_random_pool_excludes_own_targets_and_reports_empty_pools():
    embedder = ExactEmbedder()
    # Group (demo, 1): two points; each point's pool is the other point's targets only.
    points = [
        point("p1", ["a", "a"]),
        point("p2", ["b", "b"], start=200),
        point("lonely", ["z"], source="other"),
    ]
    report = score_forecasts(points, {"p1": [["a", "a"]], "p2": [["b", "b"]], "lonely": [["z"]]}, embedder)
    rows = {r["id"]: r for r in report["per_point"]}
    assert rows["p1"]["S_rand"] == 0.0 and rows["p2"]["S_rand"] == 0.0  # never draws its own "a"
    assert rows["lonely"]["S_rand"] is None
    group = {g["source"]: g for g in report["groups"]}
    assert group["demo"]["S_norm"] == 1.0 and group["other"]["S_norm"] is None
    assert report["overall"]["no_random_pool"] == 1
    # a point holding most of its pool draws only from the rest: here always "d"
    points = [point("big", ["a", "b", "c"]), point("small", ["d"], start=200)]
    report = score_forecasts(points, {"big": [["d", "d", "d"]], "small": [["a"]]}, embedder)
    rows = {r["id"]: r for r in report["per_point"]}
    assert rows["big"]["S_rand"] == 0.0 and rows["big"]["S"] == 0.0
    assert rows["small"]["S_rand"] == 0.0  # draws from a, b, c never hit "d"


def epic_points(shared_data, n_points=120, k=5):
    """Forecast points over real EPIC-KITCHENS-100 narrations: consecutive actions of one video."""
    path = shared_data / "epic-kitchens-100-annotations" / "EPIC_100_validation.csv"
    with open(path, newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["video_id"] == "P29_05"]
    rows.sort(key=lambda r: r["start_timestamp"])
    points = []
    for i in range(0, min(len(rows) - k, n_points * k), k):
        chunk = rows[i : i + k]
        points.append(
            ForecastPoint(
                id=f"pt{i}",
                source="epic",
                participant="P01",
                level=1,
                k=k,
                t0=float(i),
                context=[],
                targets=[r["narration"] for r in chunk],
                windows=[[float(i + j), float(i + j) + 0.5] for j in range(k)],
            )
        )
    return points


def test_normalisation_is_zero_for_random_and_one_for_perfect_predictions(shared_data):
    points = epic_points(shared_data)
    assert len(points) >= 30
    embedder = ExactEmbedder()
    perfect = score_forecasts(points, {p.id: [p.targets] for p in points}, embedder)
    assert perfect["overall"]["S"] == 1.0 and perfect["overall"]["S_norm"] == 1.0
    # "random predictions": trajectories drawn like the baseline, from other points' targets
    rng = np.random.default_rng(7)
    pool = [t for p in points for t in p.targets]
    random_preds = {
        p.id: [[pool[i] for i in rng.integers(0, len(pool), p.k)] for _ in range(3)] for p in points
    }
    chance = score_forecasts(points, random_preds, embedder, n_random_draws=5)
    assert abs(chance["overall"]["S_norm"]) < 0.1
    assert 0.0 < chance["overall"]["S_rand"] < 0.5


def test_repeat_last_k_takes_the_most_recent_events_oldest_first():
    context = [
        {"text": "c", "start": 20.0, "end": 30.0},
        {"text": "a", "start": 0.0, "end": 10.0},
        {"text": "b", "start": 10.0, "end": 20.0},
    ]
    p = ForecastPoint(
        id="x",
        source="s",
        participant="P",
        level=1,
        k=2,
        t0=30.0,
        context=context,
        targets=["d", "e"],
        windows=[[30, 40], [40, 50]],
    )
    assert repeat_last_k(p) == ["b", "c"]
    p.k = 10
    assert repeat_last_k(p) == ["a", "b", "c"]


@pytest.mark.slow
def test_minilm_scores_real_narrations(shared_data):
    embedder = get_embedder("minilm")
    assert embedder.name == "minilm"
    vectors = embedder.embed(["take cup", "pick up the cup", "open fridge"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosine = float(vectors[0] @ vectors[1])
    assert soft_edit_score(["take cup"], ["pick up the cup"], embedder) == pytest.approx(cosine, abs=1e-5)
    assert soft_edit_score(["take cup"], ["pick up the cup"], embedder) > soft_edit_score(
        ["take cup"], ["open fridge"], embedder
    )
    points = epic_points(shared_data, n_points=40)
    perfect = score_forecasts(points, {p.id: [p.targets] for p in points}, embedder)
    assert perfect["overall"]["S_norm"] == pytest.approx(1.0, abs=1e-5)
    rng = np.random.default_rng(11)
    pool = [t for p in points for t in p.targets]
    random_preds = {
        p.id: [[pool[i] for i in rng.integers(0, len(pool), p.k)] for _ in range(3)] for p in points
    }
    chance = score_forecasts(points, random_preds, embedder)
    assert abs(chance["overall"]["S_norm"]) < 0.1


def test_s_norm_takes_s_and_s_rand_over_the_same_points():
    """A point without a random pool counts in S but not in S_norm (hand-computed).

    p1 and p2 (source demo) each draw only the other's target, which never matches: S_rand = 0 for
    both. 'lonely' (source other) has no pool. Overall: S = (1 + 0 + 1) / 3, but S_norm uses p1 and
    p2 only: S = 0.5 against S_rand = 0, so S_norm = 0.5 (mixing the sets would give 2/3).
    """
    embedder = ExactEmbedder()
    points = [point("p1", ["a"]), point("p2", ["b"], start=200), point("lonely", ["z"], source="other")]
    report = score_forecasts(points, {"p1": [["a"]], "p2": [["x"]], "lonely": [["z"]]}, embedder)
    overall = report["overall"]
    assert overall["S"] == pytest.approx(2 / 3)
    assert overall["S_rand"] == 0.0 and overall["no_random_pool"] == 1
    assert overall["S_norm"] == pytest.approx(0.5)
