"""One segment judge against another on gold label pairs (score judges), with hand-computed kappa."""

import json

from egohorizon.metrics.judge_agreement import agreement, gold_pairs
from egohorizon.metrics.judges import ExactJudge, VerdictsJudge
from egohorizon.schema import Segment


def _segments():
    rows = [("c1", "make tea"), ("c1", "wipe the table"), ("c2", "make tea"), ("c2", "fold laundry"),
            ("c3", "cut a carrot")]
    out, seen = [], {}
    for clip, label in rows:
        start = seen.get(clip, 0.0)
        seen[clip] = start + 2.0
        out.append(Segment(clip=clip, kind="subtask", start=start, end=start + 2.0, label=label))
    return out


def test_pairs_are_another_clips_segments_in_time_order_distinct_and_seeded():
    pairs = gold_pairs(_segments(), "subtask", max_pairs=100, seed=0)
    assert pairs == gold_pairs(_segments(), "subtask", max_pairs=100, seed=0)
    assert len(pairs) == len(set(pairs)) and all(isinstance(g, str) and isinstance(p, str) for g, p in pairs)
    golds = {g for g, _ in pairs}
    assert golds <= {"make tea", "wipe the table", "fold laundry", "cut a carrot"}
    assert len(gold_pairs(_segments(), "subtask", max_pairs=2, seed=0)) == 2
    assert gold_pairs(_segments()[:2], "subtask", max_pairs=10) == []  # one clip: nothing to pair


def test_agreement_counts_and_kappa_by_hand(tmp_path):
    pairs = [("make tea", "make tea"), ("make tea", "brew tea"), ("fold laundry", "wipe the table"),
             ("cut a carrot", "slice a carrot")]
    table = tmp_path / "verdicts.jsonl"
    verdicts = [True, True, False, False]  # the judge checked: brew tea ~ make tea, slice != cut
    table.write_text("".join(json.dumps({"gold": g, "pred": p, "match": m}) + "\n"
                             for (g, p), m in zip(pairs, verdicts)))
    result = agreement(pairs, VerdictsJudge(str(table)), ExactJudge())
    # exact: T F F F; judge: T T F F -> agree on 3 of 4; p_judge 0.5, p_exact 0.25
    # expected agreement 0.5 * 0.25 + 0.5 * 0.75 = 0.5; kappa = (0.75 - 0.5) / 0.5 = 0.5
    assert (result["n"], result["both_match"], result["neither"], result["judge_only"], result["reference_only"]) \
        == (4, 1, 2, 1, 0)
    assert result["agreement"] == 0.75 and result["kappa"] == 0.5
    assert result["disagreements"] == [{"gold": "make tea", "pred": "brew tea", "judge": True, "reference": False}]


def test_the_command_prints_the_table_and_writes_the_report(tmp_path, capsys):
    from egohorizon.cli import main

    gold = tmp_path / "segments.jsonl"
    gold.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in _segments()))
    assert main(["score", "judges", "--gold", str(gold), "--judge", "exact", "--kinds", "subtask",
                 "--out", str(tmp_path / "r.json")]) == 0
    assert "agreement" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["kinds"]["subtask"]["agreement"] == 1.0
    assert main(["score", "judges", "--gold", str(gold), "--judge", "exact", "--kinds", "hand_caption"]) == 2
