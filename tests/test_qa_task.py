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
