"""Issue 36, "Data loss": the one rule every command writes by (egohorizon.owned_output). A command replaces
only a folder it marked itself; the current folder, an input, a folder above an input and a user's folder
are refused; a rerun with the same inputs goes on, other inputs need --force, two at once are refused."""

from __future__ import annotations

import fcntl
import os

import pytest

from egohorizon.owned_output import (
    LOCK,
    MARKER,
    OwnershipError,
    check_output_file,
    claim_folder,
    describe_inputs,
    read_marker,
    release_all,
    replace_folder,
    write_marker,
)


@pytest.fixture(autouse=True)
def _released():
    yield
    release_all()


def _claim(out, settings=None, paths=(), **kw):
    return claim_folder(out, "tool", describe_inputs(settings or {"model": "a"}, paths), input_paths=paths, **kw)


def test_a_new_folder_is_claimed_and_marked(tmp_path):
    out = _claim(tmp_path / "new" / "out")
    marker = read_marker(out)
    assert marker["command"] == "tool" and marker["inputs"]["settings"] == {"model": "a"}
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, LOCK])


def test_a_users_folder_is_refused_even_with_force_and_left_untouched(tmp_path):
    user = tmp_path / "thesis"
    user.mkdir()
    (user / "chapter1.tex").write_text("years of work")
    for force in (False, True):
        with pytest.raises(OwnershipError, match=r"--out .*thesis: a folder that egohorizon tool did not write .*"
                                                 r"chapter1.tex.*--force replaces only"):
            _claim(user, force=force)
    assert sorted(p.name for p in user.iterdir()) == ["chapter1.tex"]  # no marker, no lock left there


def test_the_current_folder_and_the_folders_above_it_are_refused(tmp_path, monkeypatch):
    here = tmp_path / "work"
    here.mkdir()
    monkeypatch.chdir(here)
    with pytest.raises(OwnershipError, match=r"--out \.: is the current folder"):
        _claim(".")
    with pytest.raises(OwnershipError, match="a folder above the current folder"):
        _claim(tmp_path)


def test_the_input_and_a_folder_above_it_are_refused(tmp_path):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    data = tmp_path / "in.jsonl"
    data.write_text("{}\n")
    with pytest.raises(OwnershipError, match="is the input"):
        _claim(run, paths=[run])
    with pytest.raises(OwnershipError, match="holds the input"):
        _claim(tmp_path / "runs", paths=[run])
    with pytest.raises(OwnershipError, match="is the input"):
        check_output_file(data, [data])
    assert check_output_file(tmp_path / "other.jsonl", [data]) == tmp_path / "other.jsonl"


def test_a_rerun_with_the_same_inputs_goes_on_and_other_inputs_need_force(tmp_path):
    out = _claim(tmp_path / "o")
    (out / "predictions.jsonl").write_text("model a\n")
    release_all()
    _claim(out)  # the same inputs: a rerun (resume or identical)
    release_all()
    with pytest.raises(OwnershipError, match=r"from other inputs \(model: 'a' there, 'b' now\).*add --force"):
        _claim(out, {"model": "b"})
    assert (out / "predictions.jsonl").read_text() == "model a\n"
    _claim(out, {"model": "b"}, force=True)  # its own output: replaced, never mixed with the new run's
    assert not (out / "predictions.jsonl").exists()
    assert read_marker(out)["inputs"]["settings"] == {"model": "b"}


def test_an_edited_input_file_is_another_input(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("1\n")
    out = _claim(tmp_path / "o", paths=[data])
    (out / "report.json").write_text("{}")
    release_all()
    data.write_text("2\n")
    with pytest.raises(OwnershipError, match="input: .*items.jsonl changed since"):
        _claim(out, paths=[data])


def test_another_commands_folder_is_refused(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    write_marker(out, "bench run", describe_inputs({}))
    (out / "items.jsonl").write_text("")
    with pytest.raises(OwnershipError, match="written by egohorizon bench run, not tool"):
        _claim(out, force=True)


def test_a_second_run_into_the_same_folder_at_once_is_refused(tmp_path):
    out = _claim(tmp_path / "o")
    release_all()
    # Another process holds the folder's lock (flock locks of two open files conflict, as two processes' do).
    fd = os.open(out / LOCK, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(OwnershipError, match="another egohorizon tool is writing this folder now"):
            _claim(out)
    finally:
        os.close(fd)
    _claim(out)  # free again


def test_a_legacy_output_is_a_rerun(tmp_path):
    out = tmp_path / "world"
    out.mkdir()
    (out / "world.json").write_text("{}")
    claim_folder(out, "demo", describe_inputs({}), legacy=("world.json",))
    assert read_marker(out)["command"] == "demo"


def test_replace_folder_swaps_in_only_over_its_own_output(tmp_path):
    def staged(name):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "weights").write_text(name)
        write_marker(folder, "tool", describe_inputs({}))
        return folder

    out = tmp_path / "out"
    replace_folder(staged("s1"), out, "tool")
    replace_folder(staged("s2"), out, "tool")
    assert (out / "weights").read_text() == "s2"
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    with pytest.raises(OwnershipError, match="did not write"):
        replace_folder(staged("s3"), user, "tool")
    assert (user / "notes.txt").read_text() == "mine"
