"""Issue 36, item 4: eval.py ckpt=RUN checks the run's split.json against what the run trained on (the
split its datamodule saved, points/splits.json, and the digest recorded with the days): an edited record
that swaps a training day into the test days is refused naming the day, never scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forecast_toy_world import toy_events, write_toy_events
from omegaconf import OmegaConf
from test_split_record import SEED0_TEST_SEED1_TRAIN, compose_conf, data_overrides

from egohorizon.data.splits import make_day_split
from egohorizon.errors import DataError
from egohorizon.run.split_record import read_run_split, split_digest

PARTICIPANT, DAY = SEED0_TEST_SEED1_TRAIN  # a training day of the seed-1 run


def _run(tmp_path: Path, events: Path) -> Path:
    """A seed-1 run folder as train.py leaves it: config.yaml, checkpoints/ and split.json with its digest."""
    split = make_day_split(toy_events(), seed=1)
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    cfg = compose_conf("train", [*data_overrides(events, tmp_path, "run"), "experiment=forecast_l3", "seed=1",
                                 "logger=csv"])
    (run / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    record = split.to_dict() | {"run": {"task": "forecast", "seed": 1, "split_sha256": split_digest(split)}}
    (run / "split.json").write_text(json.dumps(record))
    return run


def _swap_into_test(run: Path) -> None:
    record = json.loads((run / "split.json").read_text())
    days = record["participants"][PARTICIPANT]
    days["train"].remove(DAY)
    days["test"].append(DAY)
    (run / "split.json").write_text(json.dumps(record))


@pytest.fixture()
def run(tmp_path):
    return _run(tmp_path, write_toy_events(tmp_path))


def test_an_untouched_record_is_read(run):
    assert read_run_split(run).split.get(PARTICIPANT, DAY) == "train"


def test_an_edited_record_disagrees_with_its_digest_and_names_the_day(run):
    _swap_into_test(run)
    with pytest.raises(DataError) as error:
        read_run_split(run)
    message = str(error.value)
    assert "split.json: its days no longer match the digest recorded with them" in message
    assert f"{PARTICIPANT}/{DAY} train -> test" in message  # from the split rebuilt with the run's config


def test_an_edited_record_disagrees_with_the_datamodules_saved_split(run):
    saved = make_day_split(toy_events(), seed=1)
    (run / "points").mkdir()
    saved.save(run / "points" / "splits.json")
    _swap_into_test(run)
    record = json.loads((run / "split.json").read_text())
    del record["run"]  # even with the digest gone, the datamodule's own split disagrees
    (run / "split.json").write_text(json.dumps(record))
    with pytest.raises(DataError, match=rf"disagrees with .*points/splits\.json.*{PARTICIPANT}/{DAY} train -> test"):
        read_run_split(run)


def test_eval_refuses_the_edited_run_and_leaves_no_folder(run, tmp_path, capsys):
    from egohorizon.run import evaluate
    from egohorizon.run.run_guard import run_or_exit

    _swap_into_test(run)
    events = OmegaConf.load(run / "config.yaml").data.events  # the toy world the run trained on
    cfg = compose_conf("eval", [*data_overrides(events, tmp_path, "eval"), f"ckpt={run}",
                                "predictors=[repeat_last,random]", "embedder=exact"])
    with pytest.raises(SystemExit) as exit_info:
        run_or_exit(evaluate, cfg)
    assert exit_info.value.code == 2
    assert f"{PARTICIPANT}/{DAY} train -> test" in capsys.readouterr().err
    assert not (tmp_path / "eval").exists() and not (tmp_path / "eval" / "report.json").exists()
