"""The strategy configs compose with the training config and instantiate to what they promise.

Lightning's DeepSpeed strategy only starts on CUDA GPUs, so on a CPU machine this checks the objects
and the refusal; scripts/gpu_check.sh runs them for real on a GPU.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("deepspeed")
pytest.importorskip("lightning")

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from egohorizon.strategies import (
    DEEPSPEED_CONFIG_FILE,
    DeepSpeedStrategy,
    merge_config,
    write_deepspeed_config,
)

DEEPSPEED = {"deepspeed_z2": (2, False), "deepspeed_z3": (3, False), "deepspeed_z3_offload": (3, True)}


def composed(repo_root, tmp_path, *overrides):
    with initialize_config_dir(config_dir=str(repo_root / "conf"), version_base="1.3"):
        return compose("train", overrides=[f"paths.run_dir={tmp_path}", *overrides])


@pytest.mark.parametrize("name", sorted(DEEPSPEED))
def test_deepspeed_configs_instantiate(repo_root, tmp_path, name):
    cfg = composed(repo_root, tmp_path, f"strategy={name}", "trainer.accumulate_grad_batches=4")
    stage, offload = DEEPSPEED[name]
    strategy = instantiate(cfg.strategy)
    assert isinstance(strategy, DeepSpeedStrategy)
    zero = strategy.config["zero_optimization"]
    assert zero["stage"] == stage
    assert ("offload_optimizer" in zero and "offload_param" in zero) == offload
    if offload:
        assert zero["offload_optimizer"]["device"] == "cpu"
        assert strategy.config["zero_force_ds_cpu_optimizer"] is False
    assert strategy.exclude_frozen_parameters  # LoRA: checkpoints hold the adapter, not the base
    assert strategy.config_file == f"{tmp_path}/{DEEPSPEED_CONFIG_FILE}"
    # bf16 and activation checkpointing come with the strategy; accumulation stays the trainer's.
    assert cfg.trainer.precision == "bf16-true"
    assert cfg.model.gradient_checkpointing is True
    assert cfg.trainer.accumulate_grad_batches == 4


def test_ddp_config_instantiates(repo_root, tmp_path):
    from lightning.pytorch.strategies import DDPStrategy

    cfg = composed(repo_root, tmp_path, "strategy=ddp")
    strategy = instantiate(cfg.strategy)
    assert isinstance(strategy, DDPStrategy)
    assert cfg.trainer.precision == "32-true"  # ddp changes nothing else


def test_deepspeed_refuses_a_cpu_with_lightnings_message(repo_root, tmp_path):
    import lightning as L
    import torch

    cfg = composed(repo_root, tmp_path, "strategy=deepspeed_z2")
    trainer = L.Trainer(accelerator="cpu", devices=1, strategy=instantiate(cfg.strategy), max_steps=1,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False)

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            return self.layer(batch[0]).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(2, 2)), batch_size=1)
    with pytest.raises(RuntimeError, match="only supported on CUDA GPUs"):
        trainer.fit(Tiny(), data)


def test_merge_config_merges_nested_keys_without_touching_inputs():
    base = {"zero_optimization": {"stage": 3, "overlap_comm": True}, "bf16": {"enabled": True}}
    merged = merge_config(base, {"zero_optimization": {"stage": 2}, "zero_force_ds_cpu_optimizer": False})
    assert merged == {"zero_optimization": {"stage": 2, "overlap_comm": True}, "bf16": {"enabled": True},
                      "zero_force_ds_cpu_optimizer": False}
    assert base["zero_optimization"]["stage"] == 3


def test_deepspeed_config_file_round_trips(tmp_path):
    config = {"zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 4, "bf16": {"enabled": True}}
    path = write_deepspeed_config(config, tmp_path / "run" / DEEPSPEED_CONFIG_FILE)
    assert json.loads(path.read_text()) == config
