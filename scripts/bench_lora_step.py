"""One LoRA training step on the CPU (issue 37, the demo's budget): the project's loss, with the vocabulary
head applied only from the batch's first answer token on (``LoRALanguageModule._loss``), against the same
step computing transformers' loss over the logits of every position, in one run.

    python scripts/bench_lora_step.py                      # 4 steps of each, batch 4, K = 1 and K = 10 prompts
    python scripts/bench_lora_step.py --steps 6 --batch-size 4 --json step.json

The model is the real SmolLM2-135M-Instruct (backbone=smollm2_135m) with a fresh LoRA (conf/finetune), under
the demo's precision (bf16 autocast where the CPU computes bfloat16 natively, ``egohorizon.precision``),
trained with AdamW; the batches are the EPIC-KITCHENS-100 forecast prompts of scripts/bench_generate.py
(10 context actions) with their true next actions as answers, through the chat template, right-padded,
half K = 1 and half K = 10, as the demo trains. Each path has its own model copy (same initial weights) and
the steps alternate ABBA. Printed: seconds per step of each, their ratio, the two losses of the first step
(equal up to float rounding) and the peak resident memory. Hand-written: no library prints this.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "scripts")]


def training_batches(tokenizer, points: list[dict], batch_size: int) -> list[dict]:
    import torch

    from egohorizon.prompts.forecast import render_forecast_answer, render_forecast_prompt

    rows = []
    for p in points:
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": render_forecast_prompt(p, n_candidates=1)}],
                                               add_generation_prompt=True, tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        answer = tokenizer(render_forecast_answer([p["targets"]]), add_special_tokens=False)["input_ids"]
        rows.append((prompt_ids + answer + [tokenizer.eos_token_id], [-100] * len(prompt_ids) + answer + [tokenizer.eos_token_id]))
    out = []
    for start in range(0, len(rows) - batch_size + 1, batch_size):
        chunk = rows[start:start + batch_size]
        width = max(len(ids) for ids, _ in chunk)
        pad = tokenizer.pad_token_id
        out.append({"input_ids": torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in chunk]),
                    "attention_mask": torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in chunk]),
                    "labels": torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in chunk])})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4, help="timed steps of each path")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ.get("EGOHORIZON_SHARED_DATA") or ROOT.parent / "shared" / "data"))
    parser.add_argument("--cache-dir",
                        default=os.environ.get("EGOHORIZON_TEST_BACKBONES") or str(ROOT / ".cache" / "backbones"))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    import functools

    import torch
    from bench_generate import LORA, epic_points

    from egohorizon.backbones import GGUFBackbone
    from egohorizon.precision import precision_for
    from models.forecast import ForecastModule

    n = args.batch_size * (args.steps + 1)
    points = [p for pair in zip(epic_points(args.data, n // 2 + 1, k=1), epic_points(args.data, n // 2 + 1, k=10))
              for p in pair][:n]  # K = 1 and K = 10 alternate, as the demo's training mixes them
    backbone = GGUFBackbone(cache_dir=args.cache_dir)
    backbone.prepare()
    torch.manual_seed(0)
    project = ForecastModule(backbone, functools.partial(torch.optim.AdamW, lr=5e-4), lora=LORA)
    project.configure_model()
    full = copy.deepcopy(project)
    work = training_batches(project.tokenizer, points, args.batch_size)
    autocast = precision_for("cpu") == "bf16-mixed"
    optimizers = {name: torch.optim.AdamW([p for p in m.model.parameters() if p.requires_grad], lr=5e-4)
                  for name, m in (("project", project), ("full", full))}
    losses = {"project": lambda b: project._loss(b),
              "full": lambda b: full(b["input_ids"], b["attention_mask"], b["labels"]).loss}

    def step(name: str, batch: dict) -> tuple[float, float]:
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = losses[name](batch)
        loss.backward()
        optimizers[name].step()
        optimizers[name].zero_grad()
        return time.perf_counter() - start, float(loss)

    step("project", work[0])  # one-time kernel set-up of each path, untimed
    step("full", work[0])
    seconds = {"project": [], "full": []}
    first = {}
    for i, batch in enumerate(work[1:]):
        for name in ("project", "full") if i % 2 == 0 else ("full", "project"):
            took, loss = step(name, batch)
            seconds[name].append(took)
            first.setdefault(name, loss)
            print(f"step {i + 1} {name:8s} {batch['input_ids'].shape[1]:4d} tokens wide: {took:5.2f} s, loss {loss:.4f}")
    mean = {name: sum(s) / len(s) for name, s in seconds.items()}
    result = {"batch_size": args.batch_size, "steps": args.steps, "threads": torch.get_num_threads(),
              "bf16_autocast": autocast, "seconds_per_step": mean, "ratio": mean["project"] / mean["full"],
              "first_loss": first, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    print(f"answer-only head {mean['project']:.2f} s/step, full logits {mean['full']:.2f} s/step: "
          f"ratio {result['ratio']:.3f}; first losses {first['project']:.4f} / {first['full']:.4f}; "
          f"peak RSS {result['peak_rss_gb']:.1f} GB")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
