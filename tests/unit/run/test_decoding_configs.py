"""Decoding follows the task and the experiment, never the backbone (issue 24): every experiment and every
task composed with every backbone gets the same model.generation; eval.py decodes a trained adapter as its
run did, with only the keys given on its command line changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from egohorizon.run.eval_build import adapter_generation, command_line_keys

CONF = Path(__file__).resolve().parents[3] / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
BACKBONES = sorted(p.stem for p in (CONF / "backbone").glob("*.yaml"))
TASKS = sorted(p.stem for p in (CONF / "task").glob("*.yaml"))


def _generation(overrides: list[str], config: str = "train") -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config, overrides=[*overrides, "paths.run_dir=x", "paths.cache_dir=x"])
    return OmegaConf.to_container(cfg.model.generation, resolve=True)


def test_no_backbone_file_carries_decoding():
    for folder in ("backbone", "finetune"):
        for path in (CONF / folder).glob("*.yaml"):
            assert "generation" not in OmegaConf.load(path), path


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_an_experiment_decodes_the_same_with_every_backbone(experiment):
    by_backbone = {b: _generation([f"experiment={experiment}", f"backbone={b}"]) for b in BACKBONES}
    first = by_backbone[BACKBONES[0]]
    assert all(g == first for g in by_backbone.values()), by_backbone


@pytest.mark.parametrize("task", TASKS)
def test_a_task_decodes_as_its_model_file_says_with_every_backbone(task):
    model_file = OmegaConf.load(CONF / "model" / f"{OmegaConf.load(CONF / 'task' / f'{task}.yaml').defaults[1]['/model']}.yaml")
    expected = {k: v for k, v in OmegaConf.to_container(model_file.generation).items() if k != "seed"}
    for backbone in BACKBONES:
        got = _generation([f"task={task}", f"backbone={backbone}"])
        assert {k: got[k] for k in expected} == expected, (task, backbone)


def test_the_decoding_each_experiment_chose_on_validation():
    assert {k: _generation(["experiment=forecast_l3"])[k] for k in ("strategy", "num_beams")} == \
        {"strategy": "beam", "num_beams": 3}  # docs/forecasting.md's selection
    assert _generation(["experiment=forecast_l1", "data.ks=[10]", "backbone=qwen3_8b"])["num_beams"] == 3  # inherited
    assert _generation(["experiment=forecast_epic_smollm2"])["strategy"] == "sample"
    assert _generation(["experiment=caption_demo", "task=caption"])["num_beams"] == 3
    assert _generation(["task=forecast"])["strategy"] == "sample"  # the task's own default, even with tiny
    assert _generation(["task=caption"])["num_beams"] == 1


def test_an_adapter_decodes_as_its_run_did_with_only_the_command_line_keys_changed():
    recorded = {"strategy": "beam", "num_beams": 3, "temperature": 0.7, "seed": 0, "max_new_tokens": 24}
    configured = {"strategy": "sample", "num_beams": None, "temperature": 0.5, "seed": 7, "max_new_tokens": 24}
    assert adapter_generation(configured, recorded, set()) == {**recorded, "seed": 7}
    assert adapter_generation(configured, recorded, {"temperature", "strategy"}) == \
        {"strategy": "sample", "num_beams": 3, "temperature": 0.5, "seed": 7, "max_new_tokens": 24}
    assert adapter_generation(configured, recorded, {"*"}) == configured  # model.generation={...}
    assert adapter_generation(configured, None, set()) == configured  # an adapter saved before the record
    assert adapter_generation(configured, recorded, None) == configured  # composed in code: as it says


def test_command_line_keys_reads_the_hydra_run_overrides():
    assert command_line_keys("model.generation") is None  # no Hydra run here
    overrides = ["ckpt=run", "model.generation.num_beams=1", "++model.generation.top_p=0.9", "seed=3"]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("eval", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    try:
        assert command_line_keys("model.generation") == {"num_beams", "top_p"}
        assert command_line_keys("data") == set()
    finally:
        HydraConfig.instance().cfg = None


def _train(overrides: list[str]) -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=[*overrides, "paths.run_dir=x", "paths.cache_dir=x"])
    return OmegaConf.to_container(cfg, resolve=True)


def test_the_large_backbones_share_one_finetune_file():
    shared = OmegaConf.to_container(OmegaConf.load(CONF / "finetune" / "pretrained_7b_8b.yaml"))
    for backbone in ("qwen2_5_vl_7b", "qwen3_vl_8b", "qwen3_8b"):
        model = _train([f"backbone={backbone}"])["model"]
        assert model["lora"] == shared["lora"], backbone
        assert model["optimizer"]["lr"] == shared["optimizer"]["lr"], backbone
        assert "lora" not in OmegaConf.load(CONF / "finetune" / f"{backbone}.yaml"), backbone  # only a pointer


def test_the_gpu_trainer_is_the_cpu_one_with_its_differences():
    cpu, gpu = _train(["trainer=cpu"])["trainer"], _train(["trainer=gpu"])["trainer"]
    changed = {k for k in cpu.keys() | gpu.keys() if cpu.get(k) != gpu.get(k)}
    assert changed == {"accelerator", "precision", "max_epochs", "check_val_every_n_epoch"}
    assert (gpu["accelerator"], gpu["precision"]) == ("gpu", "bf16-true")
