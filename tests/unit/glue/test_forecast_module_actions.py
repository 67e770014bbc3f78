"""ForecastModule's ``generation.actions``: ``exactly_k`` hands generate the action-count logits processor
with each input's K (llm.action_count); first_k and exactly_k stop each candidate at its K actions (issue
37), as_written adds nothing to generate; an unknown one is named with the choices."""

from __future__ import annotations

import functools
import json

import pytest
import torch

from egohorizon.backbones.tokenizer import train_bpe_tokenizer
from egohorizon.errors import ConfigError
from egohorizon.llm.action_count import ActionCountLogitsProcessor, ActionCountStoppingCriteria
from models.forecast import ForecastModule


@pytest.fixture(scope="module")
def tokenizer():
    return train_bpe_tokenizer([json.dumps({"candidates": [["open the fridge", "pour the milk"]]})] * 20,
                               vocab_size=200)


def module(tokenizer, actions: str) -> ForecastModule:
    forecaster = ForecastModule(None, functools.partial(torch.optim.AdamW, lr=1e-3), generation={"actions": actions})
    forecaster.tokenizer = tokenizer  # what configure_model sets; no model is needed to build the processor
    return forecaster


def test_exactly_k_gives_generate_the_processor_with_each_inputs_k(tokenizer):
    extras = module(tokenizer, "exactly_k").generation_extras({"k": [1, 10, 3]}, prompt_length=7)
    (processor,) = extras["logits_processor"]
    assert isinstance(processor, ActionCountLogitsProcessor)
    assert processor.ks == [1, 10, 3] and processor.prompt_length == 7
    assert processor.eos_id == tokenizer.eos_token_id and processor.closing_ids


@pytest.mark.parametrize("actions", ["first_k", "exactly_k"])
def test_cutting_to_k_stops_each_candidate_at_its_k_actions(tokenizer, actions):
    forecaster = module(tokenizer, actions)
    (criterion,) = forecaster.generation_extras({"k": [1, 10]}, prompt_length=7)["stopping_criteria"]
    assert isinstance(criterion, ActionCountStoppingCriteria)
    assert criterion.ks == [1, 10] and criterion.prompt_length == 7 and criterion.lists == 1
    assert forecaster.stop_rule() == "k_actions"


def test_as_written_keeps_its_token_budget(tokenizer):
    forecaster = module(tokenizer, "as_written")
    assert forecaster.generation_extras({"k": [10]}, prompt_length=7) == {}
    assert forecaster.stop_rule() == "max_new_tokens"
    assert "logits_processor" not in module(tokenizer, "first_k").generation_extras({"k": [10]}, prompt_length=7)


def test_an_unknown_setting_is_named_with_the_choices(tokenizer):
    with pytest.raises(ConfigError, match="model.generation.actions.*exactly_k"):
        module(tokenizer, "shortest").generation_extras({"k": [10]}, prompt_length=7)
