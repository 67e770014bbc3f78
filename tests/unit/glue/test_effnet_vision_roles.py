"""The effnet_smollm2 composite in the other vision roles (issue 40 item 3), through the same datamodules,
collator and task modules as the Qwen-VL-style backbones: the forecaster with frames (the frame before t0
and the gaze close-up of a cue world) trains and generates, and month QA's option scores with frames equal
the training loss of each option (the composite's pixel_values hold whole images, one row an image, where a
Qwen-VL processor gives patch rows: the per-item slicing must follow the layout)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from qa_checks import assert_option_scores_are_summed_losses

from egohorizon.backbones.collate import KeyedVisionTextCollator, VisionTextCollator, pixel_rows_per_image

pytestmark = pytest.mark.slow  # the composite's real weights (shared with test_effnet_smollm2.py)

FINETUNE = yaml.safe_load((Path(__file__).resolve().parents[3] / "conf" / "finetune" / "effnet_smollm2.yaml").read_text())


def test_the_forecaster_with_frames_trains_and_generates(effnet_composite, tmp_path):
    from datamodules.forecast_visual import VisualForecastDataModule
    from egohorizon.data.demo.writer import build_demo_world
    from models.forecast import ForecastModule

    world = build_demo_world(tmp_path / "w", cue_switches=True, seed=0, participants=1, weeks=2).path
    data = VisualForecastDataModule(demo_dir=str(world), frames=1, gaze_crop=True, frame_size=112, crop_size=56,
                                    levels=(1,), ks=(1,), n_context=2, min_history_days=2, max_train_points=2,
                                    max_eval_points=1, seed=0, batch_size=2, eval_batch_size=1)
    data.set_tokenizer(effnet_composite.load_tokenizer())
    data.set_processor(effnet_composite.load_processor())
    data.setup("fit")
    batch = next(iter(data.train_dataloader()))
    image_id = data.processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    # each point: the frame before t0 and its gaze close-up, 7 x 7 cells each at 224 px
    assert batch["pixel_values"].shape == (4, 3, 224, 224) and batch["image_grid_thw"].tolist() == [[1, 7, 7]] * 4
    assert (batch["input_ids"] == image_id).sum(1).tolist() == [98, 98]

    torch.manual_seed(0)
    model = ForecastModule(effnet_composite, functools.partial(torch.optim.AdamW, lr=1e-3), lora=FINETUNE["lora"],
                           lora_vision=FINETUNE["lora_vision"],
                           generation={"strategy": "beam", "num_beams": 1, "max_new_tokens": 8})
    model.configure_model()
    model._loss(batch).backward()
    projector = [p for n, p in model.model.named_parameters() if "projector" in n and p.requires_grad]
    assert projector and all(p.grad is not None and p.grad.abs().sum() > 0 for p in projector)  # images reach it
    model.eval()
    val = next(iter(data.val_dataloader()))
    texts = model.generate_texts(val, 0)
    assert len(texts) == len(val["ids"]) == 1 and all(isinstance(t, str) for t in texts[0])


def _frame(value: int, height: int, width: int) -> np.ndarray:
    return np.full((height, width, 3), value, np.uint8)


def test_qa_option_scores_with_frames_equal_the_training_loss(effnet_composite):
    from egohorizon.prompts.qa import render_qa_prompt
    from models.qa import QAModule

    processor = effnet_composite.load_processor()
    # items with different numbers of frames, each frame its own grey, so a wrong slice changes a score
    samples = []
    for i, frames in enumerate([[_frame(30, 63, 112)], [_frame(200, 112, 84), _frame(90, 63, 112)]]):
        options = [f"the desk {i}", "the kitchen"]
        times = [1_741_000_000.0 + 60 * k for k in range(len(frames))]
        text = render_qa_prompt("Where was the mug?", options, times[-1] + 60, times, prompt="qa_option")
        samples.append({"text": text, "images": frames, "target": options[0], "options": options,
                        "frame_times": times, "key": f"q{i}"})
    batch = KeyedVisionTextCollator(processor, True, fields=("frame_times", "options"))(samples)
    assert pixel_rows_per_image(batch) == [1, 1, 1] and batch["pixel_values"].dim() == 4

    model = QAModule(effnet_composite, optimizer=functools.partial(torch.optim.AdamW, lr=1e-3), prompt="qa_option",
                     lora=FINETUNE["lora"], generation={"strategy": "options", "option_score": "sum"})
    model.configure_model()
    model.eval()
    scores = model.option_log_likelihoods(batch)
    assert_option_scores_are_summed_losses(model, samples, scores, VisionTextCollator(processor), abs_tol=1e-3)
