"""scripts/hands_loo_study.py (issue 40 item 2): the folds it makes and its per-fold table, by hand."""

from __future__ import annotations

import sys

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))

from hands_loo_study import folds, per_fold, per_fold_markdown


def test_each_video_is_tested_once_and_the_next_one_chooses_the_checkpoint():
    assert folds(["A", "B", "C", "D"]) == [("A", "B", ["C", "D"]), ("B", "C", ["A", "D"]),
                                           ("C", "D", ["A", "B"]), ("D", "A", ["B", "C"])]


def row(frame, gold, hits, false_positives):
    return {"frame": frame, "gold": gold, "predicted": hits + false_positives, "hits": hits,
            "false_positives": false_positives}


def test_per_fold_pools_each_predictor_over_its_test_videos_frames_only():
    video_of = {"a1": "A", "a2": "A", "b1": "B"}
    named = {
        # A: 3 hits / (4 gold + 2 false positives) = 0.5; B: 1 / (2 + 0)
        "box prior": [row("a1", 2, 1, 2), row("a2", 2, 2, 0), row("b1", 2, 1, 0)],
        # A: 0 / (4 + 0); B has neither gold nor false positives: no fraction
        "25 %": [row("a1", 2, 0, 0), row("a2", 2, 0, 0), row("b1", 0, 0, 0)],
    }
    table = per_fold(named, video_of, ["A", "B"])
    assert table == {"A": {"box prior": 0.5, "25 %": 0.0}, "B": {"box prior": 0.5, "25 %": None}}
    text = per_fold_markdown([("A", "B", []), ("B", "A", [])], table, {"A": (2, 4), "B": (1, 2)})
    assert text.splitlines() == [
        "| test video (validation video) | test frames / boxes | box prior | 25 % |",
        "|---|---|---|---|",
        "| A (B) | 2 / 4 | 0.500 | 0.000 |",
        "| B (A) | 1 / 2 | 0.500 | n/a |",
    ]
