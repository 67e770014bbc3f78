"""A run is scored on its own held-out days (issue 22, items 1-2): the run records its day split
(``split.json``), eval.py uses it whatever seed it is given and refuses points on the run's training
days, and compare refuses runs whose held-out days differ or scores them on the shared ones."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from forecast_toy_world import toy_events, write_toy_events
from hydra import compose, initialize_config_dir
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from egohorizon.data.points.build import build_points
from egohorizon.data.splits import DaySplit, make_day_split
from egohorizon.errors import DataError
from egohorizon.run.split_record import (
    RunSplit,
    check_held_out,
    check_same_held_out,
    days_of_item,
    intersect_split,
    read_run_split,
)
from egohorizon.schema import write_jsonl

# Seed 0 holds p2/2024-03-07 out as a test day; seed 1 trains on it.
SEED0_TEST_SEED1_TRAIN = ("p2", "2024-03-07")


def compose_conf(name: str, overrides: list[str]):
    from conftest import REPO_ROOT

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose(name, overrides=overrides)


def data_overrides(events: Path, tmp_path: Path, run: str) -> list[str]:
    return ["data=forecast_events", f"data.events={events}", "data.n_context=4", "data.max_eval_points=3",
            "data.num_workers=0", f"paths.run_dir={tmp_path}/{run}", f"paths.cache_dir={tmp_path}/cache"]


def fake_run(folder: Path, split: DaySplit) -> Path:
    """A run folder as train.py leaves it, as far as eval reads it: checkpoints/ and split.json."""
    (folder / "checkpoints").mkdir(parents=True)
    split.save(folder / "split.json")
    return folder


@pytest.fixture()
def world(tmp_path):
    events = write_toy_events(tmp_path)
    split1 = make_day_split(toy_events(), seed=1)
    assert split1.get(*SEED0_TEST_SEED1_TRAIN) == "train"
    assert make_day_split(toy_events(), seed=0).get(*SEED0_TEST_SEED1_TRAIN) == "test"
    return events, split1


def test_eval_of_a_seed_1_run_uses_its_test_days_not_eval_seeds(world, tmp_path):
    """eval.py seed=0 ckpt=<a seed-1 run>: the points come from the run's test days (before: seed 0's,
    some of them the run's training days)."""
    from egohorizon.run.eval_build import build_eval_datamodule
    from egohorizon.run.eval_target import resolve_eval_target
    from egohorizon.run.evaluation import evaluate_run

    events, split1 = world
    run = fake_run(tmp_path / "run", split1)
    cfg = compose_conf("eval", [*data_overrides(events, tmp_path, "eval"), f"ckpt={run}", "seed=0",
                                "predictors=[repeat_last,random]", "embedder=exact"])
    Path(cfg.paths.run_dir).mkdir(parents=True)
    points = build_eval_datamodule(cfg, resolve_eval_target(cfg))[0].points["test"]
    assert points
    days = set().union(*(days_of_item(p) for p in points))
    assert days <= split1.days_in("test"), days - split1.days_in("test")
    result = evaluate_run(cfg)
    report = json.loads((tmp_path / "eval" / "report.json").read_text())
    assert report["held_out_checked"] == [{"run": str(run), "split": str(run / "split.json"),
                                           "split_sha256": result["held_out_checked"][0]["split_sha256"]}]
    assert DaySplit.load(tmp_path / "eval" / "evaluated_split.json").days == split1.days


def test_eval_refuses_a_points_file_on_the_runs_training_days(world, tmp_path):
    from egohorizon.run.evaluation import evaluate_run

    events, split1 = world
    run = fake_run(tmp_path / "run", split1)
    seed0 = build_points(toy_events(), make_day_split(toy_events(), seed=0), levels=[3], ks=[1], n_context=4)
    points_file = tmp_path / "seed0_test.jsonl"
    write_jsonl(points_file, seed0["test"])
    cfg = compose_conf("eval", [*data_overrides(events, tmp_path, "eval"), f"ckpt={run}", f"points={points_file}",
                                "predictors=[repeat_last,random]", "embedder=exact"])
    with pytest.raises(DataError) as error:
        evaluate_run(cfg)
    message = str(error.value)
    assert f"points={points_file}" in message and str(run) in message
    assert "p2/2024-03-07" in message and "training day(s)" in message
    # The run's own test points pass.
    own = build_points(toy_events(), split1, levels=[3], ks=[1], n_context=4)["test"]
    write_jsonl(points_file, own)
    assert evaluate_run(cfg)["n_points"] == len(own)


def test_a_run_without_a_record_has_its_split_rebuilt_from_its_config(world, tmp_path, caplog):
    """An older run (config.yaml, no split.json, no points/splits.json): its split is rebuilt with its
    own seed, and a warning says so."""
    events, split1 = world
    run = tmp_path / "old"
    cfg = compose_conf("train", [*data_overrides(events, tmp_path, "old"), "experiment=forecast_l3", "seed=1",
                                 "logger=csv"])
    run.mkdir()
    (run / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    with caplog.at_level(logging.WARNING, logger="egohorizon.run.split_record"):
        found = read_run_split(run)
    assert found.split.days == split1.days and found.seed == 1
    assert "rebuilt from its config.yaml" in caplog.text and "seed 1" in caplog.text
    assert not (run / "points").exists()  # nothing written into the old run's folder


def test_a_training_datamodule_writes_its_split_with_inputs(world, tmp_path):
    from egohorizon.run.setup import build_datamodule, record_split

    events, split1 = world
    cfg = compose_conf("train", [*data_overrides(events, tmp_path, "run"), "experiment=forecast_l3", "seed=1",
                                 "logger=csv"])
    run = Path(cfg.paths.run_dir)
    run.mkdir()
    datamodule = build_datamodule(cfg)
    record_split(cfg, datamodule, run)
    record = json.loads((run / "split.json").read_text())
    assert record["run"]["seed"] == 1 and record["run"]["task"] == "forecast"
    assert record["run"]["inputs"]["data.events"]["path"] == str(events)
    assert len(record["run"]["inputs"]["data.events"]["sha256"][events.name]) == 64
    assert "data.save_points_to" not in record["run"]["inputs"]  # the run's own output, not an input
    assert read_run_split(run).split.days == split1.days


def test_a_broken_record_is_named(tmp_path):
    (tmp_path / "split.json").write_text("{nope")
    with pytest.raises(DataError, match=r"split.json: not a JSON split record"):
        read_run_split(tmp_path)


# -- compare -----------------------------------------------------------------------------------------

def run_split(name: str, days: dict[str, dict[str, str]]) -> RunSplit:
    return RunSplit(Path(name), DaySplit(days=days), name)


def test_compare_refuses_runs_with_different_held_out_days_naming_them():
    a = run_split("runA", {"p": {"d1": "train", "d2": "test", "d3": "test"}})
    b = run_split("runB", {"p": {"d1": "test", "d2": "train", "d3": "test"}})
    with pytest.raises(DataError) as error:
        check_same_held_out([a, b], "test", ["runA", "runB"])
    message = str(error.value)
    assert "1 test day(s) of runA are training days of runB (p/d2)" in message
    assert "1 test day(s) of runB are training days of runA (p/d1)" in message
    assert "--intersect-held-out" in message and "1 test day(s) all runs hold out" in message
    split, shared = intersect_split([a, b], "test")
    assert shared == {("p", "d3")}
    assert split.days == {"p": {"d1": "train", "d2": "val", "d3": "test"}}


days_st = st.lists(st.sampled_from(["train", "val", "test"]), min_size=6, max_size=6)


@settings(max_examples=60, deadline=None)
@given(first=days_st, second=days_st, point_days=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=3),
                                                          min_size=1, max_size=12))
def test_property_no_scored_point_is_on_a_training_day_of_any_compared_run(first, second, point_days, tmp_path_factory):
    """For random run pairs (random day splits) and random points on the first run's days: compare's
    plan either refuses, or every point it keeps passes eval's check and none is on a training day of
    either run; and eval's check refuses any point set that touches one."""
    from egohorizon.run.comparison_eval import plan_held_out
    from egohorizon.schema import ForecastPoint

    out = tmp_path_factory.mktemp("prop")
    splits = []
    for i, labels in enumerate((first, second)):
        split = DaySplit(days={"p": {f"d{j}": s for j, s in enumerate(labels)}})
        splits.append(fake_run(out / f"run{i}", split))
    points = [ForecastPoint(id=f"x{i}", source="s", participant="p", level=1, k=len(ds), t0=float(i),
                            context=[], targets=["a"] * len(ds), windows=[[0, 1]] * len(ds), day=f"d{ds[0]}",
                            meta={"target_days": [f"d{d}" for d in ds]}) for i, ds in enumerate(point_days)]
    points_file = out / "points.jsonl"
    write_jsonl(points_file, points)
    runs = [read_run_split(r) for r in splits]
    train_days = runs[0].days("train") | runs[1].days("train")
    item_days = {p.id: days_of_item(p) for p in points}
    touches = any(days & train_days for days in item_days.values())
    if touches:
        with pytest.raises(DataError, match="training day"):
            check_held_out(item_days, runs, "eval")
    else:
        check_held_out(item_days, runs, "eval")
    try:
        plan = plan_held_out([str(r) for r in splits], points_file, out / "cmp", intersect=True)
    except DataError as error:  # no shared test day, or no point on one
        assert "share no test day" in str(error) or "none of the" in str(error)
        return
    from egohorizon.schema import load_jsonl

    kept = load_jsonl(plan.points, ForecastPoint)
    differ = runs[0].days("test") != runs[1].days("test")
    kept_days = {p.id: days_of_item(p) for p in kept}
    if differ:  # cut to the shared test days: every kept point passes eval's check
        assert all(days <= runs[0].days("test") & runs[1].days("test") for days in kept_days.values())
    try:
        check_held_out(kept_days, runs, "compare")  # what each evaluation runs before scoring
    except DataError:
        assert not differ and any(days & train_days for days in kept_days.values())
        return
    for point in kept:  # what gets scored
        assert not days_of_item(point) & train_days, point.id
    if differ:
        with pytest.raises(DataError, match="hold out different test days"):
            plan_held_out([str(r) for r in splits], points_file, out / "cmp2")


def test_compare_command_refuses_then_intersects(world, tmp_path, monkeypatch, capsys):
    """`egohorizon compare RUN_SEED0 RUN_SEED1`: exit 2 naming the leaked days; with
    --intersect-held-out every checkpoint is scored only on the shared test days and the page says so."""
    from egohorizon.cli import main
    from egohorizon.run import comparison_eval as compare_eval
    from egohorizon.run.comparison import CompareEntry
    from egohorizon.schema import ForecastPoint, load_jsonl

    events, split1 = world
    split0 = make_day_split(toy_events(), seed=0)
    runs = []
    for name, split in (("run0", split0), ("run1", split1)):
        run = fake_run(tmp_path / name, split)
        (run / "checkpoints" / "last.adapter").mkdir()
        (run / "checkpoints" / "last.adapter" / "adapter_config.json").write_text("{}")
        (run / "config.yaml").write_text(f"eval_task: forecast\ndata:\n  _target_: datamodules.forecast."
                                         f"ForecastDataModule\n  events: {events}\n")
        runs.append(run)
    points = build_points(toy_events(), split0, levels=[3], ks=[1, 10], n_context=4)["test"]
    write_jsonl(runs[0] / "points" / "points_test.jsonl", points)

    code = main(["compare", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "refused"), "--no-wandb"])
    err = capsys.readouterr().err
    assert code == 2 and "hold out different test days" in err and "p2/2024-03-07" in err
    assert "training days of" in err and "--intersect-held-out" in err
    assert not (tmp_path / "refused" / "evals").exists()

    scored = []

    def fake_evaluate(adapter, points_file, run_dir, overrides, task, data, guard):
        kept = load_jsonl(points_file, ForecastPoint)
        scored.append((kept, guard))
        return {"evaluation": object()}

    monkeypatch.setattr(compare_eval, "evaluate_checkpoint", fake_evaluate)
    monkeypatch.setattr(compare_eval, "entry_from_evaluation",
                        lambda label, path, step, task, evaluation, eval_dir: CompareEntry(
                            label, path, step, "forecast", rows=[], item_ids=["same"]))
    monkeypatch.setattr(compare_eval, "global_step_of", lambda adapter: 1)
    from egohorizon.run import comparison as compare

    monkeypatch.setattr(compare, "plot_comparison", lambda rows, task, out: [])
    out = tmp_path / "shared"
    assert main(["compare", str(runs[0]), str(runs[1]), "--out", str(out), "--no-wandb",
                 "--intersect-held-out"]) == 0
    shared = split0.days_in("test") & split1.days_in("test")
    assert len(scored) == 2 and shared
    for kept, guard in scored:
        assert kept and all(days_of_item(p) <= shared for p in kept)
        assert [g["run"] for g in guard] == [str(r) for r in runs]
    expected = [p for p in points if days_of_item(p) <= shared]
    assert len(scored[0][0]) == len(expected)
    page = (out / "index.html").read_text()
    assert "intersection of the runs&#x27; held-out test days" in page or "intersection of the runs' held-out test days" in page
    assert f"{len(expected)} of the {len(points)} points" in page
    info = json.loads((out / "comparison.json").read_text())["held_out"]
    assert info["points_kept"] == len(expected) and info["points_total"] == len(points)
    assert info["intersect_days"] == sorted(f"{p}/{d}" for p, d in shared)


# -- every task's datamodule says its split and its items' days ---------------------------------------

def test_hands_datamodule_gives_its_folder_split_and_each_clips_day(tmp_path):
    from datamodules.hands import HandsDataModule
    from egohorizon.data.demo.hands.clips import build_hand_clips

    build_hand_clips(tmp_path, days=3, clips_per_day=2, val_days=1, test_days=1)
    data = HandsDataModule(clips_dir=str(tmp_path), fps=2.0, mediapipe_baseline=False)
    data.prepare()
    split = data.day_split()
    assert split.days == DaySplit.load(tmp_path / "split.json").days
    days = data.item_days("test")
    assert len(days) == 2 and all(len(d) == 1 and next(iter(d)) in split.days_in("test") for d in days.values())


def test_qa_datamodule_gives_the_split_saved_beside_its_items(tmp_path):
    from datamodules.qa import QADataModule

    items = tmp_path / "qa.jsonl"
    items.write_text("")
    split = DaySplit(days={"p": {"d1": "train", "d2": "test"}})
    split.save(tmp_path / "qa.splits.json")
    assert QADataModule(items=str(items)).day_split().days == split.days


def test_abstract_datamodule_takes_the_runs_split_file(tmp_path):
    from datamodules.abstract import AbstractDataModule
    from egohorizon.data.demo import ensure_demo_world

    demo = str(ensure_demo_world(tmp_path / "demo", participants=1, weeks=1))
    drawn = AbstractDataModule(events=demo, seed=0, levels=[4], train_stride=100, eval_stride=100)
    drawn.prepare()
    flipped = {p: {d: ("train" if s == "test" else s) for d, s in by_day.items()} for p, by_day in drawn.split.days.items()}
    DaySplit(days=flipped).save(tmp_path / "split.json")
    given = AbstractDataModule(events=demo, seed=0, levels=[4], train_stride=100, eval_stride=100,
                               split_file=str(tmp_path / "split.json"))
    given.prepare()
    assert given.day_split().days == flipped and not given.item_days("test")


def test_eval_on_other_data_than_the_run_trained_on_names_the_runs_data(world, tmp_path):
    from egohorizon.run.evaluation import evaluate_run

    events, _ = world
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    record = {**DaySplit(days={"zz": {"2020-01-01": "train", "2020-01-02": "test"}}).to_dict(),
              "run": {"seed": 0, "inputs": {"data.events": {"path": "/data/other/events.jsonl", "sha256": {}}}}}
    (run / "split.json").write_text(json.dumps(record))
    cfg = compose_conf("eval", [*data_overrides(events, tmp_path, "eval"), f"ckpt={run}",
                                "predictors=[repeat_last,random]", "embedder=exact"])
    with pytest.raises(DataError, match=r"run's own day split .*split.json\), which does not fit these data: .*"
                                        r"Evaluate with the data the run trained on \(data.events=/data/other"):
        evaluate_run(cfg)


def test_compare_with_points_on_a_runs_training_days_is_refused_by_the_evaluation(world, tmp_path, capsys):
    """`egohorizon compare RUN --points FILE`: each evaluation checks the points against the run's
    training days (once per run), before any model is built."""
    from egohorizon.cli import main

    events, split1 = world
    run = fake_run(tmp_path / "run1", split1)
    adapter = run / "checkpoints" / "last.adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "egohorizon_adapter.json").write_text(json.dumps({"prompt": {"name": "forecast"}}))
    (run / "config.yaml").write_text(f"eval_task: forecast\ndata:\n  _target_: datamodules.forecast.ForecastDataModule\n"
                                     f"  events: {events}\n  n_context: 4\n  num_workers: 0\n")
    seed0 = build_points(toy_events(), make_day_split(toy_events(), seed=0), levels=[3], ks=[1], n_context=4)["test"]
    points_file = tmp_path / "seed0.jsonl"
    write_jsonl(points_file, seed0)
    code = main(["compare", str(run), "--points", str(points_file), "--out", str(tmp_path / "out"), "--no-wandb"])
    err = capsys.readouterr().err
    assert code == 2 and f"points={points_file}" in err and "p2/2024-03-07" in err
    assert err.count("training day(s) of the run") == 1
