"""Real-size Qwen2.5-VL-7B and Qwen3-VL-8B with the project's LoRA set-up on one GPU, offline, in minutes.

    python scripts/device_check.py                 # on a CUDA GPU (scripts/device_check.sh wraps it)
    python scripts/device_check.py --dry-run       # the same code on the CPU at toy width (CI)

Each model is built from a hand-written config (the published sizes; no hub, random bf16 weights on the
device), wrapped by ``egohorizon.backbones.lora.add_lora`` with ``conf/finetune/<model>.yaml``'s LoRA
settings, and checked:
  [targets]  LoRA on every language projection (7 per layer: 196 for 7B) and none on the vision tower;
  [params]   trainable parameters = r x (in + out) summed over those projections (40,370,176 for 7B, r=16);
  [zero]     every lora_B is 0 and the logits equal the base model's (adapter disabled) at step 0;
  [train]    5 AdamW steps with gradient checkpointing on a synthetic caption batch (9 images: 8 frames
             and the close-up, at 448 px, with a prompt and a target) give finite losses;
  [zero3]    raw DeepSpeed ZeRO-3 on one rank, in a child process (``zero3_stage``): Qwen2.5-VL-7B made
             inside ``deepspeed.zero.Init``, every gathered lora_B 0 after ``add_lora``, one step, the
             trainable weights saved and read back by ``egohorizon.checkpoints`` (zero_to_fp32,
             ``load_into_partitioned``) into a fresh engine: the same logits; generation with
             ``synced_gpus=True``. Without DeepSpeed (the lent machine has none) it reports "skipped".
Figures: median step time, peak memory, tokens/s, MFU against 989 TFLOP/s (H200 dense bf16) and 790
(what a bf16 matmul reaches there), greedy generation tokens/s. Model FLOPs per step = 2 x forward
(LoRA computes no weight gradients of the base; the checkpointing recompute is not counted); forward =
2 x parameters x tokens for the language model and the vision tower + attention 4 x layers x T^2 x width.
One JSON line at the end; exit 0 when every check passed, 1 otherwise. The main process imports only
torch, transformers, peft, yaml and egohorizon.backbones (no hydra, omegaconf, lightning, deepspeed);
the ZeRO-3 child also imports deepspeed and egohorizon.checkpoints.

Why one file: it is the single script the lent GPU machine runs in one short call (scripts/device_check.sh),
its checks read top to bottom in the order they run, and it must import nothing of the training stack.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PEAK_TFLOPS = {"dense_bf16": 989.0, "measured_bf16": 790.0}  # H200 SXM: spec sheet; a large bf16 matmul there
FORBIDDEN = ("hydra", "omegaconf", "lightning", "deepspeed", "submitit")
LANGUAGE_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# The published sizes (the models' config.json on the hub), and toy ones of the same architectures.
SIZES = {
    "qwen2_5_vl_7b": {
        "text": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
                 "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 128000,
                 "rms_norm_eps": 1e-6, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                                                           "mrope_section": [16, 24, 24]}},
        "vision": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "patch_size": 14,
                   "out_hidden_size": 3584, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]},
    },
    "qwen3_vl_8b": {
        "text": {"hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 262144,
                 "rms_norm_eps": 1e-6, "rope_parameters": {"rope_type": "default", "rope_theta": 5e6,
                                                           "mrope_section": [24, 20, 20], "mrope_interleaved": True}},
        "vision": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16, "patch_size": 16,
                   "out_hidden_size": 4096, "num_position_embeddings": 2304, "deepstack_visual_indexes": [8, 16, 24]},
    },
}
TOY = {
    "qwen2_5_vl_7b": {
        "text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "vocab_size": 512,
                 "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]}},
        "vision": {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                   "fullatt_block_indexes": [1]},
    },
    "qwen3_vl_8b": {
        "text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
                 "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [2, 3, 3],
                                     "mrope_interleaved": True}},
        "vision": {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                   "num_position_embeddings": 64, "deepstack_visual_indexes": [0]},
    },
}


def make_config(name: str, toy: bool = False):
    """The transformers config of ``name`` at its published size (or the toy one, same architecture)."""
    from transformers import Qwen2_5_VLConfig, Qwen3VLConfig

    sizes = SIZES[name]
    if toy:  # the toy overrides the sizes; the rest (rope, patch size) stays as published
        sizes = {part: {**sizes[part], **TOY[name][part]} for part in ("text", "vision")}
    config_class = Qwen2_5_VLConfig if name.startswith("qwen2_5") else Qwen3VLConfig
    # A toy vocabulary of 512 (a 152k one made the CPU steps 5x slower) moves the image tokens' ids into it.
    ids = {"image_token_id": 500, "video_token_id": 501, "vision_start_token_id": 502, "vision_end_token_id": 503}
    config = config_class(text_config=dict(sizes["text"]), vision_config=dict(sizes["vision"]),
                          tie_word_embeddings=False, **(ids if toy else {}))
    config._attn_implementation = "sdpa"
    return config


def expected_lora_params(text, r: int) -> int:
    """r x (in + out) over the 7 projections of every language layer, from the config alone."""
    h, i, heads, kv = text.hidden_size, text.intermediate_size, text.num_attention_heads, text.num_key_value_heads
    head_dim = getattr(text, "head_dim", None) or h // heads
    q, k = heads * head_dim, kv * head_dim
    per_layer = (h + q) + 2 * (h + k) + (q + h) + 3 * (h + i)
    return r * per_layer * text.num_hidden_layers


def lora_settings(name: str) -> dict:
    """The LoRA train.py gives ``backbone=<name>``. A finetune file may only point at a shared one
    (finetune/pretrained_7b_8b.yaml) through its defaults list, so that list is followed here; plain
    yaml, not Hydra, because the lent machine has no Hydra (see FORBIDDEN)."""
    import yaml

    settings = yaml.safe_load((ROOT / "conf" / "finetune" / f"{name}.yaml").read_text()) or {}
    if "lora" in settings:
        return settings["lora"]
    for parent in settings.get("defaults", []):
        if isinstance(parent, str) and parent != "_self_":
            return lora_settings(parent)
    raise KeyError(f"conf/finetune/{name}.yaml: no lora settings, and no defaults entry that has them")


def build(name: str, device: str, toy: bool):
    """(model with LoRA, config, seconds): random bf16 weights made on ``device``, the project's LoRA."""
    import torch
    from transformers import AutoModelForImageTextToText

    from egohorizon.backbones.lora import add_lora

    start = time.perf_counter()
    config = make_config(name, toy)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    model = add_lora(model, lora_settings(name), vision=False)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()  # as models/lora_lm.py: frozen embeddings would cut the checkpointed graph
    if device == "cuda":
        torch.cuda.synchronize()
    return model, config, time.perf_counter() - start


def real_size_counts(name: str) -> dict:
    """The published-size model on the meta device (no memory, no weights) with the project's LoRA: what
    the dry run checks of the real sizes (LoRA targets, trainable and total parameters)."""
    import torch
    from transformers import AutoModelForImageTextToText

    from egohorizon.backbones.lora import add_lora

    config = make_config(name)
    with torch.device("meta"):
        model = add_lora(AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16), lora_settings(name))
    targets = [n for n, m in model.named_modules() if hasattr(m, "lora_A") and len(m.lora_A)]
    return {"lora_targets": len(targets), "lora_targets_vision": sum(".visual." in f".{n}." for n in targets),
            "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "expected_trainable_params": expected_lora_params(config.text_config, lora_settings(name)["r"]),
            "params": sum(p.numel() for p in model.parameters())}


def caption_batch(config, device: str, images: int = 9, side: int = 448, prompt: int = 300, target: int = 64):
    """A synthetic caption sample as the collator makes it: per image its markers around the merged patch
    tokens, then prompt text, then the target (the only labelled tokens); random pixels and text ids."""
    import torch

    vision = config.vision_config
    patch, merge, temporal = vision.patch_size, vision.spatial_merge_size, vision.temporal_patch_size
    grid = side // patch // merge * merge  # patches a side
    per_image = grid * grid // merge**2
    g = torch.Generator().manual_seed(0)
    ordinary = min(150000, config.text_config.vocab_size - 16)  # below the special tokens
    text_ids = lambda n: torch.randint(0, ordinary, (n,), generator=g)
    pieces, kinds = [], []
    for _ in range(images):
        pieces += [torch.tensor([config.vision_start_token_id]), torch.full((per_image,), config.image_token_id),
                   torch.tensor([config.vision_end_token_id]), text_ids(6)]
        kinds += [torch.zeros(1), torch.ones(per_image), torch.zeros(1), torch.zeros(6)]
    pieces += [text_ids(prompt), text_ids(target)]
    kinds += [torch.zeros(prompt), torch.zeros(target)]
    input_ids = torch.cat(pieces)[None]
    labels = torch.full_like(input_ids, -100)
    labels[0, -target:] = input_ids[0, -target:]
    pixels = torch.randn(images * grid * grid, vision.in_channels * temporal * patch * patch, generator=g)
    batch = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels,
             "pixel_values": pixels.to(torch.bfloat16), "image_grid_thw": torch.tensor([[1, grid, grid]] * images),
             "mm_token_type_ids": torch.cat(kinds).to(torch.int)[None]}
    return {k: v.to(device) for k, v in batch.items()}, {"images": images, "image_tokens": images * per_image,
                                                        "patches": images * grid * grid, "tokens": input_ids.shape[1]}


def forward_flops(model, config, shape) -> float:
    """2 x parameters x tokens (language model incl. head, vision tower) + attention 4 x L x T^2 x width."""
    base = model.get_base_model()
    vision = sum(p.numel() for n, p in base.named_parameters() if ".visual." in f".{n}" and "lora_" not in n)
    embed = base.get_input_embeddings().weight.numel()
    language = sum(p.numel() for n, p in base.named_parameters() if ".visual." not in f".{n}" and "lora_" not in n)
    text, T = config.text_config, shape["tokens"]
    width = text.num_attention_heads * (getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads)
    attention = 4 * text.num_hidden_layers * T * T * width
    return 2 * (language - embed) * T + 2 * vision * shape["patches"] + attention


def check_model(name: str, device: str, toy: bool, steps: int) -> dict:
    import torch

    model, config, build_s = build(name, device, toy)
    lora_layers = [n for n, m in model.named_modules() if hasattr(m, "lora_A") and len(m.lora_A)]
    vision_layers = [n for n in lora_layers if ".visual." in f".{n}."]
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    expected = expected_lora_params(config.text_config, lora_settings(name)["r"])
    batch, shape = caption_batch(config, device, side=448 if not toy else 56, prompt=300 if not toy else 20,
                                 target=64 if not toy else 8)
    from egohorizon.backbones.base import needs_mm_token_type_ids

    if not needs_mm_token_type_ids(model):  # transformers versions whose Qwen-VL forward does not take it
        batch.pop("mm_token_type_ids")
    result = {"model": name, "toy": toy, "build_s": round(build_s, 1), **shape,
              **({"real_size": real_size_counts(name)} if toy else {}),
              "lora_targets": len(lora_layers), "lora_targets_vision": len(vision_layers),
              "expected_targets": config.text_config.num_hidden_layers * len(LANGUAGE_TARGETS),
              "trainable_params": trainable, "expected_trainable_params": expected}
    model.eval()
    with torch.no_grad():
        result["lora_B_zero"] = all(bool((m.lora_B[a].weight == 0).all()) for n, m in model.named_modules()
                                    if n in set(lora_layers) for a in m.lora_B)
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        tuned = model(**inputs).logits
        with model.disable_adapter():
            plain = model(**inputs).logits
        result["logits_equal_base"] = bool(torch.equal(tuned, plain))
        result["logits_max_diff_base"] = float((tuned.float() - plain.float()).abs().max())
        del tuned, plain
    result.update(train_steps(model, batch, steps, device))
    flops = 2 * forward_flops(model, config, shape)
    for key, tflops in PEAK_TFLOPS.items():
        result[f"mfu_{key}"] = round(flops / result["median_step_s"] / (tflops * 1e12), 4)
    result["tokens_per_s"] = round(shape["tokens"] / result["median_step_s"], 1)
    result.update(generate(model, batch, device, new_tokens=32 if not toy else 4))
    result["ok"] = (result["lora_targets"] == result["expected_targets"] and not vision_layers
                    and trainable == expected and result["lora_B_zero"] and result["logits_equal_base"]
                    and all(map(_finite, result["losses"])))
    if toy:
        real = result["real_size"]
        result["ok"] = result["ok"] and real["trainable_params"] == real["expected_trainable_params"] \
            and real["lora_targets"] == len(LANGUAGE_TARGETS) * make_config(name).text_config.num_hidden_layers
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def train_steps(model, batch, steps: int, device: str) -> dict:
    import torch

    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-4)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    for _ in range(steps):
        start = time.perf_counter()
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        losses.append(round(loss.item(), 4))
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    return {"steps": steps, "step_s": [round(t, 3) for t in times], "median_step_s": statistics.median(times),
            "losses": losses, "peak_memory_gib": round(peak, 2) if peak is not None else None}


def generate(model, batch, device: str, new_tokens: int) -> dict:
    import torch

    model.eval()
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        start = time.perf_counter()
        out = model.generate(**inputs, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    made = out.shape[1] - inputs["input_ids"].shape[1]
    return {"generated_tokens": made, "generate_tokens_per_s": round(made / seconds, 1)}


ZERO3_CONFIG = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                "zero_optimization": {"stage": 3}, "zero_allow_untested_optimizer": True}


def zero3_stage(name: str, device: str, toy: bool, out_dir: Path) -> dict:
    """Raw DeepSpeed ZeRO-3 on one rank, in its own process (``--zero3-stage``; the check's main process
    imports no DeepSpeed): the model made inside ``deepspeed.zero.Init`` (where Lightning runs
    ``configure_model``), the project's ``add_lora`` (it re-initialises the partitioned LoRA layers),
    every gathered ``lora_B`` 0, one step, the trainable weights saved and consolidated by the project's
    own path (``checkpoints.read_checkpoint`` -> zero_to_fp32, ``load_into_partitioned``) into a fresh
    model and engine built the same way, equal logits, and greedy generation with ``synced_gpus``."""
    import torch

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "29512"), RANK="0",
                      WORLD_SIZE="1", LOCAL_RANK="0")
    import deepspeed

    start = time.perf_counter()
    deepspeed.init_distributed(dist_backend="nccl" if device == "cuda" else "gloo")
    dtype = torch.bfloat16 if device == "cuda" else torch.float32  # ZeRO-3 on the CPU: fp32, as the gloo tests
    config = {**ZERO3_CONFIG, **({"bf16": {"enabled": True}} if device == "cuda" else {})}
    batch, shape = caption_batch(make_config(name, toy), device, side=448 if not toy else 56,
                                 prompt=300 if not toy else 20, target=64 if not toy else 8)
    result = {"model": name, "toy": toy, "world_size": deepspeed.comm.get_world_size(), "dtype": str(dtype),
              "tokens": shape["tokens"]}
    trained, saved, n_trainable = _zero3_train(name, toy, dtype, config, batch, out_dir / "zero3.ckpt", result)
    gc.collect()  # the first engine's memory, before the second model is made
    if device == "cuda":
        torch.cuda.empty_cache()
    _zero3_reload(name, toy, dtype, config, batch, trained, saved, result)
    tolerance = result["tolerance"] = 1e-5 if dtype == torch.float32 else 5e-2
    result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None
    result.update(wall_s=round(time.perf_counter() - start, 1), deepspeed=deepspeed.__version__)
    result["ok"] = (result["partitioned"] and result["lora_layers_reinitialised"] > 0
                    and result["lora_B_absmax"] == 0.0 and _finite(result["loss"])
                    and result["loaded_weights"] == result["saved_weights"] == n_trainable
                    and result["logits_diff_before_load"] > tolerance >= result["logits_diff_after_load"]
                    and result["generated_tokens"] == (4 if toy else 16))
    torch.distributed.destroy_process_group()
    return result


def _zero3_train(name: str, toy: bool, dtype, config: dict, batch: dict, ckpt: Path, result: dict):
    """The first engine: lora_B checked gathered, one step, its logits, the trainable weights saved and
    read back by the project's consolidation (``read_checkpoint`` -> zero_to_fp32)."""
    import deepspeed
    import torch

    from egohorizon.checkpoints import read_checkpoint

    model, layers = _zero3_model(name, toy, dtype, config)
    lora_b = [p for n, p in model.named_parameters() if "lora_B." in n]
    with deepspeed.zero.GatheredParameters(lora_b):
        result["lora_B_absmax"] = max(float(p.detach().abs().max()) for p in lora_b)
    result.update(partitioned=hasattr(lora_b[0], "ds_id"), lora_layers_reinitialised=layers)
    batch = _fit_batch(model, batch, dtype)
    trainable = [p for p in model.parameters() if p.requires_grad]
    engine, *_ = deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(trainable, lr=1e-3), config=config)
    step_start = time.perf_counter()
    loss = engine(**batch).loss
    engine.backward(loss)
    engine.step()
    result.update(loss=round(loss.item(), 4), step_s=round(time.perf_counter() - step_start, 3))
    trained = _zero3_logits(engine, batch)
    engine.save_checkpoint(str(ckpt), tag="step1", client_state={"global_step": 1}, exclude_frozen_parameters=True)
    saved = read_checkpoint(ckpt)
    result["saved_weights"] = len(saved.state_dict)
    return trained, saved, len(trainable)


def _zero3_reload(name: str, toy: bool, dtype, config: dict, batch: dict, trained, saved, result: dict) -> None:
    """A fresh model and engine without optimizer (as run.test's), the saved weights loaded into the
    partitioned model (``load_into_partitioned``): its logits against the trained engine's, then
    greedy generation with ``synced_gpus=True`` (every rank steps until all are done)."""
    import deepspeed
    import torch

    from egohorizon.checkpoints import load_into_partitioned

    fresh, _ = _zero3_model(name, toy, dtype, config)
    batch = _fit_batch(fresh, batch, dtype)
    engine, *_ = deepspeed.initialize(model=fresh, config=config)
    result["logits_diff_before_load"] = float((_zero3_logits(engine, batch) - trained).abs().max())
    result["loaded_weights"] = load_into_partitioned(fresh, saved)
    result["logits_diff_after_load"] = float((_zero3_logits(engine, batch) - trained).abs().max())
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    start = time.perf_counter()
    with torch.no_grad():
        out = fresh.generate(**inputs, max_new_tokens=4 if toy else 16, do_sample=False, synced_gpus=True)
    made = out.shape[1] - inputs["input_ids"].shape[1]
    result.update(generated_tokens=made, generate_tokens_per_s=round(made / (time.perf_counter() - start), 1))


def _zero3_model(name: str, toy: bool, dtype, config: dict):
    """(the peft model, LoRA layers re-initialised): made inside ``zero.Init`` from seed 0, so a second
    build has the same random base, as a run rebuilds its frozen base from the backbone."""
    import deepspeed
    import torch
    from transformers import AutoModelForImageTextToText

    from egohorizon.backbones.lora import add_lora

    model_config = make_config(name, toy)
    # Import the model's module first: inside zero.Init (which patches torch.Tensor.__new__) transformers'
    # lazy import of it reaches torch._dynamo, which then refuses the patched constructor (TypeError).
    AutoModelForImageTextToText._model_mapping[type(model_config)]
    torch.manual_seed(0)
    with deepspeed.zero.Init(config_dict_or_path=config):
        model = AutoModelForImageTextToText.from_config(model_config, dtype=dtype)
        model = add_lora(model, lora_settings(name), vision=False)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    partitioned = sum(hasattr(m.lora_A[a].weight, "ds_id") for m in model.modules()
                      if hasattr(m, "reset_lora_parameters") and hasattr(m, "lora_A") for a in m.lora_A)
    return model, partitioned  # the LoRA layers add_lora found partitioned and re-initialised


def _fit_batch(model, batch: dict, dtype) -> dict:
    from egohorizon.backbones.base import needs_mm_token_type_ids

    batch = {**batch, "pixel_values": batch["pixel_values"].to(dtype)}
    if not needs_mm_token_type_ids(model):
        batch.pop("mm_token_type_ids", None)
    return batch


def _zero3_logits(engine, batch: dict):
    import torch

    engine.eval()
    with torch.no_grad():
        logits = engine(**{k: v for k, v in batch.items() if k != "labels"}).logits.float()
    engine.train()
    return logits


def run_zero3_stage(dry_run: bool, name: str, timeout_s: float) -> dict:
    """The ZeRO-3 stage in a child process (its JSON is the child's last stdout line), or why it did not run."""
    import importlib.util
    import subprocess
    import tempfile

    if importlib.util.find_spec("deepspeed") is None:
        return {"skipped": "deepspeed not installed (see scripts/device_check.sh's header: build and carry a wheel)",
                "ok": True}
    env = {**os.environ, "MASTER_PORT": str(_free_port()), **({"DS_ACCELERATOR": "cpu"} if dry_run else {})}
    with tempfile.TemporaryDirectory() as out_dir:
        command = [sys.executable, str(Path(__file__).resolve()), "--zero3-stage", out_dir, "--models", name,
                   *(["--dry-run"] if dry_run else [])]
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return {"model": name, "ok": False, "error": f"timed out after {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"model": name, "ok": False, "error": f"exit {done.returncode}: {done.stderr[-800:]}"}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _finite(x: float) -> bool:
    import math

    return math.isfinite(x)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="toy width on the CPU (CI); default: real size on CUDA")
    parser.add_argument("--models", default="qwen2_5_vl_7b,qwen3_vl_8b", help="comma-separated (default both)")
    parser.add_argument("--steps", type=int, default=5, help="LoRA steps per model (default 5)")
    parser.add_argument("--zero3-model", default="qwen2_5_vl_7b",
                        help="the model of the raw DeepSpeed ZeRO-3 stage on one rank; 'none' skips it (default qwen2_5_vl_7b)")
    parser.add_argument("--zero3-stage", metavar="DIR", help=argparse.SUPPRESS)  # the stage's own child process
    args = parser.parse_args(argv)
    import torch
    import transformers

    if args.zero3_stage:
        if args.dry_run:
            torch.set_num_threads(min(4, torch.get_num_threads()))
        device = "cpu" if args.dry_run else "cuda"
        print(json.dumps(zero3_stage(args.models, device, args.dry_run, Path(args.zero3_stage))))
        return 0

    start = time.perf_counter()
    device = "cpu" if args.dry_run else "cuda"
    if args.dry_run:
        torch.set_num_threads(min(4, torch.get_num_threads()))
    if device == "cuda" and not torch.cuda.is_available():
        print("device_check: no CUDA GPU visible (torch.cuda.is_available() is False); use --dry-run", file=sys.stderr)
        return 2
    results = []
    for name in args.models.split(","):
        try:
            results.append(check_model(name, device, args.dry_run, args.steps))
        except Exception as error:  # noqa: BLE001 (one model failing still reports the other)
            results.append({"model": name, "ok": False, "error": f"{type(error).__name__}: {error}"[:500]})
        print(f"device_check: {json.dumps(results[-1])}", file=sys.stderr, flush=True)
    if args.zero3_model == "none":
        zero3 = {"skipped": "--zero3-model none", "ok": True}
    else:  # what is left of the shell's timeout, less a margin for the summary
        left = float(os.environ.get("DEVICE_CHECK_TIMEOUT", "480")) - (time.perf_counter() - start) - 15
        zero3 = run_zero3_stage(args.dry_run, args.zero3_model, max(30.0, left))
    print(f"device_check: zero3 {json.dumps(zero3)}", file=sys.stderr, flush=True)
    summary = {"device_check": results, "zero3": zero3, "ok": all(r["ok"] for r in results) and zero3["ok"],
               "wall_s": round(time.perf_counter() - start, 1),
               "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (dry run, toy width)",
               "torch": torch.__version__, "transformers": transformers.__version__,
               "imported_forbidden": sorted(m for m in FORBIDDEN if m in sys.modules)}
    print(json.dumps(summary))
    return 0 if summary["ok"] and not summary["imported_forbidden"] else 1


if __name__ == "__main__":
    sys.exit(main())
