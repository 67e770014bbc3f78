"""The caption task of the registry: parse, evaluate with both baselines, log keys, objective, summary
table and prediction records that re-score to the same figures."""

from __future__ import annotations

import pytest

from egohorizon.backbones.embedders import ExactEmbedder
from egohorizon.schema import CaptionPrediction, CaptionWindow
from egohorizon.tasks import get_task


def _window(wid, start, actions, source="demo"):
    return CaptionWindow(
        id=wid,
        window_s=30.0,
        actions=[{"start": s, "end": e, "action": t} for s, e, t in actions],
        source=source,
        participant="p1",
        session="s1",
        start=start,
        activity="work",
    )


WINDOWS = [
    _window("w1", 0.0, [(0, 30, "type code")]),
    _window("w2", 30.0, [(0, 20, "type code"), (20, 30, "run the tests")]),
    _window("w3", 60.0, [(0, 30, "read the log")]),
]
TEXTS = {
    "w1": ['{"start": 0, "end": 30, "action": "type code"}'],
    "w2": [
        '{"start": 0, "end": 19, "action": "type code"}\n{"start": 19, "end": 30, "action": "run the tests"}'
    ],
    "w3": ["I am not sure"],
}


def _evaluate():
    task = get_task("caption")
    predictions = {i.id: task.parse(TEXTS[i.id], i) for i in WINDOWS}
    return (
        task,
        predictions,
        task.evaluate(
            WINDOWS,
            predictions,
            "val",
            judge="exact",
            embedder=ExactEmbedder(),
            most_frequent_action="type code",
        ),
    )


def test_caption_task_scores_the_model_and_both_baselines():
    task, predictions, evaluation = _evaluate()
    assert task.name == "caption" and task.default_objective({}) == "val/caption_f1"
    assert predictions["w3"].invalid and predictions["w3"].unparsed == 1
    m = evaluation.metrics
    # model: 3 of 4 gold matched with 3 predicted -> P 1, R 3/4, F1 6/7
    assert m["val/caption_f1"] == pytest.approx(6 / 7) and m["val/caption_precision"] == 1.0
    assert m["val/caption_recall"] == pytest.approx(0.75) and m["val/caption_invalid_rate"] == pytest.approx(
        1 / 3
    )
    assert m["val/caption_f1_macro"] == pytest.approx(2 / 3) and m["val/caption_soft_edit"] == pytest.approx(
        2 / 3
    )
    # repeat previous: w1 nothing; w2 gets w1's "type code" 0-30 (IoU 20/30 with 0-20: a match);
    # w3 gets w2's two actions (IoU 20/30 with read the log, wrong text; 10/30) -> 1 match, 3 pred, 4 gold
    assert m["val/repeat_previous_caption_precision"] == pytest.approx(1 / 3)
    assert m["val/repeat_previous_caption_recall"] == pytest.approx(1 / 4)
    assert m["val/repeat_previous_caption_invalid_rate"] == pytest.approx(1 / 3)
    # most frequent: "type code" 0-30 everywhere: w1 matches, w2 matches (IoU 2/3), w3 not -> 2/3, 2/4
    assert m["val/most_frequent_caption_precision"] == pytest.approx(2 / 3)
    assert m["val/most_frequent_caption_f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert evaluation.baselines["most_frequent"]["action"] == "type code"
    assert "per_window" not in evaluation.baselines["repeat_previous"]


def test_summary_table_puts_the_model_next_to_both_baselines():
    task, _, evaluation = _evaluate()
    rows = task.summary_rows(evaluation)
    assert [r["source"] for r in rows] == ["demo"]
    assert rows[0]["model_f1"] == pytest.approx(6 / 7) and rows[0]["most_frequent_f1"] == pytest.approx(4 / 7)
    text = task.format_summary(rows, {"name": "val/caption_f1", "value": 0.5})
    assert "repeat previous" in text and "most frequent" in text and "0.857" in text
    assert text.endswith("Checkpoint chosen on validation: val/caption_f1 = 0.5000")
    assert "F1" in task.headline(evaluation)
    columns, examples = task.example_rows(WINDOWS, evaluation, 3)
    assert columns[:4] == ["id", "activity", "gold", "predicted"] and len(examples) == 3
    assert examples[0][3] == "0-30 type code" and examples[2][3] == "(invalid)"


def test_prediction_records_rescore_to_the_same_figures():
    task, predictions, evaluation = _evaluate()
    rows = task.prediction_records(WINDOWS, TEXTS, predictions, "tiny", "caption", "2", 0)
    assert rows[0]["actions"] == [{"start": 0.0, "end": 30.0, "action": "type code"}]
    assert rows[2]["text"] == "I am not sure" and "actions" not in rows[2]
    records = [CaptionPrediction.from_dict(row)[0] for row in rows]
    items = {w.id: w for w in WINDOWS}
    again = {r.id: task.parse_record(r, items[r.id]) for r in records}
    rescored = task.evaluate(
        WINDOWS, again, "val", embedder=ExactEmbedder(), most_frequent_action="type code"
    )
    assert rescored.metrics == evaluation.metrics


def test_prediction_rows_follow_the_parser_rules():
    task = get_task("caption")
    record, problems = CaptionPrediction.from_dict(
        {
            "id": "w1",
            "actions": [
                {"start": 0, "end": 30.4, "action": "type  code"},
                {"start": 10, "end": 40, "action": "too late"},
            ],
            "scene": "desk",
        }
    )
    assert not problems
    parse = task.parse_record(record, WINDOWS[0])
    assert [(a.start, a.end, a.text) for a in parse.actions] == [(0.0, 30.0, "type code")]
    assert parse.dropped == 1 and parse.scene == "desk"
    assert task.parse_record(CaptionPrediction.from_dict({"id": "w1", "text": None})[0]).invalid
