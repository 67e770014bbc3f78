"""ForecastModule: the LoRA language model (models.lora_lm) trained to forecast a person's next actions.

What is specific to forecasting: the ``forecast`` prompt, and two ways of asking for N candidates
(``generation.mode``): ``sequences`` samples N outputs with one candidate each; ``in_prompt`` asks
for one output that lists all N (how an untrained backbone is prompted in context). Each output gets
``max_new_tokens`` plus ``max_new_tokens_per_action`` per target action of the batch's largest K.
``generation.actions`` says what becomes of a candidate's length: ``as_written`` (scored as the model
wrote it), ``first_k`` (its first K actions kept), ``exactly_k`` (no list may close before K actions,
egohorizon.llm.action_count, then its first K kept). With first_k and exactly_k a candidate stops
once its list holds K finished actions (nothing after them is read); the task's parse closes that open
reply and does the cutting.

Generation returns raw texts; parsing and scoring belong to the forecast task and its callback.
"""

from __future__ import annotations

from typing import Any, ClassVar

from egohorizon.errors import ConfigError
from egohorizon.prompts.forecast import FORECAST_PROMPT_NAME
from egohorizon.tasks.forecast import ACTIONS
from models.lora_lm import LoRALanguageModule

MODES = ("sequences", "in_prompt")


class ForecastModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "mode": "sequences",  # sequences: N outputs, one candidate each; in_prompt: 1 output with N candidates
        "max_new_tokens_per_action": 24,  # added to max_new_tokens for each of the batch's K actions
        "actions": "as_written",  # as_written | first_k | exactly_k (see the module docstring)
    }
    default_prompt: ClassVar[str] = FORECAST_PROMPT_NAME
    _token_texts: list[str] | None = None

    def sequences_per_input(self) -> int:
        mode = self.generation["mode"]
        if mode not in MODES:
            raise ConfigError(f"model.generation.mode: expected one of {MODES}, got {mode!r}")
        return self.generation["num_candidates"] if mode == "sequences" else 1

    def max_new_tokens(self, batch: dict[str, Any]) -> int:
        g = self.generation
        return g["max_new_tokens"] + g["max_new_tokens_per_action"] * max(batch["k"])

    def stop_rule(self) -> str:
        """``k_actions`` when a candidate's first K actions are all that is kept (first_k, exactly_k):
        it stops once its list holds them (egohorizon.llm.action_count.ActionCountStoppingCriteria)."""
        actions = self.generation["actions"]
        if actions not in ACTIONS:
            raise ConfigError(f"model.generation.actions: expected one of {ACTIONS}, got {actions!r}")
        return "max_new_tokens" if actions == "as_written" else "k_actions"

    def generation_extras(self, batch: dict[str, Any], prompt_length: int) -> dict[str, Any]:
        if self.stop_rule() != "k_actions":
            return {}
        from transformers import LogitsProcessorList, StoppingCriteriaList

        from egohorizon.llm.action_count import ActionCountLogitsProcessor, ActionCountStoppingCriteria
        from egohorizon.llm.constraints import token_texts

        if self._token_texts is None:  # the vocabulary decoded once per model, not per batch
            self._token_texts = token_texts(self.tokenizer)
        ks = [int(k) for k in batch["k"]]
        lists = 1 if self.generation["mode"] == "sequences" else self.generation["num_candidates"]
        extras = {"stopping_criteria": StoppingCriteriaList(
            [ActionCountStoppingCriteria(self._token_texts, ks, prompt_length, lists)])}
        if self.generation["actions"] == "exactly_k":
            processor = ActionCountLogitsProcessor(self._token_texts, self.tokenizer.eos_token_id, ks, prompt_length)
            extras["logits_processor"] = LogitsProcessorList([processor])
        return extras
