"""CaptionModule: the LoRA vision-language model (models.lora_lm) that turns a 30 s window's frames
(gaze drawn), its gaze close-up and its speech into the wearer's actions, one per line.

What is specific to captioning: the ``caption`` prompt, and one output per window (a caption list,
not N sampled candidates). Parsing and scoring the captions belong to the caption task.
"""

from __future__ import annotations

from typing import Any, ClassVar

from egohorizon.prompts.caption import CAPTION_PROMPT_NAME
from models.lora_lm import LoRALanguageModule


class CaptionModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "num_candidates": 1,  # one caption list per window
        "temperature": 0.0,
        "strategy": "beam",  # with num_beams = 1: greedy decoding
        "num_beams": 1,
        "max_new_tokens": 160,  # a window holds ~5-15 actions of a few words each
    }
    default_prompt: ClassVar[str] = CAPTION_PROMPT_NAME
