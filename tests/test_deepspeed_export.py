"""A real DeepSpeed ZeRO-2/3 checkpoint of the LoRA-wrapped tiny backbone converts to a PEFT adapter
that reproduces the trained model's outputs.

Lightning's DeepSpeed strategy refuses to start without CUDA, but DeepSpeed itself runs ZeRO on CPU
over gloo. So two processes train the ForecastModule's model with raw ``deepspeed.initialize`` for a
few steps, wrapped the way Lightning wraps it (``_forward_module``), and save with Lightning's client
state; ``egohorizon.checkpoints`` then consolidates the shards (DeepSpeed's zero_to_fp32) and exports
the adapter, which ``PeftModel.from_pretrained`` loads onto a fresh base.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("peft")

from egohorizon.checkpoints import export_adapter, read_checkpoint  # noqa: E402

WORLD_SIZE = 2
STEPS = 3
LORA = dict(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj", "gate_proj"],
            exclude_modules=".*visual.*", modules_to_save=["lm_head"])
CORPUS = [f"at 0{h}:00 wash the dishes, then make coffee number {h}" for h in range(10)] * 3


def tiny_backbone(cache: Path):
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=4, num_kv_heads=2,
                            vocab_size=300, max_position_embeddings=256, cache_dir=str(cache))
    backbone.prepare(corpus=lambda: CORPUS)
    return backbone


def forecast_module(cache: Path):
    from models.forecast import ForecastModule

    module = ForecastModule(backbone=tiny_backbone(cache),
                            optimizer=functools.partial(torch.optim.AdamW, lr=5e-2), lora=dict(LORA))
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


def train_rank(rank: int, stage: int, port: int, cache: Path, out: Path) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), LOCAL_RANK=str(rank))
    import deepspeed

    torch.manual_seed(rank)
    module = forecast_module(cache)
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
    client_state = {"global_step": STEPS, "epoch": 0, "hyper_parameters": dict(module.hparams),
                    "egohorizon": {"backbone": module.backbone.describe(), "model_id": module.backbone.model_id}}
    engine.save_checkpoint(str(out / "last.ckpt"), tag="checkpoint", client_state=client_state)
    engine.eval()
    with torch.no_grad():  # every rank takes part: ZeRO-3 gathers the sharded weights in forward
        logits = engine(**probe_batch(module)).logits
    if rank == 0:
        torch.save(logits, out / "trained_logits.pt")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("stage", [2, 3])
def test_zero_checkpoint_exports_to_an_equivalent_peft_adapter(tmp_path, monkeypatch, stage):
    import torch.multiprocessing as mp
    from peft import PeftModel

    from egohorizon.backbones import load_pretrained_model

    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    cache, out = tmp_path / "cache", tmp_path / "run"
    out.mkdir()
    tiny_backbone(cache)  # built once here; the workers find it in the cache
    mp.spawn(train_rank, args=(stage, free_port(), cache, out), nprocs=WORLD_SIZE, join=True)
    assert (out / "last.ckpt" / "checkpoint").is_dir()

    checkpoint = read_checkpoint(out / "last.ckpt")
    assert checkpoint.kind == "deepspeed" and checkpoint.global_step == STEPS
    assert checkpoint.meta["deepspeed"]["world_size"] == WORLD_SIZE
    adapter = export_adapter(forecast_module(cache), checkpoint, tmp_path / "adapter")
    assert {"adapter_config.json", "adapter_model.safetensors", "prompt.json", "export.json"} <= {
        p.name for p in adapter.iterdir()}

    # A fresh base model plus the exported adapter reproduces the trained engine's outputs ...
    backbone = tiny_backbone(cache)
    fresh = forecast_module(cache)
    peft_model = PeftModel.from_pretrained(load_pretrained_model(backbone.base_path, kind="vlm"), adapter).eval()
    fresh.model = peft_model
    with torch.no_grad():
        exported = fresh(**probe_batch(fresh)).logits
        base = load_pretrained_model(backbone.base_path, kind="vlm").eval()
        fresh.model = base
        untrained = fresh(**probe_batch(fresh)).logits
    trained = torch.load(out / "trained_logits.pt")
    torch.testing.assert_close(exported, trained, atol=1e-5, rtol=1e-5)
    # ... and training moved them away from the base model's (so the comparison means something).
    assert (exported - untrained).abs().max() > 1e-3
