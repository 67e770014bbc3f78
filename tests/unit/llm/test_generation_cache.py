"""A local backend's dtype and stop rule (issue 37) key its cached answers: the cache never serves float32 answers
to a bfloat16 run; a cache holding one dtype's answers of a model refuses a run of it under another, naming
both; a server's answers carry no such record and keep their keys."""

from __future__ import annotations

import pytest
import torch

from egohorizon.backbones.tokenizer import train_bpe_tokenizer
from egohorizon.errors import ConfigError
from egohorizon.llm.cache import CachedBackend, cache_key
from egohorizon.llm.openai_http import OpenAIChatBackend
from egohorizon.llm.transformers_local import TransformersBackend


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("llama")
    tokenizer = train_bpe_tokenizer([f"what comes next {i}? open the fridge" for i in range(30)], vocab_size=280)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_cache_is_keyed_by_dtype_and_refuses_another_dtype(llama_folder, tmp_path):
    fp32 = TransformersBackend(str(llama_folder), dtype="float32")
    bf16 = TransformersBackend(str(llama_folder), dtype="bfloat16")
    assert fp32.generation_record() == {"dtype": "float32", "stop": "max_new_tokens"}
    params = {"max_new_tokens": 3, "temperature": 0.0, "seed": 0, "n": 1}
    keys = {cache_key(b.model_id, "what comes next?", **params, **b.generation_record()) for b in (fp32, bf16)}
    assert len(keys) == 2

    cached = CachedBackend(fp32, tmp_path / "cache")
    first = cached.generate_many(["what comes next?"], **params)
    assert next(fp32._model.parameters()).dtype == torch.float32
    again = CachedBackend(TransformersBackend(str(llama_folder), dtype="float32"), tmp_path / "cache")
    assert again.generate_many(["what comes next?"], **params) == first and again.hits == 1  # resumed
    with pytest.raises(ConfigError, match=r"generated with .*float32.*this run generates with .*bfloat16"):
        CachedBackend(bf16, tmp_path / "cache").generate_many(["what comes next?"], **params)
    assert bf16._model is None  # refused before the model was loaded


def test_a_servers_answers_keep_their_keys():
    server = OpenAIChatBackend("http://127.0.0.1:9/v1", "served")
    assert server.generation_record() == {}
    assert cache_key("served", "hi", max_new_tokens=3) == cache_key("served", "hi", max_new_tokens=3,
                                                                    **server.generation_record())
