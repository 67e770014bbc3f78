"""Benchmark importers (issue 25, item 1): EgoMonth's QA.json, EgoSchema's questions + answers and
Ego4D LTA's annotation files, on small files in the public formats' shapes and on broken ones
(truncated JSON, wrong types, missing videos, duplicate ids), each defect named by item and field."""

from __future__ import annotations

import json

import pytest

from egohorizon import cli
from egohorizon.schema import ForecastPoint, QAItem, read_jsonl


def _convert(capsys, *argv):
    code = cli.main(["data", "convert", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def _records(path, record_type):
    result = read_jsonl(path, record_type)
    result.raise_for_defects()
    return result.records


# ---------------------------------------------------------------------------------------- EgoMonth


def _egomonth(tmp_path, items):
    root = tmp_path / "videos"
    for name in ("021/day01_a.mp4", "021/day01_b.mp4", "021/day09.mp4"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"\0" * 10)
    qa = tmp_path / "021" / "QA.json"
    qa.parent.mkdir(exist_ok=True)
    qa.write_text(json.dumps(items, ensure_ascii=False, indent=2), encoding="utf-8")
    return qa, root


def _em(question, task, answer="B", videos=("021/day01_a.mp4",), **extra):
    return {"video_path": list(videos), "question": question, "task_type": task, "correct_options": answer,
            "options": ["A. In the car", "B. In the kitchen", "C. At the office", "D. In the garden"], **extra}


def test_egomonth_items_are_converted_with_prefixes_stripped_tasks_mapped_and_videos_checked(tmp_path, capsys):
    qa, root = _egomonth(tmp_path, [
        _em("Where did I leave the keys?", "Object Location", difficulty="hard", video_id="v1"),
        _em("<day01_a.mp4> What colour was the mug?", "detail_retrieval", "D",
            ("021/day01_a.mp4", "021/day01_b"), difficulty=2),
        _em("Which way did I turn?", "Direction Judgment", "a", ("021/day09.mp4",)),
        _em("How often do I cook?", "Habit  inference", ["C"]),
    ])
    out = tmp_path / "out"
    code, text, _ = _convert(capsys, "egomonth", qa, "--videos", root, "--out", out)
    assert code == 0 and "wrote" in text
    items = _records(out / "qa.jsonl", QAItem)
    assert [i.id for i in items] == ["021/0", "021/1", "021/2", "021/3"]
    assert items[0].options == ["In the car", "In the kitchen", "At the office", "In the garden"]
    assert [(i.task, i.level, i.answer) for i in items] == [
        ("Object Location", 2, "B"), ("Detail Retrieval", 2, "D"), ("Direction Judgement", 3, "A"),
        ("Habit Inference", 1, "C")]
    assert items[0].meta["difficulty"] == "hard" and items[1].meta["difficulty"] == 2
    assert items[0].meta["video_id"] == "v1" and items[2].meta["task_type"] == "Direction Judgment"
    assert [e["video"] for e in items[1].evidence] == ["021/day01_a.mp4", "021/day01_b.mp4"]  # .mp4 added
    assert items[1].question.startswith("<day01_a.mp4>")  # kept as the benchmark has it
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["videos"] == {"021/day01_a.mp4": 10, "021/day01_b.mp4": 10, "021/day09.mp4": 10}
    assert meta["counts"]["items: L2 Detail Retrieval"] == 1 and meta["counts"]["difficulty: hard"] == 1
    assert cli.main(["data", "validate", str(out / "qa.jsonl")]) == 0


def test_egomonth_lists_every_defect_by_item_index_and_field(tmp_path, capsys):
    qa, root = _egomonth(tmp_path, [
        _em("Q0?", "Habit Infer"),
        _em("Q1?", "Event Time", videos=("021/day02.mp4",)),
        {**_em("Q2?", "Event Time"), "options": "A. yes / B. no"},
        _em("Q3?", "Event Time", "E"),
        {**_em("Q4?", "Event Time"), "options": ["A. one", "two", "C. three", "D. four"]},
        {k: v for k, v in _em("Q5?", "Event Time").items() if k != "correct_options"},
        _em("Q0?", "Object Counting", video_id=None),
        _em("Q0?", "Object Counting", video_id=None),
        "not an item",
    ])
    code, _, err = _convert(capsys, "egomonth", qa, "--videos", root, "--out", tmp_path / "out")
    assert code == 2 and "QA.json: 8 defect(s):" in err
    for expected in (
        "item [0]: field 'task_type': 'Habit Infer' is not one of EgoMonth's 14 task types (Habit Inference,",
        "item [1]: field 'video_path[0]': '021/day02.mp4' not found under --videos",
        "item [2]: field 'options': expected an array of at least 2 option texts, got 'A. yes / B. no'",
        "item [3]: field 'correct_options': expected one option letter A-D, got 'E'",
        "item [4]: field 'options[1]': expected the prefix 'B. ' like the other options, got 'two'",
        "item [5]: field 'correct_options': missing",
        "item [7]: field 'question': duplicate of item [6]",
        "item [8]: expected an object, got a string",
    ):
        assert expected in err, expected
    assert not (tmp_path / "out" / "qa.jsonl").exists()


@pytest.mark.parametrize("text, expected", [
    ('[{"video_path": ["a.mp4"], "question": "Q?", "options": ["A. x"', "ends early (a cut download?)"),
    ('{"video_path": ["a.mp4"]}', "expected a JSON array of items, got an object"),
    ('{"question": "Q1"}\n{"question": "Q2"}\n', "QA.json:2: invalid JSON (Extra data"),
    ("[]", "the array holds no items"),
])
def test_egomonth_file_level_defects(tmp_path, capsys, text, expected):
    qa = tmp_path / "QA.json"
    qa.write_text(text)
    code, _, err = _convert(capsys, "egomonth", qa, "--videos", tmp_path, "--out", tmp_path / "out")
    assert code == 2 and expected in err


def test_egomonth_needs_its_file_and_videos(tmp_path, capsys):
    code, _, err = _convert(capsys, "egomonth", tmp_path / "QA.json", "--out", tmp_path / "out")
    assert code == 2 and "data convert egomonth: --videos ROOT is required" in err
    code, _, err = _convert(capsys, "egomonth", tmp_path / "QA.json", "--videos", tmp_path / "nope",
                            "--out", tmp_path / "out")
    assert code == 2 and "--videos" in err and "no such folder" in err
    code, _, err = _convert(capsys, "hd-epic-vqa", "--out", tmp_path / "out")
    assert code == 2 and "--root DIR is required" in err


# --------------------------------------------------------------------------------------- EgoSchema


def _egoschema_question(q_uid, **extra):
    return {"q_uid": q_uid, "google_drive_id": f"drive-{q_uid}", "question": f"What is c doing in {q_uid}?",
            **{f"option {i}": text for i, text in enumerate(
                ["C cooks", "C reads a paper", "The man cooks", "C drinks from a cup", "A woman sweeps"])},
            **extra}


def test_egoschema_answered_items_and_unanswered_questions(tmp_path, capsys):
    questions, answers, out = tmp_path / "questions.json", tmp_path / "subset_answers.json", tmp_path / "out"
    questions.write_text(json.dumps([_egoschema_question(q) for q in ("q-1", "q-2", "q-3")]))
    answers.write_text(json.dumps({"q-1": 0, "q-3": 4}))
    code, _text, _ = _convert(capsys, "egoschema", "--questions", questions, "--answers", answers, "--out", out)
    assert code == 0
    items = _records(out / "qa.jsonl", QAItem)
    assert [(i.id, i.answer, i.meta["answer_index"]) for i in items] == [("q-1", "A", 0), ("q-3", "E", 4)]
    assert items[0].options[3] == "C drinks from a cup" and items[0].evidence[0]["video"] == "q-1.mp4"
    assert items[0].meta["google_drive_id"] == "drive-q-1" and items[0].task == "egoschema"
    unanswered = [json.loads(line) for line in (out / "unanswered.jsonl").read_text().splitlines()]
    assert [u["id"] for u in unanswered] == ["q-2"] and "answer" not in unanswered[0]
    counts = json.loads((out / "metadata.json").read_text())["counts"]
    assert counts["options starting with 'C ' (the camera wearer)"] == 6  # 3 of 5, in 2 answered items


def test_egoschema_defects_by_item_and_field_then_by_q_uid(tmp_path, capsys):
    questions, answers = tmp_path / "questions.json", tmp_path / "subset_answers.json"
    broken = _egoschema_question("q-2")
    del broken["option 3"]
    questions.write_text(json.dumps([_egoschema_question("q-1"), broken, _egoschema_question("q-1"),
                                     _egoschema_question("q-4", question=7)]))
    answers.write_text("{}")
    code, _, err = _convert(capsys, "egoschema", "--questions", questions, "--answers", answers, "--out", tmp_path / "o")
    assert code == 2
    assert "item [1]: field 'option 3': missing" in err
    assert "item [2]: field 'q_uid': duplicate 'q-1' (also item [0])" in err
    assert "item [3]: field 'question': expected non-empty text, got 7" in err
    questions.write_text(json.dumps([_egoschema_question("q-1"), _egoschema_question("q-2")]))
    answers.write_text(json.dumps({"q-1": 5, "q-2": "2", "q-9": 1}))
    code, _, err = _convert(capsys, "egoschema", "--questions", questions, "--answers", answers, "--out", tmp_path / "o")
    assert code == 2 and "subset_answers.json: 3 defect(s)" in err
    assert "q_uid 'q-1': expected an integer 0-4 (0-based option index), got 5" in err
    assert "q_uid 'q-2': expected an integer 0-4 (0-based option index), got '2'" in err
    assert "q_uid 'q-9': not a question of" in err
    answers.write_text('{"q-1": 0, "q-2": ')
    code, _, err = _convert(capsys, "egoschema", "--questions", questions, "--answers", answers, "--out", tmp_path / "o")
    assert code == 2 and "subset_answers.json:1: invalid JSON" in err and "ends early" in err


# --------------------------------------------------------------------------------------- Ego4D LTA

TAXONOMY = {"verbs": ["take_(pick,_grab,_get)", "put_(place,_leave,_drop)", "cut_(trim,_slice,_chop)"],
            "nouns": ["bread", "knife", "nut_(food)", "nut_(tool)"]}


def _action(clip, idx, verb, noun, labelled=True):
    row = {"clip_uid": clip, "video_uid": f"video-{clip}", "clip_id": 7, "action_idx": idx,
           "action_clip_start_sec": 2.0 * idx, "action_clip_end_sec": 2.0 * idx + 1.5}
    if labelled:
        row.update(verb_label=verb, noun_label=noun, verb=TAXONOMY["verbs"][verb], noun=TAXONOMY["nouns"][noun])
    return row


def _lta_files(tmp_path, train_rows, val_rows=(), test_rows=()):
    files = []
    for split, rows in (("train", train_rows), ("val", val_rows), ("test_unannotated", test_rows)):
        if rows:
            path = tmp_path / f"fho_lta_{split}.json"
            path.write_text(json.dumps({"version": "2.0", "split": split, "clips": list(rows)}))
            files.append(path)
    taxonomy = tmp_path / "fho_lta_taxonomy.json"
    taxonomy.write_text(json.dumps(TAXONOMY))
    return files, taxonomy


def test_ego4d_lta_points_are_the_official_instances_with_official_splits(tmp_path, capsys):
    train = [_action("c1", i, v, n) for i, (v, n) in enumerate([(0, 0), (2, 0), (1, 1), (0, 2), (2, 3)])]
    train.reverse()  # file order is not action order
    files, taxonomy = _lta_files(tmp_path, train, [_action("c2", i, 0, 1) for i in range(4)],
                                 [_action("c3", i, 0, 0, labelled=False) for i in range(4)])
    out = tmp_path / "out"
    code, _, _ = _convert(capsys, "ego4d-lta", "--annotations", *files, "--taxonomy", taxonomy,
                          "--future-actions", "2", "--out", out)
    assert code == 0
    points = _records(out / "points.jsonl", ForecastPoint)
    # 5 actions, 2 observed + 2 forecast: windows starting at action 0 and 1 -> ids of the 2nd observed
    assert [(p.id, p.split) for p in points] == [("c1_1", "train"), ("c1_2", "train"), ("c2_1", "test")]
    first = points[0]
    assert [c["text"] for c in first.context] == ["take bread", "cut bread"]
    assert first.targets == ["put knife", "take nut (food)"] and first.k == 2 and first.t0 == 3.5
    assert first.windows == [[4.0, 5.5], [6.0, 7.5]]
    assert first.meta["target_verbs"] == ["put", "take"] and first.meta["target_nouns"] == ["knife", "nut (food)"]
    assert first.meta["target_noun_labels"] == [1, 2] and points[2].meta["official_split"] == "val"
    (unannotated,) = [json.loads(x) for x in (out / "test_unannotated.jsonl").read_text().splitlines()]
    assert unannotated["id"] == "c3_1" and unannotated["future_windows"] == [[4.0, 5.5], [6.0, 7.5]]
    test_file = files[2]
    test_file.write_text(test_file.read_text().replace('"split": "test_unannotated"', '"split": "test"'))
    code, _, _ = _convert(capsys, "ego4d-lta", "--annotations", test_file, "--taxonomy", taxonomy,
                          "--future-actions", "2", "--out", tmp_path / "out-test")
    assert code == 0 and (tmp_path / "out-test" / "test_unannotated.jsonl").exists()
    assert cli.main(["data", "validate", str(out / "points.jsonl")]) == 0
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"id": "c2_1", "candidates": [["take knife", "put knife"]]}) + "\n")
    capsys.readouterr()
    report = tmp_path / "report.json"
    assert cli.main(["score", "forecast", "--gold", str(out / "points.jsonl"), "--pred", str(pred),
                     "--embedder", "exact", "--metric", "ego4d-ed", "--out", str(report)]) == 0
    assert "Ego4D LTA edit distance" in capsys.readouterr().out
    (row,) = json.loads(report.read_text())["ego4d"]["groups"]
    # c2_1: verbs [take, put] vs [take, take] -> 1/2, nouns exact -> 0; c1_1, c1_2 unpredicted -> 1
    assert (row["Z"], row["n"], row["missing"]) == (2, 3, 2)
    assert row["verb"]["ED"] == pytest.approx(2.5 / 3) and row["noun"]["ED"] == pytest.approx(2 / 3)


def test_ego4d_lta_defects_by_file_item_and_field(tmp_path, capsys):
    rows = [_action("c1", 0, 0, 0), _action("c1", 1, 1, 1), {**_action("c1", 1, 2, 1)},
            {**_action("c1", 3, 0, 0), "verb": "take"}, {**_action("c1", 4, 0, 0), "noun_label": "1"},
            {**_action("c1", 5, 0, 0), "noun_label": 9}, "row"]
    files, taxonomy = _lta_files(tmp_path, rows)
    code, _, err = _convert(capsys, "ego4d-lta", "--annotations", *files, "--taxonomy", taxonomy,
                            "--out", tmp_path / "out")
    assert code == 2 and "fho_lta_train.json: 5 defect(s)" in err
    assert "item [2]: field 'action_idx': duplicate 1 in clip 'c1' (also item [1])" in err
    assert "item [3]: field 'verb': 'take' is not class 0 of the taxonomy ('take_(pick,_grab,_get)')" in err
    assert "item [4]: field 'noun_label': expected an integer >= 0, got '1'" in err
    assert "item [5]: field 'noun_label': 9 is not a class of the taxonomy (4 nouns)" in err
    assert "item [6]: expected an object, got a string" in err


def test_ego4d_lta_file_level_defects(tmp_path, capsys):
    files, taxonomy = _lta_files(tmp_path, [_action("c1", 0, 0, 0)], [_action("c1", 1, 0, 0)])
    code, _, err = _convert(capsys, "ego4d-lta", "--annotations", *files, "--taxonomy", taxonomy,
                            "--out", tmp_path / "out")
    assert code == 2 and "clip_uid 'c1' is also in" in err and "share no clip" in err
    files[0].write_text(files[0].read_text()[:-30])
    code, _, err = _convert(capsys, "ego4d-lta", "--annotations", files[0], "--taxonomy", taxonomy,
                            "--out", tmp_path / "out")
    assert code == 2 and "fho_lta_train.json:1: invalid JSON" in err and "ends early" in err
    files[0].write_text(json.dumps({"split": "train", "clips": {"c1": []}}))
    code, _, err = _convert(capsys, "ego4d-lta", "--annotations", files[0], "--taxonomy", taxonomy,
                            "--out", tmp_path / "out")
    assert code == 2 and "expected an object with a 'clips' array, got an object" in err
    taxonomy.write_text(json.dumps({"verbs": "take", "nouns": []}))
    code, _, err = _convert(capsys, "ego4d-lta", "--annotations", files[0], "--taxonomy", taxonomy,
                            "--out", tmp_path / "out")
    assert code == 2 and "fho_lta_taxonomy.json: field 'verbs': expected an array of class names" in err
