"""ForecastModule: the LoRA language model (models.lora_lm) trained to forecast a person's next actions.

What is specific to forecasting: the ``forecast`` prompt, and two ways of asking for N candidates
(``generation.mode``): ``sequences`` samples N outputs with one candidate each; ``in_prompt`` asks
for one output that lists all N (how an untrained backbone is prompted in context). Each output gets
``max_new_tokens`` plus ``max_new_tokens_per_action`` per target action of the batch's largest K.

Generation returns raw texts; parsing and scoring belong to the forecast task and its callback.
"""

from __future__ import annotations

from typing import Any, ClassVar

from egohorizon.errors import ConfigError
from egohorizon.prompts.forecast import FORECAST_PROMPT_NAME
from models.lora_lm import LoRALanguageModule

MODES = ("sequences", "in_prompt")


class ForecastModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "mode": "sequences",  # sequences: N outputs, one candidate each; in_prompt: 1 output with N candidates
        "max_new_tokens_per_action": 24,  # added to max_new_tokens for each of the batch's K actions
    }
    default_prompt: ClassVar[str] = FORECAST_PROMPT_NAME

    def sequences_per_input(self) -> int:
        mode = self.generation["mode"]
        if mode not in MODES:
            raise ConfigError(f"model.generation.mode: expected one of {MODES}, got {mode!r}")
        return self.generation["num_candidates"] if mode == "sequences" else 1

    def max_new_tokens(self, batch: dict[str, Any]) -> int:
        g = self.generation
        return g["max_new_tokens"] + g["max_new_tokens_per_action"] * max(batch["k"])
