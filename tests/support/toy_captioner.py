"""The tiny captioner the caption-job tests train for seconds: a 2-layer toy backbone with LoRA on the
language and vision blocks, fitted to fixed targets on a handful of samples."""

import functools

import torch

LORA = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0,
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        "exclude_modules": ".*visual.*", "modules_to_save": ["embed_tokens", "lm_head"]}


def train_toy_captioner(samples: list[dict], folder, extra_corpus: list[str], steps: int, generation: dict,
                        adapter_metadata: dict, answers=None):
    """(module, backbone) after ``steps`` full-batch AdamW steps on ``samples`` (each with a ``target``)."""
    from egohorizon.backbones import TinyBackbone
    from egohorizon.backbones.collate import VisionTextCollator
    from models.caption import CaptionModule

    backbone = TinyBackbone(vocab_size=400, cache_dir=str(folder / "cache"), max_pixels=64 * 64, hidden_size=32,
                            intermediate_size=64, num_layers=2, num_heads=2, num_kv_heads=1)
    backbone.prepare(corpus=lambda: [s["text"] for s in samples] + extra_corpus)
    torch.manual_seed(0)
    module = CaptionModule(backbone, functools.partial(torch.optim.AdamW, lr=1e-2), lora_vision=True, lora=LORA,
                           generation=generation)
    module.configure_model()
    module.adapter_metadata = adapter_metadata
    if answers is not None:
        module.set_answers(answers)
    batch = VisionTextCollator(backbone.load_processor())(samples)
    optimizer = module.configure_optimizers()
    for _ in range(steps):
        optimizer.zero_grad()
        module(**batch).loss.backward()
        optimizer.step()
    return module, backbone
