"""Issue 36: ``train.py paths.run_dir=DIR`` / ``eval.py paths.run_dir=DIR`` into a folder that is no run's (a
user's folder, the current folder, another command's output) is refused with exit 2 before Hydra writes
``.hydra/`` there; a run folder (marked by setup_run, or one from before markers) is a rerun or a resume."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from egohorizon.owned_output import describe_inputs, write_marker
from egohorizon.run.run_guard import RUN_COMMAND, refuse_foreign_run_dir


def _entry(script: str, *overrides: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO_ROOT / script), *overrides], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("script", ["train.py", "eval.py"])
def test_a_users_folder_as_the_run_folder_is_refused_before_hydra_writes_there(script, tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    done = _entry(script, f"paths.run_dir={user}", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"paths.run_dir={user}: a folder that train.py / eval.py did not write" in done.stderr
    assert sorted(p.name for p in user.iterdir()) == ["notes.txt"]  # no .hydra/, no log
    assert not (tmp_path / "outputs").exists()


def test_the_current_folder_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as caught:
        refuse_foreign_run_dir(["train.py", "paths.run_dir=."])
    assert caught.value.code == 2 and "paths.run_dir=.: is the current folder" in capsys.readouterr().err


def test_run_folders_pass_and_other_commands_outputs_do_not(tmp_path, capsys):
    new, empty, legacy, marked, bench = (tmp_path / n for n in ("new", "empty", "legacy", "marked", "bench"))
    for folder in (empty, legacy, marked, bench):
        folder.mkdir()
    (legacy / "config.yaml").write_text("seed: 0\n")
    write_marker(marked, RUN_COMMAND, describe_inputs({}))
    (marked / "metrics.json").write_text("{}")
    for folder in (new, empty, legacy, marked):
        refuse_foreign_run_dir(["train.py", f"paths.run_dir={folder}", f"hydra.run.dir={folder}"])
    write_marker(bench, "bench run", describe_inputs({}))
    (bench / "items.jsonl").write_text("")
    with pytest.raises(SystemExit):
        refuse_foreign_run_dir(["eval.py", f"paths.run_dir={bench}"])
    assert "written by egohorizon bench run, not a run folder" in capsys.readouterr().err
