"""Issue 36, items 11 and 13: a model path that does not exist says "no such folder" (not "invalid hub
id"), and a cut-short ``adapter_model.safetensors`` is named by serve, compare and eval.py (no traceback,
no half-written eval run folder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from forecast_toy_world import toy_events, write_toy_events
from hydra import compose, initialize_config_dir

from egohorizon.checkpoints import resolve_adapter
from egohorizon.cli import main
from egohorizon.data.splits import make_day_split
from egohorizon.errors import ConfigError, DataError
from egohorizon.llm.local_model import local_backend


def compose_eval(overrides: list[str]):
    from conftest import REPO_ROOT

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose("eval", overrides=overrides)


def test_a_missing_local_path_is_no_such_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^\./nope: no such folder"):
        local_backend("./nope")
    assert main(["serve", "--model", "./nope", "--lifetime", "1"]) == 2
    assert "./nope: no such folder" in capsys.readouterr().err
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"id": "e1", "participant": "p", "day": "2024-01-01", "session": "s", "level": 1,
                                  "start": 0, "end": 1, "text": "open the fridge"}) + "\n")
    assert main(["abstract", str(events), "--model", "./nope.adapter", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "./nope.adapter: no such folder" in err and "Repo id" not in err


def test_names_that_only_a_path_can_be():
    from egohorizon.llm.local_model import looks_like_a_path

    assert all(map(looks_like_a_path, ["./x", "../x", "/abs/x", "~/x", "a/b/c", "run.adapter", "last.ckpt"]))
    assert not any(map(looks_like_a_path, ["HuggingFaceTB/SmolLM2-135M-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct",
                                            "smollm2_135m", "gpt2"]))


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory) -> Path:
    """A run folder whose last.adapter is a real LoRA adapter on a toy model, its weights file cut short."""
    import torch
    from peft import LoraConfig, get_peft_model

    from egohorizon.backbones import TinyBackbone
    from egohorizon.backbones.hf import load_pretrained_model

    root = tmp_path_factory.mktemp("cut")
    backbone = TinyBackbone(cache_dir=str(root / "tiny"), hidden_size=32, intermediate_size=64, num_layers=1,
                            num_heads=2, num_kv_heads=1, vocab_size=320, vision_depth=1, vision_hidden_size=16)
    backbone.prepare(corpus=lambda: ["I pick up the cup", "I open the fridge", "A", "B"] * 4)
    run = root / "run"
    folder = run / "checkpoints" / "last.adapter"
    torch.manual_seed(0)
    model = get_peft_model(load_pretrained_model(backbone.base_path, kind="vlm"),
                           LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    model.save_pretrained(folder)
    (folder / "egohorizon_adapter.json").write_text(json.dumps(
        {"model_id": "tiny", "base_path": backbone.base_path, "prompt": {"name": "forecast", "version": "3"},
         "data": {"use_chat_template": None}}))
    weights = folder / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])  # an interrupted copy
    return run


def test_resolve_adapter_names_the_cut_file(cut_run):
    with pytest.raises(DataError, match=r"last\.adapter/adapter_model\.safetensors: not a complete safetensors"):
        resolve_adapter(cut_run)


def test_serve_and_compare_name_the_cut_file(cut_run, tmp_path, capsys):
    weights = str(cut_run / "checkpoints" / "last.adapter" / "adapter_model.safetensors")
    assert main(["serve", "--model", str(cut_run / "checkpoints" / "last.adapter"), "--lifetime", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{weights}: not a complete safetensors file" in err and "Traceback" not in err
    from egohorizon.data.points.build import build_points
    from egohorizon.schema import write_jsonl

    points = tmp_path / "points.jsonl"
    write_jsonl(points, build_points(toy_events(), make_day_split(toy_events(), seed=1), levels=[3], ks=[1],
                                     n_context=4)["test"])
    adapter = str(cut_run / "checkpoints" / "last.adapter")
    assert main(["compare", adapter, adapter, "--task", "forecast", "--points", str(points),
                 "--out", str(tmp_path / "cmp"), "--no-wandb", "--set", "embedder=exact"]) == 2
    err = capsys.readouterr().err
    assert f"{weights}: not a complete safetensors file" in err and "Traceback" not in err


def test_eval_names_the_cut_file_and_leaves_no_run_folder(cut_run, tmp_path, capsys):
    from egohorizon.run import evaluate
    from egohorizon.run.run_guard import run_or_exit

    run = tmp_path / "run"
    shutil.copytree(cut_run, run)
    make_day_split(toy_events(), seed=1).save(run / "split.json")
    events = write_toy_events(tmp_path)
    cfg = compose_eval(["data=forecast_events", f"data.events={events}", "data.n_context=4", "data.num_workers=0",
                        "data.max_eval_points=3", f"paths.run_dir={tmp_path}/eval", f"paths.cache_dir={tmp_path}/cache",
                        f"ckpt={run}", "embedder=exact"])
    with pytest.raises(SystemExit) as exit_info:
        run_or_exit(evaluate, cfg)
    assert exit_info.value.code == 2
    assert "last.adapter/adapter_model.safetensors: not a complete safetensors file" in capsys.readouterr().err
    assert not (tmp_path / "eval").exists()
