"""From raw outputs to candidates, scores, log keys, prediction records and summary tables
(hand-computed with the ``exact`` embedder: a candidate action scores 1 when its text matches)."""

from __future__ import annotations

import pytest

from egohorizon.backbones.embedders import get_embedder
from egohorizon.schema import ForecastPoint, ForecastPrediction
from egohorizon.tasks.forecast import (
    candidates_from_texts,
    evaluate,
    example_rows,
    flat_metrics,
    format_summary,
    prediction_records,
    summary_rows,
)
from egohorizon.tasks.forecast_predictors import format_rows, group_rows


def _point(pid: str, context: list[str], targets: list[str], source: str = "toy") -> ForecastPoint:
    events = [
        {"id": f"{pid}-{i}", "start": 10.0 * i, "end": 10.0 * i + 5, "text": t} for i, t in enumerate(context)
    ]
    t0 = 10.0 * len(context)
    return ForecastPoint(
        id=pid,
        source=source,
        participant="p1",
        level=3,
        k=len(targets),
        t0=t0,
        context=events,
        targets=targets,
        windows=[[t0 + i, t0 + i + 1] for i in range(len(targets))],
    )


def test_candidates_from_sampled_sequences_and_from_one_in_context_answer():
    texts = ['{"candidates": [["make coffee"]]}', "not json at all", 'x {"candidates": [["read", "sleep"]]}']
    assert candidates_from_texts(texts, "sequences", 3) == [["make coffee"], ["read", "sleep"]]
    assert candidates_from_texts(["???", ""], "sequences", 3) is None
    many = '{"candidates": [["a"], ["b"], ["c"], ["d"]]}'
    assert candidates_from_texts([many], "in_prompt", 3) == [["a"], ["b"], ["c"]]
    assert candidates_from_texts([], "in_prompt", 3) is None
    with pytest.raises(ValueError, match="mode"):
        candidates_from_texts(texts, "beam", 3)


def test_evaluate_scores_model_repeat_last_and_random_by_hand():
    # p1: the model's second sample is right, repeat-last ("brew tea") is wrong.
    # p2: the model's outputs are all invalid, repeat-last ("wash up") is right.
    points = [
        _point("p1", ["wake up", "brew tea"], ["make coffee"]),
        _point("p2", ["eat", "wash up"], ["wash up"]),
    ]
    candidates = {
        "p1": candidates_from_texts(
            ['{"candidates": [["drink water"]]}', '{"candidates": [["make coffee"]]}']
        ),
        "p2": candidates_from_texts(["garbage"]),
    }
    result = evaluate(points, candidates, get_embedder("exact"), "test", n_random_draws=3, seed=0)
    m = result.metrics
    # The random pool holds the other point's target only, which never matches: S_rand = 0.
    assert m["test/random_S_L3_K1"] == 0.0
    assert m["test/forecast_S_L3_K1"] == pytest.approx(0.5) and m[
        "test/forecast_S_norm_L3_K1"
    ] == pytest.approx(0.5)
    assert m["test/forecast_invalid_rate_L3_K1"] == 0.5 and m["test/forecast_n_L3_K1"] == 2
    assert m["test/repeat_last_S_L3_K1"] == pytest.approx(0.5)
    assert m["test/repeat_last_invalid_rate_L3_K1"] == 0.0
    assert m["test/forecast_S"] == pytest.approx(0.5)  # overall
    per_point = {row["id"]: row for row in result.report["per_point"]}
    assert per_point["p1"]["best"] == 1 and per_point["p2"]["invalid"]
    columns, rows = example_rows(points, result, n=5)
    assert [r[0] for r in rows] == ["p1", "p2"] and rows[1][columns.index("candidates")] == "(invalid)"


def test_flat_metrics_name_the_source_only_when_there_are_several():
    points = [_point("a", ["x"], ["y"], source="demo"), _point("b", ["y"], ["x"], source="epic")]
    report = evaluate(points, {"a": [["y"]], "b": [["y"]]}, get_embedder("exact"), "val").report
    keys = flat_metrics(report, "val", "forecast")
    assert keys["val/forecast_S_demo_L3_K1"] == 1.0 and keys["val/forecast_S_epic_L3_K1"] == 0.0
    rows = group_rows({"forecast": report})
    assert [(r["source"], r["level"], r["k"], r["group"]) for r in rows] == [
        ("demo", 3, 1, "demo_L3_K1"),
        ("epic", 3, 1, "epic_L3_K1"),
    ]
    assert rows[0]["forecast_S"] == 1.0 and rows[1]["forecast_S"] == 0.0  # one point each: no random pool


def test_prediction_records_keep_raw_text_and_stay_rescorable():
    points = [_point("p1", ["a"], ["b"]), _point("p2", ["a"], ["b"])]
    texts = {"p1": ['{"candidates": [["b"]]}'], "p2": ["nonsense", "more nonsense"]}
    candidates = {pid: candidates_from_texts(t) for pid, t in texts.items()}
    rows = prediction_records(points, texts, candidates, "tiny@x", "forecast", "1", 7)
    assert rows[0]["candidates"] == [["b"]] and "text" not in rows[0]
    assert rows[1]["text"] == "nonsense" and "candidates" not in rows[1]  # re-parsed: invalid again
    assert rows[1]["raw_texts"] == texts["p2"]
    assert {(r["model"], r["prompt"], r["prompt_version"], r["seed"]) for r in rows} == {
        ("tiny@x", "forecast", "1", 7)
    }
    for row in rows:
        record, problems = ForecastPrediction.from_dict(row)
        assert record is not None and not problems


def _group(source, level, k, n, s, s_norm, s_rand, invalid=0):
    return {
        "source": source,
        "level": level,
        "k": k,
        "n": n,
        "S": s,
        "S_norm": s_norm,
        "S_rand": s_rand,
        "invalid": invalid,
    }


def test_summary_table_has_every_source_level_and_k_with_the_baselines():
    from egohorizon.tasks import Evaluation

    groups = [_group("demo", 1, 1, 10, 0.6, 0.5, 0.2, invalid=1), _group("epic", 5, 10, 4, 0.3, None, None)]
    repeat = [_group("demo", 1, 1, 10, 0.4, 0.25, 0.2), _group("epic", 5, 10, 4, 0.1, None, None)]
    evaluation = Evaluation(
        report={"overall": {}, "groups": groups}, baselines={"repeat_last": {"groups": repeat}}, metrics={}
    )
    rows = summary_rows(evaluation)
    assert rows[0] == {
        "source": "demo",
        "level": 1,
        "k": 1,
        "n": 10,
        "model_S": 0.6,
        "model_S_norm": 0.5,
        "model_invalid_rate": 0.1,
        "repeat_last_S": 0.4,
        "repeat_last_S_norm": 0.25,
        "random_S": 0.2,
        "random_S_norm": 0.0,
    }
    assert (rows[1]["source"], rows[1]["level"], rows[1]["k"], rows[1]["random_S_norm"]) == (
        "epic",
        5,
        10,
        None,
    )
    text = format_summary(rows, {"name": "val/forecast_S_norm_L1_K1", "value": 0.42})
    assert "0.500 ( 0.600)" in text and "0.250 ( 0.400)" in text and "0.000 ( 0.200)" in text
    assert "epic  5  10" in text and "val/forecast_S_norm_L1_K1 = 0.4200" in text
    assert text.splitlines()[2].startswith("  demo  1   1")
    assert summary_rows(None) == [] and "no test scores" in format_summary([])
    assert "demo_L1_K1" in format_rows(group_rows({"forecast": evaluation.report}))


def test_the_objective_is_a_validation_metric_and_the_best_checkpoint_score():
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from egohorizon.errors import ConfigError
    from egohorizon.run.training import objective_value

    cfg = OmegaConf.create({"objective": "val/forecast_S_norm_L2_K1", "objective_mode": "max"})
    ranked = SimpleNamespace(monitor="val/forecast_S_norm_L2_K1", best_model_score=0.7)
    assert objective_value(cfg, ranked, {"val/forecast_S_norm_L2_K1": 0.1})["value"] == pytest.approx(0.7)
    unranked = SimpleNamespace(monitor=None, best_model_score=None)
    assert objective_value(cfg, unranked, {"val/forecast_S_norm_L2_K1": 0.1})["value"] == 0.1
    with pytest.raises(ConfigError, match="not a validation metric"):
        objective_value(OmegaConf.create({"objective": "test/forecast_S_norm_L2_K1"}), None, {})
