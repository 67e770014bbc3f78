"""Issue 36, "Data loss": every command that writes a folder or a file refuses what it did not write, with
exit 2 and a message naming the folder and the flag, before any model loads or any input is read (the
inputs named below need not even exist). Items 1-3 of the issue: export-adapter wiped whatever --out was,
data convert and qa answer replaced another data set's or model's files."""

from __future__ import annotations

import json
import os

import pytest

from egohorizon.cli import main
from egohorizon.owned_output import MARKER


def _user_folder(tmp_path, name="mine"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "notes.txt").write_text("a user's file")
    return folder


def _listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# One command line per command that writes a folder; OUT is a user's folder (no marker).
FOLDER_COMMANDS = {
    "abstract": ["abstract", "events.jsonl", "--model", "m"],
    "bench run": ["bench", "run", "dataset", "--model", "m"],
    "bench forecast": ["bench", "forecast", "points.jsonl", "--model", "m"],
    "caption": ["caption", "shards", "--model", "m"],
    "compare": ["compare", "run1", "run2"],
    "data convert": ["data", "convert", "egomonth", "QA.json", "--videos", "videos"],
    "deid": ["deid", "images"],
    "demo": ["demo"],
    "hands clips": ["hands", "clips", "shards", "--labels", "labels.jsonl"],
    "ingest video": ["ingest", "video", "v.mp4", "--participant", "p1"],
    "ingest aria": ["ingest", "aria", "r.vrs", "--participant", "p1"],
    "pipeline": ["pipeline", "recordings", "--captioner", "c", "--abstractor", "a"],
    "points": ["points", "--events", "events.jsonl"],
    "qa answer": ["qa", "answer", "items.jsonl", "--model", "m"],
    "shards build": ["shards", "build", "--demo"],
}


@pytest.mark.parametrize("name", sorted(FOLDER_COMMANDS))
def test_every_folder_command_refuses_a_users_folder_even_with_its_flag(name, tmp_path, capsys):
    user = _user_folder(tmp_path)
    flag = "--overwrite" if name.startswith("ingest") else "--force"
    for extra in ([], [flag]):
        assert main([*FOLDER_COMMANDS[name], "--out", str(user), *extra]) == 2
        err = capsys.readouterr().err
        assert f"--out {user}: a folder that egohorizon {name}" in err and f"{flag} replaces only" in err, err
        assert "Traceback" not in err
    assert _listing(user) == ["notes.txt"]


def test_demo_hands_refuses_a_users_folder(tmp_path, capsys):
    user = _user_folder(tmp_path)
    assert main(["demo", "--out", str(tmp_path / "world"), "--hands", str(user)]) == 2
    assert f"--hands {user}: a folder that egohorizon demo --hands did not write" in capsys.readouterr().err
    assert _listing(user) == ["notes.txt"] and not (tmp_path / "world").exists()


@pytest.mark.parametrize("name", ["points", "qa answer", "shards build"])
def test_the_current_folder_is_refused(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*FOLDER_COMMANDS[name], "--out", "."]) == 2
    assert "--out .: is the current folder" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_an_input_folder_is_refused_as_the_output(tmp_path, capsys):
    images = _user_folder(tmp_path, "images")
    assert main(["deid", str(images), "--out", str(images)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert main(["deid", str(images / "notes.txt"), "--out", str(tmp_path)]) == 2  # a folder above the input
    assert "holds the input" in capsys.readouterr().err
    assert _listing(images) == ["notes.txt"]


@pytest.mark.parametrize("argv", [
    ["hands", "detect", "images", "--gold", "{f}", "--out", "{f}"],
    ["caption", "audit", "{f}", "--shards", "shards", "--out", "{f}"],
    ["score", "qa", "--gold", "gold.jsonl", "--pred", "{f}", "--out", "{f}"],
    ["export", "egoschema", "--questions", "{f}", "--pred", "p.jsonl", "--out", "{f}"],
])
def test_an_output_file_that_is_an_input_is_refused(argv, tmp_path, capsys):
    data = tmp_path / "b.jsonl"
    data.write_text("gold\n")
    assert main([a.format(f=data) for a in argv]) == 2
    assert f"--out {data}: is the input" in capsys.readouterr().err
    assert data.read_text() == "gold\n"


# -- item 1: export-adapter -------------------------------------------------------------------------

def _run(tmp_path):
    run = tmp_path / "runs" / "r1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"checkpoint")
    (run / "config.yaml").write_text("model: {}\n")
    return run


@pytest.mark.parametrize("merge", [[], ["--merge"]])
def test_export_adapter_never_replaces_the_run_its_folder_the_current_folder_or_a_users(merge, tmp_path,
                                                                                        monkeypatch, capsys):
    run = _run(tmp_path)
    user = _user_folder(tmp_path)
    before = _listing(tmp_path)
    monkeypatch.chdir(user)
    for out, expected in [(".", "is the current folder"), (str(tmp_path / "runs"), "holds the input"),
                          (str(run), "is the input"), (str(user), "is the current folder")]:
        assert main(["export-adapter", str(run), "--out", out, *merge]) == 2
        assert expected in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    assert main(["export-adapter", str(run), "--out", str(user), *merge, "--force"]) == 2
    assert "a folder that egohorizon export-adapter" in capsys.readouterr().err
    assert _listing(tmp_path) == before  # nothing deleted, nothing left behind


# -- item 2: qa answer ------------------------------------------------------------------------------

@pytest.mark.slow  # SmolLM2 answers on CPU (~15 s of CPU)
def test_qa_answer_refuses_a_folder_another_model_answered_into(tmp_path, capsys, smollm2_backbone):
    assert main(["data", "convert", *_egoschema(tmp_path), "--out", str(tmp_path / "items")]) == 0
    answer = ["qa", "answer", str(tmp_path / "items" / "qa.jsonl"), "--notes", "0", "--split", "all"]
    out = tmp_path / "out"
    assert main([*answer, "--model", smollm2_backbone.base_path, "--out", str(out)]) == 0
    first = {name: (out / name).read_text() for name in ("predictions.jsonl", "report.json")}
    capsys.readouterr()
    assert main([*answer, "--model", "HuggingFaceTB/SmolLM2-360M-Instruct", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {out}: written by egohorizon qa answer from other inputs (model: " in err and "--force" in err
    assert {name: (out / name).read_text() for name in first} == first


# -- item 3: data convert ---------------------------------------------------------------------------

def _egoschema(tmp_path):
    questions, answers = tmp_path / "questions.json", tmp_path / "answers.json"
    questions.write_text(json.dumps([{"q_uid": "q-1", "question": "What is c doing?",
                                      **{f"option {i}": f"C does {i}" for i in range(5)}}]))
    answers.write_text(json.dumps({"q-1": 0}))
    return ["egoschema", "--questions", str(questions), "--answers", str(answers)]


def _egomonth(tmp_path):
    (tmp_path / "videos" / "021").mkdir(parents=True, exist_ok=True)
    (tmp_path / "videos" / "021" / "d.mp4").write_bytes(b"\0")
    qa = tmp_path / "QA.json"
    qa.write_text(json.dumps([{"video_path": ["021/d.mp4"], "question": "Where?", "task_type": "Object Location",
                               "correct_options": "B", "options": ["A. a", "B. b", "C. c", "D. d"]}]))
    return ["egomonth", str(qa), "--videos", str(tmp_path / "videos")]


def test_data_convert_never_replaces_another_data_sets_qa(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["data", "convert", *_egoschema(tmp_path), "--out", str(out)]) == 0
    first = (out / "qa.jsonl").read_text()
    assert main(["data", "convert", *_egoschema(tmp_path), "--out", str(out)]) == 0  # a rerun: the same files
    assert (out / "qa.jsonl").read_text() == first
    capsys.readouterr()
    assert main(["data", "convert", *_egomonth(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "from other inputs (source: 'egoschema' there, 'egomonth' now" in err and "--force" in err, err
    assert (out / "qa.jsonl").read_text() == first
    assert main(["data", "convert", *_egomonth(tmp_path), "--out", str(out), "--force"]) == 0
    assert json.loads((out / "qa.jsonl").read_text().splitlines()[0])["task"] != "egoschema"


def test_data_convert_refuses_a_folder_with_a_qa_jsonl_it_did_not_write(tmp_path, capsys):
    out = _user_folder(tmp_path, "benchmark")
    (out / "qa.jsonl").write_text("hand-made items\n")
    assert main(["data", "convert", *_egoschema(tmp_path), "--out", str(out)]) == 2
    assert (out / "qa.jsonl").read_text() == "hand-made items\n" and not (out / MARKER).exists()


def test_a_later_pipeline_stop_or_another_cache_continues_the_same_folder(tmp_path):
    from egohorizon.cli import build_parser
    from egohorizon.commands._owned import claim_output
    from egohorizon.owned_output import release_all

    out = tmp_path / "run"
    base = ["pipeline", "recordings", "--captioner", "c", "--abstractor", "a", "--out", str(out)]
    claim_output(build_parser().parse_args([*base, "--until", "shards"]))
    (out / "shards").mkdir()
    release_all()
    claim_output(build_parser().parse_args([*base, "--until", "points"]))  # its stages resume
    release_all()
    answer = ["qa", "answer", "items.jsonl", "--model", "m", "--out", str(tmp_path / "qa")]
    claim_output(build_parser().parse_args(answer))
    (tmp_path / "qa" / "report.json").write_text("{}")
    release_all()
    claim_output(build_parser().parse_args([*answer, "--cache-dir", str(tmp_path / "cache")]))
    release_all()


def test_caption_merge_writes_only_into_a_caption_runs_folder(tmp_path, capsys):
    # issue 36: `caption merge OUT` wrote events.jsonl and scenes.jsonl into any folder holding a captions file
    user = _user_folder(tmp_path)
    (user / "captions.jsonl").write_text("")
    (user / "events.jsonl").write_text("a user's events\n")
    before = _listing(user)
    assert main(["caption", "merge", str(user)]) == 2
    assert "not a folder that egohorizon caption run wrote" in capsys.readouterr().err
    assert _listing(user) == before and (user / "events.jsonl").read_text() == "a user's events\n"
    other = tmp_path / "other"
    other.mkdir()
    (other / "captions.jsonl").write_text("")
    (other / MARKER).write_text(json.dumps({"command": "abstract", "digest": "x", "inputs": {}}))
    assert main(["caption", "merge", str(other)]) == 2
    assert "written by egohorizon abstract" in capsys.readouterr().err
    assert not (other / "events.jsonl").exists()
