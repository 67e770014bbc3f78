"""QAModule: the LoRA vision-language model (models.lora_lm) that answers a month-scale multiple-choice
question from frames of the wearer's past (and, with retrieval, memory notes) with one option letter.

What is specific to QA: the ``qa`` prompt, one greedy output per item, a few new tokens (a letter).
Extracting the letter (never a guess: ``egohorizon.metrics.qa.extract_answer``) and scoring belong to
the qa task.
"""

from __future__ import annotations

from typing import Any, ClassVar

from egohorizon.prompts.qa import QA_PROMPT_NAME
from models.lora_lm import LoRALanguageModule


class QAModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "num_candidates": 1,  # one answer per item
        "temperature": 0.0,
        "strategy": "beam",  # with num_beams = 1: greedy decoding
        "num_beams": 1,
        "max_new_tokens": 4,  # a letter and EOS; a longer answer is cut and, if unclear, invalid
    }
    default_prompt: ClassVar[str] = QA_PROMPT_NAME
