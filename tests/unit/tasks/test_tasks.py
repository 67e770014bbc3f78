"""The task registry and the QA task by hand: parse (never guess), score, log keys, summary."""

from __future__ import annotations

import pytest

from egohorizon.schema import QAItem
from egohorizon.tasks import TASKS, get_task, task_class


def _item(pid: str, task: str, answer: str, n_options: int = 4) -> QAItem:
    options = [f"option {i}" for i in range(n_options)]
    return QAItem(id=pid, participant="p1", task=task, question="?", options=options, answer=answer)


def test_registry_builds_each_task_and_refuses_unknown_names():
    assert {"forecast", "qa"} <= set(TASKS)
    assert get_task("forecast", num_candidates=5).num_candidates == 5
    assert get_task("qa").name == "qa"
    with pytest.raises(ValueError, match="unknown 'segmentation'.*forecast"):
        get_task("segmentation")


def test_a_predictor_scorer_is_declared_on_the_task_class():
    """Issue 39 §3: a task's one registry line is in TASKS; whether eval.py scores its predictors without an
    adapter, and with what, the class says."""
    assert task_class("forecast").predictor_scorer == "egohorizon.tasks.forecast_predictors:score_predictors"
    assert [name for name in TASKS if task_class(name).scores_baselines_alone()] == ["forecast"]


def test_forecast_task_objective_follows_the_data_settings():
    task = get_task("forecast")
    assert task.default_objective({"levels": [2, 3], "ks": [10, 1]}) == "val/forecast_S_norm_L2_K10"
    with pytest.raises(ValueError, match="levels"):
        task.default_objective({})
    assert task.parse(['{"candidates": [["a", "b"]]}', "nonsense"]) == [["a", "b"]]


def test_qa_task_scores_parses_and_flattens_by_hand():
    # Two task types: Event Counting 2 items (1 right, 1 invalid), Route Reasoning 1 item (right).
    items = [
        _item("q1", "Event Counting", "A"),
        _item("q2", "Event Counting", "B"),
        _item("q3", "Route Reasoning", "C"),
    ]
    task = get_task("qa")
    answers = {
        "q1": task.parse(["**A**"], items[0]),
        "q2": task.parse(["A or B, hard to say"], items[1]),  # two letters: invalid, never a guess
        "q3": task.parse(["The answer is C."], items[2]),
    }
    assert answers == {"q1": "A", "q2": None, "q3": "C"}
    evaluation = task.evaluate(items, answers, "val")
    metrics = evaluation.metrics
    assert metrics["val/qa_avg"] == pytest.approx((0.5 + 1.0) / 2)  # macro over task types
    assert metrics["val/qa_acc"] == pytest.approx(2 / 3)  # micro over items
    assert metrics["val/qa_invalid_rate"] == pytest.approx(1 / 3)
    assert metrics["val/qa_acc_event_counting"] == 0.5 and metrics["val/qa_acc_route_reasoning"] == 1.0
    assert metrics["val/qa_chance"] == pytest.approx(0.25)
    assert metrics["val/qa_avg_level3"] == pytest.approx(0.75)  # both are level-3 EgoMonth tasks
    rows = task.summary_rows(evaluation)
    assert [r["task"] for r in rows] == [
        "Event Counting",
        "Route Reasoning",
        "Avg (macro)",
        "Acc (micro)",
        "chance",
    ]
    text = task.format_summary(rows, {"name": task.default_objective({}), "value": 0.5})
    assert "Event Counting" in text and "0.750" in text and "val/qa_avg = 0.5000" in text


def test_prediction_records_carry_the_parsed_answer_or_the_raw_text():
    items = [_item("q1", "Event Counting", "A"), _item("q2", "Event Counting", "B")]
    task = get_task("qa")
    rows = task.prediction_records(
        items, {"q1": ["**A**"], "q2": ["A or B"]}, {"q1": "A", "q2": None}, "m", "qa", "1", 0
    )
    assert rows[0]["answer"] == "A" and "text" not in rows[0]
    assert rows[1]["text"] == "A or B" and "answer" not in rows[1]  # re-scoring counts it invalid again
    assert all(r["model"] == "m" and r["prompt_version"] == "1" and r["seed"] == 0 for r in rows)


def test_the_evaluation_callback_refuses_an_unknown_task_when_built():
    from egohorizon.callbacks.generation_eval import GenerationEvalCallback

    with pytest.raises(ValueError, match="unknown 'captions'"):
        GenerationEvalCallback(task="captions")


def test_the_summary_title_names_the_split():
    from egohorizon.schema import QAItem

    task = get_task("qa")
    items = [QAItem(id="1", participant="p", task="Event Counting", question="?", options=["a", "b", "c", "d"],
                    answer="B")]
    rows = task.summary_rows(task.evaluate(items, {"1": "B"}, "val"))
    assert task.format_summary(rows).startswith("Held-out test days")  # what a training run prints
    assert task.format_summary(rows, title="Held-out val days").startswith("Held-out val days: multiple-choice")
