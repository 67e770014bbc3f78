"""The local transformers backend on a toy causal LM built offline in the test (tokenizer trained in
code, random weights saved with save_pretrained and loaded back by path)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

CORPUS = ["the person makes coffee", "the person washes the cup", "then they read a book",
          "they walk to the kitchen", "match true false"] * 4


@pytest.fixture(scope="module")
def toy_model_dir(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("toy_lm")
    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<eos>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>",
                                        eos_token="<eos>")
    tokenizer.chat_template = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
                               "{% if add_generation_prompt %}assistant {% endif %}")
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def test_greedy_sampling_and_n(toy_model_dir, tmp_path):
    from egohorizon.llm import make_backend
    from egohorizon.llm.transformers_local import TransformersBackend

    backend = TransformersBackend(str(toy_model_dir), device="cpu")
    greedy = backend.generate("the person makes", max_new_tokens=5)
    assert len(greedy) == 1 and isinstance(greedy[0], str) and greedy[0]
    assert backend.generate("the person makes", max_new_tokens=5) == greedy  # greedy is deterministic
    sampled = backend.generate([{"role": "user", "content": "the person"}], max_new_tokens=5, temperature=1.0,
                               seed=4, n=3)
    assert len(sampled) == 3
    assert backend.generate([{"role": "user", "content": "the person"}], max_new_tokens=5, temperature=1.0,
                            seed=4, n=3) == sampled  # a seed makes sampling repeatable
    assert backend.describe() == {"backend": "transformers", "model": str(toy_model_dir), "vlm": False}

    cached = make_backend(str(toy_model_dir), cache_dir=tmp_path, device="cpu")
    first = cached.generate_many(["a", "b"], max_new_tokens=3)
    assert cached.generate_many(["a", "b"], max_new_tokens=3) == first and cached.hits == 2 and cached.misses == 2


def test_missing_model_is_a_clear_error(tmp_path):
    from egohorizon.errors import ConfigError
    from egohorizon.llm.transformers_local import TransformersBackend

    with pytest.raises(ConfigError, match="cannot load model"):
        TransformersBackend(str(tmp_path / "nothing-here")).generate("x")
