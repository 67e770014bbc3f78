"""AbstractModule: the LoRA language model (models.lora_lm) that groups a run of consecutive events into
parents, one ``FIRST-LAST: DESCRIPTION`` line per group (egohorizon.formats.abstract).

What is specific to abstraction: the ``abstract`` prompt and one greedy output per run (a grouping, not
N sampled candidates), long enough for a group per event in the worst case, and, with
``generation.constrained``, decoding that can only write valid groupings of the run
(``llm.constraints``). Parsing and scoring belong to the abstract task.
"""

from __future__ import annotations

from typing import Any, ClassVar

from egohorizon.errors import ConfigError
from egohorizon.prompts.abstract import ABSTRACT_PROMPT_NAME
from models.lora_lm import LoRALanguageModule


class AbstractModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "num_candidates": 1,
        "temperature": 0.0,
        "strategy": "beam",  # with num_beams = 1: greedy decoding
        "num_beams": 1,
        "max_new_tokens": 256,
        "constrained": False,
    }
    default_prompt: ClassVar[str] = ABSTRACT_PROMPT_NAME

    def generation_extras(self, batch: dict[str, Any], prompt_length: int) -> dict[str, Any]:
        if not self.generation.get("constrained"):
            return {}
        if "n_events" not in batch:
            raise ConfigError("model.generation.constrained needs each run's n_events in the batch "
                              "(datamodules.abstract provides it)")
        from transformers import LogitsProcessorList

        from egohorizon.llm.constraints import grouping_processor

        return {"logits_processor": LogitsProcessorList(
            [grouping_processor(self.tokenizer, batch["n_events"], prompt_length)])}
