"""The qa task's majority-position baseline (issue 13), by hand."""

from __future__ import annotations

import pytest

from egohorizon.schema import QAItem
from egohorizon.tasks import get_task


def _item(i: str, task: str, answer: str) -> QAItem:
    return QAItem(id=i, participant="p", task=task, question="?", options=["a", "b", "c", "d"], answer=answer)


def test_majority_position_is_scored_beside_the_model():
    items = [_item("1", "Event Counting", "B"), _item("2", "Event Counting", "C"), _item("3", "Route Reasoning", "B")]
    evaluation = get_task("qa").evaluate(items, {"1": "B", "2": "C", "3": None}, "test", majority_letter="B")
    m = evaluation.metrics
    # Model: Event Counting 2/2, Route Reasoning 0/1 -> Avg 0.5, Acc 2/3.
    assert m["test/qa_avg"] == pytest.approx(0.5) and m["test/qa_acc"] == pytest.approx(2 / 3)
    # "B" everywhere: Event Counting 1/2, Route Reasoning 1/1 -> Avg 0.75, Acc 2/3.
    assert m["test/majority_position_qa_avg"] == pytest.approx(0.75)
    assert m["test/majority_position_qa_acc"] == pytest.approx(2 / 3)
    assert m["test/majority_position_qa_avg_level3"] == pytest.approx(0.75)
    assert evaluation.baselines["majority_position"]["letter"] == "B"
    assert "test/majority_position_qa_avg" not in get_task("qa").evaluate(items, {}, "test").metrics


def test_compare_rows_give_the_model_and_majority_position_overall_and_per_level():
    items = [
        _item("1", "Event Counting", "B"),  # level 3
        _item("2", "Event Counting", "C"),  # level 3
        _item("3", "Habit Inference", "A"),  # level 1
    ]
    task = get_task("qa")
    evaluation = task.evaluate(items, {"1": "B", "3": "D"}, "test", majority_letter="B")
    assert task.item_ids(evaluation) == ["1", "2", "3"]  # the unanswered item is still listed
    rows = {(r["predictor"], r["level"]): r for r in task.compare_rows(evaluation)}
    # Model: Event Counting 1/2 (item 2 unanswered = invalid), Habit Inference 0/1.
    assert rows["model", "all"] == {"predictor": "model", "level": "all", "n": 3, "avg": 0.25,
                                    "acc": pytest.approx(1 / 3), "invalid": 1}
    assert rows["model", "3"]["avg"] == 0.5 and rows["model", "3"]["invalid"] == 1
    assert rows["model", "1"] == {"predictor": "model", "level": "1", "n": 1, "avg": 0.0, "acc": 0.0, "invalid": 0}
    # "B" everywhere: Event Counting 1/2, Habit Inference 0/1.
    assert rows["majority-position", "all"]["avg"] == 0.25 and rows["majority-position", "all"]["invalid"] == 0
    assert [r["level"] for r in task.compare_rows(evaluation)][:3] == ["all", "1", "3"]


def _options_item(i: str, task: str, options: list[str], answer: str, split: str = "test") -> QAItem:
    return QAItem(id=i, participant="p", task=task, question="?", options=options, answer=answer,
                  meta={"split": split})


def test_answer_prior_picks_the_option_most_often_right_in_training():
    from egohorizon.metrics.qa import answer_prior, prior_answers

    train = [
        _options_item("t1", "Self-localization", ["kitchen", "office", "bedroom", "hall"], "A", "train"),
        _options_item("t2", "Self-localization", ["office", "kitchen", "bath", "hall"], "B", "train"),
        _options_item("t3", "Self-localization", ["hall", "bath", "office", "kitchen"], "A", "train"),
        _options_item("t4", "Event Time", ["Mon 10:00", "Tue 11:00", "Wed 12:00", "Thu 13:00"], "C", "train"),
    ]
    table = answer_prior(train)
    # kitchen: right twice, a distractor once -> +1; office: three times a distractor -> -3; hall: +1 -1 -1.
    assert table["Self-localization"] == {"kitchen": 1, "office": -3, "bedroom": -1, "hall": -1, "bath": -2}
    test = [
        _options_item("1", "Self-localization", ["office", "bath", "kitchen", "garden"], "C"),  # kitchen +1
        _options_item("2", "Self-localization", ["garden", "attic", "office", "cellar"], "A"),  # tie at 0: A, B, D
        _options_item("3", "Event Time", ["Fri 09:00", "Sat 09:00", "Sun 09:00", "Mon 09:00"], "D"),  # all unseen
    ]
    assert prior_answers(test, table) == {"1": "C", "2": "A", "3": "A"}
    assert prior_answers(test, table, tie_letter="B") == {"1": "C", "2": "B", "3": "B"}  # ties: the majority
    evaluation = get_task("qa").evaluate(test, {"1": "C", "2": "C", "3": "C"}, "test", majority_letter="B",
                                         answer_prior=table)
    m = evaluation.metrics
    # Prior C, B, B: Self-localization 1/2, Event Time 0/1 -> Avg 0.25, Acc 1/3.
    assert m["test/answer_prior_qa_avg"] == pytest.approx(0.25) and m["test/answer_prior_qa_acc"] == pytest.approx(1 / 3)
    assert evaluation.baselines["answer_prior"]["per_task"]["Self-localization"]["correct"] == 1
    predictors = {r["predictor"] for r in get_task("qa").compare_rows(evaluation)}
    assert predictors == {"model", "majority-position", "answer-prior"}
