"""scripts/device_check.sh (issue 26 item 8): its dry run (the GPU check's own code on the CPU at toy width,
plus the real sizes on the meta device) passes, and the real-size configs are the published models'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))


def test_real_size_configs_are_the_published_ones_and_lora_counts_by_hand():
    import device_check

    seven = device_check.make_config("qwen2_5_vl_7b")
    text, vision = seven.text_config, seven.vision_config
    assert (text.hidden_size, text.num_hidden_layers, text.num_attention_heads, text.num_key_value_heads,
            text.intermediate_size, text.vocab_size) == (3584, 28, 28, 4, 18944, 152064)
    assert (vision.depth, vision.hidden_size, vision.out_hidden_size, vision.patch_size) == (32, 1280, 3584, 14)
    # Per layer at r=16: q, o 16 x (3584 + 3584); k, v 16 x (3584 + 512); gate, up, down 16 x (3584 + 18944)
    # = 1,441,792; x 28 layers = 40,370,176 (the issue's ~40.4M).
    assert device_check.expected_lora_params(text, 16) == 28 * (2 * 16 * 7168 + 2 * 16 * 4096 + 3 * 16 * 22528) \
        == 40_370_176
    eight = device_check.make_config("qwen3_vl_8b").text_config
    assert (eight.hidden_size, eight.num_hidden_layers, eight.head_dim, eight.num_key_value_heads) == (4096, 36, 128, 8)
    assert device_check.expected_lora_params(eight, 16) == 36 * 16 * (2 * 8192 + 2 * 5120 + 3 * 16384) == 43_646_976


@pytest.mark.slow
def test_dry_run_passes_every_check_and_prints_one_json_line():
    done = subprocess.run(["bash", str(REPO / "scripts/device_check.sh"), "--dry-run"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["ok"] and summary["imported_forbidden"] == []  # none of what the lent machine lacks
    by_model = {r["model"]: r for r in summary["device_check"]}
    assert set(by_model) == {"qwen2_5_vl_7b", "qwen3_vl_8b"}
    for result in by_model.values():
        assert result["lora_targets"] == result["expected_targets"] == 14 and result["lora_targets_vision"] == 0
        assert result["lora_B_zero"] and result["logits_equal_base"]
        assert len(result["losses"]) == result["steps"] == 5 and result["losses"][-1] < result["losses"][0]
        assert result["images"] == 9 and result["tokens"] > result["image_tokens"] and result["median_step_s"] > 0
        assert result["generated_tokens"] == 4
    real = by_model["qwen2_5_vl_7b"]["real_size"]
    assert (real["lora_targets"], real["lora_targets_vision"], real["trainable_params"]) == (196, 0, 40_370_176)
    assert 8.29e9 < real["params"] - real["trainable_params"] < 8.30e9  # Qwen2.5-VL-7B: 8.29B parameters
    real = by_model["qwen3_vl_8b"]["real_size"]
    assert (real["lora_targets"], real["trainable_params"]) == (252, 43_646_976)
    assert 8.76e9 < real["params"] - real["trainable_params"] < 8.78e9  # Qwen3-VL-8B: 8.77B
    # Raw DeepSpeed ZeRO-3 on one rank (gloo on the CPU), in a child process: the main one imported none.
    zero3 = summary["zero3"]
    assert zero3["ok"] and zero3["world_size"] == 1 and zero3["partitioned"], zero3
    assert zero3["lora_layers_reinitialised"] == 14 and zero3["lora_B_absmax"] == 0.0
    # 14 layers x (A, B) saved through zero_to_fp32 and loaded into the fresh partitioned model
    assert zero3["saved_weights"] == zero3["loaded_weights"] == 28
    # the fresh engine (B = 0) differs from the trained one until the saved weights are loaded
    assert zero3["logits_diff_before_load"] > 1e-3 and zero3["logits_diff_after_load"] <= 1e-5
    assert zero3["generated_tokens"] == 4  # synced_gpus=True


def test_zero3_stage_without_deepspeed_reports_skipped(monkeypatch):
    import importlib.util

    import device_check

    # The lent GPU machine has no DeepSpeed: find_spec answers None there, as here after this patch.
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == "deepspeed" else real_find_spec(name, *rest))
    result = device_check.run_zero3_stage(True, "qwen2_5_vl_7b", 30)
    assert result["ok"] and result["skipped"].startswith("deepspeed not installed")


def test_without_a_gpu_the_real_check_says_so_and_exits_2():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    done = subprocess.run(["bash", str(REPO / "scripts/device_check.sh"), "--models", "qwen3_vl_8b"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "no CUDA GPU visible" in done.stderr


@pytest.mark.gpu
def test_on_a_visible_gpu_the_real_size_check_passes():
    """The lent machine's check (issue 26): real-size Qwen2.5-VL-7B with random bf16 weights, the project's
    LoRA, 5 steps on images and generation. Run by `make test` only where a CUDA GPU is visible."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible")
    done = subprocess.run(["bash", str(REPO / "scripts/device_check.sh"), "--models", "qwen2_5_vl_7b"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    result = summary["device_check"][0]
    assert summary["ok"] and result["ok"] and result["lora_targets_vision"] == 0
    assert result["losses"][-1] < result["losses"][0] and result["peak_memory_gib"] > 0
