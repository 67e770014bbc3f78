"""Training throughput on the CPU (issue 23 item 5): train.py's path against a bare PyTorch loop over the same
model, batches and sequences, and bf16 autocast against float32; padding waste of the batches.

    python scripts/bench_train_cpu.py                     # experiment=forecast_epic_smollm2, 8 steps of 4
    python scripts/bench_train_cpu.py --steps 12 experiment=forecast_l3 backbone=smollm2_135m

Four timed runs, each from the same freshly built LoRA model (seed 0) over the same training batches
(the datamodule's own length-bucketed ones, collected once):
  lightning fp32  trainer.fit as train.py builds it (its trainer config, no validation, checkpointing
                  or loggers: the training loop alone)
  bare fp32       forward, backward, gradient clipping at the trainer's value, the optimizer and learning-rate
                  schedule of the config, stepped in a plain loop
  lightning bf16  the same fit with precision=bf16-mixed (torch.autocast to bfloat16 on the CPU)
  bare bf16       the bare loop inside torch.autocast("cpu", bfloat16)
Each step is timed from batch start to the end of the optimizer step; the first --warmup steps are not
counted. With --repeats R the four runs are made R times, in reversed order every other time (ABCD DCBA ...),
so a slow phase of the machine or a run's place in the sequence weighs on every run alike; the figures pool
the counted steps of all repeats, and the lightning/bare ratio of each repeat is printed too (its spread). Printed: median seconds per step, training tokens/s (non-padding tokens), the ratio
lightning/bare (goal >= 0.9), bf16/fp32, and the validation loss after the steps (float32, the first
--val-batches validation batches) so a faster precision is compared at the loss it reaches; then the
padding share of the bucketed batches and of the same points batched in random order.
Hand-written: nothing in Lightning or torch prints this comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]


def compose(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from egohorizon.run.resolvers import register_resolvers

    register_resolvers()  # as train.py does
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hydra_compose("train", overrides=["paths.run_dir=/tmp/bench_train_cpu", *overrides])


def fresh_model(cfg, backbone, datamodule):
    import lightning as L

    from egohorizon.run.setup import build_model

    L.seed_everything(0, workers=True)
    model = build_model(cfg, backbone, datamodule)
    model.configure_model()
    return model


def padding_share(batches) -> float:
    real = sum(int(b["attention_mask"].sum()) for b in batches)
    total = sum(b["attention_mask"].numel() for b in batches)
    return 1 - real / total


def tokens(batch) -> int:
    return int(batch["attention_mask"].sum())


class StepTimer:
    """A Lightning callback: seconds from each training batch's start to its end (after the optimizer step)."""

    def __new__(cls):
        import lightning as L

        class _Timer(L.Callback):
            def __init__(self):
                self.times, self._start = [], 0.0

            def on_train_batch_start(self, trainer, module, batch, batch_idx):
                self._start = time.perf_counter()

            def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
                self.times.append(time.perf_counter() - self._start)

        return _Timer()


def lightning_run(cfg, model, batches, precision: str) -> list[float]:
    from hydra.utils import instantiate

    timer = StepTimer()
    trainer = instantiate(cfg.trainer, callbacks=[timer], logger=False, enable_checkpointing=False,
                          max_steps=len(batches), max_epochs=-1, limit_val_batches=0, precision=precision,
                          enable_progress_bar=False, enable_model_summary=False, val_check_interval=None,
                          check_val_every_n_epoch=None)
    from torch.utils.data import DataLoader

    # batch_size=None: the collected batches as they are (a plain list would read as several loaders)
    trainer.fit(model, train_dataloaders=DataLoader(batches, batch_size=None, shuffle=False))
    return timer.times


def bare_run(cfg, model, batches, bf16: bool) -> list[float]:
    import contextlib

    import torch

    params = [p for p in model.model.parameters() if p.requires_grad]
    optimizer = model.optimizer_factory(params)
    scheduler = None
    if model.scheduler_factory is not None:  # the same schedule Lightning steps (max_steps = the batches)
        from models.lora_lm import build_scheduler

        scheduler = build_scheduler(model.scheduler_factory, optimizer, len(batches))
    clip = cfg.trainer.get("gradient_clip_val")
    model.model.train()
    times = []
    for batch in batches:
        start = time.perf_counter()
        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with autocast:
            loss = model.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               labels=batch["labels"]).loss
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if scheduler is not None:
            scheduler.step()
        times.append(time.perf_counter() - start)
    return times


def val_loss(model, batches) -> float:
    import torch

    model.model.eval()
    with torch.no_grad():
        losses = [float(model.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                                    labels=b["labels"]).loss) for b in batches]
    return sum(losses) / len(losses)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="timed training steps per run (default 8)")
    parser.add_argument("--warmup", type=int, default=2, help="first steps not counted (default 2)")
    parser.add_argument("--val-batches", type=int, default=4, help="validation batches for the loss (default 4)")
    parser.add_argument("--runs", default="lightning_fp32,bare_fp32,lightning_bf16,bare_bf16")
    parser.add_argument("--repeats", type=int, default=1,
                        help="make the runs this many times, alternating their order (default 1)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("overrides", nargs="*", default=["experiment=forecast_epic_smollm2"],
                        help="train.py overrides (default experiment=forecast_epic_smollm2)")
    args = parser.parse_args()
    if args.steps <= args.warmup:
        parser.error(f"--steps {args.steps}: must exceed --warmup {args.warmup}")
    os.environ.setdefault("WANDB_MODE", "offline")

    import torch

    from egohorizon.run.setup import _quiet_libraries, build_backbone, build_datamodule

    _quiet_libraries()
    cfg = compose(args.overrides)
    datamodule = build_datamodule(cfg)
    backbone = build_backbone(cfg, datamodule)
    datamodule.setup("fit")
    loader = datamodule.train_dataloader()
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == args.steps:
            break
    if len(batches) < args.steps:
        raise SystemExit(f"only {len(batches)} training batches; use fewer --steps")
    # The validation points batched as for training (prompt + answer, loss on the answer): no generation.
    collate = loader.collate_fn
    val_set, size = datamodule._datasets["val"], cfg.data.batch_size
    val_batches = [collate([val_set[i] for i in range(s, min(s + size, len(val_set)))])
                   for s in range(0, min(len(val_set), args.val_batches * size), size)]

    dataset = datamodule._datasets["train"]
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(0)).tolist()
    random_batches = [collate([dataset[i] for i in order[s:s + size]]) for s in range(0, len(order), size)]
    bucketed = [b for b in loader]

    results = {}
    print(f"{torch.get_num_threads()} torch threads; {len(batches)} batches of {size}; "
          f"{sum(tokens(b) for b in batches)} training tokens; sequence lengths "
          f"{min(b['input_ids'].shape[1] for b in batches)}-{max(b['input_ids'].shape[1] for b in batches)}",
          flush=True)
    names = args.runs.split(",")
    pooled: dict[str, dict[str, list]] = {name: {"times": [], "tokens": [], "val_loss": []} for name in names}
    per_repeat = []
    for repeat in range(args.repeats):
        order = names if repeat % 2 == 0 else names[::-1]
        this_repeat = {}
        for name in order:
            model = fresh_model(cfg, backbone, datamodule)
            if name.startswith("lightning"):
                times = lightning_run(cfg, model, batches, "bf16-mixed" if name.endswith("bf16") else "32-true")
            else:
                times = bare_run(cfg, model, batches, bf16=name.endswith("bf16"))
            counted = times[args.warmup:]
            tok = [tokens(b) for b in batches[args.warmup:]]
            loss = val_loss(model, val_batches)
            pooled[name]["times"] += counted
            pooled[name]["tokens"] += tok
            pooled[name]["val_loss"].append(loss)
            this_repeat[name] = sum(tok) / sum(counted)
            print(f"repeat {repeat + 1} {name:16s} median step {statistics.median(counted):.2f} s, "
                  f"{this_repeat[name]:.0f} tokens/s, val loss {loss:.4f}", flush=True)
            del model
        per_repeat.append(this_repeat)
    for name, run in pooled.items():
        results[name] = {"median_step_s": statistics.median(run["times"]),
                         "tokens_per_s": sum(run["tokens"]) / sum(run["times"]),
                         "steps_counted": len(run["times"]), "val_loss": run["val_loss"][-1],
                         "val_losses": run["val_loss"]}
        print(f"{name:16s} pooled: median step {results[name]['median_step_s']:.2f} s, "
              f"{results[name]['tokens_per_s']:.0f} tokens/s over {len(run['times'])} steps", flush=True)

    def ratio(a: str, b: str) -> float | None:
        return results[a]["tokens_per_s"] / results[b]["tokens_per_s"] if a in results and b in results else None

    figures = {
        "lightning_over_bare_fp32": ratio("lightning_fp32", "bare_fp32"),
        "lightning_over_bare_bf16": ratio("lightning_bf16", "bare_bf16"),
        "bf16_over_fp32_lightning": ratio("lightning_bf16", "lightning_fp32"),
        "padding_share_bucketed": padding_share(bucketed),
        "padding_share_random_order": padding_share(random_batches),
        "runs": results, "overrides": args.overrides, "steps": args.steps, "warmup": args.warmup,
        "repeats": args.repeats,
        "lightning_over_bare_per_repeat": {
            precision: [r[f"lightning_{precision}"] / r[f"bare_{precision}"] for r in per_repeat
                        if f"lightning_{precision}" in r and f"bare_{precision}" in r]
            for precision in ("fp32", "bf16")},
    }
    for key, value in figures.items():
        if isinstance(value, float):
            print(f"{key}: {value:.3f}")
    for precision, ratios in figures["lightning_over_bare_per_repeat"].items():
        if ratios:
            print(f"lightning_over_bare_{precision} per repeat: " + ", ".join(f"{r:.3f}" for r in ratios))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
