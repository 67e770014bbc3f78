"""train.py / eval.py settings are checked before any run folder, logger or model exists (issue 22, items
11, 13, 23): a wrong number ends with ``error: <key> must be ..., got <value>`` and exit code 2, no
traceback; Hydra's files follow ``paths.run_dir``; a run that failed before its work leaves no folder."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO_ROOT
from hydra import compose, initialize_config_dir
from toy_backbone import TOY_BACKBONE

from egohorizon.errors import ConfigError
from egohorizon.run import train
from egohorizon.run.config_checks import validate_config
from egohorizon.run.run_guard import FAILED, follow_run_dir, run_or_exit


def _entry(script: str, *overrides: str, cwd) -> subprocess.CompletedProcess:
    """The entry point as a user runs it, from ``cwd`` (so Hydra's default outputs/ would land there)."""
    return subprocess.run([sys.executable, str(REPO_ROOT / script), *overrides], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


def _compose(name: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose(name, overrides=overrides)


def test_a_zero_batch_size_ends_before_any_run_folder_or_logger(tmp_path):
    run = tmp_path / "run"
    done = _entry("train.py", "data.batch_size=0", f"paths.run_dir={run}", "logger=default", *TOY_BACKBONE,
                  cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "error: data.batch_size must be >= 1, got 0"
    assert "Traceback" not in done.stderr and "wandb" not in (done.stdout + done.stderr).lower()
    assert not run.exists() and not (tmp_path / "outputs").exists()  # no run folder, no Hydra folder


def test_a_non_number_names_its_key_value_and_type(tmp_path):
    done = _entry("train.py", "trainer.max_steps=abc", *TOY_BACKBONE, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "error: trainer.max_steps must be an integer (>= 1 or -1 for no limit), got 'abc' (a string)" in done.stderr
    assert not (tmp_path / "outputs").exists()  # Hydra's default folder is removed too


def test_eval_checks_its_settings_the_same_way(tmp_path):
    done = _entry("eval.py", "n_random_draws=0", "+sweep=levels", "sweep.levels=[3,6]", f"paths.run_dir={tmp_path / 'e'}",
                  cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "error: 2 settings are wrong:" in done.stderr
    assert "n_random_draws must be >= 1, got 0" in done.stderr
    assert "sweep.levels[1] must be >= 1 and <= 5, got 6" in done.stderr
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize(
    "override, message",
    [
        ("data.eval_batch_size=-3", "data.eval_batch_size must be >= 1, got -3"),
        ("data.batch_size=2.5", "data.batch_size must be an integer (>= 1), got 2.5 (a float)"),
        ("trainer.max_epochs=0", "trainer.max_epochs must be >= 1 or -1 for no limit or null for unset, got 0"),
        ("model.optimizer.lr=0", "model.optimizer.lr must be > 0, got 0"),
        ("model.optimizer.lr=fast", "model.optimizer.lr must be a number (> 0), got 'fast' (a string)"),
        ("data.ks=[1,0]", "data.ks[1] must be >= 1, got 0"),
        ("data.levels=3", "data.levels must be a list ([1, 2]), got 3 (an integer)"),
        ("data.n_context=true", "data.n_context must be an integer (>= 1), got True (a boolean)"),
        ("trainer.accumulate_grad_batches=0", "trainer.accumulate_grad_batches must be >= 1, got 0"),
    ],
)
def test_each_bad_setting_is_named(override, message, tmp_path):
    with pytest.raises(ConfigError) as caught:
        validate_config(_compose("train", [override, f"paths.run_dir={tmp_path}"]))
    assert str(caught.value) == message


def test_the_special_values_lightning_reads_pass(tmp_path):
    validate_config(_compose("train", ["trainer.max_steps=-1", "trainer.max_epochs=-1", "data.max_train_points=null",
                                       "trainer.num_sanity_val_steps=-1", f"paths.run_dir={tmp_path}"]))


def test_hydra_files_follow_paths_run_dir(tmp_path):
    run = tmp_path / "elsewhere"
    done = _entry("train.py", f"paths.run_dir={run}", "--cfg", "hydra", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"dir: {run}" in done.stdout.split("sweep:")[0]  # hydra.run.dir, where .hydra/ and train.log go
    assert follow_run_dir(["train.py", "paths.run_dir=D", "--cfg", "job"]) == [
        "train.py", "paths.run_dir=D", "hydra.run.dir=D", "--cfg", "job"]
    for argv in (["train.py", "-m", "paths.run_dir=D"], ["train.py", "paths.run_dir=D", "hydra.run.dir=E"], ["x"]):
        assert follow_run_dir(argv) == argv  # a multirun's jobs have their own folders; a set one is kept


def _missing_events(run) -> list[str]:
    """Settings that pass the checks and fail in the datamodule, after the run folder was started."""
    return ["data=forecast_events", f"data.events={run.parent / 'missing.jsonl'}", f"paths.run_dir={run}",
            "logger=csv", *TOY_BACKBONE]


def test_a_run_failing_at_its_data_leaves_no_folder(tmp_path, capsys):
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as caught:
        run_or_exit(train, _compose("train", _missing_events(run)))
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "missing.jsonl" in err
    assert not run.exists()  # only the resolved config was written: no run-like folder remains


def test_a_started_folder_with_earlier_work_is_marked_failed(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)  # a requeued run's folder
    with pytest.raises(SystemExit):
        run_or_exit(train, _compose("train", _missing_events(run)))
    assert (run / "checkpoints").is_dir()
    assert (run / FAILED).read_text().startswith(("DataError: ", "ConfigError: "))
    assert "missing.jsonl" in (run / FAILED).read_text()


def test_a_rejected_setting_leaves_an_earlier_run_as_it_was(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text("{}")
    with pytest.raises(SystemExit):
        run_or_exit(train, _compose("train", [*_missing_events(run), "data.batch_size=0"]))
    assert sorted(p.name for p in run.iterdir()) == ["metrics.json"]  # no FAILED: this run never started there


def test_every_rank_may_clean_the_same_failed_folder(tmp_path):
    """Under srun every rank fails at once; the second to clean finds the folder gone and says nothing."""
    from egohorizon.run.run_guard import discard_or_mark_failed

    run = tmp_path / "outputs" / "train" / "runs" / "t0"
    (run / ".hydra").mkdir(parents=True)
    (run / "train.log").write_text("")
    for _rank in range(2):
        discard_or_mark_failed(run, ConfigError("x"), tmp_path / "outputs")
    assert not (tmp_path / "outputs").exists() and tmp_path.exists()


def test_an_events_file_of_defective_records_ends_in_its_message(tmp_path, capsys):
    """Bad-input pass: data.events=boxes.csv ended in a RecordError traceback (it is no EgohorizonError)
    and left the run folder."""
    run = tmp_path / "run"
    boxes = tmp_path / "boxes.csv"
    boxes.write_text("filename,xmin,ymin,xmax,ymax\na.jpg,1,2,3,4\nb.jpg,1,2,3,4\n")
    overrides = [o for o in _missing_events(run) if not o.startswith("data.events=")] + [f"data.events={boxes}"]
    with pytest.raises(SystemExit) as caught:
        run_or_exit(train, _compose("train", overrides))
    assert caught.value.code == 2 and not run.exists()
    assert f"{boxes}: a CSV file (header: filename,xmin,ymin,xmax,ymax), not JSON Lines" in capsys.readouterr().err


def test_a_config_error_raised_while_hydra_builds_a_target_is_the_users(tmp_path, capsys):
    """Bad-input pass: eval.py split=bogus ended in Hydra's "Error in call to target
    'datamodules.forecast.ForecastDataModule': ConfigError(...)" with exit 1."""
    run = tmp_path / "run"
    overrides = [*_missing_events(run), "+data.eval_split=bogus"]
    with pytest.raises(SystemExit) as caught:
        run_or_exit(train, _compose("train", overrides))
    assert caught.value.code == 2 and not run.exists()
    err = capsys.readouterr().err
    assert err == "error: split: expected 'val' or 'test', got 'bogus'\n"


def test_the_data_bounds_are_the_configured_datamodules_own(tmp_path):
    """Issue 39 §3: each datamodule declares its bounds (SETTING_BOUNDS); config_checks reads the configured
    class's, so a key is held to the bound of the datamodule that takes it."""
    from egohorizon.run.config_checks import datamodule_bounds

    forecast = {b.key for b in datamodule_bounds(_compose("train", [f"paths.run_dir={tmp_path}"]))}
    assert {"data.batch_size", "data.ks", "data.levels"} <= forecast and "data.fps" not in forecast
    hands = {b.key for b in datamodule_bounds(_compose("train", ["task=hands", f"paths.run_dir={tmp_path}"]))}
    assert "data.fps" in hands and "data.ks" not in hands
    with pytest.raises(ConfigError) as caught:
        validate_config(_compose("train", ["task=hands", "data.fps=0", f"paths.run_dir={tmp_path}"]))
    assert str(caught.value) == "data.fps must be > 0, got 0"
