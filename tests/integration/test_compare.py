"""Checkpoint comparison: the table, plots, JSON and HTML built from real scored reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from compare_checks import assert_png_drawn, assert_table_matches, wandb_table

from egohorizon.errors import ConfigError, DataError
from egohorizon.run.comparison import (
    CompareEntry,
    checkpoint_labels,
    comparison_figure,
    comparison_rows,
    entry_from_evaluation,
    page_title,
    plot_comparison,
    write_html,
    write_json,
)
from egohorizon.schema import ForecastPoint
from egohorizon.tasks import Task
from egohorizon.tasks.forecast import RANDOM, REPEAT_LAST, ForecastTask

ACTIONS = ["make coffee", "read mail", "wash dishes", "walk dog", "cook lunch", "call mum"]
TASK = ForecastTask()


def point(i: int, k: int, targets: list[str]) -> ForecastPoint:
    context = [{"start": 10.0 * j, "end": 10.0 * j + 5, "text": ACTIONS[(i + j) % len(ACTIONS)]} for j in range(3)]
    return ForecastPoint(id=f"p{i}", source="demo", participant="P1", level=3, k=k, t0=100.0 + i,
                         context=context, targets=targets, windows=[[200.0, 210.0]] * k)


@pytest.fixture(scope="module")
def evaluations():
    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.tasks.forecast import evaluate

    points = [point(0, 1, ["make coffee"]), point(1, 1, ["read mail"]),
              point(2, 2, ["wash dishes", "walk dog"]), point(3, 2, ["cook lunch", "call mum"])]
    perfect = {p.id: [list(p.targets)] for p in points}
    # Wrong everywhere except p0; p3 produced nothing parseable (invalid).
    poor = {"p0": [["make coffee"]], "p1": [["walk dog"]], "p2": [["call mum", "read mail"]], "p3": None}
    embedder = get_embedder("exact")
    return {label: evaluate(points, candidates, embedder, "test", n_random_draws=5, seed=0)
            for label, candidates in (("run-a/last", perfect), ("run-b/last", poor))}


@pytest.fixture(scope="module")
def entries(evaluations):
    return [entry_from_evaluation(label, f"/runs/{label}", step, TASK, evaluations[label])
            for label, step in (("run-a/last", 40), ("run-b/last", 20))]


def test_rows_hold_each_checkpoint_and_both_baselines(entries):
    rows = comparison_rows(entries)
    by = {(r["checkpoint"], r["level"], r["k"]): r for r in rows}
    # Exact embedder: a matching action costs 0, any other 1 (hand-computed S per point).
    assert by[("run-a/last", "all", "all")]["S"] == pytest.approx(1.0)
    assert by[("run-a/last", "all", "all")]["S_norm"] == pytest.approx(1.0)
    # run-b: p0 1.0, p1 0.0, p2 0.0 (two substitutions), p3 invalid 0.0 -> mean 0.25 overall.
    assert by[("run-b/last", "all", "all")]["S"] == pytest.approx(0.25)
    assert by[("run-b/last", "all", "all")]["invalid"] == 1
    assert by[("run-b/last", 3, 1)]["S"] == pytest.approx(0.5)
    assert by[("run-b/last", 3, 2)]["S"] == pytest.approx(0.0)
    assert by[("run-b/last", 3, 1)]["step"] == 20
    # The random baseline's S is the report's S_rand, and its S_norm is 0 by definition.
    random_k1 = by[(RANDOM, 3, 1)]
    assert random_k1["S"] == pytest.approx(by[("run-a/last", 3, 1)]["S_rand"])
    assert random_k1["S_norm"] == 0.0 and random_k1["baseline"]
    assert (REPEAT_LAST, 3, 2) in by and by[(REPEAT_LAST, 3, 2)]["n"] == 2
    assert not by[("run-a/last", 3, 2)]["baseline"]


def test_checkpoints_scored_on_different_points_are_refused(entries):
    other = CompareEntry(label="x", path="x", global_step=1, task="forecast", rows=entries[1].rows,
                         item_ids=entries[1].item_ids[:2])
    with pytest.raises(DataError, match="scored on 2 items"):
        comparison_rows([entries[0], other])


def test_checkpoints_of_different_tasks_are_refused(entries):
    other = CompareEntry(label="cap", path="cap", global_step=1, task="caption", rows=[],
                         item_ids=entries[0].item_ids)
    with pytest.raises(DataError, match=r"different tasks \(run-a/last \(forecast\), cap \(caption\)\)"):
        comparison_rows([entries[0], other])


def test_files_plots_and_page(entries, tmp_path):
    rows = comparison_rows(entries)
    plots = plot_comparison(rows, TASK, tmp_path)
    assert [p.name for p in plots] == ["S_norm.png", "S.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots)
    page = write_html(rows, TASK, plots, tmp_path, "Compare").read_text()
    assert '<img src="S_norm.png"' in page and "run-b/last" in page and "How to read this" in page
    # The page explains S_norm itself: its reader has no SPEC.md.
    assert "SPEC" not in page and "S_norm = (S \u2212 S_rand) / (1 \u2212 S_rand)" in page
    assert "<th>level</th><th>k</th><th>n</th><th>S</th>" in page
    data = json.loads(write_json(entries, rows, tmp_path).read_text())
    assert data["task"] == "forecast"
    assert [c["label"] for c in data["checkpoints"]] == ["run-a/last", "run-b/last"]
    assert len(data["rows"]) == len(rows)


def test_wandb_names_groups_by_level_and_k(entries):
    from egohorizon.run.comparison import group_names

    rows = comparison_rows(entries)
    assert group_names(rows, TASK) == {("demo", 3, 1): "L3_K1", ("demo", 3, 2): "L3_K2"}
    two_sources = rows + [{**r, "source": "epic"} for r in rows if r["level"] != "all"]
    assert group_names(two_sources, TASK)[("epic", 3, 2)] == "epic_L3_K2"


def test_page_title_counts_checkpoints_in_english():
    assert page_title(1) == "Checkpoint comparison (1 checkpoint)"
    assert page_title(3, "caption") == "Checkpoint comparison (3 caption checkpoints)"


def test_random_line_is_drawn_inside_the_s_norm_panels(entries):
    import matplotlib.pyplot as plt

    # Every S_norm >= 0: autoscaling used to put the axis exactly on 0, hiding the dashed random line.
    rows = [r for r in comparison_rows(entries) if r["checkpoint"] in ("run-a/last", RANDOM)]
    assert all(r["S_norm"] >= 0 for r in rows)
    fig = comparison_figure(rows, TASK, "S_norm")
    try:
        for ax in fig.axes:
            low, high = ax.get_ylim()
            assert low < 0 < high and -low / (high - low) > 0.03, (low, high)
            [line] = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
            assert list(line.get_ydata()) == [0.0, 0.0]
            assert line.get_zorder() > ax.spines["bottom"].get_zorder()
            # random sits on the line: no bars of its own
            assert RANDOM not in ax.get_legend_handles_labels()[1]
    finally:
        plt.close(fig)


# Names Lightning writes (best, last, the SLURM requeue's hpc_ckpt_N) and names users give folders.
CHECKPOINT_NAMES = ["epoch=003-step=1000", "last", "hpc_ckpt_1", "my run, v2 [it's \"best\"] ${oc.env:HOME}"]


def fake_run(folder, names, task="forecast"):
    """A run folder whose checkpoints/ holds an adapter folder per name; the first is the best. Its
    config.yaml names the task, as train.py's resolved config does."""
    checkpoints = folder / "checkpoints"
    for name in names:
        (checkpoints / f"{name}.adapter").mkdir(parents=True)
        (checkpoints / f"{name}.adapter" / "adapter_config.json").write_text("{}")
    (folder / "metrics.json").write_text(json.dumps({"best_checkpoint": str(checkpoints / f"{names[0]}.ckpt")}))
    if task:
        (folder / "config.yaml").write_text(f"eval_task: {task}\n")
    return folder


def test_checkpoints_of_different_tasks_are_refused_before_any_evaluation(tmp_path):
    from egohorizon.run.comparison_eval import evaluate_checkpoints

    forecast = fake_run(tmp_path / "f", ["last"])
    caption = fake_run(tmp_path / "c", ["last"], task="caption")
    with pytest.raises(DataError, match=r"different tasks: .*/f \(forecast\), .*/c \(caption\)"):
        evaluate_checkpoints([str(forecast), str(caption)], None, tmp_path / "out")
    with pytest.raises(DataError, match=r"--task caption"):
        evaluate_checkpoints([str(forecast)], None, tmp_path / "out", task="caption")
    assert not (tmp_path / "out" / "evals").exists()


def test_a_checkpoint_without_its_run_config_needs_task(tmp_path):
    from egohorizon.run.comparison_eval import evaluate_checkpoints

    bare = fake_run(tmp_path / "bare", ["last"], task=None)
    with pytest.raises(ConfigError, match=r"bare: cannot tell its task .*no config.yaml.*pass --task NAME"):
        evaluate_checkpoints([str(bare)], None, tmp_path / "out")
    with pytest.raises(ConfigError, match="unknown 'nope'"):
        evaluate_checkpoints([str(bare)], None, tmp_path / "out", task="nope")


class TaskWithoutCompare(ForecastTask):
    """A task that has not implemented the compare hooks yet (tasks/base.py's defaults)."""

    name = "bare"
    compare_rows = Task.compare_rows
    item_ids = Task.item_ids


def test_a_task_without_the_compare_hooks_is_named_before_any_evaluation(tmp_path, monkeypatch):
    from egohorizon.run.comparison_eval import evaluate_checkpoints
    from egohorizon.tasks import TASKS

    monkeypatch.setitem(TASKS, "bare", "test_compare:TaskWithoutCompare")
    run = fake_run(tmp_path / "run", ["last"], task="bare")
    with pytest.raises(ConfigError, match=r"the bare task does not implement the compare hooks .*item_ids, compare_rows"):
        evaluate_checkpoints([str(run)], None, tmp_path / "out")
    assert not (tmp_path / "out" / "evals").exists()


@pytest.fixture()
def eval_stubs(evaluations, monkeypatch):
    """evaluate_checkpoints with the config composed for real and the target resolved for real, the model
    and data stubbed: records what the evaluation read from the config."""
    from egohorizon.run import evaluation as run_eval
    from egohorizon.run import setup as run

    seen = []

    evaluation = evaluations["run-a/last"]

    def evaluate_split(cfg, target, out_dir, model=None, **data_overrides):
        seen.append({"adapter": target.adapter, "points": cfg.points, "run_dir": cfg.paths.run_dir})
        return {"reports": {"model": evaluation.report}, "metrics": {}, "evaluation": evaluation}, None, None

    def setup_run(cfg):
        Path(cfg.paths.run_dir).mkdir(parents=True)
        return Path(cfg.paths.run_dir)

    monkeypatch.setattr(run, "setup_run", setup_run)
    monkeypatch.setattr(run_eval, "evaluate_split", evaluate_split)
    return seen


def test_checkpoint_and_points_names_reach_eval_unchanged(eval_stubs, tmp_path):
    from egohorizon.run.comparison_eval import evaluate_checkpoints

    run = fake_run(tmp_path / "runs" / "2024-05-01 [a,b] 'q' \"dq\" =x", CHECKPOINT_NAMES)
    points = tmp_path / "points, [held out] k=1 'v2'.jsonl"
    points.write_text("")
    checkpoints = run / "checkpoints"
    targets = [str(run)] + [str(checkpoints / f"{name}.ckpt") for name in CHECKPOINT_NAMES[1:]]
    result = evaluate_checkpoints(targets, points, tmp_path / "out")
    assert [s["adapter"] for s in eval_stubs] == [checkpoints / f"{name}.adapter" for name in CHECKPOINT_NAMES]
    assert all(s["points"] == str(points) for s in eval_stubs)
    assert [e.path for e in result] == [str(checkpoints / f"{name}.adapter") for name in CHECKPOINT_NAMES]
    assert [e.global_step for e in result] == [1000, None, None, None]
    assert len({s["run_dir"] for s in eval_stubs}) == 4  # each checkpoint evaluated into its own folder


def test_a_malformed_set_override_is_named_not_a_traceback(eval_stubs, tmp_path):
    from egohorizon.run.comparison_eval import evaluate_checkpoints

    run = fake_run(tmp_path / "run", ["last"])
    with pytest.raises(ConfigError, match=r"--set data.n_context=\[4: not valid eval.yaml overrides"):
        evaluate_checkpoints([str(run)], tmp_path / "points.jsonl", tmp_path / "out", ["data.n_context=[4"])


def test_labels_are_short_and_unique():
    labels = checkpoint_labels(["outputs/x/run1/checkpoints/last.ckpt", "outputs/y/run1/checkpoints/last.ckpt",
                                "outputs/x/run2", "outputs/x/run2/checkpoints/epoch=1-step=8.adapter"])
    assert labels == ["run1/last", "run1/last#2", "run2", "run2/epoch=1-step=8"]


@pytest.mark.slow
def test_wandb_offline_run_holds_table_and_plots(entries, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    from egohorizon.run.comparison import log_to_wandb, table_columns

    monkeypatch.setenv("WANDB_MODE", "offline")
    rows = comparison_rows(entries)
    plots = plot_comparison(rows, TASK, tmp_path)
    run_dir = log_to_wandb(rows, TASK, plots, tmp_path, project=None, name="compare-test", offline=True)
    files = {p.name for p in (tmp_path / "wandb").rglob("*")}
    assert any(name.endswith(".wandb") for name in files), files
    assert str(tmp_path / "wandb") in run_dir
    assert_table_matches(wandb_table(tmp_path), rows, table_columns(TASK))


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory, repo_root):
    """A forecast_l3 run trained for 4 steps on the toy world, a checkpoint (+ adapter) kept every 2
    steps, and the overrides that built it."""
    from forecast_toy_world import write_toy_events
    from hydra import compose, initialize_config_dir

    from egohorizon.run import train

    folder = tmp_path_factory.mktemp("toy")
    events = write_toy_events(folder)
    common = ["data=forecast_events", f"data.events={events}", "data.n_context=4", "data.max_train_points=12",
              "data.max_eval_points=3", "data.batch_size=4", "backbone.hidden_size=32", "backbone.intermediate_size=64",
              "backbone.num_layers=1", "backbone.num_heads=2", "backbone.num_kv_heads=1", "backbone.vocab_size=300",
              f"backbone.cache_dir={folder}/cache", "trainer.enable_progress_bar=false",
              "model.generation.max_new_tokens=6", "model.generation.max_new_tokens_per_action=2"]
    with initialize_config_dir(config_dir=str(repo_root / "conf"), version_base="1.3"):
        train(compose("train", overrides=["experiment=forecast_l3", *common, f"paths.run_dir={folder}/run",
                                          "trainer.max_steps=4", "test_after_fit=false", "logger=csv",
                                          "model.optimizer.lr=1e-2", "callbacks.model_checkpoint.monitor=null",
                                          "callbacks.model_checkpoint.save_top_k=-1",
                                          "+callbacks.model_checkpoint.every_n_train_steps=2"]))
    return folder / "run", common


@pytest.mark.slow
def test_compare_command_on_a_toy_run_matches_eval(tmp_path, repo_root, toy_run, capsys):
    """Two forecast checkpoints of one run (step 2 and the last, the latter without its adapter
    folder, as a DeepSpeed run leaves it): the table's rows are eval.py's figures on the same points,
    the predictions it scored re-score to the same S through `egohorizon score forecast`, the PNGs are
    drawn and the offline W&B run holds the table."""
    import shutil

    from hydra import compose, initialize_config_dir
    from omegaconf import open_dict

    from egohorizon.cli import main
    from egohorizon.run.comparison import table_columns
    from egohorizon.run.evaluation import evaluate_run

    run, common = toy_run
    first = run / "checkpoints" / "epoch=000-step=2.ckpt"
    # The last weights without an adapter folder, as a DeepSpeed run leaves them.
    bare = tmp_path / "bare" / "checkpoints"
    bare.mkdir(parents=True)
    shutil.copy(run / "checkpoints" / "last.ckpt", bare / "last.ckpt")
    shutil.copy(run / "config.yaml", bare.parent / "config.yaml")

    out = tmp_path / "compare"
    assert main(["compare", str(first), str(bare / "last.ckpt"), "--out", str(out), "--set", "embedder=exact",
                 "--set", "trainer.enable_progress_bar=false"]) == 0
    data = json.loads((out / "comparison.json").read_text())
    assert data["task"] == "forecast"
    assert [c["global_step"] for c in data["checkpoints"]] == [2, 4]
    assert data["points"] == str(run / "points" / "points_test.jsonl")
    labels = [c["label"] for c in data["checkpoints"]]
    overall = {r["checkpoint"]: r for r in data["rows"] if r["level"] == "all"}
    # the habit baselines learn from the run's training days (its split.json) even on a points file (issue 38)
    habits = {"frequency", "markov", "time_of_day", "frequency_all", "markov_all"}
    assert set(overall) == {*labels, "repeat-last-K", "random", *habits}
    assert (out / "exported").is_dir()  # the bare checkpoint went through export-adapter
    assert {"index.html", "S.png", "S_norm.png"} <= {p.name for p in out.iterdir()}
    for name in ("S.png", "S_norm.png"):
        assert_png_drawn(out / name)
    assert_table_matches(wandb_table(out), data["rows"], table_columns(ForecastTask()))
    printed = capsys.readouterr().out
    assert all(label in printed for label in labels)

    # The first checkpoint's rows are eval.py's figures on the same points, group by group.
    with initialize_config_dir(config_dir=str(repo_root / "conf"), version_base="1.3"):
        cfg = compose("eval", overrides=[*common, f"points={data['points']}", "embedder=exact",
                                         f"paths.run_dir={tmp_path}/eval"])
    with open_dict(cfg):
        cfg.ckpt = str(first)  # Hydra's override grammar reads the '=' in Lightning's checkpoint names
    report = evaluate_run(cfg)["reports"]["model"]
    mine = {(r["source"], r["level"], r["k"]): r for r in data["rows"] if r["checkpoint"] == labels[0]}
    for group in [{"source": "all", "level": "all", "k": "all", **report["overall"]}, *report["groups"]]:
        row = mine[(group["source"], group["level"], group["k"])]
        assert row["S"] == pytest.approx(group["S"]) and row["invalid"] == group["invalid"]
        assert row["n"] == group["n"]
    # The second's overall S is what its own predictions re-score to.
    for checkpoint in data["checkpoints"]:
        label, predictions = checkpoint["label"], Path(checkpoint["eval_dir"]) / "predictions" / "test.jsonl"
        scored = tmp_path / "scored.json"
        assert main(["score", "forecast", "--gold", data["points"], "--pred", str(predictions), "--embedder",
                     "exact", "--out", str(scored)]) == 0
        assert json.loads(scored.read_text())["overall"]["S"] == pytest.approx(overall[label]["S"])


@pytest.mark.slow
def test_compare_command_on_a_run_whose_best_checkpoint_has_lightnings_name(tmp_path, toy_run):
    """``egohorizon compare RUN`` evaluates the run's best checkpoint, ``epoch=000-step=4`` as Lightning
    names it, in a folder and with a points file whose names hold spaces, quotes, commas and brackets."""
    import shutil

    from egohorizon.cli import main

    trained, _ = toy_run
    run = tmp_path / "runs" / "2024-05-01 [lr=1e-2, 'a'] \"b\""
    shutil.copytree(trained, run)
    best = run / "checkpoints" / "epoch=000-step=4"  # as Lightning named it in the toy run
    assert best.with_suffix(".adapter").is_dir()
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, "best_checkpoint": str(best.with_suffix(".ckpt"))}))
    points = tmp_path / "held out, [days 5-6] 'v2'.jsonl"
    shutil.copy(run / "points" / "points_test.jsonl", points)

    out = tmp_path / "compare, [1]"
    assert main(["compare", str(run), "--points", str(points), "--out", str(out), "--set", "embedder=exact",
                 "--set", "trainer.enable_progress_bar=false", "--no-wandb"]) == 0
    data = json.loads((out / "comparison.json").read_text())
    assert data["checkpoints"] == [{"label": run.name, "path": str(best.with_suffix(".adapter")), "global_step": 4,
                                    "eval_dir": str(out / "evals" / "2024-05-01_lr_1e-2_a_b_")}]
    assert data["task"] == "forecast"
    assert data["points"] == str(points) and data["n_points"] == len(points.read_text().splitlines())
    page = (out / "index.html").read_text()
    assert "<title>Checkpoint comparison (1 forecast checkpoint)</title>" in page
