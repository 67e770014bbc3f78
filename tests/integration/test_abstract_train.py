"""The abstractor end to end on the task core: train.py's run trains the tiny LM on runs of a few demo
days' gold hierarchy (task=abstract) and logs the abstraction metrics and both baselines on val and
test; then ``egohorizon abstract`` runs with the trained adapter (the local backend: the adapter's own
prompt, raw text), reports every day as built or failed (a barely trained model writes invalid
groupings: those days are listed, never patched), and a rerun answers from the cache."""

from __future__ import annotations

import json

import pytest
from hydra import compose, initialize_config_dir

from egohorizon.cli import main
from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.run import train
from egohorizon.schema import Event, load_jsonl, write_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from conftest import REPO_ROOT

    from egohorizon.data.demo import load_demo_world

    tmp = tmp_path_factory.mktemp("abstract")
    events = load_demo_world().events
    days = sorted({(e.participant, e.day) for e in events})
    chosen = set(days[:6] + days[-6:])  # six days of each person
    write_jsonl(tmp / "events.jsonl", [e for e in events if (e.participant, e.day) in chosen])
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[
            "experiment=abstract_demo", f"data.events={tmp}/events.jsonl", f"paths.run_dir={tmp}/run",
            f"paths.cache_dir={tmp}/cache", f"backbone.cache_dir={tmp}/cache", "data.max_events=12",
            "data.train_stride=4", "data.max_eval_items=4", "data.val_frac=0.2", "data.test_frac=0.2",
            "logger=csv", "trainer.max_epochs=1", "trainer.check_val_every_n_epoch=1",
            "+trainer.limit_train_batches=4", "model.generation.max_new_tokens=48",
            "trainer.enable_progress_bar=false", "score_options.embedder=exact"])
    return tmp, train(cfg)


def test_the_run_logs_abstraction_metrics_and_both_baselines(trained):
    tmp, _result = trained
    metrics = json.loads((tmp / "run" / "metrics.json").read_text())
    flat = json.dumps(metrics)
    for key in ("test/abstract_boundary_f1", "test/fixed_chunks_abstract_boundary_f1",
                "test/verb_change_abstract_boundary_f1", "val/abstract_boundary_f1", "test/abstract_invalid_rate"):
        assert key in flat, key
    rows = [json.loads(line) for line in (tmp / "run" / "predictions" / "test.jsonl").read_text().splitlines()]
    assert rows and all(r["prompt"] == "abstract" and ("groups" in r or "text" in r) for r in rows)


def test_the_trained_adapter_abstracts_days_with_the_local_backend(trained, tmp_path, capsys):
    tmp, _result = trained
    l1 = [e for e in load_jsonl(tmp / "events.jsonl", Event) if e.level == 1][:60]  # part of one day
    write_jsonl(tmp_path / "l1.jsonl", l1)
    args = ["abstract", str(tmp_path / "l1.jsonl"), "--out", str(tmp_path / "h"), "--levels", "3",
            "--model", str(tmp / "run"), "--max-events", "12", "--overlap", "3", "--retries", "1",
            "--max-new-tokens", "64"]
    assert main(args) in (0, 1)
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{\n"):])
    assert report["days"] == 1 and report["days_ok"] + report["days_failed"] == 1
    assert report["prompt"]["name"] == "abstract" and report["adapter"].endswith(".adapter")
    assert report["model_calls"] >= 1 and report["cache_misses"] == report["model_calls"]
    for failure in report["failures"]:
        assert failure["kind"] == "output" and "invalid replies" in failure["reason"] and failure["raw"] is not None
    events = load_jsonl(tmp_path / "h" / "events.jsonl", Event) if report["days_ok"] else []
    assert check_hierarchy(events).ok
    assert main([*args, "--retry-failed"]) in (0, 1)  # failed days asked again: answered from the cache
    out = capsys.readouterr().out
    again = json.loads(out[out.index("{\n"):])
    assert again["cache_misses"] == 0 and again["days_done_now"] == report["days_failed"]


def test_constrained_decoding_builds_the_day_the_free_reply_may_not(trained, tmp_path, capsys):
    """With --constrained the same barely trained adapter can write only valid groupings: no reply is refused,
    the day is built and the hierarchy holds (the model still chose every boundary and word)."""
    tmp, _result = trained
    l1 = [e for e in load_jsonl(tmp / "events.jsonl", Event) if e.level == 1][:30]
    write_jsonl(tmp_path / "l1.jsonl", l1)
    args = ["abstract", str(tmp_path / "l1.jsonl"), "--out", str(tmp_path / "h"), "--levels", "3",
            "--model", str(tmp / "run"), "--max-events", "12", "--overlap", "3", "--retries", "0",
            "--max-new-tokens", "256", "--constrained"]
    assert main(args) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{\n"):])
    assert (report["days_ok"], report["invalid_replies"]) == (1, 0) and report["settings"]["constrained"]
    events = load_jsonl(tmp_path / "h" / "events.jsonl", Event)
    assert check_hierarchy(events).ok and {e.level for e in events} == {1, 2, 3}
    assert len([e for e in events if e.level == 1]) == 30


def test_constrained_decoding_needs_a_trained_adapter(tmp_path, capsys):
    write_jsonl(tmp_path / "l1.jsonl", [Event(id="a", participant="p", day="d1", session="s", level=1, start=0,
                                              end=1, text="x")])
    code = main(["abstract", str(tmp_path / "l1.jsonl"), "--out", str(tmp_path / "h"), "--model", "m",
                 "--base-url", "http://127.0.0.1:9/v1", "--constrained"])
    assert code == 2 and "needs a trained adapter" in capsys.readouterr().err


def _eval_config(tmp, *extra):
    from conftest import REPO_ROOT

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose("eval", overrides=[
            "+experiment=abstract_demo", f"data.events={tmp}/events.jsonl", f"paths.cache_dir={tmp}/cache",
            f"backbone.cache_dir={tmp}/cache", "data.max_events=12", "data.max_eval_items=4",
            "data.val_frac=0.2", "data.test_frac=0.2", "model.generation.max_new_tokens=256",
            "trainer.enable_progress_bar=false", "score_options.embedder=exact", *extra])


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_eval_without_ckpt_scores_the_untrained_backbone_with_the_tasks_prompt(trained, tmp_path):
    """A real model's zero-shot row: eval.py without ckpt scores the config's backbone, frozen, on the
    trained run's own test days (its split file), with the task's prompt, constrained decoding and both
    baselines, through the callback that scored the trained adapter."""
    from egohorizon.run.evaluation import evaluate_run

    tmp, _result = trained
    cfg = _eval_config(tmp, f"data.split_file={tmp}/run/split.json", f"paths.run_dir={tmp_path}/zero_shot")
    result = evaluate_run(cfg)
    assert result["task"] == "abstract" and result["ckpt"] is None and result["n_points"] == 4
    for key in ("test/abstract_boundary_f1", "test/fixed_chunks_abstract_boundary_f1", "test/abstract_invalid_rate"):
        assert key in result["metrics"], key
    trained_rows = _rows(tmp / "run" / "predictions" / "test.jsonl")
    zero_shot_rows = _rows(tmp_path / "zero_shot" / "predictions" / "test.jsonl")
    assert [r["id"] for r in zero_shot_rows] == [r["id"] for r in trained_rows]  # the same held-out test runs
    assert all(r["prompt"] == "abstract" for r in zero_shot_rows)
    # Constrained decoding (conf/model/abstract.yaml): every reply starts with the first group at event 0;
    # the random toy's descriptions may still run out of tokens, and those replies count as invalid.
    assert all(r["text"].startswith("0-") for r in zero_shot_rows)


def test_eval_without_ckpt_or_model_predictor_is_refused_for_a_model_only_task(trained, tmp_path):
    from egohorizon.errors import ConfigError
    from egohorizon.run.evaluation import evaluate_run

    tmp, _result = trained
    cfg = _eval_config(tmp, "predictors=[repeat_last]", f"paths.run_dir={tmp_path}/none")
    with pytest.raises(ConfigError, match="keep `model` among the predictors"):
        evaluate_run(cfg)


def test_abstract_smollm2_trains_lora_on_the_real_model_and_decodes_valid_groupings(smollm2_backbone, tmp_path):
    """experiment=abstract_smollm2: two LoRA steps of the real SmolLM2-135M-Instruct on runs of a few demo
    days, checkpoint chosen on val, test runs scored with both baselines; with constrained decoding every
    reply is a grouping from event 0 (parsed, or cut off by max_new_tokens and counted invalid)."""
    from conftest import REPO_ROOT

    from egohorizon.data.demo import load_demo_world

    events = load_demo_world().events
    days = sorted({(e.participant, e.day) for e in events})
    chosen = set(days[:5] + days[-5:])
    write_jsonl(tmp_path / "events.jsonl", [e for e in events if (e.participant, e.day) in chosen])
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[
            "experiment=abstract_smollm2", f"data.events={tmp_path}/events.jsonl", f"paths.run_dir={tmp_path}/run",
            f"backbone.cache_dir={smollm2_backbone.cache_dir}", "data.max_events=8", "data.max_eval_items=2",
            "data.batch_size=2", "data.val_frac=0.2", "data.test_frac=0.2", "trainer.max_steps=2",
            "trainer.val_check_interval=2", "model.generation.max_new_tokens=64", "logger=csv",
            "trainer.enable_progress_bar=false", "score_options.embedder=exact"])
    assert cfg.model.lora.r == 16 and cfg.model.generation.constrained  # finetune/smollm2_135m.yaml, model/abstract.yaml
    train(cfg)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    flat = json.dumps(metrics)
    for key in ("test/abstract_boundary_f1", "test/fixed_chunks_abstract_boundary_f1", "val/abstract_boundary_f1"):
        assert key in flat, key
    rows = _rows(tmp_path / "run" / "predictions" / "test.jsonl")
    assert len(rows) == 2 and all("groups" in r or r["text"].startswith("0-") for r in rows)
    assert list((tmp_path / "run" / "checkpoints").glob("*.adapter"))
    # The offline job builds a day with the trained text-only adapter (refused before: "no image processor").
    last_day = days[-1]
    l1 = [Event(**{**e.to_dict(), "parent": None, "children": []}) for e in events
          if e.level == 1 and (e.participant, e.day) == last_day][:8]
    write_jsonl(tmp_path / "l1.jsonl", l1)
    code = main(["abstract", str(tmp_path / "l1.jsonl"), "--out", str(tmp_path / "built"), "--model",
                 str(tmp_path / "run"), "--constrained", "--max-events", "8", "--overlap", "2", "--levels", "2",
                 "--max-new-tokens", "64", "--allow-failed-days"])
    report = json.loads((tmp_path / "built" / "report.json").read_text())
    assert code == 0 and report["days_done_now"] == 1 and report["model_calls"] >= 1
