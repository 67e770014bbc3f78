"""``egohorizon compare`` on a task other than forecasting: the caption task's rows, plots and page
from hand-checked evaluations, and two tiny caption checkpoints trained here, compared end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from compare_checks import assert_png_drawn, assert_table_matches, wandb_table

from egohorizon.backbones.embedders import ExactEmbedder
from egohorizon.errors import DataError
from egohorizon.run.comparison import (
    comparison_rows,
    entry_from_evaluation,
    headline_lines,
    plot_comparison,
    table_columns,
    write_html,
)
from egohorizon.schema import CaptionWindow
from egohorizon.tasks import get_task

TASK = get_task("caption")


def window(wid: str, start: float, actions, source: str = "demo") -> CaptionWindow:
    return CaptionWindow(id=wid, window_s=30.0, actions=[{"start": s, "end": e, "action": t} for s, e, t in actions],
                         source=source, participant="p1", session="s1", start=start, activity="work")


WINDOWS = [
    window("w1", 0.0, [(0, 30, "type code")]),
    window("w2", 30.0, [(0, 20, "type code"), (20, 30, "run the tests")]),
    window("w3", 60.0, [(0, 30, "read the log")], source="lab"),
]
LINE = '{{"start": {}, "end": {}, "action": "{}"}}'
OUTPUTS = {
    # a: w1 right, w2 both actions right (IoU 0.95 and 0.91), w3 unparseable (invalid)
    "a": {"w1": LINE.format(0, 30, "type code"),
          "w2": LINE.format(0, 19, "type code") + "\n" + LINE.format(19, 30, "run the tests"),
          "w3": "I am not sure"},
    # b: w1 the wrong action, w2 only its first action, w3 right
    "b": {"w1": LINE.format(0, 30, "read the log"), "w2": LINE.format(0, 20, "type code"),
          "w3": LINE.format(0, 30, "read the log")},
}


def evaluate(outputs: dict[str, str], windows=WINDOWS):
    predictions = {w.id: TASK.parse([outputs[w.id]], w) for w in windows}
    return TASK.evaluate(windows, predictions, "test", judge="exact", embedder=ExactEmbedder(),
                         most_frequent_action="type code")


@pytest.fixture(scope="module")
def entries():
    return [entry_from_evaluation(f"run/{name}", f"/runs/{name}", step, TASK, evaluate(OUTPUTS[name]))
            for name, step in (("a", 10), ("b", 20))]


def test_caption_rows_hold_each_checkpoint_and_both_baselines(entries):
    rows = comparison_rows(entries)
    by = {(r["checkpoint"], r["source"]): r for r in rows}
    # a: 3 matches of 3 predicted and 4 gold actions: P 1, R 3/4, F1 6/7; w3 invalid.
    a = by[("run/a", "all")]
    assert (a["precision"], a["recall"], a["f1"], a["invalid"], a["n"]) == (1.0, 0.75, pytest.approx(6 / 7), 1, 3)
    # b: 2 matches (w2's first, w3) of 3 predicted and 4 gold: P 2/3, R 1/2, F1 4/7.
    b = by[("run/b", "all")]
    assert b["f1"] == pytest.approx(4 / 7) and b["precision"] == pytest.approx(2 / 3) and b["invalid"] == 0
    # per source: demo holds w1 and w2, lab holds w3.
    assert by[("run/a", "demo")]["f1"] == 1.0 and by[("run/a", "lab")]["f1"] == 0.0
    assert by[("run/b", "demo")]["f1"] == pytest.approx(0.4) and by[("run/b", "lab")]["f1"] == 1.0
    assert by[("run/b", "all")]["step"] == 20 and not by[("run/b", "all")]["baseline"]
    # The baselines once each, from the first checkpoint's evaluation: the training days' most
    # frequent action over every whole window matches w1 (IoU 1) and w2's first (IoU 20/30), not w3:
    # P 2/3, R 1/2, F1 4/7.
    most = by[("most-frequent", "all")]
    assert most["baseline"] and most["step"] is None and most["f1"] == pytest.approx(4 / 7)
    assert ("repeat-previous", "lab") in by
    assert [r["checkpoint"] for r in rows].count("most-frequent") == 3


def test_caption_groups_are_named_by_source(entries):
    from egohorizon.run.comparison import group_names

    assert group_names(comparison_rows(entries), TASK) == {("demo",): "demo", ("lab",): "lab"}


def test_caption_items_must_be_the_same(entries):
    other = entry_from_evaluation("run/c", "/runs/c", 1, TASK, evaluate(OUTPUTS["b"], WINDOWS[:2]))
    with pytest.raises(DataError, match="run/c was scored on 2 items, run/a on 3"):
        comparison_rows([entries[0], other])


def test_caption_plots_page_and_printed_lines(entries, tmp_path):
    rows = comparison_rows(entries)
    plots = plot_comparison(rows, TASK, tmp_path)
    assert [p.name for p in plots] == ["f1.png", "soft_edit.png"]
    for path in plots:
        assert_png_drawn(path)
    page = write_html(rows, TASK, plots, tmp_path, "Compare").read_text()
    assert "<th>source</th><th>n</th><th>f1</th><th>soft_edit</th>" in page
    assert "IoU &gt;= 0.5" in page and "repeat-previous" in page and '<img src="f1.png"' in page
    lines = headline_lines(rows, TASK)
    assert len(lines) == 4 and lines[0].split()[0] == "run/a" and "f1 0.857" in lines[0]


# -- end to end: two caption checkpoints trained here ---------------------------------------------


@pytest.fixture(scope="module")
def caption_run(tmp_path_factory, repo_root):
    """The tiny Qwen2.5-VL captioner trained 2 steps per epoch for 2 epochs on 4 demo days (one 64 px
    frame per window, no close-up), a checkpoint + adapter kept at each epoch's end; no generation
    during training (test_caption_train.py covers that)."""
    from hydra import compose, initialize_config_dir

    from egohorizon.run import train

    tmp = tmp_path_factory.mktemp("caption_compare")
    overrides = [
        "task=caption", "experiment=caption_demo", f"paths.run_dir={tmp}/run", f"paths.cache_dir={tmp}/cache",
        f"backbone.cache_dir={tmp}/cache", f"data.demo_shards_dir={tmp}/shards", "data.demo_days=4",
        "data.demo_window_stride=240", "data.frames_per_window=1", "data.crops=false", "data.num_workers=0",
        "data.batch_size=2", "data.eval_batch_size=2", "data.long_side=64", "data.crop_size=32", "logger=csv",
        "trainer.max_epochs=2", "trainer.check_val_every_n_epoch=1", "+trainer.limit_train_batches=2",
        "+trainer.limit_val_batches=1", "model.generation.max_new_tokens=8", "trainer.enable_progress_bar=false",
        "callbacks.generation_eval.generate_on_validation=false", "test_after_fit=false",
        "callbacks.model_checkpoint.monitor=null", "callbacks.model_checkpoint.save_top_k=-1",
        "model.optimizer.lr=5e-3",
    ]
    with initialize_config_dir(config_dir=str(repo_root / "conf"), version_base="1.3"):
        train(compose("train", overrides=overrides))
    return tmp / "run"


@pytest.mark.slow
def test_compare_two_caption_checkpoints(caption_run, tmp_path, monkeypatch, capsys):
    """The task is read from the run; both checkpoints caption the same held-out windows; each row is
    what that checkpoint's own predictions re-score to through `egohorizon score captions`; the PNGs
    are drawn and the offline W&B run holds the table."""
    from egohorizon.cli import main
    from egohorizon.schema import write_jsonl

    monkeypatch.setenv("WANDB_MODE", "offline")
    checkpoints = sorted(str(p) for p in (caption_run / "checkpoints").glob("epoch=*.ckpt"))
    assert len(checkpoints) == 2
    out = tmp_path / "compare"
    # data.shards: read the run's shards as they are (the demo world is not loaded again to check them).
    shards = caption_run.parent / "shards"
    assert main(["compare", *checkpoints, "--out", str(out), "--set", "embedder=exact", "--set", f"data.shards={shards}",
                 "--set", "model.generation.max_new_tokens=8", "--set", "+trainer.limit_test_batches=1",
                 "--set", "trainer.enable_progress_bar=false"]) == 0
    data = json.loads((out / "comparison.json").read_text())
    assert data["task"] == "caption" and data["points"] is None
    assert [c["global_step"] for c in data["checkpoints"]] == [2, 4]
    labels = [c["label"] for c in data["checkpoints"]]
    overall = {r["checkpoint"]: r for r in data["rows"] if r["source"] == "all"}
    assert set(overall) == {*labels, "repeat-previous", "most-frequent"}
    assert overall[labels[0]]["n"] == overall[labels[1]]["n"] == data["n_points"] > 0
    for name in ("f1.png", "soft_edit.png"):
        assert_png_drawn(out / name)
    assert_table_matches(wandb_table(out), data["rows"], table_columns(TASK))
    assert "Checkpoint comparison (2 caption checkpoints)" in (out / "index.html").read_text()
    printed = capsys.readouterr().out
    assert all(label in printed for label in labels)

    # Each checkpoint's row is what its own predictions re-score to against the gold windows.
    gold = tmp_path / "gold.jsonl"
    items, most_frequent = held_out_windows(caption_run, shards)
    write_jsonl(gold, items)
    for checkpoint in data["checkpoints"]:
        label, predictions = checkpoint["label"], Path(checkpoint["eval_dir"]) / "predictions" / "test.jsonl"
        scored = tmp_path / "scored.json"
        assert main(["score", "captions", "--gold", str(gold), "--pred", str(predictions), "--judge", "exact",
                     "--embedder", "exact", "--most-frequent", most_frequent, "--out", str(scored)]) == 0
        report = json.loads(scored.read_text())
        row = overall[label]
        assert report["overall"]["f1"] == pytest.approx(row["f1"])
        assert report["overall"]["soft_edit"] == pytest.approx(row["soft_edit"])
        assert report["overall"]["invalid"] == row["invalid"] and report["overall"]["n"] == row["n"]
        previous = report["baselines"]["repeat_previous"]["overall"]
        assert previous["f1"] == pytest.approx(overall["repeat-previous"]["f1"])


def held_out_windows(run: Path, shards: Path):
    """The run's held-out test windows (gold L1 actions) and its training days' most frequent action,
    from a datamodule built with the run's own data settings on its shards."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(run / "config.yaml")
    datamodule = instantiate(cfg.data, _convert_="all", shards=str(shards))
    datamodule.prepare()
    return list(datamodule.eval_items("test").values()), datamodule.eval_options("test")["most_frequent_action"]
