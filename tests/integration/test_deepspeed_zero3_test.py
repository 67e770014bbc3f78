"""ZeRO-3 test after fit: Lightning's ``trainer.test(ckpt_path=best)`` loads the best checkpoint
through an engine without optimizer and DeepSpeed fails (``_restore_from_bit16_weights`` on
``DeepSpeedZeRoOffload``, DeepSpeed issue #7272), so every ZeRO-3 train.py run ended FAILED with no
metrics.json. train.py now consolidates the best state's trainable weights and loads them into the
partitioned model (``checkpoints.load_into_partitioned``), then tests that. Two CPU processes over gloo
train the run's module with raw DeepSpeed ZeRO-3 as test_deepspeed_export does (Lightning's strategy
refuses a CPU), save the "best" state, train on, and load the best state back both ways."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_deepspeed_export import (
    CORPUS,
    WORLD_SIZE,
    LightningLikeWrapper,
    build_module,
    free_port,
    probe_batch,
    write_run_config,
)

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("peft")

CONFIG = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": 3}, "zero_allow_untested_optimizer": True}


def _steps(engine, module, rank: int, first: int, n: int) -> None:
    for step in range(first, first + n):
        ids = module.tokenizer([CORPUS[(step * WORLD_SIZE + rank) % len(CORPUS)]], return_tensors="pt")
        loss = engine(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"], labels=ids["input_ids"]).loss
        engine.backward(loss)
        engine.step()


def _logits(engine, module):
    engine.eval()
    with torch.no_grad():
        out = engine(**probe_batch(module)).logits
    engine.train()
    return out


def rank_main(rank: int, port: int, run_dir: Path) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), LOCAL_RANK=str(rank))
    import deepspeed

    from egohorizon.checkpoints import load_into_partitioned, read_checkpoint

    module = build_module(run_dir)
    deepspeed.init_distributed(dist_backend="gloo")
    params = [p for p in module.parameters() if p.requires_grad]
    engine, *_ = deepspeed.initialize(model=LightningLikeWrapper(module), optimizer=module.optimizer_factory(params),
                                      config=CONFIG)
    _steps(engine, module, rank, 0, 2)
    best = run_dir / "checkpoints" / "best.ckpt"
    engine.save_checkpoint(str(best), tag="checkpoint", client_state={"global_step": 2})
    best_logits = _logits(engine, module)
    _steps(engine, module, rank, 2, 2)  # training goes on past the best state
    moved = float((_logits(engine, module) - best_logits).abs().max())
    loaded = load_into_partitioned(module, read_checkpoint(best))
    reloaded = float((_logits(engine, module) - best_logits).abs().max())
    # What Lightning's test does: an engine without optimizer, load_checkpoint(load_optimizer_states=False).
    # trainer.test(model) without ckpt_path, as run.test now calls it: a new engine without optimizer
    # over the same (loaded, partitioned) module.
    inference, *_ = deepspeed.initialize(model=LightningLikeWrapper(module), config=CONFIG)
    tested = float((_logits(inference, module) - best_logits).abs().max())
    error = ""
    try:
        inference.load_checkpoint(str(best), load_optimizer_states=False, load_lr_scheduler_states=False,
                                  load_module_strict=False)
    except Exception as raised:  # noqa: BLE001 (the DeepSpeed defect: recorded, asserted by the test)
        error = f"{type(raised).__name__}: {raised}"
    if rank == 0:
        (run_dir / "result.json").write_text(json.dumps({"moved": moved, "reloaded": reloaded, "loaded": loaded,
                                                         "tested": tested, "lightning_path_error": error}))
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_zero3_best_state_loads_into_the_partitioned_model_where_lightnings_path_fails(repo_root, tmp_path,
                                                                                        monkeypatch):
    import torch.multiprocessing as mp

    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    run_dir = tmp_path / "run"
    write_run_config(repo_root, run_dir, tmp_path / "cache")
    build_module(run_dir)  # builds the tiny backbone once, before the workers
    mp.spawn(rank_main, args=(free_port(), run_dir), nprocs=WORLD_SIZE, join=True)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["moved"] > 1e-3  # the two extra steps changed the outputs
    assert result["loaded"] > 0 and result["reloaded"] < 1e-5, result
    assert result["tested"] < 1e-5, result  # what the test engine sees is the best state
    assert "_restore_from_bit16_weights" in result["lightning_path_error"], result
