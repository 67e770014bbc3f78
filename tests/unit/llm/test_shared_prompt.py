"""Several candidates of a prompt sampled with the prompt read once (egohorizon.llm.shared_prompt): the same
tokens as ``generate(num_return_sequences=n)``, left padding included, and only text-only samplers take it."""

from __future__ import annotations

import pytest
import torch
from toy_llama import save_toy_llama

from egohorizon.llm.shared_prompt import can_share_the_prompt, generate_sharing_the_prompt


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    return save_toy_llama(tmp_path_factory.mktemp("llama"))


def _model_and_prompts(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    prompts = tokenizer(["history 1: ", "history 22: history 3: "], return_tensors="pt", padding=True,
                        add_special_tokens=False)
    assert (prompts["attention_mask"] == 0).any()  # one prompt is left-padded
    return model, tokenizer, prompts


def test_the_same_candidates_as_num_return_sequences(llama_folder):
    model, tokenizer, prompts = _model_and_prompts(llama_folder)
    options = {"max_new_tokens": 8, "do_sample": True, "temperature": 0.9, "top_k": 0, "top_p": 1.0,
               "pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}
    for seed in range(3):
        torch.manual_seed(seed)
        plain = model.generate(**prompts, num_return_sequences=3, **options)
        torch.manual_seed(seed)
        shared = generate_sharing_the_prompt(model, copies=3, **prompts, **options)
        assert torch.equal(plain, shared)


def test_only_text_only_samplers_share_the_prompt(llama_folder):
    model, _, _ = _model_and_prompts(llama_folder)
    assert can_share_the_prompt(model, 3, {"do_sample": True})
    assert not can_share_the_prompt(model, 1, {"do_sample": True})  # one candidate: nothing to share
    assert not can_share_the_prompt(model, 3, {"num_beams": 3})  # beams copy the prompt themselves
    assert not can_share_the_prompt(model, 3, {"synced_gpus": True})

    class WithImages(torch.nn.Module):
        config = model.config

        def forward(self, input_ids=None, pixel_values=None):
            return None

    assert not can_share_the_prompt(WithImages(), 3, {})  # a VLM builds its image positions in generate

    class Wrapped(torch.nn.Module):  # as peft wraps a model: forward(*args, **kwargs)
        config = model.config

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def get_base_model(self):
            return self.inner

        def forward(self, *args, **kwargs):
            return None

    assert not can_share_the_prompt(Wrapped(WithImages()), 3, {})
    assert can_share_the_prompt(Wrapped(model), 3, {})


def test_a_lora_wrapped_text_model_gives_the_same_candidates(llama_folder):
    from peft import LoraConfig, get_peft_model

    model, tokenizer, prompts = _model_and_prompts(llama_folder)
    wrapped = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", r=2, target_modules=["q_proj"])).eval()
    options = {"max_new_tokens": 6, "do_sample": True, "temperature": 0.9, "top_k": 0, "top_p": 1.0,
               "pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}
    torch.manual_seed(0)
    plain = wrapped.generate(**prompts, num_return_sequences=2, **options)
    torch.manual_seed(0)
    assert torch.equal(plain, generate_sharing_the_prompt(wrapped, copies=2, **prompts, **options))
