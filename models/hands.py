"""HandModule: the LoRA vision-language model (models.lora_lm) that writes, for a short clip's frames,
timestamped left/right hand boxes, subtasks, hand actions and hand captions in one text
(``egohorizon.formats.hands``).

What is specific to hands: the ``hands`` prompt, one greedy output per clip, and room for a long
answer (a box line per frame plus a dozen segment lines). Parsing, mapping boxes back to the frame and
scoring belong to the hands task (``egohorizon.tasks.hands``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from egohorizon.prompts.hands import HANDS_PROMPT_NAME
from models.lora_lm import LoRALanguageModule


class HandModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "num_candidates": 1,  # one annotation text per clip
        "temperature": 0.0,
        "strategy": "beam",  # with num_beams = 1: greedy decoding
        "num_beams": 1,
        "max_new_tokens": 384,
    }
    default_prompt: ClassVar[str] = HANDS_PROMPT_NAME
