"""The QA experiment composes and instantiates with toy overrides (no items, shards or weights yet)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from egohorizon.run.setup import build_callbacks, build_model

CONF = Path(__file__).resolve().parents[3] / "conf"


def test_qa_demo_composes_and_instantiates(tmp_path):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=["experiment=qa_demo", f"paths.run_dir={tmp_path}", "logger=csv",
                                          "backbone.hidden_size=32", "backbone.num_heads=2", "backbone.num_kv_heads=1",
                                          "data.sampling=retrieval"])
    datamodule = instantiate(cfg.data, _convert_="all")
    model = build_model(cfg, instantiate(cfg.backbone, _convert_="all"))
    callbacks = build_callbacks(cfg)
    assert type(datamodule).__name__ == "QADataModule" and type(model).__name__ == "QAModule"
    assert datamodule.sampling == "retrieval" and datamodule.frame_budget == 4 and model.lora_vision
    assert cfg.objective == "val/qa_avg" and cfg.objective_mode == "max" and cfg.eval_task == "qa"
    checkpoint = next(c for c in callbacks if type(c).__name__ == "AdapterCheckpoint")
    assert checkpoint.monitor == "val/qa_avg" and checkpoint.mode == "max"
    evaluation = next(c for c in callbacks if type(c).__name__ == "GenerationEvalCallback")
    assert evaluation.task_name == "qa"
    assert model.sequences_per_input() == 1
    # Trained on the right option's text, answering with the most likely option (docs/qa.md section 6).
    assert datamodule.target == "option" and model.generation["strategy"] == "options"
    assert model.generation["option_score"] == "mean"
    assert model.prompt.name == "qa_option" and datamodule.prompt_name == "qa_option"


def test_qa_demo_x4_is_qa_demo_with_the_settings_chosen_on_validation(tmp_path):
    """More training items (val/test the same as qa_demo's), no frames, calibrated option scoring."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=["experiment=qa_demo_x4", f"paths.run_dir={tmp_path}", "logger=csv",
                                          "backbone.hidden_size=32", "backbone.num_heads=2", "backbone.num_kv_heads=1"])
    datamodule = instantiate(cfg.data, _convert_="all")
    model = build_model(cfg, instantiate(cfg.backbone, _convert_="all"))
    assert datamodule.demo_train_per_day == 4 and datamodule.frame_budget == 0
    assert datamodule.demo_items.endswith("data/demo_qa_x4/qa.jsonl") and datamodule.sampling == "uniform"
    assert datamodule.target == "option" and model.generation["strategy"] == "options"
    assert model.generation["option_score"] == "calibrated" and cfg.eval_task == "qa"
