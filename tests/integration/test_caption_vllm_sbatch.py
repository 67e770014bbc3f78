"""Serving a captioner with vLLM (issue 26 item 7): the context budget, the serve plan for each kind of
model, the caption client's request against vLLM's chat API rules, and slurm/caption_vllm.sbatch run by
bash with a fake `vllm` (tests/support/fake_vllm.py: /health, /v1/models, chat completions under vLLM's rules)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from egohorizon.errors import ConfigError
from egohorizon.llm import serving
from egohorizon.llm.serving import (
    RAW_CHAT_TEMPLATE,
    context_length,
    image_tokens_at_most,
    pixels_for_side,
    plan,
)

REPO = Path(__file__).resolve().parents[2]
LANGUAGE = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def test_worst_case_context_by_hand():
    # Qwen2.5-VL: 14-px patches merged 2x2 -> one token per 28 x 28 px. A 448-px square frame is 16 x 16 = 256
    # tokens + the 2 markers; 8 frames + the close-up, 1024 prompt tokens, 256 new: 9 x 258 + 1280 = 3602 -> 3840.
    assert pixels_for_side(448, 14) == 448 * 448 and image_tokens_at_most(448 * 448, 14) == 258
    assert context_length(9, 448 * 448, 14, prompt_tokens=1024, max_new_tokens=256) == 3840
    # Qwen3-VL: 16-px patches -> 32 px a token: 448 = 14 x 32, 196 + 2 tokens; 9 x 198 + 1280 = 3062 -> 3072.
    assert image_tokens_at_most(pixels_for_side(448, 16), 16) == 198
    assert context_length(9, pixels_for_side(448, 16), 16) == 3072
    # A side that is not a multiple of the grid rounds up: 450 px -> 476 = 17 x 28.
    assert pixels_for_side(450, 14) == 476 * 476


@pytest.mark.slow  # imports the image processor (torchvision): ~12 s
def test_the_bound_holds_for_the_processors_own_resize():
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    budget = pixels_for_side(448, 14)
    for height, width in [(448, 448), (336, 448), (448, 252), (1408, 1408), (256, 256), (1080, 1920)]:
        h, w = smart_resize(height, width, factor=28, min_pixels=56 * 56, max_pixels=budget)
        assert h * w // 28**2 + 2 <= image_tokens_at_most(budget, 14), (height, width)
    assert smart_resize(448, 448, factor=28, min_pixels=56 * 56, max_pixels=budget) == (448, 448)  # as trained


def base_model(folder: Path, patch: int = 14) -> Path:
    """A base model folder with only the config (the plan reads the vision tower's grid; nothing loads)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "qwen2_5_vl", "vision_config": {"patch_size": patch, "spatial_merge_size": 2}}))
    return folder


def adapter(folder: Path, base: Path, targets=LANGUAGE, r: int = 16, frames: int = 2, **extra) -> Path:
    """The files a train.py adapter has that the plan reads (no weights: nothing loads them here)."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": r, "target_modules": targets, **extra}))
    meta = {"base_path": str(base), "model_id": "tiny-qwen", "task": "caption",
            "prompt": {"name": "caption", "version": "1"}, "data": {"frames_per_window": frames, "crops": True},
            "generation": {"max_new_tokens": 64}}
    (folder / "egohorizon_adapter.json").write_text(json.dumps(meta))
    shutil.copy(REPO / "src/egohorizon/prompts/caption.txt", folder / "caption.txt")
    return folder


def test_language_lora_adapter_is_served_as_a_lora_module(tmp_path):
    base = base_model(tmp_path / "base")
    made = plan(str(adapter(tmp_path / "a.adapter", base, r=32)), tmp_path / "work", max_num_seqs=16)
    args = made.vllm_args
    assert made.model == str(base) and made.served_name == "caption"
    assert args[args.index("--lora-modules") + 1] == f"caption={(tmp_path / 'a.adapter').resolve()}"
    assert "--enable-lora" in args and args[args.index("--max-lora-rank") + 1] == "32"
    assert "--served-model-name" not in args  # the base keeps its name; the client asks for the module
    assert json.loads(args[args.index("--limit-mm-per-prompt") + 1]) == {"image": 3, "video": 0}  # 2 frames + crop
    assert json.loads(args[args.index("--mm-processor-kwargs") + 1]) == {"max_pixels": 448 * 448}
    assert args[args.index("--max-model-len") + 1] == str(made.max_model_len) == "2048"  # 3 x 258 + 1024 + 64
    assert args[args.index("--max-num-seqs") + 1] == "16"
    assert (tmp_path / "work/raw_prompt.jinja").read_text() == RAW_CHAT_TEMPLATE
    client = made.client_args
    assert client[client.index("--model") + 1] == "caption"
    assert client[client.index("--concurrency") + 1] == "18"  # the batch of 16 + 2 queued
    assert client[client.index("--frames-per-window") + 1] == "2" and "--no-crop" not in client
    assert client[client.index("--max-new-tokens") + 1] == "64"
    assert client[client.index("--prompt") + 1] == str((tmp_path / "a.adapter/caption.txt").resolve())


def test_vision_lora_and_saved_modules_must_be_merged_first(tmp_path):
    base = base_model(tmp_path / "base")
    vision = adapter(tmp_path / "v.adapter", base, targets=LANGUAGE + ["model.visual.blocks.0.attn.qkv"])
    with pytest.raises(ConfigError, match=r"vision tower \(1 modules.*export-adapter RUN --merge --out DIR"):
        plan(str(vision), tmp_path / "work")
    saved = adapter(tmp_path / "s.adapter", base, modules_to_save=["embed_tokens", "lm_head"])
    with pytest.raises(ConfigError, match="saves whole modules \\(embed_tokens, lm_head\\)"):
        plan(str(saved), tmp_path / "work")


def test_a_merged_folder_is_served_as_the_model_and_a_hub_vlm_as_itself(tmp_path):
    merged = base_model(tmp_path / "merged", patch=16)
    (merged / serving.MERGED_INFO_FILE).write_text("{}")
    meta = {"prompt": {"name": "caption"}, "data": {"frames_per_window": 8, "crops": False}}
    (merged / "egohorizon_adapter.json").write_text(json.dumps(meta))
    shutil.copy(REPO / "src/egohorizon/prompts/caption.txt", merged / "caption.txt")
    made = plan(str(merged), tmp_path / "work")
    assert made.model == str(merged.resolve()) and "--enable-lora" not in made.vllm_args
    assert made.vllm_args[made.vllm_args.index("--served-model-name") + 1] == "caption"
    assert made.images == 8 and "--no-crop" in made.client_args and made.max_model_len == 3072  # 8 x 198 + 1024 + 256
    hub = plan("Qwen/Qwen3-VL-8B-Instruct", tmp_path / "work2", patch_size=16)
    assert hub.served_name == "Qwen/Qwen3-VL-8B-Instruct" and "--chat-template" not in hub.vllm_args
    assert "--prompt" not in hub.client_args and hub.images == 9


def test_the_request_follows_vllms_chat_rules_and_the_template_gives_the_training_text():
    """The body the client posts: the LoRA module's name as model, one user message whose parts are text and
    image_url data URLs; the raw template (as vLLM renders parts: image_url -> {"type": "image"}) gives back
    exactly the prompt text the adapter was trained on (caption_sample's)."""
    import jinja2
    import numpy as np

    from egohorizon.llm.images import sample_messages
    from egohorizon.llm.openai_http import OpenAIChatBackend
    from egohorizon.prompts.caption import render_caption_prompt

    text = render_caption_prompt([0, 15], "hello there", with_crop=True)
    frames = [np.full((64, 48, 3), 40 * i, np.uint8) for i in range(3)]
    sent = []
    backend = OpenAIChatBackend("http://127.0.0.1:9/v1", "caption")
    backend._post = lambda body: sent.append(json.loads(json.dumps(body))) or {"choices": [{"message": {"content": "x"}}]}
    assert backend.generate(sample_messages(text, frames), max_new_tokens=64) == ["x"]
    body = sent[0]
    assert {k: body[k] for k in ("model", "max_tokens", "temperature", "n")} == \
        {"model": "caption", "max_tokens": 64, "temperature": 0.0, "n": 1}
    (message,) = body["messages"]
    assert message["role"] == "user" and {p["type"] for p in message["content"]} == {"text", "image_url"}
    urls = [p["image_url"]["url"] for p in message["content"] if p["type"] == "image_url"]
    assert len(urls) == 3 and all(u.startswith("data:image/jpeg;base64,") for u in urls)
    as_vllm = [{"role": "user", "content": [p if p["type"] == "text" else {"type": "image"}
                                            for p in message["content"]]}]
    rendered = jinja2.Environment().from_string(RAW_CHAT_TEMPLATE).render(messages=as_vllm)
    assert rendered == text


# ---------------------------------------------------------------------------------------------------
# The batch script, run by bash with a fake vllm
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    from egohorizon.data.demo import ensure_demo_world, load_demo_world
    from egohorizon.data.shards.sources import demo_sources
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig

    world = load_demo_world(ensure_demo_world())
    first = sorted(world.recordings, key=lambda r: (r.day, r.session))[:1]
    out = tmp_path_factory.mktemp("vllm") / "shards"
    build_shards(demo_sources(world, frame_size=128, recordings=first), out,
                 config=WindowConfig(long_side=128, crop_size=32, stride=40), samples_per_shard=4)
    return out


def run_sbatch(tmp_path: Path, shards: Path, model: str, *, task: int = 1, **env: str):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "vllm"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} {REPO / 'tests/support/fake_vllm.py'} \"$@\"\n")
    fake.chmod(0o755)
    environ = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "EGOHORIZON_PYTHON": sys.executable,
               "SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MAX": "1", "SLURM_SUBMIT_DIR": str(REPO),
               "FAKE_VLLM_DIR": str(tmp_path / "fake"), "FAKE_VLLM_DELAY": "2", **env}
    return subprocess.run(["bash", str(REPO / "slurm/caption_vllm.sbatch"), str(shards), str(tmp_path / "out"),
                           model], check=False, env=environ, capture_output=True, text=True, timeout=240)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"


@pytest.mark.slow
def test_sbatch_waits_for_its_nodes_server_captions_through_it_and_stops_it(tmp_path, shards):
    model = adapter(tmp_path / "a.adapter", base_model(tmp_path / "base"))
    done = run_sbatch(tmp_path, shards, str(model))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    started = json.loads((tmp_path / "fake/started.json").read_text())
    assert started["host"] == socket.gethostname() and started["names"] == [str(tmp_path / "base"), "caption"]
    argv = started["argv"]
    assert argv[:2] == ["serve", str(tmp_path / "base")] and "--enable-lora" in argv
    assert f"http://{socket.gethostname()}:{started['port']}/v1" in done.stdout  # this node's URL, this port
    assert "ready after" in done.stderr
    requests = [json.loads(line) for line in (tmp_path / "fake/requests.jsonl").read_text().splitlines()]
    results = [json.loads(line) for line in (tmp_path / "out/captions.part-0001-of-0002.jsonl").read_text().splitlines()]
    ok = [r for r in results if r["status"] == "ok"]
    assert ok and len(requests) == len(ok)  # every request answered, none refused, none retried
    assert all(r["problem"] is None and r["model"] == "caption" and r["images"] == 3 for r in requests)
    assert all(r["text"].startswith("t=") and "Write what the wearer does" in r["text"] for r in requests)
    assert json.loads((tmp_path / "fake/stopped.json").read_text())["pid"] == started["pid"]
    assert not pid_alive(started["pid"]) and "stopped" in done.stdout


@pytest.mark.slow
def test_sbatch_fails_naming_the_servers_log_when_it_never_comes_up(tmp_path, shards):
    model = adapter(tmp_path / "a.adapter", base_model(tmp_path / "base"))
    done = run_sbatch(tmp_path, shards, str(model), task=0, FAKE_VLLM_DELAY="600", VLLM_START_TIMEOUT="4")
    assert done.returncode == 1
    assert "not ready after 4 s" in done.stderr and "did not come up" in done.stderr
    assert not (tmp_path / "out/captions.part-0000-of-0002.jsonl").exists()  # no client ran
    assert "stopped" in done.stdout  # the trap stopped the server still loading


# ---------------------------------------------------------------------------------------------------
# export-adapter --merge: an adapter with vision-tower LoRA as a model vLLM serves
# ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_vision_lora_adapter_merges_into_a_bf16_model_with_the_adapters_outputs(tmp_path):
    import numpy as np
    import torch
    from peft import PeftModel
    from toy_captioner import train_toy_captioner

    from egohorizon.backbones import load_pretrained_model
    from egohorizon.backbones.collate import VisionTextCollator
    from egohorizon.prompts.caption import IMAGE_MARK
    from egohorizon.run.export import merge_adapter

    image = np.random.default_rng(0).integers(0, 255, (32, 32, 3), dtype=np.uint8)
    samples = [{"text": f"t=0s {IMAGE_MARK}\nwhat happens?", "images": [image], "target": "I look around"}]
    module, backbone = train_toy_captioner(samples, tmp_path, [], steps=0, generation={"max_new_tokens": 8},
                                           adapter_metadata={"data": {"frames_per_window": 1, "crops": False}})
    torch.manual_seed(1)
    with torch.no_grad():  # an adapter that moves the outputs (a fresh one has lora_B = 0)
        for name, param in module.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.3)
    saved = module.save_adapter(tmp_path / "v.adapter")
    with pytest.raises(ConfigError, match="vision tower"):
        plan(str(saved), tmp_path / "work")

    merged = merge_adapter(saved, tmp_path / "v.merged")
    info = json.loads((merged / serving.MERGED_INFO_FILE).read_text())
    assert info == {"adapter": str(saved.resolve()), "base": backbone.base_path, "dtype": "bfloat16"}
    assert (merged / "caption.txt").read_text() == (saved / "caption.txt").read_text()
    batch = VisionTextCollator(backbone.load_processor())(samples)
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        model = load_pretrained_model(str(merged), kind="vlm", dtype="auto").eval()
        assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
        got = model(**inputs).logits.float()
        base = load_pretrained_model(backbone.base_path, kind="vlm", dtype="float32").eval()
        plain = base(**inputs).logits
        want = PeftModel.from_pretrained(base, str(saved)).eval()(**inputs).logits
    moved, error = (want - plain).abs().max().item(), (got - want).abs().max().item()
    assert error < 0.05 * moved, (error, moved)  # bf16 rounding, far below what the adapter changes
    served = plan(str(merged), tmp_path / "work", patch_size=8)
    assert served.model == str(merged.resolve()) and "--enable-lora" not in served.vllm_args and served.images == 1


def test_sbatch_refuses_an_adapter_to_merge_before_starting_anything(tmp_path):
    base = base_model(tmp_path / "base")
    model = adapter(tmp_path / "s.adapter", base, modules_to_save=["lm_head"])
    done = run_sbatch(tmp_path, tmp_path / "no-shards", str(model))
    assert done.returncode == 2
    assert "saves whole modules (lm_head)" in done.stderr and "export-adapter RUN --merge" in done.stderr
    assert not (tmp_path / "fake").exists()  # no server was started
