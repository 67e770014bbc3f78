"""Batches with and without images on different ranks (QA items with no earlier frames): DDP with LoRA
on the vision tower needs every rank to use the vision parameters at every step, else the rank without
images never reduces their gradients and the other waits for it (a hang until gloo's timeout, then an
error). The collator gives an image-less batch a dummy image whose contribution is zero, so every rank
runs the same modules. Two CPU processes over gloo, the tiny Qwen2.5-VL, raw DDP over the module's
model; a gloo timeout and a join timeout turn a hang into a failure."""

from __future__ import annotations

import datetime
import functools
import json
import os
from pathlib import Path

import pytest
from test_deepspeed_zero3_load import free_port

torch = pytest.importorskip("torch")

WORLD_SIZE = 2
CORPUS = ["what am I doing now?", "I stir the bowl", "I walk to my desk", "the kitchen, the office"] * 20
TOY = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
       "vocab_size": 300}
LORA = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"],
        "exclude_modules": ".*visual.*"}


def backbone(cache: str):
    from egohorizon.backbones import TinyBackbone

    bb = TinyBackbone(architecture="qwen2_5_vl", cache_dir=cache, **TOY)
    bb.prepare(corpus=lambda: CORPUS)
    return bb


def rank_batch(processor, rank: int) -> dict:
    """Rank 0: a sample with a frame; rank 1: text only (no pixel_values before the fix)."""
    import numpy as np

    from egohorizon.backbones.collate import VisionTextCollator

    images = [np.random.default_rng(0).integers(0, 255, (56, 56, 3), dtype=np.uint8)] if rank == 0 else []
    return VisionTextCollator(processor)([{"text": "what am I doing now?", "images": images,
                                           "target": "I stir the bowl"}])


def ddp_rank(rank: int, port: int, cache: str, out: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from models.lora_lm import LoRALanguageModule

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=datetime.timedelta(seconds=60))
    try:
        torch.manual_seed(0)
        module = LoRALanguageModule(backbone(cache), functools.partial(torch.optim.SGD, lr=0.5), lora=LORA,
                                    lora_vision=True, prompt="forecast")
        module.configure_model()
        batch = rank_batch(module.backbone.load_processor(), rank)
        module.model = DistributedDataParallel(module.model)  # find_unused_parameters=False: Lightning's ddp
        optimizer = torch.optim.SGD([p for p in module.model.parameters() if p.requires_grad], lr=0.5)
        for _ in range(2):
            optimizer.zero_grad()
            module._loss(batch).backward()
            optimizer.step()
        vision = {n: p for n, p in module.model.named_parameters() if p.requires_grad and ".visual." in n}
        flat = torch.cat([p.detach().flatten() for p in vision.values()])
        gathered = [torch.zeros_like(flat) for _ in range(WORLD_SIZE)]
        dist.all_gather(gathered, flat)
        has_images = [None] * WORLD_SIZE
        dist.all_gather_object(has_images, "pixel_values" in batch)
        if rank == 0:
            Path(out).write_text(json.dumps({"vision_params": len(vision), "has_images": has_images,
                                             "ranks_differ": float((gathered[0] - gathered[1]).abs().max())}))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_ddp_with_vision_lora_trains_when_only_one_rank_has_images(tmp_path):
    import torch.multiprocessing as mp

    cache = str(tmp_path / "cache")
    backbone(cache)  # built once, before the workers
    out = tmp_path / "result.json"
    context = mp.spawn(ddp_rank, args=(free_port(), cache, str(out)), nprocs=WORLD_SIZE, join=False)
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=180)
    while not context.join(timeout=5):
        if datetime.datetime.now() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the ranks hung (mixed image/text batches)")
    result = json.loads(out.read_text())
    assert result["has_images"] == [True, True]  # the text-only rank's batch carries the dummy image
    assert result["vision_params"] > 0 and result["ranks_differ"] == 0.0  # DDP kept the vision LoRA in sync


@pytest.mark.slow
def test_the_dummy_image_changes_neither_the_loss_nor_the_generation(tmp_path):
    from egohorizon.backbones.collate import IGNORE_INDEX, VisionTextCollator
    from models.lora_lm import LoRALanguageModule

    torch.manual_seed(0)
    module = LoRALanguageModule(backbone(str(tmp_path)), functools.partial(torch.optim.SGD, lr=0.1), lora=LORA,
                                lora_vision=True, prompt="forecast",
                                generation={"strategy": "beam", "num_candidates": 1, "max_new_tokens": 5})
    module.configure_model()
    module.eval()
    processor = module.backbone.load_processor()
    samples = [{"text": "what am I doing now?", "images": [], "target": "I stir the bowl"},
               {"text": "the kitchen", "images": [], "target": "I walk to my desk now"}]
    plain = VisionTextCollator(processor, with_prompts=True, dummy_image=False)(samples)
    dummy = VisionTextCollator(processor, with_prompts=True)(samples)
    assert "pixel_values" not in plain and dummy["image_grid_thw"].tolist() == [[1, 4, 4]]
    extra = dummy["input_ids"].shape[1] - plain["input_ids"].shape[1]
    assert extra == 4 + 2  # 16 patches merged 2x2, between vision start and end
    assert (dummy["labels"][0, -extra:] == IGNORE_INDEX).all() and dummy["prompt_mask"][0, :extra].sum() == 0
    with torch.no_grad():
        torch.testing.assert_close(module._loss(dummy), module._loss(plain), atol=1e-5, rtol=1e-5)
    assert module.generate_texts(dummy) == module.generate_texts(plain)


def zero3_rank(rank: int, port: int, cache: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), LOCAL_RANK=str(rank))
    import deepspeed

    from models.lora_lm import LoRALanguageModule

    torch.manual_seed(0)
    module = LoRALanguageModule(backbone(cache), functools.partial(torch.optim.SGD, lr=0.5), lora=LORA,
                                lora_vision=True, prompt="forecast")
    module.configure_model()
    batch = rank_batch(module.backbone.load_processor(), rank)
    deepspeed.init_distributed(dist_backend="gloo", timeout=datetime.timedelta(seconds=60))
    params = [p for p in module.parameters() if p.requires_grad]
    config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3},
              "zero_allow_untested_optimizer": True}
    engine, *_ = deepspeed.initialize(model=module, optimizer=torch.optim.SGD(params, lr=0.5), config=config)
    losses = []
    for _ in range(2):
        loss = module._loss(batch)  # through the partitioned modules: ZeRO-3 gathers as they run
        engine.backward(loss)
        engine.step()
        losses.append(float(loss))
    if rank == 1:
        Path(out).write_text(json.dumps({"losses": losses, "has_images": "pixel_values" in batch}))
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_zero3_with_vision_lora_steps_when_only_one_rank_has_images(tmp_path, monkeypatch):
    import torch.multiprocessing as mp

    pytest.importorskip("deepspeed")
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    cache = str(tmp_path / "cache")
    backbone(cache)
    out = tmp_path / "result.json"
    context = mp.spawn(zero3_rank, args=(free_port(), cache, str(out)), nprocs=WORLD_SIZE, join=False)
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=180)
    while not context.join(timeout=5):
        if datetime.datetime.now() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the ZeRO-3 ranks hung (mixed image/text batches)")
    result = json.loads(out.read_text())
    assert result["has_images"] and len(result["losses"]) == 2  # the text-only rank stepped twice
