"""`egohorizon data fetch` (issue 37): the annotation sets from their git repositories at a pinned commit
into a data home, checked against the sha256 manifest. Each set's repository is stood in for by a local
git mirror (file://) built here from ../shared/data's copies, so no test needs the internet; the pinned
commit is overridden to the mirror's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from egohorizon.cli import main
from egohorizon.commands.data_fetch import NAMES as CLI_NAMES
from egohorizon.data.fetch import NAMES, SETS, fetch, find_home, homes
from egohorizon.data.fetch.install import ABOUT, LEDGER
from egohorizon.data.fetch.sets import problems, resolve
from egohorizon.errors import ConfigError, DataError

EPIC = resolve(["epic-kitchens"])
LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n"


def _git(folder, *args):
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def mirrors(shared_data, tmp_path_factory):
    """name -> (file:// url, the commit holding the set's files, a later commit that changes one of them).
    Each mirror also holds a file the experiments do not read and an LFS pointer, as upstream does."""
    found = {}
    for name, dataset in SETS.items():
        repo = tmp_path_factory.mktemp(name)
        for entry in dataset.files:
            (repo / entry.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shared_data / dataset.folder / entry.path, repo / entry.path)
        (repo / "README.md").write_text("not needed\n")
        (repo / "EPIC_100_train.csv").write_bytes(LFS)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "config", "uploadpack.allowFilter", "true")  # partial clone, as GitHub allows it
        _git(repo, "add", ".")
        _git(repo, "commit", "-qm", "the pinned files")
        pinned = _git(repo, "rev-parse", "HEAD")
        first = dataset.files[0].path
        (repo / first).write_bytes(LFS)  # a later upstream commit moved it to Git LFS
        _git(repo, "commit", "-qam", "later")
        found[name] = (f"file://{repo}", pinned, _git(repo, "rev-parse", "HEAD"))
    return found


def _remotes(mirrors, commit=1):
    return {name: (url, commits[commit - 1]) for name, (url, *commits) in mirrors.items()}


@pytest.fixture
def place(tmp_path):
    """A data home and a checkout with no ../shared beside it."""
    return {"environ": {"EGOHORIZON_DATA": str(tmp_path / "home")}, "root": tmp_path / "repo"}


def _matching(home, datasets=EPIC):
    return problems(home, datasets) == []


def test_the_epic_group_comes_from_its_mirrors_at_the_pinned_commit_with_terms(mirrors, place, tmp_path):
    said = []
    home = fetch(["epic-kitchens"], remotes=_remotes(mirrors), say=said.append, **place)
    assert home == tmp_path / "home" and _matching(home)
    text = "\n".join(said)
    assert "rulstm" in text and "license: no license stated" in text and "CC BY-NC 4.0" in text
    assert "Rescaling Egocentric Vision" in text and "left out: EPIC_100_train.csv" in text
    for dataset in EPIC:  # only the manifest's files, its ledger and the terms; the git cache is gone
        held = {p.relative_to(home / dataset.folder).as_posix() for p in (home / dataset.folder).rglob("*")
                if p.is_file()}
        assert held == {e.path for e in dataset.files} | {LEDGER, ABOUT}
        about = (home / dataset.folder / ABOUT).read_text()
        url, pinned, _ = mirrors[dataset.name]
        assert f"from {url} at commit {pinned}" in about  # where the bytes came from: the mirror
        assert dataset.citation in about and dataset.license in about
    assert sorted(p.name for p in home.iterdir()) == sorted(d.folder for d in EPIC)
    assert find_home(["epic-kitchens"], **place) == home


def test_a_commit_whose_bytes_differ_is_refused_by_name_and_nothing_is_written(mirrors, place, tmp_path):
    dataset = SETS["rulstm"]
    with pytest.raises(DataError, match=r"RULSTM/data/ek100/training.csv: stored with Git LFS"):
        fetch(["rulstm"], remotes=_remotes(mirrors, commit=2), say=lambda _: None, **place)
    assert not (tmp_path / "home" / dataset.folder / dataset.files[0].path).exists()


def test_a_changed_file_is_refused_by_name_and_fetched_again(mirrors, place, tmp_path):
    fetch(["epic-kitchens-55"], remotes=_remotes(mirrors), say=lambda _: None, **place)
    changed = tmp_path / "home" / "epic-kitchens-55-annotations" / "EPIC_descriptions.csv"
    changed.write_text("video_id,date\n")
    said = []
    fetch(["epic-kitchens-55"], remotes=_remotes(mirrors), say=said.append, **place)
    assert f"refused {changed}: sha256 differs from the manifest; fetching it again" in "\n".join(said)
    assert "1 file fetched, 3 already there" in said[-1] and _matching(tmp_path / "home", [SETS["epic-kitchens-55"]])


def test_an_interrupted_fetch_resumes_with_the_files_it_lacks(mirrors, place, tmp_path):
    dataset = SETS["epic-kitchens-100"]

    def interrupt_after_two(line):
        if line.startswith("  UDA_annotations/EPIC_100_uda_source_val.csv"):
            raise KeyboardInterrupt  # Ctrl-C as the third file is reported

    with pytest.raises(KeyboardInterrupt):
        fetch(["epic-kitchens-100"], remotes=_remotes(mirrors), say=interrupt_after_two, **place)
    folder = tmp_path / "home" / dataset.folder
    assert len(problems(tmp_path / "home", [dataset])) == len(dataset.files) - 3  # the third was in place
    (folder / ".EPIC_100_video_info.csv.tmp-99999").write_text("half")  # what a killed writer leaves
    said = []
    fetch(["epic-kitchens-100"], remotes=_remotes(mirrors), say=said.append, **place)
    assert f"{len(dataset.files) - 3} files fetched, 3 already there" in said[-1]
    assert _matching(tmp_path / "home", [dataset]) and not list(folder.glob(".*.tmp-*"))


def test_a_file_the_fetch_did_not_write_is_named_and_left_alone(mirrors, place, tmp_path):
    mine = tmp_path / "home" / "rulstm" / "RULSTM" / "data" / "ek100" / "training.csv"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own edit\n")
    with pytest.raises(DataError, match=r"training.csv: sha256 differs .* not written by egohorizon data fetch"):
        fetch(["rulstm"], remotes=_remotes(mirrors), say=lambda _: None, **place)
    assert mine.read_text() == "my own edit\n"


def test_a_second_fetch_of_the_same_set_at_once_is_refused_and_changes_nothing(mirrors, place, tmp_path):
    # issue 36: two runs into one folder at once: the second is refused (a lock), never a mixed folder
    import fcntl

    from egohorizon.owned_output import LOCK

    folder = tmp_path / "home" / SETS["rulstm"].folder
    folder.mkdir(parents=True)
    with open(folder / LOCK, "w") as held:  # what a first fetch, still writing, holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ConfigError, match="another egohorizon data fetch is writing this folder now"):
            fetch(["rulstm"], remotes=_remotes(mirrors), say=lambda _: None, **place)
        assert sorted(p.name for p in folder.iterdir()) == [LOCK]
    fetch(["rulstm"], remotes=_remotes(mirrors), say=lambda _: None, **place)  # once it is done: fine
    assert _matching(tmp_path / "home", [SETS["rulstm"]])


def test_from_dir_is_checked_the_same_way(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EGOHORIZON_DATA", str(tmp_path / "home"))
    assert main(["data", "fetch", "hd-epic", "--from", str(shared_data)]) == 0
    assert _matching(tmp_path / "home", [SETS["hd-epic"]])
    copy = tmp_path / "copy"  # laid out as the set's own repository, one file changed
    shutil.copytree(shared_data / "rulstm", copy)
    (copy / "RULSTM/data/ek100/training.csv").write_text("1,P01_01,0,10,0,0,0\n")
    assert main(["data", "fetch", "rulstm", "--from", str(copy)]) == 2
    error = capsys.readouterr().err
    assert f"{copy}/RULSTM/data/ek100/training.csv: sha256" in error and "refused, not written" in error
    assert not (tmp_path / "home" / "rulstm" / "RULSTM/data/ek100/training.csv").exists()


@pytest.mark.parametrize("kind", ["under a file", "read-only"])
def test_a_data_home_that_is_not_writable_is_named(kind, shared_data, tmp_path, monkeypatch, capsys):
    if kind == "under a file":  # no folder can be made under a file, whoever runs the test
        (tmp_path / "a-file").write_text("")
        home = tmp_path / "a-file" / "home"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder")
        home = tmp_path / "home"
        home.mkdir(mode=0o555)
    monkeypatch.setenv("EGOHORIZON_DATA", str(home))
    assert main(["data", "fetch", "rulstm", "--from", str(shared_data)]) == 2
    error = capsys.readouterr().err
    assert f"data home {home} ($EGOHORIZON_DATA) is not writable" in error
    assert "set EGOHORIZON_DATA to a folder you can write" in error


def test_the_first_home_whose_files_all_match_wins(mirrors, tmp_path):
    alias = tmp_path / "alias"
    fetch(["hd-epic"], remotes=_remotes(mirrors), say=lambda _: None,
          environ={"EGOHORIZON_DATA": str(alias)}, root=tmp_path / "repo")
    half = tmp_path / "half" / "hd-epic-annotations" / "youtube-links"
    half.mkdir(parents=True)  # one file of ten: passed over
    shutil.copy(alias / "hd-epic-annotations/youtube-links/HD_EPIC_YouTube_URLs.csv", half)
    environ = {"EGOHORIZON_DATA": str(tmp_path / "half"), "EGOHORIZON_SHARED_DATA": str(alias)}
    root = tmp_path / "repo"
    assert [h.label for h in homes(environ, root)] == [
        "$EGOHORIZON_DATA", "$EGOHORIZON_SHARED_DATA", "../shared/data", "data/sources"]
    assert find_home(["hd-epic"], environ, root) == alias
    with pytest.raises(ConfigError, match=r"no data home .*half: 9 of 10 files missing or changed.*"
                                          r"Fetch them: egohorizon data fetch hd-epic"):
        find_home(["hd-epic"], {"EGOHORIZON_DATA": str(tmp_path / "half")}, root)


def test_without_a_root_the_conversion_reads_the_data_home_or_names_the_fetch(shared_data, tmp_path, monkeypatch):
    from egohorizon.data.sources.on_first_use import ensure_converted

    monkeypatch.setenv("EGOHORIZON_CONF", str(tmp_path / "repo" / "conf"))  # a checkout with no ../shared
    monkeypatch.delenv("EGOHORIZON_SHARED_DATA", raising=False)
    monkeypatch.setenv("EGOHORIZON_DATA", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match=r"hd-epic annotation files are in no data home.*"
                                          r"egohorizon data fetch hd-epic"):
        ensure_converted(tmp_path / "hdepic", "hd-epic")
    monkeypatch.setenv("EGOHORIZON_DATA", str(shared_data))
    out = ensure_converted(tmp_path / "hdepic", "hd-epic")
    assert (out / "events.jsonl").is_file() and str(shared_data / "hd-epic-annotations") in (
        out / "metadata.json").read_text()


def test_the_cli_takes_a_mirror_for_one_set(mirrors, tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.setenv("EGOHORIZON_CONF", str(tmp_path / "repo" / "conf"))  # a checkout with no ../shared
    monkeypatch.delenv("EGOHORIZON_SHARED_DATA", raising=False)
    monkeypatch.setenv("EGOHORIZON_DATA", str(tmp_path / "home"))
    url, pinned, _ = mirrors["rulstm"]
    caplog.set_level("INFO")  # the terms are logged (stderr); the data home is the JSON result
    assert main(["data", "fetch", "rulstm", "--url", url, "--commit", pinned]) == 0
    out = capsys.readouterr().out
    assert f"rulstm: {url} @ {pinned[:7]}" in caplog.text and json.loads(out) == {"data_home": str(tmp_path / "home")}
    assert _matching(tmp_path / "home", [SETS["rulstm"]])
    assert main(["data", "fetch", "epic-kitchens", "--url", url]) == 2
    assert "--url and --commit take exactly one set" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["data", "fetch", "rulstm", "--commit", pinned[:7]])
    assert exit_info.value.code == 2 and "expected a full 40-character commit hash" in capsys.readouterr().err


def test_the_cli_offers_the_manifest_names():
    assert CLI_NAMES == NAMES
