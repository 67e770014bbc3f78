"""Vision input: the tiny Qwen2.5-VL and Qwen3-VL backbones with their processors, the collation of
(text, images, target) samples, and the LoRA module training and generating on real Aria frames (with
the gaze drawn) and native-resolution gaze crops."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import Callback
from PIL import Image

from egohorizon.backbones import TinyBackbone
from egohorizon.backbones.collate import IGNORE_INDEX, IMAGE_PLACEHOLDER, VisionTextCollator
from egohorizon.backbones.lora import vision_linear_names, with_vision_targets
from egohorizon.data.windows.sample import crop_box, draw_gaze
from egohorizon.errors import ConfigError
from models.lora_lm import LoRALanguageModule

ARCHITECTURES = ("qwen2_5_vl", "qwen3_vl")
CORPUS = ["what am I doing now?", "I stir the bowl", "I walk to my desk", "the kitchen, the office"] * 20
# Two language layers: Qwen3-VL adds its "deepstack" vision features after the first one.
TOY = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1}
# What conf/finetune/tiny.yaml asks for, at a smaller rank.
LORA = {
    "r": 8,
    "lora_alpha": 16,
    "lora_dropout": 0.0,
    "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "exclude_modules": ".*visual.*",
    "modules_to_save": ["embed_tokens", "lm_head"],
}
QUESTION = "what am I doing now?"


@pytest.fixture(scope="module", params=ARCHITECTURES)
def backbone(request, tmp_path_factory) -> TinyBackbone:
    folder = tmp_path_factory.mktemp("tiny")
    backbone = TinyBackbone(architecture=request.param, vocab_size=300, cache_dir=str(folder), **TOY)
    backbone.prepare(corpus=lambda: CORPUS)
    return backbone


@pytest.fixture(scope="module")
def images(shared_data) -> dict[str, np.ndarray]:
    """Two Aria RGB frames (a kitchen, an office), downscaled with the gaze ring drawn, and their
    native-resolution gaze crops."""
    folder = shared_data / "projectaria-tools-testdata" / "derived_frames"
    out = {}
    for name, file, gaze in (
        ("kitchen", "adt_camera-rgb_00", (1100, 550)),
        ("office", "gen2_camera-rgb_02", (650, 550)),
    ):
        native = np.asarray(Image.open(next(folder.glob(f"{file}_*.jpg"))).convert("RGB"))
        scale = 256 / native.shape[1]
        small = np.asarray(Image.fromarray(native).resize((256, 256), Image.BILINEAR))
        out[name] = draw_gaze(small, (gaze[0] * scale, gaze[1] * scale))
        x0, y0, x1, y1 = crop_box(gaze, 96, native.shape[1], native.shape[0])
        out[f"{name}_crop"] = np.ascontiguousarray(native[y0:y1, x0:x1])
    return out


def _module(backbone, lora_vision=True, **generation) -> LoRALanguageModule:
    settings = {"num_candidates": 2, "temperature": 0.7, "max_new_tokens": 6, **generation}
    torch.manual_seed(0)  # LoRA's A matrices are initialised from the global generator
    module = LoRALanguageModule(
        backbone,
        functools.partial(torch.optim.AdamW, lr=1e-2),
        lora=LORA,
        lora_vision=lora_vision,
        generation=settings,
        prompt="forecast",
    )
    module.configure_model()
    return module


def test_tiny_backbone_has_a_vision_tower_and_a_matching_processor(backbone, images):
    model, processor = backbone.load_model(), backbone.load_processor()
    expected = {
        "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
        "qwen3_vl": "Qwen3VLForConditionalGeneration",
    }
    assert type(model).__name__ == expected[backbone.architecture]
    vision = model.config.vision_config
    assert processor.image_processor.patch_size == vision.patch_size == 8
    assert processor.image_processor.merge_size == vision.spatial_merge_size
    tokenizer = processor.tokenizer
    for token in ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>"):  # one special token each
        assert tokenizer(token, add_special_tokens=False)["input_ids"] == [
            tokenizer.convert_tokens_to_ids(token)
        ]
    assert model.config.image_token_id == tokenizer.convert_tokens_to_ids("<|image_pad|>")
    # A 256 x 256 frame is resized within max_pixels (128 x 128): 16 x 16 patches, merged 2 x 2.
    out = processor(text=[IMAGE_PLACEHOLDER], images=[images["kitchen"]], return_tensors="pt")
    assert out["image_grid_thw"].tolist() == [[1, 16, 16]]
    assert (out["input_ids"] == model.config.image_token_id).sum() == 64


def test_collation_matches_the_processor_and_learns_only_the_target(backbone, images):
    processor = backbone.load_processor()
    samples = [
        {
            "text": QUESTION,
            "images": [images["kitchen"], images["kitchen_crop"]],
            "target": "I stir the bowl",
        },
        {
            "text": f"now {IMAGE_PLACEHOLDER} here?",
            "images": [images["office"]],
            "target": "I walk to my desk",
        },
        {"text": "no picture", "images": [], "target": "the office"},
    ]
    batch = VisionTextCollator(processor, with_prompts=True)(samples)
    everything = [images["kitchen"], images["kitchen_crop"], images["office"]]
    reference = processor(images=everything, text=[IMAGE_PLACEHOLDER] * 3, padding=True, return_tensors="pt")
    assert torch.equal(batch["pixel_values"], reference["pixel_values"])
    assert torch.equal(batch["image_grid_thw"], reference["image_grid_thw"])
    assert batch["image_grid_thw"].tolist()[1] == [1, 12, 12]  # the 96 x 96 crop, at its own resolution
    width = batch["input_ids"].shape[1]
    for key in ("attention_mask", "labels", "mm_token_type_ids"):
        assert batch[key].shape == (3, width)
    tokenizer = processor.tokenizer
    texts = [IMAGE_PLACEHOLDER * 2 + QUESTION, f"now {IMAGE_PLACEHOLDER} here?", "no picture"]
    for row, (sample, text) in enumerate(zip(samples, texts)):
        alone = processor(text=[text], images=sample["images"] or None, return_tensors="pt")
        n_prompt = alone["input_ids"].shape[1]
        prompt = batch["prompt_ids"][row][batch["prompt_mask"][row].bool()]  # left-padded
        assert torch.equal(prompt, alone["input_ids"][0])
        types = batch["prompt_mm_token_type_ids"][row][batch["prompt_mask"][row].bool()]
        assert torch.equal(types, alone["mm_token_type_ids"][0])
        target = tokenizer(sample["target"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        labels = batch["labels"][row]
        assert (labels[:n_prompt] == IGNORE_INDEX).all()  # no loss on the prompt or its image tokens
        assert labels[n_prompt : n_prompt + len(target)].tolist() == target
        assert (labels[n_prompt + len(target) :] == IGNORE_INDEX).all()
        real = int(batch["attention_mask"][row].sum())
        assert torch.equal(
            batch["input_ids"][row][:real], torch.cat([alone["input_ids"][0], torch.tensor(target)])
        )
    assert batch["mm_token_type_ids"][2].sum() == 0  # the text-only sample


class GradientProbe(Callback):
    """Keeps the loss and, before the optimizer steps, which trainable weights got a gradient."""

    def __init__(self):
        self.loss, self.grads = None, {}

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.loss = outputs["loss"].detach()

    def on_before_optimizer_step(self, trainer, module, optimizer):
        for name, p in module.named_parameters():
            if p.requires_grad:
                self.grads[name] = 0.0 if p.grad is None else p.grad.abs().sum().item()


def test_one_training_step_on_images_reaches_the_vision_tower(backbone, images):
    import lightning as L

    samples = [
        {
            "text": QUESTION,
            "images": [images["kitchen"], images["kitchen_crop"]],
            "target": "I stir the bowl",
        },
        {"text": QUESTION, "images": [images["office"]], "target": "I walk to my desk"},
    ]
    loader = torch.utils.data.DataLoader(
        samples, batch_size=2, collate_fn=VisionTextCollator(backbone.load_processor())
    )
    probe = GradientProbe()
    module = LoRALanguageModule(
        backbone,
        functools.partial(torch.optim.AdamW, lr=1e-3),
        lora=LORA,
        lora_vision=True,
        prompt="forecast",
    )
    trainer = L.Trainer(
        accelerator="cpu",
        max_steps=1,
        logger=False,
        callbacks=[probe],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, train_dataloaders=loader)
    assert torch.isfinite(probe.loss) and probe.loss > 0
    # LoRA B starts at zero, so B (not A) gets the first gradient, in every vision block and the merger.
    vision = {n: g for n, g in probe.grads.items() if ".visual." in n and "lora_B" in n}
    assert any(".blocks.0." in n for n in vision) and any(".merger." in n for n in vision)
    assert all(g > 0 for g in vision.values()), {n: g for n, g in vision.items() if g == 0}
    assert not any(".visual." in n and "lora_" not in n for n in probe.grads)  # the base stays frozen


def test_the_answer_only_loss_equals_the_full_logits_loss_on_images(backbone, images):
    """The vocabulary head runs only from the first answer position on; the loss is transformers' own."""
    module = _module(backbone)
    batch = _batch(
        backbone.load_processor(),
        {"text": QUESTION, "images": [images["kitchen"]], "target": "I stir the bowl"},
        {"text": QUESTION + " and then?", "images": [images["office"]], "target": "I walk to my desk now"},
    )
    full = module(batch["input_ids"], batch["attention_mask"], batch["labels"],
                  mm_token_type_ids=batch.get("mm_token_type_ids"), **module._vision(batch)).loss
    assert torch.allclose(module._loss(batch), full, atol=1e-5)


def test_lora_vision_off_keeps_the_vision_tower_frozen(backbone):
    module = _module(backbone, lora_vision=False)
    assert not any(".visual." in n for n, p in module.model.named_parameters() if p.requires_grad)
    # With lora_vision the targets are the config's language projections plus every vision linear.
    model = backbone.load_model()
    vision = vision_linear_names(model)
    names = with_vision_targets(model, LORA)["target_modules"]
    assert set(vision) <= set(names) and any(".merger." in n for n in vision)
    language = [n for n in names if n not in vision]
    assert language and not any(".visual." in n for n in language)
    assert {n.rsplit(".", 1)[1] for n in language} == set(LORA["target_modules"])


def _batch(processor, *samples, with_prompts=False):
    return VisionTextCollator(processor, with_prompts=with_prompts)(list(samples))


def test_generation_follows_the_image_it_is_given(backbone, images, tmp_path):
    """Untrained, the image already changes the logits; after a few steps on two (frame, action)
    pairs with the same question, the same seed generates each frame's own action."""
    module = _module(backbone)
    processor = backbone.load_processor()
    kitchen = {"text": QUESTION, "images": [images["kitchen"]], "target": "I stir the bowl"}
    office = {"text": QUESTION, "images": [images["office"]], "target": "I walk to my desk"}
    with torch.no_grad():
        logits = [module(**_batch(processor, {**s, "target": None})).logits for s in (kitchen, office)]
    assert not torch.allclose(logits[0], logits[1])
    optimizer, batch = module.configure_optimizers(), _batch(processor, kitchen, office)
    for _ in range(50):
        optimizer.zero_grad()
        module(**batch).loss.backward()
        optimizer.step()
    module.eval()
    prompts = {
        name: _batch(processor, {**s, "target": None}, with_prompts=True)
        for name, s in [("kitchen", kitchen), ("office", office)]
    }
    texts = {name: module.generate_texts(b, batch_idx=0) for name, b in prompts.items()}
    assert texts["kitchen"] != texts["office"]
    assert texts["kitchen"][0][0].startswith("I stir") and texts["office"][0][0].startswith("I walk")
    assert module.generate_texts(prompts["kitchen"], batch_idx=0) == texts["kitchen"]  # seeded
    both = _batch(
        processor,
        {**kitchen, "target": None},
        {**office, "images": [images["office"], images["office_crop"]], "target": None},
        with_prompts=True,
    )
    assert [len(row) for row in module.generate_texts(both)] == [2, 2]  # left-padded, 1 and 2 images
    # The adapter (vision LoRA included) reloads onto a fresh base with the same outputs.
    from peft import PeftModel

    folder = module.save_adapter(tmp_path / "adapter")
    reloaded = PeftModel.from_pretrained(backbone.load_model(), folder).eval()
    with torch.no_grad():
        expected = module(**batch).logits
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        assert torch.allclose(reloaded(**inputs).logits, expected, atol=1e-5)


def test_lora_vision_on_a_text_only_model_is_a_clear_error():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
    )
    with pytest.raises(ConfigError, match="no vision tower"):
        with_vision_targets(Qwen3ForCausalLM(config), LORA)
