"""ZeRO-3 LoRA starts at zero: peft's adapter created inside ``deepspeed.zero.Init`` (where Lightning
runs ``configure_model``) is partitioned as it is made, so peft's init hits empty tensors and
``lora_B`` keeps nn.Linear's random init. ``add_lora`` re-initialises it gathered: ``lora_B == 0`` and
the wrapped model's logits are the base model's at step 0. Two CPU processes over gloo stand in for
two GPUs (the raw DeepSpeed that Lightning's strategy drives; that strategy refuses a CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("peft")

from test_deepspeed_zero3_load import WORLD_SIZE, free_port, tiny_base

LORA = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj", "down_proj"],
        "exclude_modules": ".*visual.*"}


def lora_rank(rank: int, port: int, base: str, out: Path) -> None:
    import os

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), LOCAL_RANK=str(rank))
    import deepspeed

    deepspeed.init_distributed(dist_backend="gloo")
    try:
        result = _build_and_inspect(base)
        if rank == 0:
            (out / "result.json").write_text(json.dumps(result))
    finally:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def _lora_absmax(model, which: str) -> float:
    import deepspeed

    values = [p for n, p in model.named_parameters() if f"{which}." in n]
    with deepspeed.zero.GatheredParameters(values):
        return max(float(p.detach().abs().max()) for p in values)


def _build_and_inspect(base: str) -> dict:
    import deepspeed
    from peft import LoraConfig, get_peft_model

    from egohorizon.backbones import load_pretrained_model
    from egohorizon.backbones.lora import add_lora
    from egohorizon.strategies import hf_zero3_config

    torch.manual_seed(0)
    ids = torch.randint(5, 290, (2, 9))
    reference = load_pretrained_model(base, kind="vlm").eval()
    with torch.no_grad():
        base_logits = reference(input_ids=ids).logits
    config = {"zero_optimization": {"stage": 3}, "zero_allow_untested_optimizer": True,
              "train_micro_batch_size_per_gpu": 1}
    handle = hf_zero3_config(config, "32-true")  # noqa: F841 (kept alive: partitioned from_pretrained)
    with deepspeed.zero.Init(config_dict_or_path=config):
        # peft alone, as configure_model did before: the defect this test guards against
        plain = get_peft_model(load_pretrained_model(base, kind="vlm"), LoraConfig(task_type="CAUSAL_LM", **LORA))
    with deepspeed.zero.Init(config_dict_or_path=config):
        model = add_lora(load_pretrained_model(base, kind="vlm"), LORA)
    model.eval()
    with deepspeed.zero.GatheredParameters(list(model.parameters())), torch.no_grad():
        logits = model(input_ids=ids).logits
    return {"plain_lora_B": _lora_absmax(plain, "lora_B"), "lora_B": _lora_absmax(model, "lora_B"),
            "lora_A": _lora_absmax(model, "lora_A"), "partitioned": hasattr(next(model.parameters()), "ds_id"),
            "logits_diff": float((logits - base_logits).abs().max())}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_zero3_lora_starts_at_zero_and_leaves_the_base_models_logits(tmp_path, monkeypatch):
    import torch.multiprocessing as mp

    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    base = tiny_base(tmp_path / "cache")
    mp.spawn(lora_rank, args=(free_port(), base, tmp_path), nprocs=WORLD_SIZE, join=True)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["partitioned"]
    assert result["plain_lora_B"] > 0  # peft's zeros_ ran on an empty shard: B kept its random init
    assert result["lora_B"] == 0.0 and result["lora_A"] > 0
    assert result["logits_diff"] < 1e-5, result
