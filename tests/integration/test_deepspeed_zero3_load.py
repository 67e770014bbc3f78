"""ZeRO-3: a transformers model loaded inside ``deepspeed.zero.Init`` (where Lightning runs
``configure_model``) gets its pretrained weights once ``hf_zero3_config`` is alive, and does not
without it (Lightning issue #19259). Two CPU processes over gloo stand in for two GPUs."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

WORLD_SIZE = 2
CORPUS = [f"cook dinner at {h} then wash the dishes" for h in range(12)] * 3


def tiny_base(cache: Path) -> str:
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1,
                            vocab_size=300, max_position_embeddings=256, cache_dir=str(cache))
    backbone.prepare(corpus=lambda: CORPUS)
    return backbone.base_path


def load_rank(rank: int, port: int, base: str, with_handle: bool, out: Path) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD_SIZE), LOCAL_RANK=str(rank))
    import deepspeed

    deepspeed.init_distributed(dist_backend="gloo")
    try:
        _load_and_compare(rank, base, with_handle, out)
    finally:
        # Leave the group cleanly: a rank that exits while gloo still holds its pair sockets can take
        # the other rank down with SIGABRT at interpreter shutdown (seen once in CI).
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def _load_and_compare(rank: int, base: str, with_handle: bool, out: Path) -> None:
    import deepspeed

    from egohorizon.backbones import load_pretrained_model
    from egohorizon.strategies import hf_zero3_config

    # The reference: the same folder loaded plainly, before the handle makes every load partitioned.
    reference = dict(load_pretrained_model(base, kind="vlm").named_parameters())
    config = {"zero_optimization": {"stage": 3}, "zero_allow_untested_optimizer": True}
    handle = hf_zero3_config(config, "32-true") if with_handle else None  # noqa: F841 (kept alive)
    config["train_micro_batch_size_per_gpu"] = 1
    try:
        # What Lightning's DeepSpeedStrategy.model_sharded_context() wraps configure_model in.
        with deepspeed.zero.Init(config_dict_or_path=config):
            model = load_pretrained_model(base, kind="vlm")
    except Exception as error:  # noqa: BLE001 without the handle: shape-[0] weights break loading (IndexError, size mismatch)
        if rank == 0:
            (out / "error.txt").write_text(f"{type(error).__name__}: {error}")
        return
    mismatched = []
    for name, param in model.named_parameters():
        with deepspeed.zero.GatheredParameters([param]):
            if name not in reference or not torch.equal(param.detach().cpu(), reference[name].detach()):
                mismatched.append(name)
    if rank == 0:
        (out / "mismatched.txt").write_text("\n".join(mismatched))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_zero3_from_pretrained_loads_the_weights_only_with_the_transformers_handle(tmp_path, monkeypatch):
    import torch.multiprocessing as mp

    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    base = tiny_base(tmp_path / "cache")
    with_handle, without = tmp_path / "with", tmp_path / "without"
    with_handle.mkdir()
    without.mkdir()
    mp.spawn(load_rank, args=(free_port(), base, True, with_handle), nprocs=WORLD_SIZE, join=True)
    assert not (with_handle / "error.txt").exists(), (with_handle / "error.txt").read_text()
    assert (with_handle / "mismatched.txt").read_text() == ""
    mp.spawn(load_rank, args=(free_port(), base, False, without), nprocs=WORLD_SIZE, join=True)
    failed = (without / "error.txt").exists() or (without / "mismatched.txt").read_text() != ""
    assert failed, "without the handle the partitioned model should not get the pretrained weights"
