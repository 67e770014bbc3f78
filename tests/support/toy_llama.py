"""A toy-size Llama (one block) with a BPE tokenizer trained in code, saved as any local checkpoint is: the
text-only causal LM of the generation and loss tests."""

from __future__ import annotations

import json
from pathlib import Path

ANSWER = json.dumps({"candidates": [["open the fridge", "pour the milk"]]})


def save_toy_llama(folder: Path) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from egohorizon.backbones.tokenizer import train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer([f"history {i}: {ANSWER}" for i in range(30)], vocab_size=300)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
