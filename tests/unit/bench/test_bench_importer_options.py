"""Issue 36, item 6: EgoMonth and EgoSchema items with an option past the format's count, or an empty
questions array, are refused (exit 2); options of the same text are kept with a warning naming the
item and option, and a reply that is only that text is invalid."""

from __future__ import annotations

import json
import logging

from egohorizon import cli
from egohorizon.metrics.extraction import extract
from egohorizon.metrics.qa import extract_answer
from egohorizon.schema import QAItem, read_jsonl

OPTIONS = ["A. In the car", "B. In the kitchen", "C. At the office", "D. In the garden"]


def _convert(capsys, *argv):
    code = cli.main(["data", "convert", *map(str, argv)])
    return code, " ".join(capsys.readouterr().err.split())


def _egomonth(tmp_path, options):
    (tmp_path / "videos" / "021").mkdir(parents=True)
    (tmp_path / "videos" / "021" / "day01.mp4").write_bytes(b"\0" * 10)
    qa = tmp_path / "021" / "QA.json"
    qa.parent.mkdir()
    item = {"video_path": ["021/day01.mp4"], "question": "Where?", "task_type": "Object Location",
            "correct_options": "B", "options": options}
    qa.write_text(json.dumps([item, {**item, "question": "Where else?"}]))
    return ["egomonth", qa, "--videos", tmp_path / "videos", "--out", tmp_path / "out"]


def test_egomonth_refuses_an_option_past_d(tmp_path, capsys):
    code, err = _convert(capsys, *_egomonth(tmp_path, [*OPTIONS, "E. On the roof"]))
    assert code == 2
    assert "item [0]: field 'options[4]': EgoMonth items have at most 4 options (A-D); got 5" in err
    assert "'E. On the roof'" in err and not (tmp_path / "out" / "qa.jsonl").exists()


def test_egomonth_keeps_options_of_the_same_text_with_a_warning(tmp_path, capsys, caplog):
    options = ["A. In the car", "B. In the kitchen", "C. In the kitchen", "D. In the garden"]
    with caplog.at_level(logging.WARNING):
        code, _ = _convert(capsys, *_egomonth(tmp_path, options))
    assert code == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and "item [0]: option C has the same text as option B" in warnings[0]
    items = read_jsonl(tmp_path / "out" / "qa.jsonl", QAItem).records
    assert items[0].options == ["In the car", "In the kitchen", "In the kitchen", "In the garden"]
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert meta["counts"]["items with two options of the same text (kept; warned)"] == 2


def _egoschema(tmp_path, questions):
    (tmp_path / "q.json").write_text(json.dumps(questions))
    (tmp_path / "a.json").write_text(json.dumps({q["q_uid"]: 1 for q in questions}))
    return ["egoschema", "--questions", tmp_path / "q.json", "--answers", tmp_path / "a.json",
            "--out", tmp_path / "out"]


def _question(q_uid, texts=("C cooks", "C reads", "C sweeps", "C eats", "C sleeps"), **extra):
    return {"q_uid": q_uid, "question": "What does c do?", **{f"option {i}": t for i, t in enumerate(texts)},
            **extra}


def test_egoschema_refuses_an_option_past_4_and_an_empty_array(tmp_path, capsys):
    code, err = _convert(capsys, *_egoschema(tmp_path, [_question("q1"), _question("q2", **{"option 5": "C runs"})]))
    assert code == 2 and "item [1]: field 'option 5': EgoSchema questions have 5 options" in err
    code, err = _convert(capsys, *_egoschema(tmp_path, []))
    assert code == 2 and "q.json: the array holds no questions" in err
    assert not (tmp_path / "out").exists()


def test_egoschema_keeps_options_of_the_same_text_with_a_warning(tmp_path, capsys, caplog):
    texts = ("C cooks", "C reads", "C cooks", "C eats", "C sleeps")
    with caplog.at_level(logging.WARNING):
        code, _ = _convert(capsys, *_egoschema(tmp_path, [_question("q1", texts)]))
    assert code == 0
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "q.json: item [0]: option C has the same text as option A ('C cooks')" in warning


def test_a_reply_equal_to_a_duplicated_option_text_is_invalid():
    options = ["C cooks", "C reads", "C cooks", "C eats", "C sleeps"]
    for mode in ("egoschema", "strict"):
        assert extract("C cooks", options, mode) is None
        assert extract("C reads", options, mode) == "B"
    assert extract_answer("C cooks.", options) is None and extract("(C)", options, "egoschema") == "C"
