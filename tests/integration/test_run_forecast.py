"""End to end at toy size: train.py's run trains a tiny LoRA forecaster, tests it on held-out days and
writes the run folder; eval.py's run evaluates that checkpoint (twice: identical numbers) and the
baselines alone."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch
from forecast_toy_world import write_toy_events
from run_configs import compose_config, toy_overrides

from egohorizon.checkpoints import resolve_adapter
from egohorizon.run import evaluate, train
from egohorizon.run.evaluation import evaluate_run
from egohorizon.run.setup import resolve_ckpt_path
from egohorizon.schema import ForecastPoint, ForecastPrediction, load_jsonl


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("run")
    events = write_toy_events(tmp_path)
    overrides = [
        "experiment=forecast_l3",
        *toy_overrides(events, tmp_path, "train"),
        "logger=csv",
        "trainer.max_epochs=2",
        "trainer.check_val_every_n_epoch=1",
        "score_options.embedder=exact",
    ]
    cfg = compose_config("train", overrides)
    result = train(cfg)
    return tmp_path, events, cfg, result


def test_training_run_writes_everything_a_run_folder_promises(trained):
    tmp_path, _, _cfg, _result = trained
    run = tmp_path / "train"
    assert (run / "config.yaml").is_file() and (run / "points" / "splits.json").is_file()
    # The day split eval.py and compare read back (issue 22): the one the points were made with.
    record = json.loads((run / "split.json").read_text())
    saved = json.loads((run / "points" / "splits.json").read_text())
    assert record["participants"] == saved["participants"] and record["run"]["seed"] == 0
    assert (run / "checkpoints" / "last.ckpt").is_file()
    adapter = run / "checkpoints" / "last.adapter"
    for name in (
        "adapter_config.json",
        "adapter_model.safetensors",
        "tokenizer.json",
        "forecast.txt",
        "prompt.json",
        "egohorizon_adapter.json",
    ):
        assert (adapter / name).is_file(), name
    meta = json.loads((adapter / "egohorizon_adapter.json").read_text())
    assert meta["prompt"]["name"] == "forecast" and meta["data"]["n_context"] == 4
    assert json.loads((adapter / "adapter_config.json").read_text())["modules_to_save"]
    # Lightning checkpoints hold the trainable weights only (adapter + embeddings + head), not the base.
    state = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)[
        "state_dict"
    ]
    assert state and all("lora_" in k or "modules_to_save" in k for k in state)
    predictions = load_jsonl(run / "predictions" / "test.jsonl", ForecastPrediction)
    assert predictions and all(
        p.model.startswith("tiny-qwen2_5_vl@") and p.prompt == "forecast" for p in predictions
    )
    assert all(p.seed == 0 and p.extra["raw_texts"] for p in predictions)
    assert sorted(run.glob("predictions/val_epoch*.jsonl"))  # validation generated too
    metrics = json.loads((run / "metrics.json").read_text())
    assert {row["k"] for row in metrics["summary"]} == {1, 10}
    # Model selection is on validation only: the checkpoint ranking and the sweep objective are the
    # validation S_norm at L3, K = 1; the best checkpoint's score is that objective's value.
    objective = metrics["objective"]
    assert objective["name"] == "val/forecast_S_norm_L3_K1" and objective["mode"] == "max"
    val_scores = [
        json.loads(path.read_text())["metrics"]["val/forecast_S_norm_L3_K1"]
        for path in sorted(run.glob("reports/val_epoch*.json"))
    ]
    assert len(val_scores) == 2 and objective["value"] == pytest.approx(max(val_scores))
    assert _result["objective"] == objective
    test_metrics = metrics["metrics"]["test"]
    for key in (
        "test/forecast_S_norm_L3_K1",
        "test/repeat_last_S_norm_L3_K10",
        "test/random_S_L3_K1",
        "test/forecast_invalid_rate_L3_K10",
    ):
        assert key in test_metrics
    header = (run / "csv" / "metrics.csv").read_text().splitlines()[0]
    assert "test/forecast_S_norm_L3_K1" in header and "train/loss" in header
    # the habit baselines (issue 38) beside the model, and its difference to the strongest of them
    assert {"test/markov_S_norm_L3_K1", "test/time_of_day_no_clock", "test/frequency_all_S_L3_K10"} <= set(test_metrics)
    assert all("markov_S_norm" in row and row["vs_strongest"]["rule"] for row in metrics["summary"])
    assert "Habit baselines" in metrics["summary_text"] and "Trained model minus the strongest" in metrics["summary_text"]
    assert (run / "reports" / "test_examples.md").read_text().startswith("| id |")


def test_a_requeued_run_resumes_from_its_last_checkpoint(trained):
    tmp_path, _, cfg, _ = trained
    assert resolve_ckpt_path(cfg, tmp_path / "train") == str(tmp_path / "train" / "checkpoints" / "last.ckpt")
    assert resolve_ckpt_path(cfg, tmp_path / "elsewhere") is None


def test_evaluating_a_checkpoint_twice_gives_identical_numbers(trained):
    tmp_path, events, _, _ = trained
    run = tmp_path / "train"
    assert resolve_adapter(str(run)).name.endswith(".adapter")
    results = []
    for name in ("eval_a", "eval_b"):
        cfg = compose_config("eval", [*toy_overrides(events, tmp_path, name), f"ckpt={run}", "embedder=exact"])
        results.append(evaluate_run(cfg))
    assert results[0]["metrics"] == results[1]["metrics"]
    assert (tmp_path / "eval_a" / "predictions" / "test.jsonl").read_text() == (
        tmp_path / "eval_b" / "predictions" / "test.jsonl"
    ).read_text()
    assert "test/forecast_S_L3_K1" in results[0]["metrics"]
    report = json.loads((tmp_path / "eval_a" / "report.json").read_text())
    assert {"model", "repeat_last", "frequency", "markov", "time_of_day", "markov_all"} <= set(report["reports"])
    assert load_jsonl(tmp_path / "eval_a" / "predictions" / "markov.jsonl", ForecastPrediction)
    assert "Trained model minus the strongest" in results[0]["text"]


def test_baselines_alone_need_no_model(trained):
    tmp_path, events, _, _ = trained
    cfg = compose_config(
        "eval",
        [
            *toy_overrides(events, tmp_path, "baselines"),
            "predictors=[repeat_last,random]",
            "embedder=exact",
            "data.levels=[3]",
            "data.ks=[1]",
        ],
    )
    result = evaluate_run(cfg)
    assert result["model_id"] is None
    assert set(result["metrics"]) >= {"test/repeat_last_S_L3_K1", "test/random_S_L3_K1"}
    assert not any("forecast_" in k for k in result["metrics"])


def test_mbr_samples_more_and_keeps_three(trained):
    tmp_path, events, _, _ = trained
    overrides = [*toy_overrides(events, tmp_path, "mbr"), f"ckpt={tmp_path / 'train'}", "embedder=exact",
                 "predictors=[model]", "model.generation.mbr_samples=8", "data.ks=[1]"]
    evaluate_run(compose_config("eval", overrides))
    rows = load_jsonl(tmp_path / "mbr" / "predictions" / "test.jsonl", ForecastPrediction)
    assert rows and all(len(r.extra["raw_texts"]) == 8 for r in rows)
    assert all(len(r.candidates or []) <= 3 for r in rows)


def test_habit_baselines_alone_learn_from_the_run_s_training_days(trained):
    tmp_path, events, _, _ = trained
    overrides = [*toy_overrides(events, tmp_path, "habits"), "predictors=[frequency_all,markov,random]",
                 "embedder=exact", "data.levels=[3]", "data.ks=[1]"]
    result = evaluate_run(compose_config("eval", overrides))
    assert {"test/frequency_all_S_norm_L3_K1", "test/markov_no_history", "test/random_S_L3_K1"} <= set(result["metrics"])
    # not frequency (a prefix of frequency_all), nor markov_all (markov is a prefix of it)
    dropped = ("test/frequency_S", "test/frequency_n", "test/frequency_no_", "test/markov_all_", "test/repeat_last_",
               "test/time_of_day_")
    assert "test/markov_S_L3_K1" in result["metrics"] and not any(k.startswith(dropped) for k in result["metrics"])
    assert set(result["reports"]) == {"frequency_all", "markov"}
    rows = load_jsonl(tmp_path / "habits" / "predictions" / "markov.jsonl", ForecastPrediction)
    assert rows and all(1 <= len(r.candidates) <= 3 for r in rows)
    assert "markov" in result["text"]


def test_context_and_level_studies_write_a_table_and_a_plot(trained):
    tmp_path, events, _, _ = trained
    run = tmp_path / "train"
    common = [*toy_overrides(events, tmp_path, "sweep_context"), "embedder=exact", "data.ks=[1]"]
    result = evaluate(compose_config("eval", [*common, "+sweep=context", "sweep.n_context=[1,4]", f"ckpt={run}"]))
    rows = result["rows"]
    assert [(r["n_context"], r["k"]) for r in rows] == [(1, 1), (4, 1)]
    assert rows[0]["context_shown_mean"] == 1 and rows[1]["context_shown_mean"] > 1
    assert all("forecast_S_norm" in r and "repeat_last_S_norm" in r for r in rows)
    folder = tmp_path / "sweep_context"
    for suffix in (".csv", ".md", ".json", ".png"):
        assert (folder / f"sweep_context{suffix}").stat().st_size > 0
    levels = compose_config(
        "eval",
        [
            *toy_overrides(events, tmp_path, "sweep_levels"),
            "embedder=exact",
            "+sweep=levels",
            "sweep.levels=[3]",
            "predictors=[repeat_last,random]",
        ],
    )
    result = evaluate(levels)
    assert {(r["level"], r["k"]) for r in result["rows"]} == {(3, 1), (3, 10)}
    assert (tmp_path / "sweep_levels" / "sweep_levels.png").stat().st_size > 0


def test_wandb_is_offline_without_a_project_and_keeps_its_run_id(tmp_path):
    from egohorizon.run.setup import build_loggers

    cfg = compose_config("train", [f"paths.run_dir={tmp_path}", "logger=default"])
    first = {type(lg).__name__: lg for lg in build_loggers(cfg, tmp_path)}
    assert set(first) == {"CSVLogger", "WandbLogger"}
    run_id = (tmp_path / "wandb_id").read_text().strip()
    assert first["WandbLogger"]._wandb_init["id"] == run_id and first["WandbLogger"]._offline
    again = {type(lg).__name__: lg for lg in build_loggers(cfg, tmp_path)}
    assert again["WandbLogger"]._wandb_init["id"] == run_id  # a resumed run continues the same W&B run
    online = compose_config("train", [f"paths.run_dir={tmp_path}", "logger=wandb", "logger.wandb.project=mine"])
    assert not build_loggers(online, tmp_path)[0]._offline


class RepeatLastChatServer:
    """An OpenAI-compatible chat server on 127.0.0.1 that forecasts, three times over, the last activity of
    the prompt's history: a predictor whose K = 1 score must equal repeat-last's exactly."""

    LINE = re.compile(r"^\d\d:\d\d-\d\d:\d\d \([^)]*\) (.+)$", re.MULTILINE)

    def __init__(self):
        server = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests += 1
                history = body["messages"][-1]["content"].split("Now:")[0]
                last = server.LINE.findall(history)[-1]
                content = json.dumps({"candidates": [[last]] * 3})
                payload = json.dumps(
                    {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_an_llm_behind_an_openai_server_is_scored_and_cached(tmp_path):
    events = write_toy_events(tmp_path)
    server = RepeatLastChatServer()
    try:
        overrides = [
            *toy_overrides(events, tmp_path, "llm"),
            "predictors=[llm,repeat_last,random]",
            "embedder=exact",
            "data.ks=[1]",
            "llm.model=scripted",
            f"llm.base_url={server.url}",
            f"llm.cache_dir={tmp_path}/llm_cache",
        ]
        result = evaluate_run(compose_config("eval", overrides))
        metrics = result["metrics"]
        assert metrics["test/llm_S_L3_K1"] == metrics["test/repeat_last_S_L3_K1"]
        assert metrics["test/llm_invalid_rate_L3_K1"] == 0.0
        n = int(metrics["test/llm_n_L3_K1"])
        assert server.requests == n
        rows = load_jsonl(tmp_path / "llm" / "predictions" / "llm.jsonl", ForecastPrediction)
        assert len(rows) == n and all(r.model == "scripted" and r.prompt == "forecast" for r in rows)
        again = evaluate_run(compose_config("eval", [*overrides, f"paths.run_dir={tmp_path}/llm_again"]))
        assert server.requests == n and again["metrics"] == metrics  # answered from the cache
    finally:
        server.httpd.shutdown()


def test_an_untrained_backbone_is_prompted_in_context_for_all_candidates(trained):
    tmp_path, events, _, _ = trained
    cfg = compose_config("eval", [*toy_overrides(events, tmp_path, "in_context"), "embedder=exact", "data.ks=[1]"])
    result = evaluate_run(cfg)
    # A random tiny model does not write the JSON answer: every point is invalid, and counted.
    assert result["metrics"]["test/forecast_invalid_rate_L3_K1"] == 1.0
    assert result["metrics"]["test/forecast_S_L3_K1"] == 0.0
    report = json.loads((tmp_path / "in_context" / "reports" / "test.json").read_text())
    assert report["generation"]["mode"] == "in_prompt"
    points = report["per_point"]
    assert points and all(p["invalid"] for p in points)


def test_a_points_file_replaces_the_held_out_split(trained):
    tmp_path, events, _, _ = trained
    points_file = tmp_path / "train" / "points" / "points_val.jsonl"
    cfg = compose_config(
        "eval",
        [
            *toy_overrides(events, tmp_path, "from_file"),
            "embedder=exact",
            f"points={points_file}",
            "predictors=[repeat_last,random]",
        ],
    )
    result = evaluate_run(cfg)
    assert result["n_points"] == len(load_jsonl(points_file, ForecastPoint))
