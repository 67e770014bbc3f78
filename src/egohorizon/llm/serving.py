"""Serving a captioner with vLLM for ``slurm/caption_vllm.sbatch``: what to start and how to wait for it.

``plan`` turns what is captioned with (a trained ``*.adapter`` folder, a merged folder written by
``egohorizon export-adapter RUN --merge``, or a hub VLM) into the ``vllm serve`` arguments and the caption
client's arguments, printed as shell assignments for the batch script to ``eval``:

- an adapter with LoRA on the language model only is served as a LoRA module on its base model
  (``--enable-lora --lora-modules caption=ADAPTER``, ``--max-lora-rank`` its rank); the client asks for
  the module's name, which is how vLLM's OpenAI API picks an adapter. An adapter that also trains the
  vision tower, or saves whole modules (``modules_to_save``: embeddings, head), cannot be a vLLM LoRA
  module: it is refused with the merge command to run;
- adapters and merged folders were trained on the raw prompt text (no chat template), so the server gets
  ``RAW_CHAT_TEMPLATE``: the message's text parts as they are, each image as the marker the processor
  expands, where the prompt put it; the client sends the adapter's own prompt file, frame count and
  token budget;
- ``--limit-mm-per-prompt`` is the window's images (frames + the gaze close-up), ``max_pixels`` keeps the
  stored frames' size (``long_side``, 448 px by default, as training saw them), and ``--max-model-len``
  holds the worst case (``context_length``): every image at ``max_pixels``, the prompt's text, the answer;
- the client keeps ``concurrency(max_num_seqs)`` requests in flight: the server's batch plus a few, so
  the server never waits for the next request.

``wait`` polls ``/health`` and then ``/v1/models`` until the served name is listed (or the server process
ends, or the time runs out). Torch-free; transformers is imported only to read a base model's config.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError

SERVED_ADAPTER_NAME = "caption"  # the LoRA module's (or the merged model's) name in vLLM's /v1/models
MERGED_INFO_FILE = "egohorizon_merged.json"  # written by run_export.merge_adapter
DEFAULT_LONG_SIDE = 448  # conf/data/caption.yaml: the long side of the frames the shards store
DEFAULT_PROMPT_TOKENS = 1024  # text besides the images: ~170 for the prompt, <= 400 chars of screen text, speech
IMAGE_MARK = "<|vision_start|><|image_pad|><|vision_end|>"  # egohorizon.prompts.caption.IMAGE_MARK
MARK_TOKENS = 2  # <|vision_start|> and <|vision_end|> around each image's tokens

# vLLM detects the "openai" content format from the loop over message['content'] and gives image parts
# as {"type": "image"}; the text is passed on untouched, as training tokenised it.
RAW_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{ part['text'] }}"
    "{%- elif part['type'] in ['image', 'image_url'] -%}" + IMAGE_MARK +
    "{%- endif -%}{%- endfor -%}{%- endif -%}{%- endfor -%}\n"
)


def image_tokens_at_most(max_pixels: int, patch_size: int, merge_size: int = 2) -> int:
    """Tokens of one image in the prompt at most: Qwen-VL's ``smart_resize`` keeps the area within
    ``max_pixels`` in multiples of ``patch x merge`` pixels a side, each such square one token; plus the
    two marker tokens around them."""
    factor = patch_size * merge_size
    return max(1, max_pixels // factor**2) + MARK_TOKENS


def pixels_for_side(long_side: int, patch_size: int, merge_size: int = 2) -> int:
    """The ``max_pixels`` that leaves a square ``long_side`` frame at its size (rounded up to the grid)."""
    factor = patch_size * merge_size
    side = math.ceil(long_side / factor) * factor
    return side * side


def context_length(images: int, max_pixels: int, patch_size: int, merge_size: int = 2,
                   prompt_tokens: int = DEFAULT_PROMPT_TOKENS, max_new_tokens: int = 256,
                   multiple: int = 256) -> int:
    """``--max-model-len`` for the worst request: ``images`` at ``max_pixels``, the prompt's text and the
    longest answer, rounded up to ``multiple``."""
    need = images * image_tokens_at_most(max_pixels, patch_size, merge_size) + prompt_tokens + max_new_tokens
    return math.ceil(need / multiple) * multiple


def concurrency(max_num_seqs: int) -> int:
    """Requests the client keeps in flight: the server's batch and a few queued (the next requests are
    uploaded and parsed while the batch runs; scripts/bench_caption.py)."""
    return max_num_seqs + max(2, max_num_seqs // 8)


@dataclass
class ServePlan:
    model: str  # what `vllm serve` loads
    served_name: str  # what the client asks for (--model)
    vllm_args: list[str] = field(default_factory=list)
    client_args: list[str] = field(default_factory=list)
    max_model_len: int = 0
    images: int = 0
    max_pixels: int = 0

    def shell(self) -> str:
        quoted = lambda items: " ".join(shlex.quote(str(a)) for a in items)
        return "\n".join([f"SERVE_MODEL={shlex.quote(self.model)}", f"SERVED_NAME={shlex.quote(self.served_name)}",
                          f"MAX_MODEL_LEN={self.max_model_len}", f"VLLM_ARGS=({quoted(self.vllm_args)})",
                          f"CLIENT_ARGS=({quoted(self.client_args)})"]) + "\n"


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: cannot read it as JSON ({error})") from None


VISION_PARTS = ("visual", "vision_tower", "vision_model", "multi_modal_projector")


def adapter_weight_names(adapter: Path) -> list[str]:
    """The tensor names of ``adapter_model.safetensors`` (its header only: no weights are read). peft saves
    ``target_modules`` shortened to name suffixes (``qkv``, ``attn.proj``), so only the weights' full
    names tell where the LoRA sits."""
    from safetensors import safe_open

    path = adapter / "adapter_model.safetensors"
    if not path.is_file():
        return []
    with safe_open(str(path), framework="numpy") as weights:
        return list(weights.keys())


def needs_merge(adapter_config: dict[str, Any], weight_names: list[str] = ()) -> str | None:
    """Why vLLM cannot serve this adapter as a LoRA module (None: it can)."""
    targets = adapter_config.get("target_modules") or []
    names = list(weight_names) + ([targets] if isinstance(targets, str) else list(targets))
    vision = sorted({n.split(".lora_")[0] for n in names if any(p in VISION_PARTS for p in n.split("."))})
    if vision:
        return f"it has LoRA on the vision tower ({len(vision)} modules, e.g. {vision[0]})"
    if adapter_config.get("modules_to_save"):
        return f"it saves whole modules ({', '.join(adapter_config['modules_to_save'])})"
    return None


def vision_grid(base: str, patch_size: int | None = None) -> tuple[int, int]:
    """(patch size, merge size) of the base model's vision tower, from its config."""
    if patch_size:
        return patch_size, 2
    from transformers import AutoConfig

    try:
        vision = AutoConfig.from_pretrained(base).vision_config
    except Exception as error:  # noqa: BLE001 (offline without a copy, no vision config: say what to pass)
        raise ConfigError(f"{base}: cannot read its vision config ({type(error).__name__}: {error}); "
                          "pass --patch-size") from None
    return int(vision.patch_size), int(getattr(vision, "spatial_merge_size", 2))


def _served(model: str) -> tuple[str, str, dict[str, Any], dict[str, Any] | None]:
    """(model to load, served name, adapter meta, adapter config or None) of what is captioned with."""
    path = Path(model).expanduser()
    if (path / "adapter_config.json").is_file():
        # checkpoints.py is the one torch-free reader of adapters and run folders
        from egohorizon.checkpoints import read_adapter_meta

        meta, config = read_adapter_meta(path), _json(path / "adapter_config.json")
        from egohorizon.backbones.composite_names import not_servable

        refusal = not_servable(str(meta.get("base_path") or ""), "served by vLLM, merged or not")
        if refusal:  # before the merge advice: merging is refused for it too
            raise ConfigError(f"{path}: {refusal}")
        why = needs_merge(config, adapter_weight_names(path))
        if why:
            raise ConfigError(f"{path}: vLLM cannot serve this adapter as a LoRA module: {why}. Merge it into its "
                              "base and serve the merged folder: egohorizon export-adapter RUN --merge --out DIR")
        base = str(meta.get("base_path") or meta.get("model_id") or "")
        if not base:
            raise ConfigError(f"{path}/egohorizon_adapter.json: names no base model (base_path)")
        return base, SERVED_ADAPTER_NAME, meta, config
    if (path / MERGED_INFO_FILE).is_file():
        return str(path.resolve()), SERVED_ADAPTER_NAME, _json(path / "egohorizon_adapter.json"), None
    return model, model, {}, None


def plan(model: str, workdir: str | Path, *, max_num_seqs: int = 32, frames_per_window: int | None = None,
         crop: bool | None = None, max_new_tokens: int | None = None, long_side: int = DEFAULT_LONG_SIDE,
         max_pixels: int | None = None, prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
         patch_size: int | None = None) -> ServePlan:
    """What to serve ``model`` with and how the client calls it; the raw chat template goes to ``workdir``."""
    load, name, meta, adapter_config = _served(model)
    trained = bool(meta)
    data, generation = meta.get("data") or {}, meta.get("generation") or {}
    frames = frames_per_window or data.get("frames_per_window") or 8
    with_crop = (data.get("crops") is not False) if crop is None else crop
    new_tokens = max_new_tokens or generation.get("max_new_tokens") or 256
    patch, merge = vision_grid(load, patch_size)
    pixels = max_pixels or pixels_for_side(long_side, patch, merge)
    images = frames + int(with_crop)
    length = context_length(images, pixels, patch, merge, prompt_tokens, new_tokens)
    args = ["--dtype", "bfloat16", "--max-model-len", str(length), "--max-num-seqs", str(max_num_seqs),
            "--limit-mm-per-prompt", json.dumps({"image": images, "video": 0}),
            "--mm-processor-kwargs", json.dumps({"max_pixels": pixels})]
    client = ["--model", name, "--frames-per-window", str(frames), "--max-new-tokens", str(new_tokens),
              "--concurrency", str(concurrency(max_num_seqs))] + ([] if with_crop else ["--no-crop"])
    if adapter_config is None:
        args += ["--served-model-name", name]
    else:  # the base keeps its own name; the LoRA module is asked for by its name
        args += ["--enable-lora", "--lora-modules", f"{name}={Path(model).expanduser().resolve()}",
                 "--max-lora-rank", str(int(adapter_config.get("r") or 16)), "--max-loras", "1"]
    if trained:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "raw_prompt.jinja").write_text(RAW_CHAT_TEMPLATE)
        args += ["--chat-template", str(workdir / "raw_prompt.jinja"), "--chat-template-content-format", "openai"]
        prompt_name = (meta.get("prompt") or {}).get("name", "caption")
        prompt_file = (Path(model).expanduser() / f"{prompt_name}.txt").resolve()
        if not prompt_file.is_file():
            raise ConfigError(f"{prompt_file}: the adapter's prompt file is missing")
        client += ["--prompt", str(prompt_file)]
    return ServePlan(load, name, args, client, length, images, pixels)


def wait_for_server(base_url: str, name: str, timeout: float = 1800.0, pid: int | None = None,
                    poll_s: float = 2.0) -> float:
    """Seconds until ``{root}/health`` answers 200 and ``{base_url}/models`` lists ``name``; ConfigError
    when the server process ``pid`` ends first or ``timeout`` passes."""
    start, root = time.monotonic(), base_url.rstrip("/").removesuffix("/v1")
    problem = "no answer yet"
    while time.monotonic() - start < timeout:
        if pid is not None and not _alive(pid):
            raise ConfigError(f"the server (pid {pid}) ended before it was ready; last: {problem}")
        try:
            with urllib.request.urlopen(f"{root}/health", timeout=10) as reply:
                reply.read()
            with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=10) as reply:
                listed = [m.get("id") for m in json.loads(reply.read()).get("data", [])]
            if name in listed:
                return time.monotonic() - start
            problem = f"/v1/models lists {listed}, not {name!r}"
        except (urllib.error.URLError, OSError, ValueError) as error:
            problem = f"{type(error).__name__}: {getattr(error, 'reason', error)}"
        time.sleep(poll_s)
    raise ConfigError(f"{base_url}: not ready after {timeout:g} s ({problem})")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child that ended but was not reaped yet is a zombie: ended
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m egohorizon.llm.serving", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="print the vllm serve and client arguments as shell assignments")
    p.add_argument("model", help="a *.adapter folder, a merged folder (export-adapter --merge) or a hub VLM")
    p.add_argument("--workdir", required=True, help="folder for the raw chat template")
    p.add_argument("--max-num-seqs", type=int, default=32, help="sequences the server batches (default 32)")
    p.add_argument("--frames-per-window", type=int, help="frames per window (default: the adapter's, else 8)")
    p.add_argument("--no-crop", dest="crop", action="store_false", default=None, help="leave out the close-up")
    p.add_argument("--max-new-tokens", type=int, help="tokens per caption (default: the adapter's, else 256)")
    p.add_argument("--long-side", type=int, default=DEFAULT_LONG_SIDE, help="stored frames' long side, px (448)")
    p.add_argument("--max-pixels", type=int, help="image area bound, px (default: a long-side square)")
    p.add_argument("--prompt-tokens", type=int, default=DEFAULT_PROMPT_TOKENS,
                   help=f"text tokens of a prompt besides the images (default {DEFAULT_PROMPT_TOKENS})")
    p.add_argument("--patch-size", type=int, help="vision patch size, px (default: the base model's config)")
    w = sub.add_parser("wait", help="wait until the server answers /health and lists the model")
    w.add_argument("base_url", help="the server's OpenAI base URL, http://HOST:PORT/v1")
    w.add_argument("--model", required=True, help="the served name /v1/models must list")
    w.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait at most (default 1800)")
    w.add_argument("--pid", type=int, help="the server's process id: stop waiting when it ends")
    args = parser.parse_args(argv)
    try:
        if args.command == "plan":
            made = plan(args.model, args.workdir, max_num_seqs=args.max_num_seqs,
                        frames_per_window=args.frames_per_window, crop=args.crop, max_new_tokens=args.max_new_tokens,
                        long_side=args.long_side, max_pixels=args.max_pixels, prompt_tokens=args.prompt_tokens,
                        patch_size=args.patch_size)
            sys.stdout.write(made.shell())
        else:
            waited = wait_for_server(args.base_url, args.model, args.timeout, args.pid)
            print(f"[serve] {args.base_url} ready after {waited:.0f} s", file=sys.stderr)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
