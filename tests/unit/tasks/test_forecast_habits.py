"""The habit baselines beside a forecaster: the strongest rival chosen on validation, the paired
difference to it, and the task's evaluation and summary with them (``exact`` embedder: by hand)."""

from __future__ import annotations

import pytest

from egohorizon.metrics.habits import HABIT_PREDICTORS, learn_habits
from egohorizon.schema import Event, ForecastPoint
from egohorizon.tasks.forecast import ForecastTask, summary_rows
from egohorizon.tasks.forecast_habits import RULE_VALIDATION, strongest_by_group, versus_strongest

JAN1 = 1_704_067_200


def _train_events() -> list[Event]:
    texts = ["wake", "coffee"] * 3  # counts 3 each; coffee started last, so it leads the frequency order
    return [Event(id=f"e{i}", participant="p1", day="2024-01-01", session="s", level=3, start=JAN1 + 8 * 3600 + 60 * i,
                  end=JAN1 + 8 * 3600 + 60 * i + 30, text=t, source="toy") for i, t in enumerate(texts)]


def _point(pid: str, last: str, target: str) -> ForecastPoint:
    t0 = JAN1 + 2 * 86_400 + 100.0
    return ForecastPoint(id=pid, source="toy", participant="p1", level=3, k=1, t0=t0,
                         context=[{"text": last, "start": t0 - 10, "end": t0 - 5}], targets=[target],
                         windows=[[t0, t0 + 5]])


def _group(name_value: dict[str, float | None]) -> dict[str, dict]:
    return {name: {"groups": [{"source": "toy", "level": 3, "k": 1, "S_norm": v}]} for name, v in name_value.items()}


def test_strongest_is_the_highest_validation_s_norm_ties_to_the_earlier_name():
    assert strongest_by_group(_group({"repeat_last": 0.1, "frequency": 0.3, "markov": 0.2})) == {
        ("toy", 3, 1): ("frequency", 0.3)}
    assert strongest_by_group(_group({"repeat_last": 0.2, "markov": 0.2})) == {("toy", 3, 1): ("repeat_last", 0.2)}
    # the population rows are shown but never the rival; a missing S_norm is passed over
    assert strongest_by_group(_group({"frequency_all": 0.9, "markov": None, "time_of_day": -0.1})) == {
        ("toy", 3, 1): ("time_of_day", -0.1)}


def test_paired_difference_to_the_strongest_by_hand():
    # model S 1, 1, 0, 0 and markov S 1, 0, 0, 0 with S_rand 0.2 everywhere:
    # S_norm model (0.5 - 0.2) / 0.8 = 0.375, markov (0.25 - 0.2) / 0.8 = 0.0625, difference 0.3125;
    # the model is never below markov on a point, so no resample's difference is below 0
    ids = ["a", "b", "c", "d"]
    model = {"groups": [{"source": "toy", "level": 3, "k": 1}],
             "per_point": [{"id": i, "S": s, "S_rand": 0.2, "source": "toy", "level": 3, "k": 1}
                           for i, s in zip(ids, [1, 1, 0, 0])]}
    markov = {"per_point": [{"id": i, "S": s, "S_rand": 0.2} for i, s in zip(ids, [1, 0, 0, 0])]}
    (row,) = versus_strongest(model, {"markov": markov}, {("toy", 3, 1): ("markov", 0.4)}, n_boot=200)
    assert row["strongest"] == "markov" and row["chosen_S_norm"] == 0.4 and row["n"] == 4
    assert row["model_S_norm"] == pytest.approx(0.375) and row["strongest_S_norm"] == pytest.approx(0.0625)
    assert row["diff"] == pytest.approx(0.3125)
    assert 0.0 <= row["diff_lo"] <= row["diff"] <= row["diff_hi"]


def test_task_evaluation_scores_every_habit_baseline_and_the_difference_to_the_strongest():
    history = learn_habits(_train_events(), {("p1", "2024-01-01")})
    # validation: repeat-last right on v1, v2; markov too (its 2nd candidate on v1): a tie, so repeat_last
    validation = [_point("v1", "wake", "wake"), _point("v2", "coffee", "coffee"), _point("v3", "coffee", "read")]
    test = [_point("t1", "wake", "coffee"), _point("t2", "coffee", "wake"), _point("t3", "wake", "read")]
    model = {"t1": [["coffee"]], "t2": [["wake"]], "t3": [["read"]]}
    evaluation = ForecastTask().evaluate(test, model, "test", embedder="exact", history=history,
                                         validation_points=validation)
    assert set(HABIT_PREDICTORS) <= set(evaluation.baselines)
    # frequency answers "coffee" everywhere: right on t1 only; markov after "wake" starts with coffee: t1 too,
    # after "coffee" with wake: t2
    assert evaluation.baselines["frequency"]["groups"][0]["S"] == pytest.approx(1 / 3)
    assert evaluation.baselines["markov"]["groups"][0]["S"] == pytest.approx(2 / 3)
    assert evaluation.baselines["time_of_day"]["groups"][0]["no_clock"] == 3  # nothing near 00:01 in training
    assert evaluation.metrics["test/markov_S_L3_K1"] == pytest.approx(2 / 3)
    assert evaluation.metrics["test/frequency_all_no_history"] == 0.0
    (versus,) = evaluation.report["vs_strongest"]
    assert versus["strongest"] == "repeat_last" and versus["rule"] == RULE_VALIDATION
    # no target text repeats within a split, so random never matches (S_rand 0): validation repeat-last
    # S_norm = 2/3; on test it is right nowhere (0) and the model everywhere (1)
    assert versus["chosen_S_norm"] == pytest.approx(2 / 3)
    assert versus["diff"] == pytest.approx(1.0) and versus["model_S_norm"] == pytest.approx(1.0)
    text = ForecastTask().format_summary(summary_rows(evaluation))
    assert "Habit baselines" in text and "markov_all" in text
    assert "minus repeat_last" in text


def test_without_training_days_the_summary_says_the_habits_were_not_computed():
    evaluation = ForecastTask().evaluate([_point("t1", "wake", "coffee"), _point("t2", "x", "y")],
                                         {"t1": [["coffee"]]}, "test", embedder="exact")
    assert not set(HABIT_PREDICTORS) & set(evaluation.baselines)
    assert "habit baselines: not computed" in ForecastTask().format_summary(summary_rows(evaluation))


def test_mbr_option_keeps_every_parsed_sample_and_scores_the_three_it_chooses():
    task = ForecastTask.from_generation({"mode": "sequences", "num_candidates": 3, "mbr_samples": 5})
    texts = ['["a"]', '["a"]', "no list here", '["b"]', '["c"]', '["a"]']
    parsed = task.parse(texts)
    assert parsed == [["a"], ["a"], ["b"], ["c"], ["a"]]  # the unreadable sample is left out, 5 kept
    point = _point("t1", "wake", "c")
    evaluation = task.evaluate([point], {"t1": parsed}, "test", embedder="exact")
    # greedy MBR (metrics/test_mbr.py by hand): a, then b, then c -> the target c is among them: S 1
    assert evaluation.candidates["t1"] == [["a"], ["b"], ["c"]]
    assert evaluation.report["per_point"][0]["S"] == 1.0
    # without MBR the first three parsed are scored: a, a, b miss c
    plain = ForecastTask().evaluate([point], {"t1": ForecastTask().parse(texts)}, "test", embedder="exact")
    assert plain.report["per_point"][0]["S"] == 0.0
    with pytest.raises(ValueError, match="mbr_samples"):
        ForecastTask(num_candidates=3, mbr_samples=3)
