"""Every experiment composes and instantiates (toy overrides, no weights); the 7B GPU command composes and
instantiates everything but the weights; the experiment files follow the house conventions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from toy_backbone import TOY_BACKBONE

from egohorizon.run.setup import build_callbacks, build_loggers, build_model

REPO_ROOT = Path(__file__).resolve().parents[3]
CONF = REPO_ROOT / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


def _compose(name: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(name, overrides=overrides)


def _instantiate_all(cfg, run_dir: Path, accelerator: str | None = None):
    """Everything train.py builds, without points, tokenizer or weights."""
    datamodule = instantiate(cfg.data, _convert_="all")
    backbone = instantiate(cfg.backbone, _convert_="all")
    model = build_model(cfg, backbone)
    callbacks = build_callbacks(cfg)
    loggers = build_loggers(cfg, run_dir)
    strategy = instantiate(cfg.strategy)
    trainer_cfg = cfg.trainer if accelerator is None else {**cfg.trainer, "accelerator": accelerator}
    trainer = instantiate(trainer_cfg, callbacks=callbacks, logger=loggers, strategy=strategy)
    return datamodule, backbone, model, callbacks, trainer


# Experiments whose compose-and-instantiate test lives beside their task's other tests.
TESTED_ELSEWHERE = {
    "abstract_demo": "test_abstract_train.py",
    "abstract_smollm2": "test_abstract_train.py",
    "demo_epic_smollm2": "test_demo_config.py",
    "forecast_epic_long": "test_demo_config.py",
    "forecast_epic_smollm2": "test_forecast_epic_smollm2.py",
    "forecast_hdepic_smollm2": "test_forecast_epic_smollm2.py",
    "hands_demo": "test_hands_task.py",
    "hands_effnet_smollm2": "test_hands_still_frames.py",
    "qa_demo": "test_qa_configs.py",
    "qa_demo_x4": "test_qa_configs.py",
}
# The real-model experiments (backbone=smollm2_135m, real data) are tested beside their run (TESTED_ELSEWHERE).
FORECAST_EXPERIMENTS = [e for e in EXPERIMENTS if e.startswith("forecast_") and e not in TESTED_ELSEWHERE]
CAPTION_EXPERIMENTS = [e for e in EXPERIMENTS if e.startswith("caption_") and e not in TESTED_ELSEWHERE]


def test_every_experiment_is_tested_below_or_beside_its_task():
    here = set(FORECAST_EXPERIMENTS) | set(CAPTION_EXPERIMENTS)
    assert here | set(TESTED_ELSEWHERE) == set(EXPERIMENTS)
    for experiment, test_file in TESTED_ELSEWHERE.items():
        (path,) = (REPO_ROOT / "tests").rglob(test_file)
        assert f"experiment={experiment}" in path.read_text(), test_file


@pytest.mark.parametrize("experiment", FORECAST_EXPERIMENTS)
def test_every_experiment_composes_and_instantiates(experiment, tmp_path):
    cfg = _compose(
        "train",
        [
            f"experiment={experiment}",
            f"paths.run_dir={tmp_path}",
            "logger=csv",
            *TOY_BACKBONE,
            "data=forecast_events",
            f"data.events={tmp_path}/events.jsonl",
        ],
    )
    datamodule, backbone, model, callbacks, trainer = _instantiate_all(cfg, tmp_path)
    level = int(experiment.split("_")[1][1:])
    assert datamodule.levels == (level,) and cfg.task_name == experiment
    assert set(datamodule.ks) == ({int(experiment.rsplit("_k", 1)[1])} if "_k" in experiment else {1, 10})
    assert type(backbone).__name__ == "TinyBackbone" and backbone.sizes["hidden_size"] == 32
    assert (
        model.lora["modules_to_save"] == ["embed_tokens", "lm_head"] and model.model is None
    )  # no weights yet
    assert model.optimizer_factory.keywords["lr"] == 2e-3  # finetune/tiny.yaml: a random model learns faster
    assert {type(c).__name__ for c in callbacks} >= {"AdapterCheckpoint", "GenerationEvalCallback"}
    assert trainer.max_epochs == cfg.trainer.max_epochs


@pytest.mark.parametrize("experiment", CAPTION_EXPERIMENTS)
def test_every_caption_experiment_composes_and_instantiates(experiment, tmp_path):
    cfg = _compose("train", [f"experiment={experiment}", f"paths.run_dir={tmp_path}", "logger=csv", *TOY_BACKBONE])
    datamodule, backbone, model, callbacks, _trainer = _instantiate_all(cfg, tmp_path)
    assert type(datamodule).__name__ == "CaptionDataModule" and type(model).__name__ == "CaptionModule"
    # the captioner trains its vision path: LoRA on the tower, or the whole (random toy) tower saved
    trains_vision = model.lora_vision or "visual" in (model.lora or {}).get("modules_to_save", [])
    assert trains_vision and backbone.architecture.endswith("_vl") and cfg.task_name == experiment
    assert cfg.objective == "val/caption_f1" and cfg.objective_mode == "max" and cfg.eval_task == "caption"
    checkpoint = next(c for c in callbacks if type(c).__name__ == "AdapterCheckpoint")
    assert checkpoint.monitor == "val/caption_f1" and checkpoint.mode == "max"
    evaluation = next(c for c in callbacks if type(c).__name__ == "GenerationEvalCallback")
    assert evaluation.task_name == "caption" and evaluation.score_options["judge"] == "exact"


def test_a_test_metric_is_never_the_checkpoint_monitor(tmp_path):
    for task in ("forecast", "caption"):
        cfg = _compose("train", [f"task={task}", f"paths.run_dir={tmp_path}"])
        assert str(cfg.callbacks.model_checkpoint.monitor).startswith("val/")


@pytest.mark.parametrize(
    "backbone_name, model_kind", [("qwen2_5_vl_7b", "vlm"), ("qwen3_vl_8b", "vlm"), ("qwen3_8b", "causal_lm")]
)
def test_the_gpu_command_instantiates_everything_but_the_weights(backbone_name, model_kind, tmp_path):
    # python train.py experiment=forecast_l3 backbone=<name> trainer=gpu
    cfg = _compose(
        "train",
        [
            "experiment=forecast_l3",
            f"backbone={backbone_name}",
            "trainer=gpu",
            f"paths.run_dir={tmp_path}",
            "logger=csv",
        ],
    )
    assert cfg.trainer.accelerator == "gpu" and cfg.trainer.precision == "bf16-true"
    gpu = torch.cuda.is_available()
    datamodule, backbone, model, _callbacks, _trainer = _instantiate_all(
        cfg, tmp_path, accelerator=None if gpu else "cpu"
    )
    assert backbone.path.startswith("Qwen/") and backbone.kind == model_kind and backbone.dtype is None
    assert model.lora["r"] == 16 and model.lora["modules_to_save"] is None and model.model is None
    assert model.optimizer_factory.keywords["lr"] == 2e-4
    assert model.lora["exclude_modules"] == ".*visual.*"
    assert datamodule.levels == (3,)


def test_the_big_backbones_lora_touches_only_the_language_model(tmp_path):
    """The qwen2_5_vl_7b LoRA settings applied to the same architecture at toy size."""
    from peft import LoraConfig, get_peft_model

    from egohorizon.backbones import TinyBackbone

    lora = _compose("train", ["backbone=qwen2_5_vl_7b", f"paths.run_dir={tmp_path}"]).model.lora
    backbone = TinyBackbone(
        cache_dir=str(tmp_path),
        hidden_size=32,
        intermediate_size=64,
        num_layers=1,
        num_heads=2,
        num_kv_heads=1,
        vocab_size=300,
    )
    backbone.prepare(corpus=lambda: ["have breakfast", "ride to work"] * 20)
    model = get_peft_model(backbone.load_model(), LoraConfig(task_type="CAUSAL_LM", **dict(lora)))
    adapted = [name for name, _ in model.named_modules() if name.endswith("lora_A")]
    assert adapted and all("language_model" in name for name in adapted)
    assert not any("visual" in name for name in adapted)
    assert len(adapted) == 7  # q, k, v, o, gate, up, down of the one layer


def test_experiment_files_are_diffs_that_say_how_to_run_them():
    for path in (CONF / "experiment").glob("*.yaml"):
        lines = path.read_text().splitlines()
        # Hydra reads the package header only from the leading '# @' lines, so it comes first.
        assert lines[0] == "# @package _global_", path
        # The task may be named too (python train.py task=hands experiment=hands_demo), as the issues write it.
        assert re.fullmatch(rf"# python train\.py (task=\w+ )?experiment={path.stem}", lines[1]), path


def test_one_target_per_config_file():
    for path in CONF.rglob("*.yaml"):
        assert path.read_text().count("_target_:") <= 1, path


def test_eval_config_composes_with_the_studies(tmp_path):
    from hydra.utils import get_method

    for sweep in ("context", "levels", "grounding"):
        cfg = _compose("eval", [f"+sweep={sweep}", f"paths.run_dir={tmp_path}"])
        assert cfg.sweep.name == sweep
        assert callable(get_method(cfg.sweep._target_))  # each study is the function its file names


def test_a_study_without_a_function_is_refused_by_name(tmp_path):
    from egohorizon.errors import ConfigError
    from egohorizon.run.studies import run_sweep

    cfg = _compose("eval", ["+sweep=context", "sweep._target_=egohorizon.run.studies.no_such_study",
                            f"paths.run_dir={tmp_path}"])
    with pytest.raises(ConfigError, match="sweep._target_=egohorizon.run.studies.no_such_study"):
        run_sweep(cfg, tmp_path)
    cfg = _compose("eval", [f"paths.run_dir={tmp_path}"])
    assert list(cfg.sweep.n_context if "sweep" in cfg else []) == []
    assert list(_compose("eval", ["+sweep=context", f"paths.run_dir={tmp_path}"]).sweep.n_context) == [
        1,
        3,
        10,
        30,
        100,
        300,
        1000,
        3000,
    ]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_passes_the_settings_checks(experiment, tmp_path):
    """Issue 22 item 11: the bounds train.py checks first never reject a shipped experiment (its header's command)."""
    from egohorizon.run.config_checks import validate_config

    command = (CONF / "experiment" / f"{experiment}.yaml").read_text().splitlines()[1]
    overrides = command.removeprefix("# python train.py ").split()
    validate_config(_compose("train", [*overrides, f"paths.run_dir={tmp_path}"]))


def test_the_eval_studies_pass_the_settings_checks(tmp_path):
    from egohorizon.run.config_checks import validate_config

    for sweep in ("context", "levels", "grounding"):
        validate_config(_compose("eval", [f"+sweep={sweep}", f"paths.run_dir={tmp_path}"]))


@pytest.mark.parametrize("overrides, expected", [
    (["experiment=forecast_l3"], {"prompt": None, "use_chat_template": None, "max_length": 1024, "levels": [3],
                                  "ks": [1, 10], "n_context": 10, "eval_prompt_candidates": 1}),
    (["experiment=caption_demo"], {"prompt": None, "use_chat_template": None, "max_length": None,
                                   "frames_per_window": 2, "crops": True}),
    (["experiment=abstract_demo"], {"prompt": None, "use_chat_template": None, "max_length": 1024}),
])
def test_adapters_record_the_data_settings_their_datamodule_names(overrides, expected, tmp_path):
    """Issue 24: which data settings go beside an adapter is the datamodule's say (ADAPTER_SETTINGS), not a
    list of every task's keys in egohorizon.run."""
    from egohorizon.run.setup import _data_settings

    assert _data_settings(_compose("train", [*overrides, f"paths.run_dir={tmp_path}"])) == expected


@pytest.mark.parametrize("target, expected", [
    ("datamodules.forecast.ForecastDataModule", {"use_chat_template": False, "max_length": 512, "n_context": 4,
                                                "eval_prompt_candidates": 1}),
    ("datamodules.caption.CaptionDataModule", {"use_chat_template": False, "max_length": 512,
                                               "frames_per_window": 2, "crops": True}),
    ("datamodules.abstract.AbstractDataModule", {"use_chat_template": False, "max_length": 512}),
])
def test_compare_prompts_each_adapter_with_what_its_datamodule_says_shapes_a_prompt(target, expected, tmp_path):
    """Issue 24: the recorded settings compare applies come from the datamodule class (PROMPT_SETTINGS),
    not from a list of forecasting's keys in egohorizon.run; the prompt name and the items' settings
    (levels, K) are never taken from the adapter."""
    from egohorizon.checkpoints import ADAPTER_META_FILE
    from egohorizon.run.comparison_eval import adapter_data

    recorded = {"prompt": "forecast", "use_chat_template": False, "max_length": 512, "levels": [3], "ks": [1],
                "n_context": 4, "eval_prompt_candidates": 1, "frames_per_window": 2, "crops": True}
    (tmp_path / ADAPTER_META_FILE).write_text(json.dumps({"data": recorded}))
    (tmp_path / "adapter_config.json").write_text("{}")
    assert adapter_data(tmp_path, target) == expected
    assert adapter_data(tmp_path / "missing", target) == {}


def test_in_context_settings_are_the_datamodules_say(tmp_path):
    """An untrained backbone prompted in context: forecasting asks for every candidate in one answer; the
    other tasks keep their own prompt."""
    from egohorizon.run.eval_build import prompt_settings
    from egohorizon.run.eval_target import EvalTarget

    forecast = _compose("eval", ["model.generation.num_candidates=3", f"paths.run_dir={tmp_path}"])
    assert prompt_settings(forecast, EvalTarget(ckpt=None)) == {"eval_prompt_candidates": 3}
    abstract = _compose("eval", ["task=abstract", f"paths.run_dir={tmp_path}"])
    assert prompt_settings(abstract, EvalTarget(ckpt=None)) == {}
