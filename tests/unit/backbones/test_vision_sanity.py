"""The vision path can learn (issue 11): the tiny Qwen2.5-VL with caption_demo's LoRA settings (conf/finetune/tiny.yaml: LoRA on the
language blocks and the vision tower, embeddings and head trained), fed through the project's collator,
learns to name the colour of a small square at a random place on a noisy grey picture within 100 steps.

If this fails, no visual task (captioner, hands, visual forecaster) can learn from its images. Measured
while writing it: without gradient clipping lr 2e-3 diverged to the colour prior at step ~100 (12/60
right, chance 10/60); with clipping at 1.0 (the trainer's gradient_clip_val) it reaches 60/60."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

pytestmark = pytest.mark.slow  # 1-2.5 min on 2 shared cores

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 50, 220), "yellow": (230, 220, 30),
           "purple": (150, 40, 180), "cyan": (40, 210, 210)}
PROMPT = "Which colour is the shape in the picture? Answer with one word."


def _picture(colour: str, rng: np.random.Generator) -> np.ndarray:
    image = rng.integers(90, 150, size=(128, 128, 3))
    x, y = rng.integers(0, 96, size=2)
    image[y : y + 32, x : x + 32] = COLOURS[colour]
    return image.astype(np.uint8)


def _samples(rng: np.random.Generator, n: int, with_target: bool):
    names = [list(COLOURS)[i] for i in rng.integers(len(COLOURS), size=n)]
    return [{"text": PROMPT, "images": [_picture(c, rng)], "target": c if with_target else None} for c in names], names


def test_the_tiny_vlm_learns_a_colour_from_its_pixels(tmp_path):
    from conftest import REPO_ROOT

    from egohorizon.backbones import TinyBackbone
    from egohorizon.backbones.collate import VisionTextCollator
    from egohorizon.backbones.lora import add_lora

    lora = OmegaConf.to_container(OmegaConf.load(REPO_ROOT / "conf" / "finetune" / "tiny.yaml").lora)
    torch.manual_seed(0)
    backbone = TinyBackbone(cache_dir=str(tmp_path))
    backbone.prepare(lambda: [PROMPT] * 5 + list(COLOURS) * 5)
    processor = backbone.load_processor()
    model = add_lora(backbone.load_model(), lora, vision=True)
    model.train()
    collate = VisionTextCollator(processor, with_prompts=True)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=2e-3)
    rng = np.random.default_rng(0)
    for _ in range(100):
        batch = collate(_samples(rng, 8, with_target=True)[0])
        loss = model(**{k: batch[k] for k in ("input_ids", "attention_mask", "labels", "mm_token_type_ids",
                                              "pixel_values", "image_grid_thw")}).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)  # as the trainer does (gradient_clip_val: 1.0)
        optimizer.step()
        optimizer.zero_grad()

    model.eval()
    samples, names = _samples(np.random.default_rng(123), 30, with_target=False)
    batch = collate(samples)
    tokenizer = processor.tokenizer
    with torch.no_grad():
        out = model.generate(input_ids=batch["prompt_ids"], attention_mask=batch["prompt_mask"],
                             mm_token_type_ids=batch["prompt_mm_token_type_ids"],
                             pixel_values=batch["pixel_values"], image_grid_thw=batch["image_grid_thw"],
                             max_new_tokens=4, do_sample=False, pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.eos_token_id)
    answers = [t.strip() for t in tokenizer.batch_decode(out[:, batch["prompt_ids"].shape[1] :],
                                                         skip_special_tokens=True)]
    right = sum(a == n for a, n in zip(answers, names))
    assert right >= 27, f"{right}/30 colours named (chance ~5): {list(zip(names, answers))[:6]}"
