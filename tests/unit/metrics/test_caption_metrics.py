"""Caption metrics (issue 11) on hand-computed examples: one-to-one matching by temporal IoU and judge,
precision / recall / F1 per window, micro and macro, the soft edit score, invalid and dropped counts,
breakdowns, the activity type and both baselines (no leakage from later windows)."""

from __future__ import annotations

import pytest

from egohorizon.backbones.embedders import ExactEmbedder
from egohorizon.formats.caption import CaptionAction, CaptionParse, parse_caption_output
from egohorizon.metrics.captions import (
    activity_of,
    aggregate,
    candidate_pairs,
    most_frequent,
    most_frequent_action,
    previous_windows,
    repeat_previous,
    score_captions,
    soft_edit_scores,
    window_matches,
    window_prf,
)
from egohorizon.metrics.judges import ExactJudge
from egohorizon.schema import CaptionWindow

A = CaptionAction


def window(wid, actions, start=None, session="s1", source="demo", activity=None, window_s=30.0):
    return CaptionWindow(
        id=wid,
        window_s=window_s,
        actions=[{"start": s, "end": e, "action": t} for s, e, t in actions],
        source=source,
        participant="p1",
        session=session,
        start=start,
        activity=activity,
    )


def exact_verdicts(gold, pred, iou=0.5):
    pairs = sorted(candidate_pairs(gold, pred, iou))
    return dict(zip(pairs, ExactJudge().judge_pairs(pairs)))


GOLD = [A(0, 10, "open the fridge"), A(10, 30, "take the milk")]
PRED = [A(0, 9, "Open the fridge."), A(12, 30, "take the milk"), A(20, 25, "pour the milk")]


def test_matching_needs_iou_and_the_judge_one_to_one():
    # IoU(0-9, 0-10) = 0.9 and the texts match after normalisation; IoU(12-30, 10-30) = 0.9;
    # "pour the milk" (20-25 vs 10-30: IoU 0.25) pairs with nothing.
    verdicts = exact_verdicts(GOLD, PRED)
    assert window_matches(GOLD, PRED, verdicts) == 2
    assert window_prf(2, 3, 2) == pytest.approx((2 / 3, 1.0, 0.8))
    # IoU 0.4 is too little, exactly 0.5 is enough
    assert (
        window_matches(
            GOLD[:1], [A(0, 4, "open the fridge")], exact_verdicts(GOLD[:1], [A(0, 4, "open the fridge")])
        )
        == 0
    )
    half = [A(0, 5, "open the fridge")]
    assert window_matches(GOLD[:1], half, exact_verdicts(GOLD[:1], half)) == 1
    # right time, wrong text
    wrong = [A(0, 10, "close the fridge")]
    assert window_matches(GOLD[:1], wrong, exact_verdicts(GOLD[:1], wrong)) == 0


def test_one_predicted_action_matches_one_gold_action_only():
    gold = [A(0, 10, "stir the pot"), A(10, 20, "stir the pot")]
    pred = [A(0, 20, "stir the pot")]  # IoU 0.5 with each
    assert window_matches(gold, pred, exact_verdicts(gold, pred)) == 1
    assert window_prf(1, 1, 2) == pytest.approx((1.0, 0.5, 2 / 3))


def test_empty_windows_and_empty_sides():
    assert window_prf(0, 0, 0) == (1.0, 1.0, 1.0)
    assert window_prf(0, 2, 0) == (0.0, 0.0, 0.0)
    assert window_prf(0, 0, 3) == (0.0, 0.0, 0.0)


def test_soft_edit_score_of_ordered_action_lists():
    # exact embedder: S = 1 - Levenshtein / max(m, n); one insertion among 3 -> 2/3
    scores = soft_edit_scores([(["a", "b"], ["a", "c", "b"]), (["a"], []), ([], [])], ExactEmbedder())
    assert scores == pytest.approx([2 / 3, 0.0, 1.0])


def test_score_captions_micro_macro_invalid_dropped_and_breakdowns():
    windows = [
        window("w1", [(0, 10, "open the fridge"), (10, 30, "take the milk")], activity="breakfast"),
        window("w2", [(0, 30, "read the news")], source="epic", activity="breakfast"),
        window("w3", [(0, 30, "wash up")], activity=None),
    ]
    lines = [
        '{"start": 0, "end": 9, "action": "Open the fridge."}',
        '{"start": 20, "end": 25, "action": "pour the milk"}',  # before the next one: scored in time order
        '{"start": 12, "end": 30, "action": "take the milk"}',
        '{"start": 25, "end": 20, "action": "bad times"}',  # dropped
        "here is my answer",  # unparsed
    ]
    raw_w1 = "\n".join(lines)
    predictions = {"w1": parse_caption_output(raw_w1), "w2": parse_caption_output("no json at all")}
    judge = ExactJudge()
    report = score_captions(windows, predictions, judge, ExactEmbedder())
    rows = {r["id"]: r for r in report["per_window"]}
    assert rows["w1"]["matches"] == 2 and rows["w1"]["f1"] == pytest.approx(0.8)
    # time order: open, take, pour against open, take -> one insertion: 1 - 1/3
    assert rows["w1"]["soft_edit"] == pytest.approx(2 / 3)
    assert rows["w1"]["dropped"] == 1 and rows["w1"]["unparsed"] == 1 and not rows["w1"]["invalid"]
    assert rows["w2"]["invalid"] and rows["w2"]["unparsed"] == 1 and rows["w2"]["f1"] == 0.0
    assert rows["w3"]["invalid"] and rows["w3"]["n_pred"] == 0  # no prediction at all
    overall = report["overall"]
    # micro: 2 matches, 3 predicted, 4 gold -> P 2/3, R 1/2, F1 4/7; macro F1 (0.8 + 0 + 0) / 3
    assert overall["precision"] == pytest.approx(2 / 3) and overall["recall"] == pytest.approx(0.5)
    assert overall["f1"] == pytest.approx(4 / 7) and overall["f1_macro"] == pytest.approx(0.8 / 3)
    assert overall["soft_edit"] == pytest.approx((2 / 3) / 3)
    assert (overall["n"], overall["invalid"], overall["dropped"], overall["unparsed"]) == (3, 2, 1, 2)
    assert set(report["per_source"]) == {"demo", "epic"} and report["per_source"]["epic"]["f1"] == 0.0
    assert report["per_source"]["demo"]["f1"] == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))
    assert set(report["per_activity"]) == {"breakfast", "(unknown)"}
    # only the pairs that pass the IoU test went to the judge: (open, Open.), (take, take)
    assert report["judged_pairs"] == 2 and judge.stats["pairs"] == 2


def test_aggregate_of_nothing():
    assert aggregate([])["n"] == 0 and aggregate([])["f1"] == 0.0 and aggregate([])["soft_edit"] is None


def test_activity_is_the_longest_overlapping_level_4_event_else_the_highest_level_below():
    events = [
        {"level": 4, "start": 0, "end": 110, "text": "cook dinner"},
        {"level": 4, "start": 110, "end": 500, "text": "eat dinner"},
        {"level": 5, "start": 0, "end": 500, "text": "evening at home"},
        {"level": 3, "start": 100, "end": 130, "text": "set the table"},
        {"level": 1, "start": 100, "end": 130, "text": "take plates"},
    ]
    assert activity_of(events, 100, 130) == "eat dinner"  # 20 s against 10 s
    assert activity_of(events, 100, 120) == "cook dinner"  # a tie (10 s each): the earlier one
    assert activity_of([e for e in events if e["level"] != 4], 100, 130) == "set the table"
    assert activity_of(events[-1:], 100, 130) is None


def test_repeat_previous_uses_only_an_earlier_window_of_the_same_session():
    windows = [
        window("a", [(0, 30, "type code")], start=100.0),
        window("b", [(0, 12, "run the tests"), (12, 30, "read the log")], start=130.0),
        window("c", [(0, 30, "fix the bug")], start=145.0),  # overlaps b: b is not before it
        window("d", [(0, 30, "commit")], start=160.0),
        window("e", [(0, 30, "walk")], start=170.0, session="s2"),
        window("f", [(0, 30, "no time")], start=None),
    ]
    previous = {k: (v.id if v else None) for k, v in previous_windows(windows).items()}
    assert previous == {"a": None, "b": "a", "c": "a", "d": "b", "e": None, "f": None}
    baseline = repeat_previous(windows)
    assert baseline["a"] is None and baseline["e"] is None
    assert baseline["d"].actions == [A(0, 12, "run the tests"), A(12, 30, "read the log")]  # times kept
    short = [window("x", [(0, 30, "a")], start=0.0), window("y", [(0, 10, "b")], start=30.0, window_s=10.0)]
    assert repeat_previous(short)["y"].actions == [A(0, 10, "a")]  # clipped to the shorter window


def test_most_frequent_baseline_spans_the_window():
    train = [
        window("t1", [(0, 10, "b"), (10, 30, "a")]),
        window("t2", [(0, 30, "a")]),
        window("t3", [(0, 30, "b")]),
    ]
    assert most_frequent_action(train) == "a"  # 2 against 2: alphabetical
    assert most_frequent_action([]) is None
    test = [window("w", [(0, 30, "a")], window_s=20.0)]
    assert most_frequent(test, "a")["w"] == CaptionParse(actions=[A(0.0, 20.0, "a")])
    assert most_frequent(test, None)["w"] is None
