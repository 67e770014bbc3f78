"""A real DeepSpeed ZeRO-2/3 checkpoint of the LoRA forecaster converts to a PEFT adapter that
reproduces the trained model's outputs.

Lightning's DeepSpeed strategy refuses to start without CUDA, but DeepSpeed itself runs ZeRO on CPU
over gloo. So two processes build the run's ForecastModule from its config (as train.py does), train
it with raw ``deepspeed.initialize`` for a few steps, wrapped the way Lightning wraps it
(``_forward_module``), and save with Lightning's client state into ``<run>/checkpoints/last.ckpt/``.
``egohorizon export-adapter <run>`` then consolidates the shards (DeepSpeed's zero_to_fp32) and writes
the adapter, which ``PeftModel.from_pretrained`` loads onto a fresh base model.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from toy_backbone import TOY_BACKBONE

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("peft")

WORLD_SIZE = 2
STEPS = 3
CORPUS = [f"at 0{h}:00 wash the dishes, then make coffee number {h}" for h in range(10)] * 3
DEEPSPEED_BACKBONE = [*TOY_BACKBONE, "backbone.max_position_embeddings=256"]


def write_run_config(repo_root: Path, run_dir: Path, cache: Path) -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    overrides = ["experiment=forecast_l3", *DEEPSPEED_BACKBONE, f"backbone.cache_dir={cache}", f"paths.run_dir={run_dir}",
                 "model.optimizer.lr=5e-2"]
    with initialize_config_dir(config_dir=str(repo_root / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))


def build_module(run_dir: Path):
    """The run's module, as egohorizon.run builds it (the tiny backbone prepared on a fixed corpus)."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from egohorizon.run.setup import build_model

    cfg = OmegaConf.load(run_dir / "config.yaml")
    backbone = instantiate(cfg.backbone)
    backbone.prepare(corpus=lambda: CORPUS)
    module = build_model(cfg, backbone)
    module.configure_model()
    return module


def probe_batch(module) -> dict:
    ids = module.tokenizer(["at 03:00 wash the dishes, then"], return_tensors="pt")
    return {"input_ids": ids["input_ids"], "attention_mask": ids["attention_mask"]}


class LightningLikeWrapper(torch.nn.Module):
    """What Lightning hands DeepSpeed: the LightningModule under ``_forward_module`` (same state keys)."""

    def __init__(self, module):
        super().__init__()
        self._forward_module = module

    def forward(self, **batch):
        return self._forward_module(**batch)


def train_rank(rank: int, stage: int, port: int, run_dir: Path) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), LOCAL_RANK=str(rank))
    import deepspeed

    module = build_module(run_dir)
    deepspeed.init_distributed(dist_backend="gloo")
    params = [p for p in module.parameters() if p.requires_grad]
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True}
    engine, *_ = deepspeed.initialize(model=LightningLikeWrapper(module), optimizer=module.optimizer_factory(params),
                                      config=config)
    for step in range(STEPS):
        text = CORPUS[(step * WORLD_SIZE + rank) % len(CORPUS)]
        ids = module.tokenizer([text], return_tensors="pt")
        loss = engine(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"], labels=ids["input_ids"]).loss
        engine.backward(loss)
        engine.step()
    # What Lightning's DeepSpeedStrategy.save_checkpoint passes as client state (among other things).
    client_state = {"global_step": STEPS, "epoch": 0, "hyper_parameters": dict(module.hparams),
                    "egohorizon": {"backbone": module.backbone.describe(), "model_id": module.backbone.model_id}}
    engine.save_checkpoint(str(run_dir / "checkpoints" / "last.ckpt"), tag="checkpoint", client_state=client_state)
    engine.eval()
    with torch.no_grad():  # every rank takes part: ZeRO-3 gathers the sharded weights in forward
        logits = engine(**probe_batch(module)).logits
    if rank == 0:
        torch.save(logits, run_dir / "trained_logits.pt")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("stage", [2, 3])
def test_zero_checkpoint_exports_to_an_equivalent_peft_adapter(repo_root, tmp_path, monkeypatch, stage):
    import torch.multiprocessing as mp
    from peft import PeftModel

    from egohorizon.backbones import load_pretrained_model
    from egohorizon.cli import main

    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    write_run_config(repo_root, run_dir, cache)
    base_path = build_module(run_dir).backbone.base_path  # builds the tiny backbone once, before the workers
    mp.spawn(train_rank, args=(stage, free_port(), run_dir), nprocs=WORLD_SIZE, join=True)
    assert (run_dir / "checkpoints" / "last.ckpt" / "checkpoint").is_dir()

    assert main(["export-adapter", str(run_dir), "--out", str(tmp_path / "adapter")]) == 0
    adapter = tmp_path / "adapter"
    assert {"adapter_config.json", "adapter_model.safetensors", "prompt.json", "forecast.txt",
            "egohorizon_adapter.json", "export.json"} <= {p.name for p in adapter.iterdir()}
    info = json.loads((adapter / "export.json").read_text())
    assert info["kind"] == "deepspeed" and info["global_step"] == STEPS
    assert info["deepspeed"]["world_size"] == WORLD_SIZE

    # A fresh base model plus the exported adapter reproduces the trained engine's outputs ...
    module = build_module(run_dir)
    with torch.no_grad():
        module.model = PeftModel.from_pretrained(load_pretrained_model(base_path, kind="vlm"), adapter).eval()
        exported = module(**probe_batch(module)).logits
        module.model = load_pretrained_model(base_path, kind="vlm").eval()
        untrained = module(**probe_batch(module)).logits
    trained = torch.load(run_dir / "trained_logits.pt")
    torch.testing.assert_close(exported, trained, atol=1e-5, rtol=1e-5)
    # ... and training moved them away from the base model's (so the comparison means something).
    assert (exported - untrained).abs().max() > 1e-3
