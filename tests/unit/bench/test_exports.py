"""Exports (issue 25, item 4): EgoSchema submissions, Ego4D LTA challenge files, the EgoMonth scripts'
CSV and lmms-eval results + samples, from `score qa|forecast --export` and `egohorizon export`.

The published shapes are written down here, from the public code that reads or writes them, and
every export is checked against them key by key:
- EgoSchema (github.com/egoschema/EgoSchema): ``subset_answers.json`` and a submission are one JSON
  object ``{q_uid: 0-based option index 0-4}``.
- Ego4D LTA (EGO4D/forecasting, ``tasks/long_term_anticipation.py`` ``test_epoch_end``): one JSON
  object ``{"<clip_uid>_<last observed action_idx>": {"verb": K x Z ints, "noun": K x Z ints}}``,
  K = 5 (``NUM_SEQUENCES_TO_PREDICT``), Z = 20 (here the points' Z), taxonomy class indices.
- EgoMonth (github.com/susu801/EgoMonth, ``scripts/Qwen3-VL-8B.py``): a CSV with the header
  ``EGOMONTH_HEADER``; ``prediction`` a letter or FAIL, ``is_correct`` True/False.
- lmms-eval (``evaluator.py``, ``evaluator_utils.py``, ``loggers/evaluation_tracker.py``):
  ``<date>_results.json`` with ``LMMS_RESULTS_KEYS``, ``results[task]`` = alias + ``metric,filter`` and
  ``metric_stderr,filter`` pairs, ``n-samples[task]`` = {original, effective}, ``config`` with
  ``LMMS_CONFIG_KEYS``; ``<date>_samples_<task>.jsonl`` one line per doc with ``LMMS_SAMPLE_KEYS``
  (``resps`` dropped when equal to ``filtered_resps``), SHA-256 hashes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from pathlib import Path

import pytest

from egohorizon import cli
from egohorizon.data.sources.ego4d_lta import Taxonomy
from egohorizon.errors import ConfigError, DataError
from egohorizon.metrics import exports
from egohorizon.metrics.ego4d import ed_curve
from egohorizon.schema import QAItem

DATA = Path(__file__).resolve().parents[2] / "data"

EGOMONTH_HEADER = ["video_id", "question", "task_type", "difficulty", "ground_truth", "prediction", "raw_output",
                   "is_correct"]
LMMS_RESULTS_KEYS = {"results", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better", "n-samples",
                     "config", "git_hash", "date", "task_hashes"}
LMMS_CONFIG_KEYS = {"model", "model_args", "batch_size", "batch_sizes", "device", "use_cache", "limit",
                    "bootstrap_iters", "gen_kwargs", "random_seed", "numpy_seed", "torch_seed", "fewshot_seed"}
LMMS_SAMPLE_KEYS = {"doc_id", "target", "filtered_resps", "doc_hash", "prompt_hash", "target_hash", "input"}
TAXONOMY = {"verbs": ["take_(pick,_grab,_get)", "put_(place,_leave,_drop)", "cut_(trim,_slice,_chop)"],
            "nouns": ["bread", "knife", "nut_(food)", "nut_(tool)"]}


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def assert_egoschema_shape(submission, q_uids):
    assert isinstance(submission, dict)
    for key, value in submission.items():
        assert isinstance(key, str) and key in q_uids
        assert type(value) is int and 0 <= value <= 4  # 0-based, never a letter or a bool


def assert_lta_shape(submission, z_of, n_verbs=3, n_nouns=4):
    assert isinstance(submission, dict)
    for key, value in submission.items():
        assert re.fullmatch(r".+_\d+", key) and key in z_of  # <clip_uid>_<action_idx>
        assert set(value) == {"verb", "noun"}
        for head, n_classes in (("verb", n_verbs), ("noun", n_nouns)):
            assert len(value[head]) == 5  # K candidates
            for sequence in value[head]:
                assert len(sequence) == z_of[key]  # Z actions
                assert all(type(c) is int and 0 <= c < n_classes for c in sequence)


def assert_lmms_results_shape(results, task, n_original, n_effective):
    assert LMMS_RESULTS_KEYS <= set(results)
    assert set(results["results"]) == {task} and results["results"][task]["alias"] == task
    for key, value in results["results"][task].items():
        if key == "alias":
            continue
        metric, filter_key = key.split(",")  # "<metric>,<filter>"
        assert filter_key and metric
        if metric.endswith("_stderr"):
            assert value == "N/A" or isinstance(value, float)
        else:
            assert f"{metric}_stderr,{filter_key}" in results["results"][task]
    assert results["n-samples"] == {task: {"original": n_original, "effective": n_effective}}
    assert results["group_subtasks"] == {task: []} and results["n-shot"] == {task: 0}
    assert set(results["configs"]) == set(results["versions"]) == set(results["higher_is_better"]) == {task}
    assert LMMS_CONFIG_KEYS <= set(results["config"]) and isinstance(results["config"]["model"], str)
    assert re.fullmatch(r"\d{8}_\d{6}", results["date"])  # lmms-eval's get_datetime_str
    assert set(results["task_hashes"]) == {task}


def assert_lmms_sample_shape(sample, doc_id, metrics):
    assert LMMS_SAMPLE_KEYS <= set(sample) and sample["doc_id"] == doc_id
    assert isinstance(sample["target"], str) and sample["target_hash"] == sha256(sample["target"])
    assert sample["doc_hash"] == sha256(json.dumps(sample["doc"], indent=2, ensure_ascii=False))
    assert isinstance(sample["filtered_resps"], list) and len(sample["filtered_resps"]) == 1
    if "resps" in sample:  # kept only when the filter changed the response
        assert sample["resps"] != sample["filtered_resps"] and sample["resps"][0] != sample["filtered_resps"]
    assert metrics <= set(sample)


def lmms_files(folder: Path, task: str):
    (results_path,) = folder.glob("*_results.json")
    date = results_path.name.removesuffix("_results.json")
    samples_path = folder / f"{date}_samples_{task}.jsonl"
    results = json.loads(results_path.read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in samples_path.read_text(encoding="utf-8").splitlines()]
    assert results["date"] == date
    return results, samples


# ------------------------------------------------------------------------------ QA: per-item rows


def test_score_qa_out_keeps_one_row_per_item(tmp_path, capsys):
    report_path = tmp_path / "report.json"
    code, _, _ = run(capsys, "score", "qa", "--gold", DATA / "qa_items.jsonl", "--pred", DATA / "qa_preds.jsonl",
                     "--out", report_path)
    assert code == 0
    report = json.loads(report_path.read_text())
    rows = report["per_item"]
    assert [(r["id"], r["task"], r["level"], r["answer"], r["prediction"], r["status"], r["correct"]) for r in rows] == [
        ("m1", "Habit Inference", 1, "B", "B", "answered", True),
        ("m2", "Object Location", 2, "C", "C", "answered", True),
        ("m3", "Object Location", 2, "A", "B", "answered", False),  # "Balcony" is option B's text
        ("m4", "Event Counting", 3, "C", None, "invalid", False),
        ("m5", "Route Reasoning", 3, "E", None, "missing", False)]
    assert [r["raw"] for r in rows] == ["B", "The answer is (C).", "Balcony", "Probably three or four times.", None]
    assert {r["extraction"] for r in rows} == {"strict"} and "strict_prediction" not in rows[0]
    assert sum(r["correct"] for r in rows) / len(rows) == report["Acc"] == 0.4
    assert sum(r["status"] != "answered" for r in rows) == report["invalid"] == 2


def test_qa_rows_of_another_extraction_keep_the_strict_letter():
    items = [QAItem(id="a", participant="", task="T", question="q?", options=["x", "y", "z", "w"], answer="A"),
             QAItem(id="b", participant="", task="T", question="q?", options=["x", "y", "z", "w"], answer="B")]
    rows = exports.qa_rows(items, {"a": "I think A or B", "b": "b"}, {"a": "A", "b": None}, "egomonth-cs",
                           {"a": 1, "b": 1}, strict={"a": None, "b": "B"})
    assert [(r["prediction"], r["strict_prediction"], r["status"], r["correct"]) for r in rows] == [
        ("A", None, "answered", True), (None, "B", "invalid", False)]


# ----------------------------------------------------------------------------------- EgoSchema


def _egoschema(tmp_path, capsys):
    def question(q_uid):
        return {"q_uid": q_uid, "google_drive_id": f"d-{q_uid}", "question": f"What does c do in {q_uid}?",
                **{f"option {i}": t for i, t in enumerate(["C cooks", "C reads", "C sweeps", "C sits", "C runs"])}}

    questions, answers = tmp_path / "questions.json", tmp_path / "subset_answers.json"
    questions.write_text(json.dumps([question(q) for q in ("q-1", "q-2", "q-3", "q-4", "q-5")]))
    answers.write_text(json.dumps({"q-1": 0, "q-2": 3, "q-3": 4}))
    out = tmp_path / "egoschema"
    assert run(capsys, "data", "convert", "egoschema", "--questions", questions, "--answers", answers,
               "--out", out)[0] == 0
    return out


def test_egoschema_submission_from_score_qa(tmp_path, capsys):
    out = _egoschema(tmp_path, capsys)
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "q-1", "text": "A"}, {"id": "q-2", "text": "C sits"}, {"id": "q-3", "text": "maybe"}]))
    submission_path = tmp_path / "sub" / "submission.json"
    code, text, _ = run(capsys, "score", "qa", "--gold", out / "qa.jsonl", "--pred", pred,
                        "--export", f"egoschema={submission_path}")
    assert code == 0 and "EgoSchema submission (2 of 3 questions; 1 without a readable answer left out)" in text
    submission = json.loads(submission_path.read_text())
    assert_egoschema_shape(submission, {"q-1", "q-2", "q-3"})
    assert submission == {"q-1": 0, "q-2": 3}  # A -> 0; "C sits" is option 3's text; q-3 unread: left out
    answers = json.loads((tmp_path / "subset_answers.json").read_text())
    assert sum(submission[q] == answers[q] for q in submission) == 2  # the server's count = score qa's Acc 2/3


def test_egoschema_submission_for_the_unanswered_questions(tmp_path, capsys):
    out = _egoschema(tmp_path, capsys)
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"id": "q-4", "text": "2"}) + "\n" + json.dumps({"id": "q-5", "text": "(E)"}) + "\n")
    submission_path = tmp_path / "full.json"
    code, text, _ = run(capsys, "export", "egoschema", "--questions", out / "unanswered.jsonl", "--pred", pred,
                        "--out", submission_path, "--extraction", "egoschema")
    assert code == 0 and "2 of 2 questions" in text
    submission = json.loads(submission_path.read_text())
    assert_egoschema_shape(submission, {"q-4", "q-5"})
    assert submission == {"q-4": 2, "q-5": 4}  # the digit is 0-based, as EgoSchema's answers


def test_egoschema_export_refuses_other_items_and_bad_question_lines(tmp_path, capsys):
    code, _, err = run(capsys, "score", "qa", "--gold", DATA / "qa_items.jsonl", "--pred", DATA / "qa_preds.jsonl",
                       "--export", f"egoschema={tmp_path / 's.json'}", "--out", tmp_path / "r.json")
    assert code == 2 and "qa_items.jsonl: field 'options': 4 item(s) without EgoSchema's 5 options" in err
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "r.json").exists()  # nothing half-written
    questions = tmp_path / "unanswered.jsonl"
    questions.write_text('{"id": "q-1", "options": ["a", "b", "c", "d", "e"]}\n{"id": "q-2", "options": "a b"}\n'
                         "{not json\n")
    code, _, err = run(capsys, "export", "egoschema", "--questions", questions, "--pred", DATA / "qa_preds.jsonl",
                       "--out", tmp_path / "s.json")
    assert code == 2 and "unanswered.jsonl:2: field 'options': expected an array of option texts" in err
    assert "unanswered.jsonl:3: invalid JSON" in err and "Traceback" not in err
    questions.write_text('{"id": "q-1", "options": ["a", "b", "c", "d", "e"]}\n')
    code, _, err = run(capsys, "export", "egoschema", "--questions", questions, "--pred", DATA / "qa_preds.jsonl",
                       "--out", tmp_path / "s.json")
    assert code == 2 and "none of its 5 prediction ids is among the 1 to export" in err


# ----------------------------------------------------------------------------------- EgoMonth CSV


def test_egomonth_csv_has_the_paper_scripts_columns_and_values(tmp_path, capsys):
    root = tmp_path / "videos"
    (root / "021").mkdir(parents=True)
    (root / "021" / "day01.mp4").write_bytes(b"\0")
    options = ["A. In the car", "B. In the kitchen", "C. At the office", "D. In the garden"]
    items = [{"video_path": ["021/day01.mp4"], "question": " Where are the keys, usually? ", "options": options,
              "correct_options": "B", "task_type": "Object Location", "difficulty": "hard", "video_id": "v1"},
             {"video_path": ["021/day01.mp4"], "question": "Which way?", "options": options,
              "correct_options": "A", "task_type": "Direction Judgment", "video_id": 7},
             {"video_path": ["021/day01.mp4"], "question": "How often?", "options": options,
              "correct_options": "C", "task_type": "habit_inference", "difficulty": 2, "video_id": "v3"}]
    qa = tmp_path / "021" / "QA.json"
    qa.parent.mkdir()
    qa.write_text(json.dumps(items))
    out = tmp_path / "egomonth"
    assert run(capsys, "data", "convert", "egomonth", qa, "--videos", root, "--out", out)[0] == 0
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"id": "021/0", "text": "B\n\nBecause it is."}) + "\n"
                    + json.dumps({"id": "021/1", "text": "no idea"}) + "\n")
    csv_path = tmp_path / "results.csv"
    code, _, _ = run(capsys, "score", "qa", "--gold", out / "qa.jsonl", "--pred", pred, "--extraction", "egomonth-cs",
                     "--export", f"egomonth-csv={csv_path}")
    assert code == 0
    raw = csv_path.read_bytes().decode("utf-8")
    assert raw.splitlines()[0] == ",".join(EGOMONTH_HEADER) and "\r\n" in raw  # csv.DictWriter's header and ends
    rows = list(csv.DictReader(io.StringIO(raw, newline="")))
    assert rows == [
        {"video_id": "v1", "question": "Where are the keys, usually?", "task_type": "Object Location",
         "difficulty": "hard", "ground_truth": "B", "prediction": "B", "raw_output": "B  Because it is.",
         "is_correct": "True"},
        {"video_id": "7", "question": "Which way?", "task_type": "Direction Judgment", "difficulty": "unknown",
         "ground_truth": "A", "prediction": "FAIL", "raw_output": "no idea", "is_correct": "False"},
        {"video_id": "v3", "question": "How often?", "task_type": "habit_inference", "difficulty": "2",
         "ground_truth": "C", "prediction": "MISSING", "raw_output": "", "is_correct": "False"}]
    # the paper's Acc from the CSV (mean of is_correct) is score qa's Acc
    assert sum(r["is_correct"] == "True" for r in rows) / len(rows) == pytest.approx(1 / 3)


# -------------------------------------------------------------------------------------- Ego4D LTA


def _lta(tmp_path, capsys):
    def action(clip, idx, verb, noun, labelled=True):
        row = {"clip_uid": clip, "video_uid": f"v-{clip}", "clip_id": 1, "action_idx": idx,
               "action_clip_start_sec": 2.0 * idx, "action_clip_end_sec": 2.0 * idx + 1.5}
        if labelled:
            row.update(verb_label=verb, noun_label=noun, verb=TAXONOMY["verbs"][verb], noun=TAXONOMY["nouns"][noun])
        return row

    val = [action("c2", i, 0, 1) for i in range(4)] + [action("c4", i, v, n) for i, (v, n) in
                                                       enumerate([(0, 0), (1, 1), (1, 3), (2, 0)])]
    val += [action("c5", i, 2, 2) for i in range(4)]
    test = [action("c3", i, 0, 0, labelled=False) for i in range(4)]
    files = []
    for split, rows in (("val", val), ("test_unannotated", test)):
        files.append(tmp_path / f"fho_lta_{split}.json")
        files[-1].write_text(json.dumps({"split": split, "clips": rows}))
    taxonomy = tmp_path / "fho_lta_taxonomy.json"
    taxonomy.write_text(json.dumps(TAXONOMY))
    out = tmp_path / "lta"
    assert run(capsys, "data", "convert", "ego4d-lta", "--annotations", *files, "--taxonomy", taxonomy,
               "--future-actions", "2", "--out", out)[0] == 0
    return out, taxonomy


def _write_preds(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_lta_challenge_file_from_score_forecast(tmp_path, capsys):
    out, taxonomy = _lta(tmp_path, capsys)
    pred = _write_preds(tmp_path / "pred.jsonl", [
        {"id": "c2_1", "candidates": [["take knife", "put nut (food)"], ["cut bread"]]},
        {"id": "c4_1", "candidates": [["take_(pick,_grab,_get) nut_(tool)", "put bread", "cut knife"]]}])
    sub_path, report_path = tmp_path / "lta.json", tmp_path / "report.json"
    code, text, _ = run(capsys, "score", "forecast", "--gold", out / "points.jsonl", "--pred", pred,
                        "--embedder", "exact", "--max-candidates", "5", "--metric", "ego4d-ed",
                        "--export", f"ego4d-lta={sub_path}", "--taxonomy", taxonomy, "--out", report_path)
    assert code == 0
    assert "Ego4D LTA submission (2 of 3 points; 1 no prediction, 1 padded candidates, 7 repeated candidates)" in text
    submission = json.loads(sub_path.read_text())
    assert_lta_shape(submission, {"c2_1": 2, "c4_1": 2, "c5_1": 2})
    # take 0, put 1, cut 2; bread 0, knife 1, nut (food) 2, nut (tool) 3; "cut bread" padded to Z = 2 by
    # repeating its last action; 2 candidates repeated in order up to K = 5; the third action of c4_1 cut
    assert submission["c2_1"] == {"verb": [[0, 1], [2, 2], [0, 1], [2, 2], [0, 1]],
                                  "noun": [[1, 2], [0, 0], [1, 2], [0, 0], [1, 2]]}
    assert submission["c4_1"] == {"verb": [[0, 1]] * 5, "noun": [[3, 0]] * 5}
    # the challenge's ED@Z from the written indices is the one `--metric ego4d-ed` printed
    points = {json.loads(line)["id"]: json.loads(line) for line in (out / "points.jsonl").read_text().splitlines()}
    ed = [ed_curve(submission[p]["verb"], points[p]["meta"]["target_verb_labels"])[-1] for p in ("c2_1", "c4_1")]
    (group,) = json.loads(report_path.read_text())["ego4d"]["groups"]
    assert group["verb"]["ED"] == pytest.approx((sum(ed) + 1.0) / 3)  # c5_1 unpredicted: ED 1


def test_lta_labels_outside_the_taxonomy_are_refused_or_repeated(tmp_path, capsys):
    out, taxonomy = _lta(tmp_path, capsys)
    pred = _write_preds(tmp_path / "pred.jsonl", [
        {"id": "c2_1", "candidates": [["take knife"], ["stir soup", "take bread"], ["take soup", "stir bread"]]}])
    args = ["score", "forecast", "--gold", out / "points.jsonl", "--pred", pred, "--embedder", "exact",
            "--export", f"ego4d-lta={tmp_path / 'lta.json'}", "--taxonomy", taxonomy, "--out", tmp_path / "r.json"]
    code, _, err = run(capsys, *args)
    assert code == 2 and "pred.jsonl: 2 verb and 2 noun label(s) are not classes of the taxonomy" in err
    assert "point 'c2_1' candidate 1 action 0: verb 'stir' of 'stir soup'" in err and "--lta-unknown repeat" in err
    assert not (tmp_path / "lta.json").exists() and not (tmp_path / "r.json").exists()
    code, text, _ = run(capsys, *args, "--lta-unknown", "repeat")
    assert code == 0 and "4 replaced" in text
    submission = json.loads((tmp_path / "lta.json").read_text())
    assert_lta_shape(submission, {"c2_1": 2})
    # [take knife] padded; [stir soup, take bread]: verb ? -> the next known (take), noun ? -> bread;
    # [take soup, stir bread]: noun ? -> bread (the next), verb ? -> take (the previous)
    assert submission["c2_1"]["verb"][:3] == [[0, 0], [0, 0], [0, 0]]
    assert submission["c2_1"]["noun"][:3] == [[1, 1], [0, 0], [0, 0]]


def test_lta_submission_for_the_unannotated_test_clips(tmp_path, capsys):
    out, _ = _lta(tmp_path, capsys)
    pred = _write_preds(tmp_path / "pred.jsonl", [{"id": "c3_1", "text": '[["put knife", "cut bread"]]'}])
    sub_path = tmp_path / "test.json"
    code, text, _ = run(capsys, "export", "ego4d-lta", "--points", out / "test_unannotated.jsonl", "--pred", pred,
                        "--taxonomy", out / "metadata.json", "--out", sub_path)
    assert code == 0 and "1 of 1 points" in text
    submission = json.loads(sub_path.read_text())
    assert_lta_shape(submission, {"c3_1": 2})
    assert submission == {"c3_1": {"verb": [[1, 2]] * 5, "noun": [[1, 0]] * 5}}


def test_lta_options_and_files_are_checked_before_scoring(tmp_path, capsys):
    out, taxonomy = _lta(tmp_path, capsys)
    pred = _write_preds(tmp_path / "pred.jsonl", [{"id": "c2_1", "candidates": [["take knife"]]}])
    base = ["score", "forecast", "--gold", out / "points.jsonl", "--pred", pred, "--embedder", "exact"]
    code, _, err = run(capsys, *base, "--export", f"ego4d-lta={tmp_path / 'x.json'}")
    assert code == 2 and "--export ego4d-lta needs --taxonomy" in err
    code, _, err = run(capsys, *base, "--taxonomy", taxonomy)
    assert code == 2 and "--taxonomy is read only by --export ego4d-lta=PATH" in err
    broken = tmp_path / "tax.json"
    broken.write_text('{"verbs": ["take"], "nouns": ')
    code, _, err = run(capsys, *base, "--export", f"ego4d-lta={tmp_path / 'x.json'}", "--taxonomy", broken)
    assert code == 2 and "tax.json:1: invalid JSON" in err and "ends early" in err
    broken.write_text('{"verbs": ["take"], "nouns": []}')
    code, _, err = run(capsys, *base, "--export", f"ego4d-lta={tmp_path / 'x.json'}", "--taxonomy", broken)
    assert code == 2 and "tax.json: field 'nouns': expected an array of class names" in err
    points = tmp_path / "test_unannotated.jsonl"
    points.write_text('{"id": "c3_1", "future_windows": [[1, 2]]}\n{"id": "c3_2", "future_windows": []}\n'
                      '{"id": "c3_1", "future_windows": [[1, 2]]}\n')
    code, _, err = run(capsys, "export", "ego4d-lta", "--points", points, "--pred", pred, "--taxonomy", taxonomy,
                       "--out", tmp_path / "t.json")
    assert code == 2 and "test_unannotated.jsonl:2: field 'future_windows': expected a non-empty array" in err
    assert "test_unannotated.jsonl:3: field 'id': duplicate id 'c3_1' (first on line 1)" in err


# ------------------------------------------------------------------------------------- lmms-eval


def test_lmms_eval_files_of_a_qa_evaluation(tmp_path, capsys):
    folder = tmp_path / "lmms" / "example"
    code, text, _ = run(capsys, "score", "qa", "--gold", DATA / "qa_items.jsonl", "--pred", DATA / "qa_preds.jsonl",
                        "--export", f"lmms-eval={folder}")
    assert code == 0 and "lmms-eval samples (5 lines)" in text
    results, samples = lmms_files(folder, "qa")
    assert_lmms_results_shape(results, "qa", 5, 5)
    metrics = results["results"]["qa"]
    assert metrics["acc,strict"] == 0.4 and metrics["avg,strict"] == 0.375 and metrics["invalid,strict"] == 0.4
    # mean_stderr of [1, 1, 0, 0, 0]: sqrt(0.3 / 5) (sample variance 0.3)
    assert metrics["acc_stderr,strict"] == pytest.approx(math.sqrt(0.3 / 5)) and metrics["avg_stderr,strict"] == "N/A"
    assert metrics["avg_L2,strict"] == 0.5 and metrics["acc_object_location,strict"] == 0.5
    assert results["config"]["model"] == "example"  # the predictions' model field
    assert results["configs"]["qa"]["metadata"]["extraction"] == "strict"
    for doc_id, sample in enumerate(samples):
        assert_lmms_sample_shape(sample, doc_id, {"acc", "avg", "invalid"})
    assert [s["doc"]["id"] for s in samples] == ["m1", "m2", "m3", "m4", "m5"]
    assert [s["filtered_resps"] for s in samples] == [["B"], ["C"], ["B"], ["[invalid]"], ["[invalid]"]]
    assert "resps" not in samples[0] and samples[1]["resps"] == [["The answer is (C)."]]  # "B" filtered is "B"
    assert samples[4]["resps"] == [[]]  # no prediction: no response
    assert [s["acc"] for s in samples] == [1.0, 1.0, 0.0, 0.0, 0.0] and samples[0]["avg"] == {
        "task": "Habit Inference", "score": 1.0}
    assert sum(s["acc"] for s in samples) / len(samples) == metrics["acc,strict"]
    assert results["task_hashes"]["qa"] == sha256("".join(f"sample_{i}" + s["doc_hash"] for i, s in enumerate(samples)))


def test_lmms_eval_files_of_a_forecast_evaluation(tmp_path, capsys):
    folder, report_path = tmp_path / "lmms", tmp_path / "report.json"
    code, _, _ = run(capsys, "score", "forecast", "--gold", DATA / "forecast_points.jsonl", "--pred",
                     DATA / "forecast_preds.jsonl", "--embedder", "exact", "--export", f"lmms-eval={folder}",
                     "--out", report_path)
    assert code == 0
    report = json.loads(report_path.read_text())
    results, samples = lmms_files(folder, "epic")
    assert_lmms_results_shape(results, "epic", 5, 5)
    metrics, overall = results["results"]["epic"], report["overall"]
    assert (metrics["S,none"], metrics["S_rand,none"], metrics["S_norm,none"]) == (
        overall["S"], overall["S_rand"], overall["S_norm"])
    assert metrics["invalid,none"] == overall["invalid"] / overall["n"]
    assert [(g["level"], g["k"]) for g in report["groups"]] == [(1, 3), (2, 1)]
    assert metrics["S_norm_L1_K3,none"] == report["groups"][0]["S_norm"]
    assert metrics["S_L2_K1,none"] == report["groups"][1]["S"]
    for doc_id, sample in enumerate(samples):
        assert_lmms_sample_shape(sample, doc_id, {"S", "S_rand", "invalid", "best"})
    per_point = {row["id"]: row for row in report["per_point"]}
    assert [s["S"] for s in samples] == [per_point[s["doc"]["id"]]["S"] for s in samples]
    assert sum(s["S"] for s in samples) / len(samples) == pytest.approx(metrics["S,none"])
    first = samples[0]  # given candidates are the response itself: resps dropped, prompt kept as input
    assert "resps" not in first and first["filtered_resps"][0][1] == ["wash bowl"]
    assert first["input"] == "forecast" and first["prompt_hash"] == sha256("forecast")
    assert first["target"] == str(["close cupboard", "put bowl on counter", "open fridge"])
    unparsed = next(s for s in samples if s["doc"]["id"] == "p3")
    assert unparsed["filtered_resps"] == ["[invalid]"] and unparsed["invalid"] == 1.0


# ---------------------------------------------------------------------------- options and writing


@pytest.mark.parametrize("spec, expected", [
    ("csv=out.csv", "expected FORMAT=PATH with FORMAT one of egoschema, egomonth-csv, lmms-eval, got 'csv=out.csv'"),
    ("egoschema", "expected FORMAT=PATH"),
    ("ego4d-lta=x.json", "FORMAT one of egoschema, egomonth-csv, lmms-eval"),
])
def test_a_bad_export_spec_is_refused_while_parsing(capsys, spec, expected):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", "qa", "--gold", "g.jsonl", "--pred", "p.jsonl", "--export", spec])
    assert exit_info.value.code == 2 and expected in " ".join(capsys.readouterr().err.split())


def test_export_paths_of_the_wrong_kind_or_given_twice(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("")
    base = ["score", "qa", "--gold", DATA / "qa_items.jsonl", "--pred", DATA / "qa_preds.jsonl"]
    for spec, expected in ((f"lmms-eval={a_file}", "is a file; expected a folder"),
                           (f"egomonth-csv={tmp_path}", "is a folder; expected a file name")):
        with pytest.raises(SystemExit):
            cli.main([str(a) for a in base] + ["--export", spec])
        assert expected in capsys.readouterr().err
    code, _, err = run(capsys, *base, "--export", f"egomonth-csv={tmp_path / 'a.csv'}",
                       "--export", f"egomonth-csv={tmp_path / 'b.csv'}")
    assert code == 2 and "--export egomonth-csv=...: given twice" in err


def test_an_unwritable_export_place_is_refused_before_scoring(tmp_path, capsys, monkeypatch):
    real_write = Path.write_bytes

    def read_only(self, data):  # what a read-only file system answers (chmod does not stop root)
        if ".export.probe-" in self.name:
            raise OSError(30, "Read-only file system")
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", read_only)
    code, _, err = run(capsys, "score", "qa", "--gold", DATA / "qa_items.jsonl", "--pred", DATA / "qa_preds.jsonl",
                       "--export", f"egomonth-csv={tmp_path / 'a.csv'}", "--out", tmp_path / "r.json")
    assert code == 2 and f"--export egomonth-csv={tmp_path / 'a.csv'}: cannot write there (Read-only file system)" in err
    assert not (tmp_path / "r.json").exists()  # refused before scoring


def test_writes_are_atomic_and_a_failed_write_is_an_error_naming_the_option(tmp_path, monkeypatch):
    path = tmp_path / "sub.json"
    exports.write_text_atomic(path, "{}\n", "--export egoschema=sub.json")
    assert path.read_text() == "{}\n"

    def refuse(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exports.os, "replace", refuse)
    with pytest.raises(ConfigError, match=r"--export egoschema=sub.json: cannot write .*No space left on device"):
        exports.write_text_atomic(path, '{"q": 1}\n', "--export egoschema=sub.json")
    assert path.read_text() == "{}\n" and sorted(p.name for p in tmp_path.iterdir()) == ["sub.json"]


def test_taxonomy_texts_and_names_both_map_to_the_class():
    taxonomy = Taxonomy(["take", "nut (food)"], ["take", "nut (food)"], ["take_(pick,_grab,_get)",
                                "nut_(food)"], ["take_(pick,_grab,_get)", "nut_(food)"], "t.json")
    table = taxonomy.index("noun")
    assert table["nut (food)"] == table["nut_(food)"] == 1 and table["take (pick, grab, get)"] == 0
    with pytest.raises(DataError, match="p.jsonl: 0 verb and 1 noun"):
        exports.lta_submission([("c_1", 1)], {"c_1": [["take bread"]]},
                               Taxonomy(["take"], ["nut"], ["take"], ["nut"], "t.json"), "p.jsonl")
