"""Sampling several candidates of one prompt with the prompt read once.

``generate(num_return_sequences=n)`` copies every prompt n times before its first forward pass, so a
3-candidate forecast reads each prompt three times: on 2 shared CPU cores that prefill was most of a
K = 1 point's generation time (SmolLM2, 16 prompts of 400 tokens: 4.6 s read once, 7.7 s read three
times, against ~2.8 s for all 16 new tokens of the 48 candidates). Here the prompt but its
last token is read once into a key/value cache, the cache is copied n times, and ``generate`` goes on
from it: the candidates come out in the order ``num_return_sequences`` gives (each input's n together)
and the sampling draws are the same, so the texts are those of the plain call up to float rounding of a
smaller prefill batch (equal in float32, tested).

transformers has no option for this (``_expand_inputs_for_generation`` copies the prompt, never a
cache), hence these few lines. Text-only causal LMs only: a vision-language model's image features and
multimodal positions (Qwen2-VL's 3-D rope) are built inside its own ``generate``.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch


def can_share_the_prompt(model, copies: int, options: dict[str, Any]) -> bool:
    """True for a text-only decoder (its ``forward`` takes no ``pixel_values``) sampling ``copies`` > 1
    candidates without beams; everything else goes through ``generate`` as it is."""
    if copies < 2 or options.get("num_beams", 1) > 1 or options.get("synced_gpus"):
        return False
    if getattr(model.config, "is_encoder_decoder", False):
        return False
    # A peft wrapper's forward takes **kwargs: ask the model it wraps.
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "pixel_values" not in inspect.signature(base.forward).parameters


@torch.no_grad()
def generate_sharing_the_prompt(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, copies: int,
                                **options: Any) -> torch.Tensor:
    """``model.generate(input_ids, attention_mask, num_return_sequences=copies, **options)`` with each
    left-padded prompt read once: returns prompt + new tokens, ``copies`` rows per input, in order."""
    from transformers import DynamicCache

    options = {key: value for key, value in options.items() if key != "num_return_sequences"}
    # The positions generate() gives a left-padded prompt: count real tokens; padding sits at 0.
    positions = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
    cache = DynamicCache(config=model.config)
    model(input_ids=input_ids[:, :-1], attention_mask=attention_mask[:, :-1], position_ids=positions[:, :-1],
          cache=cache, use_cache=True, logits_to_keep=1)
    cache.batch_repeat_interleave(copies)
    return model.generate(input_ids=input_ids.repeat_interleave(copies, dim=0),
                          attention_mask=attention_mask.repeat_interleave(copies, dim=0),
                          cache=cache, num_return_sequences=1, **options)


def generate_candidates(model, copies: int, with_images: bool, **options: Any) -> torch.Tensor:
    """``model.generate(**options)`` (``num_return_sequences=copies`` among them), the prompt read once
    where ``can_share_the_prompt`` allows it and the batch has no images."""
    if not with_images and can_share_the_prompt(model, copies, options):
        return generate_sharing_the_prompt(model, copies=copies, **options)
    return model.generate(**options)
