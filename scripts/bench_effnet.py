"""Speed of backbone=effnet_smollm2 on the CPU (issue 40 item 4): the encoder alone against a training step.

    python scripts/bench_effnet.py                       # 2 threads, batches of 4 real EgoHands frames
    python scripts/bench_effnet.py --threads 2 --batch 4 --steps 6 --image-size 224

Three timed phases in one process, each after --warmup untimed repeats, on real frames
(../shared/data/egohands-frames, letterboxed by the composite's processor) with their boxes as targets
(``hand [x1,y1,x2,y2]`` in the letterboxed image's pixels):
  encoder     EfficientNet-Lite0's last feature grid, no gradients: images/s (what any use of the encoder
              costs at least)
  floor       the same encoder work per training batch, as steps/s: the speed a training step could reach if
              the projector and SmolLM2 cost nothing
  training    one optimizer step of the composite as train.py trains it (LoRA on SmolLM2 + the whole
              projector, conf/finetune/effnet_smollm2.yaml; AdamW): forward, backward, step; steps/s and the
              share of the step the encoder takes
Peak memory is the process's peak resident set (``ru_maxrss``) after each phase: the encoder's alone, then
with the composite loaded and trained. Printed as a table and one JSON line. Hand-written: nothing in timm,
torch or transformers measures this pair.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
FRAMES = ROOT.parent / "shared" / "data" / "egohands-frames"


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux


def timed(work, repeats: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        work()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return seconds


def real_samples(folder: Path, count: int, processor) -> list[dict]:
    """``count`` frames of ``folder``/images with their boxes.csv boxes as the target text."""
    import numpy as np
    from PIL import Image

    from egohorizon.backbones.boxes import ResizeMapping

    boxes: dict[str, list[list[int]]] = {}
    with (folder / "boxes.csv").open() as handle:
        for row in csv.DictReader(handle):
            boxes.setdefault(row["filename"], []).append([int(row[k]) for k in ("xmin", "ymin", "xmax", "ymax")])
    samples = []
    for name in sorted(boxes)[:count]:
        image = np.asarray(Image.open(folder / "images" / name).convert("RGB"))
        mapping = ResizeMapping.for_processor(processor, *image.shape[:2])
        target = " ".join("hand [{},{},{},{}]".format(*mapping.to_model(box)) for box in boxes[name])
        samples.append({"text": "Where are the hands? ", "images": [image], "target": target, "key": name})
    return samples


def encoder_seconds(encoder, pixels, repeats: int, warmup: int) -> list[float]:
    import torch

    with torch.no_grad():
        return timed(lambda: encoder.forward_features(pixels), repeats, warmup)


def training_model(backbone, gradient_checkpointing: bool):
    import torch
    import yaml

    from models.hands import HandModule

    finetune = yaml.safe_load((ROOT / "conf" / "finetune" / "effnet_smollm2.yaml").read_text())
    torch.manual_seed(0)
    module = HandModule(backbone, functools.partial(torch.optim.AdamW, lr=finetune["optimizer"]["lr"]),
                        lora=finetune["lora"], lora_vision=finetune["lora_vision"],
                        gradient_checkpointing=gradient_checkpointing)
    module.configure_model()
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the laptop's 2 cores)")
    parser.add_argument("--batch", type=int, default=4, help="frames per encoder batch and per training step")
    parser.add_argument("--steps", type=int, default=6, help="timed repeats of each phase")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repeats before each phase")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--frames", type=Path, default=FRAMES, help="a folder with images/ and boxes.csv")
    parser.add_argument("--cache-dir", default=None, help="where the composite's folder is built (default: "
                        "$EGOHORIZON_CACHE/backbones or ~/.cache/egohorizon/backbones)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    from egohorizon.backbones import EffnetSmolLM2Backbone
    from egohorizon.backbones.collate import KeyedVisionTextCollator
    from egohorizon.backbones.effnet_encoder import load_encoder

    torch.set_num_threads(args.threads)
    backbone = EffnetSmolLM2Backbone(image_size=args.image_size, cache_dir=args.cache_dir)
    backbone.prepare()  # the first run assembles the folder (~30 s); not timed
    processor = backbone.load_processor()
    batch = KeyedVisionTextCollator(processor)(real_samples(args.frames, args.batch, processor))
    pixels = batch["pixel_values"]

    encode = encoder_seconds(load_encoder(), pixels, args.steps, args.warmup)
    encoder_peak = peak_gb()

    module = training_model(backbone, args.gradient_checkpointing)
    optimizer = torch.optim.AdamW([p for p in module.model.parameters() if p.requires_grad], lr=1e-4)

    def step():
        module._loss(batch).backward()
        optimizer.step()
        optimizer.zero_grad()

    train = timed(step, args.steps, args.warmup)
    encode_s, step_s = statistics.median(encode), statistics.median(train)
    result = {
        "threads": args.threads, "batch": args.batch, "image_size": args.image_size,
        "tokens_per_sample": int(batch["attention_mask"].sum(1).float().mean()),
        "encoder_images_per_s": round(args.batch / encode_s, 2),
        "floor_steps_per_s": round(1 / encode_s, 3),
        "training_steps_per_s": round(1 / step_s, 3),
        "encoder_share_of_step": round(encode_s / step_s, 3),
        "peak_gb_encoder": round(encoder_peak, 2), "peak_gb_training": round(peak_gb(), 2),
        "gradient_checkpointing": args.gradient_checkpointing,
    }
    print(f"encoder   {result['encoder_images_per_s']:8.2f} images/s   (median of {args.steps} batches of "
          f"{args.batch}, {args.image_size} px, {args.threads} threads)")
    print(f"floor     {result['floor_steps_per_s']:8.3f} steps/s    (the encoder's part of a step)")
    print(f"training  {result['training_steps_per_s']:8.3f} steps/s    (LoRA + projector, {args.batch} frames, "
          f"{result['tokens_per_sample']} tokens each; encoder {100 * result['encoder_share_of_step']:.0f} % of it)")
    print(f"peak RSS  {result['peak_gb_encoder']:.2f} GB encoder alone, {result['peak_gb_training']:.2f} GB training")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
