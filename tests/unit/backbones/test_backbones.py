"""Backbones: the tiny offline Qwen2-VL / Qwen2.5-VL / Qwen3-VL, its code-trained tokenizer and cache, and HF
loading."""

from __future__ import annotations

import json

import pytest
import torch

from egohorizon.backbones import HFBackbone, TinyBackbone, needs_mm_token_type_ids
from egohorizon.backbones.hf import resolve_dtype
from egohorizon.backbones.tiny import META_FILE
from egohorizon.errors import ConfigError

CORPUS = [
    "Mon 2024-03-04\n07:30-07:45 (15 min) have breakfast\ngap 2 h 05 min\n09:50-10:20 (30 min) ride to work",
    '{"candidates": [["write code at my desk"]]}',
    '{"candidates": [["have lunch with colleagues", "go to the gym"]]}',
] * 20
TOY = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_layers": 1,
    "num_heads": 2,
    "num_kv_heads": 1,
    "vocab_size": 300,
}


def _tiny(tmp_path, **kwargs) -> TinyBackbone:
    backbone = TinyBackbone(cache_dir=str(tmp_path / "cache"), **{**TOY, **kwargs})
    backbone.prepare(corpus=lambda: CORPUS)
    return backbone


@pytest.mark.parametrize(
    "architecture, class_name",
    [
        ("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration"),
        ("qwen2_vl", "Qwen2VLForConditionalGeneration"),
        ("qwen3_vl", "Qwen3VLForConditionalGeneration"),
    ],
)
def test_tiny_backbone_is_a_real_qwen_vl_that_trains_and_generates(tmp_path, architecture, class_name):
    backbone = _tiny(tmp_path, architecture=architecture)
    tokenizer, model = backbone.load_tokenizer(), backbone.load_model()
    assert type(model).__name__ == class_name
    assert needs_mm_token_type_ids(model)
    assert model.config.image_token_id == tokenizer.convert_tokens_to_ids("<|image_pad|>")
    batch = tokenizer(CORPUS[:2], padding=True, return_tensors="pt")
    types = torch.zeros_like(batch["input_ids"], dtype=torch.int)
    loss = model(**batch, mm_token_type_ids=types, labels=batch["input_ids"]).loss
    assert torch.isfinite(loss) and loss.item() > 0
    out = model.generate(
        **batch,
        mm_token_type_ids=types,
        max_new_tokens=3,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
    )
    assert out.shape == (2, batch["input_ids"].shape[1] + 3)


def test_tokenizer_round_trips_text_exactly(tmp_path):
    tokenizer = _tiny(tmp_path).load_tokenizer()
    for text in CORPUS[:3] + ['{"candidates": [["an unseen phrase, with commas & ünïcode"]]}']:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id) == (0, 1)


def test_cache_is_keyed_by_inputs_and_reused(tmp_path):
    first = _tiny(tmp_path)
    meta = first.path / META_FILE
    stamp = meta.stat().st_mtime_ns
    again = _tiny(tmp_path)
    assert again.path == first.path and meta.stat().st_mtime_ns == stamp  # reused, not rebuilt
    weights = [p.detach().clone() for p in first.load_model().parameters()]
    assert all(torch.equal(a, b) for a, b in zip(weights, again.load_model().parameters()))
    other_seed = _tiny(tmp_path, seed=1)
    assert other_seed.path != first.path
    assert not torch.equal(next(other_seed.load_model().parameters()), weights[0])
    other_corpus = TinyBackbone(cache_dir=str(tmp_path / "cache"), **TOY)
    other_corpus.prepare(corpus=lambda: CORPUS[:-1])
    assert other_corpus.path != first.path
    assert json.loads(meta.read_text())["hidden_size"] == 32


def test_tiny_backbone_needs_a_corpus_and_sane_sizes(tmp_path):
    with pytest.raises(ConfigError, match="needs the training corpus"):
        TinyBackbone(cache_dir=str(tmp_path)).prepare(None)
    with pytest.raises(ConfigError, match="empty training corpus"):
        TinyBackbone(cache_dir=str(tmp_path)).prepare(list)
    with pytest.raises(ConfigError, match="call prepare"):
        TinyBackbone(cache_dir=str(tmp_path)).load_tokenizer()
    with pytest.raises(ConfigError, match="num_heads"):
        TinyBackbone(hidden_size=30, num_heads=4)
    with pytest.raises(ConfigError, match="architecture"):
        TinyBackbone(architecture="llama")


def test_hf_backbone_loads_a_local_folder_by_its_architecture(tmp_path):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    vlm_folder = _tiny(tmp_path).path
    vlm = HFBackbone(path=str(vlm_folder))
    assert type(vlm.load_model()).__name__ == "Qwen2_5_VLForConditionalGeneration"
    assert vlm.load_tokenizer().pad_token_id == 0
    # A text-only checkpoint goes through AutoModelForCausalLM.
    text_folder = tmp_path / "qwen3"
    config = Qwen3Config(
        vocab_size=300,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
    )
    Qwen3ForCausalLM(config).save_pretrained(text_folder)
    model = HFBackbone(path=str(text_folder), dtype="bfloat16").load_model()
    assert type(model).__name__ == "Qwen3ForCausalLM" and model.dtype == torch.bfloat16
    assert not needs_mm_token_type_ids(model)
    # The processor comes with a VLM folder (the tiny one saves its own); a text-only one has none.
    processor = vlm.load_processor()
    assert processor.image_processor.patch_size == vlm.load_config().vision_config.patch_size
    assert processor.tokenizer.pad_token_id == 0
    assert HFBackbone(path=str(text_folder)).load_processor() is None


def test_hf_backbone_offline_miss_says_what_to_do(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="backbone.path=/models/"):
        HFBackbone(path="Qwen/Qwen2.5-VL-7B-Instruct").load_tokenizer()
    with pytest.raises(ConfigError, match="backbone.kind"):
        HFBackbone(path="x", kind="seq2seq")
    with pytest.raises(ConfigError, match="dtype"):
        resolve_dtype("float13")
    assert resolve_dtype("bfloat16") == torch.bfloat16 and resolve_dtype(None) == torch.get_default_dtype()
