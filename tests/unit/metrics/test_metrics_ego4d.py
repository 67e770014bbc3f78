"""Ego4D LTA's official metric (issue 25, item 3): ED@Z best of K and AUED, hand-computed; the edit
distance is the one Ego4D's code calls (``editdistance.eval``: Levenshtein, no transpositions); and
``egohorizon score forecast --metric ego4d-ed`` prints it next to S_norm."""

from __future__ import annotations

import json
import random

import editdistance
import pytest

from egohorizon import cli
from egohorizon.metrics.ego4d import aued, ed_curve, ego4d_report, levenshtein, split_action
from egohorizon.schema import ForecastPoint


def test_levenshtein_is_editdistance_eval_on_random_sequences():
    rng = random.Random(0)
    for _ in range(300):
        a = [rng.randrange(4) for _ in range(rng.randrange(9))]
        b = [rng.randrange(4) for _ in range(rng.randrange(9))]
        assert levenshtein(a, b) == editdistance.eval(a, b)
    assert levenshtein(["a", "c", "b"], ["a", "b", "c"]) == 2  # a swap costs 2: not Damerau-Levenshtein


def test_ed_curve_best_of_k_and_aued_by_hand():
    label = ["a", "b", "c", "d"]
    swapped = ["a", "c", "b", "d"]  # z=1..4: 0, 1/2, 2/3, 2/4
    wrong_first = ["x", "b", "c", "d"]  # 1, 1/2, 1/3, 1/4
    exact = ["a", "b", "c", "d"]
    curve = ed_curve([swapped, wrong_first, exact], label, k=2)  # the exact third is beyond K
    assert curve == pytest.approx([0, 1 / 2, 1 / 3, 1 / 4])
    # trapezoids (0 + 1/2)/2 + (1/2 + 1/3)/2 + (1/3 + 1/4)/2 = 23/24, over Z - 1 = 3
    assert aued(curve) == pytest.approx(23 / 72)
    assert ed_curve([], label) == [1.0] * 4  # no prediction: one empty candidate
    assert ed_curve([["a", "b", "c", "d", "e", "f"]], label) == [0.0] * 4  # cut to z at every z
    assert aued([0.5]) is None


def _point(pid, targets, verbs=None, nouns=None):
    meta = {"target_verbs": verbs, "target_nouns": nouns} if verbs else {}
    return ForecastPoint(id=pid, source="ego4d-lta", participant="", level=1, k=len(targets), t0=10.0,
                         context=[{"text": "wash hands", "start": 0.0, "end": 5.0}], targets=targets,
                         windows=[[11.0 + i, 12.0 + i] for i in range(len(targets))], meta=meta)


def test_verb_noun_action_by_hand_and_a_missing_prediction():
    gold = _point("p1", ["take bread", "put knife", "cut bread"], ["take", "put", "cut"],
                  ["bread", "knife", "bread"])
    missing = _point("p2", ["take cup", "wash cup", "put cup"], ["take", "wash", "put"], ["cup", "cup", "cup"])
    c1 = ["take bread", "cut bread", "put knife"]  # verbs 0, 1/2, 2/3; nouns 0, 1/2, 2/3; actions the same
    c2 = ["take knife", "put bread", "cut bread"]  # verbs 0, 0, 0; nouns 1, 1, 2/3; actions 1, 1, 2/3
    report = ego4d_report([gold, missing], {"p1": [c1, c2], "p2": None})
    (row,) = report["groups"]
    assert (row["Z"], row["n"], row["missing"]) == (3, 2, 1)
    # p1 best of two: verb 0,0,0; noun 0,1/2,2/3; action 0,1/2,2/3. p2: 1,1,1 everywhere. Mean of both.
    assert row["verb"]["curve"] == pytest.approx([0.5, 0.5, 0.5])
    assert row["noun"]["curve"] == pytest.approx([0.5, 0.75, 5 / 6])
    assert row["action"]["ED"] == pytest.approx(5 / 6)
    assert row["verb"]["AUED"] == pytest.approx(0.5)
    # noun: ((1/2 + 3/4)/2 + (3/4 + 5/6)/2) / 2 = (5/8 + 19/24) / 2 = 17/24
    assert row["noun"]["AUED"] == pytest.approx(17 / 24)


def test_points_without_verbs_and_nouns_score_the_action_texts_only():
    point = _point("p", ["open fridge", "take milk"])
    (row,) = ego4d_report([point], {"p": [["open  fridge", "pour milk"]]})["groups"]
    assert row["verb"] is None and row["noun"] is None
    assert row["action"]["curve"] == pytest.approx([0.0, 0.5])


def test_split_action_takes_the_longest_known_verb():
    assert split_action("turn off light", ["turn", "turn off"]) == ("turn off", "light")
    assert split_action("turn tap", ["turn", "turn off"]) == ("turn", "tap")
    assert split_action("grab the cup", ["take"]) == ("grab", "the cup")


def test_score_forecast_metric_ego4d_ed_prints_it_next_to_s_norm(tmp_path, capsys):
    gold, pred, out = tmp_path / "points.jsonl", tmp_path / "pred.jsonl", tmp_path / "report.json"
    point = _point("p1", ["take bread", "put knife", "cut bread"], ["take", "put", "cut"],
                   ["bread", "knife", "bread"])
    gold.write_text(json.dumps(point.to_dict()) + "\n")
    pred.write_text(json.dumps({"id": "p1", "candidates": [["take bread", "cut bread", "put knife"],
                                                            ["take knife", "put bread", "cut bread"]]}) + "\n")
    assert cli.main(["score", "forecast", "--gold", str(gold), "--pred", str(pred), "--embedder", "exact",
                     "--metric", "ego4d-ed", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    report = json.loads(out.read_text())
    (row,) = report["ego4d"]["groups"]
    assert row["verb"]["ED"] == 0 and row["noun"]["ED"] == pytest.approx(2 / 3)
    assert "S_norm" in text and "Ego4D LTA edit distance" in text and "verb ED@Z" in text
    assert "0.6667" in text and "0.4167" in text  # noun ED@3 = 2/3, noun AUED = (1/4 + 7/12)/2 = 5/12


def test_prefix_distances_from_one_table_equal_levenshtein_of_each_prefix():
    from egohorizon.metrics.ego4d import prefix_distances

    rng = random.Random(1)
    for _ in range(200):
        label = [rng.randrange(3) for _ in range(rng.randrange(1, 8))]
        candidate = [rng.randrange(3) for _ in range(rng.randrange(0, 10))]
        expected = [editdistance.eval(candidate[:z], label[:z]) for z in range(1, len(label) + 1)]
        assert prefix_distances(candidate, label, len(label)) == expected


def test_action_ed_is_one_minus_the_exact_embedders_best_of_5_s(tmp_path, capsys):
    """The issue's observation, now a check: with candidates of Z actions each, S under the exact
    embedder (1 - Levenshtein / max length, best of N) is 1 - action ED@Z."""
    rng = random.Random(2)
    words = ["take cup", "wash cup", "put cup", "open tap", "close tap"]
    gold, pred, out = tmp_path / "points.jsonl", tmp_path / "pred.jsonl", tmp_path / "report.json"
    points = [_point(f"p{i}", rng.choices(words, k=4)) for i in range(8)]
    gold.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in points))
    pred.write_text("".join(json.dumps({"id": p.id, "candidates": [rng.choices(words, k=4) for _ in range(5)]}) + "\n"
                            for p in points))
    assert cli.main(["score", "forecast", "--gold", str(gold), "--pred", str(pred), "--embedder", "exact",
                     "--max-candidates", "5", "--metric", "ego4d-ed", "--out", str(out)]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    (row,) = report["ego4d"]["groups"]
    assert 0 < row["action"]["ED"] < 1
    assert report["overall"]["S"] == pytest.approx(1 - row["action"]["ED"])
