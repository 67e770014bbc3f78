"""The local transformers backend on a toy causal LM built offline in the test (tokenizer trained in
code, random weights saved with save_pretrained and loaded back by path)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

CORPUS = [
    "the person makes coffee",
    "the person washes the cup",
    "then they read a book",
    "they walk to the kitchen",
    "match true false",
] * 4


@pytest.fixture(scope="module")
def toy_model_dir(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("toy_lm")
    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<eos>"]))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>"
    )
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant {% endif %}"
    )
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def test_greedy_sampling_and_n(toy_model_dir, tmp_path):
    from egohorizon.llm import make_backend
    from egohorizon.llm.transformers_local import TransformersBackend

    backend = TransformersBackend(str(toy_model_dir), device="cpu")
    greedy = backend.generate("the person makes", max_new_tokens=5)
    assert len(greedy) == 1 and isinstance(greedy[0], str) and greedy[0]
    assert backend.generate("the person makes", max_new_tokens=5) == greedy  # greedy is deterministic
    sampled = backend.generate(
        [{"role": "user", "content": "the person"}], max_new_tokens=5, temperature=1.0, seed=4, n=3
    )
    assert len(sampled) == 3
    assert (
        backend.generate(
            [{"role": "user", "content": "the person"}], max_new_tokens=5, temperature=1.0, seed=4, n=3
        )
        == sampled
    )  # a seed makes sampling repeatable
    assert backend.describe() == {"backend": "transformers", "model": str(toy_model_dir), "vlm": False}

    cached = make_backend(str(toy_model_dir), cache_dir=tmp_path, device="cpu")
    first = cached.generate_many(["a", "b"], max_new_tokens=3)
    assert (
        cached.generate_many(["a", "b"], max_new_tokens=3) == first
        and cached.hits == 2
        and cached.misses == 2
    )


def test_missing_model_is_a_clear_error(tmp_path):
    from egohorizon.errors import ConfigError
    from egohorizon.llm.transformers_local import TransformersBackend

    with pytest.raises(ConfigError, match="cannot load model"):
        TransformersBackend(str(tmp_path / "nothing-here")).generate("x")


@pytest.fixture(scope="module")
def toy_vlm_dir(tmp_path_factory):
    """A toy Qwen2-VL (random weights) with a word-level tokenizer and the real Qwen2-VL processor."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    folder = tmp_path_factory.mktemp("toy_vlm")
    special = [
        "<unk>",
        "<pad>",
        "<|im_start|>",
        "<|im_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
        "<|video_pad|>",
    ]
    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(
        ["user assistant describe the image a red square on a table"] * 3,
        trainers.WordLevelTrainer(special_tokens=special),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="<|im_end|>",
        additional_special_tokens=special[2:],
    )
    template = (
        "{% for m in messages %}<|im_start|> {{ m['role'] }} {% if m['content'] is string %}"
        "{{ m['content'] }}{% else %}{% for p in m['content'] %}{% if p['type'] == 'image' %}"
        "<|vision_start|><|image_pad|><|vision_end|>{% elif p['type'] == 'text' %} {{ p['text'] }}"
        "{% endif %}{% endfor %}{% endif %} <|im_end|> {% endfor %}"
        "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
    )
    tokenizer.chat_template = template
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=56 * 56),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=template,
    )
    processor.save_pretrained(folder)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in special}
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "max_position_embeddings": 256,
            "bos_token_id": ids["<|im_start|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<pad>"],
            "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
        },
        vision_config={
            "depth": 1,
            "embed_dim": 16,
            "hidden_size": 32,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_channels": 3,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    Qwen2VLForConditionalGeneration(config).save_pretrained(folder)
    return folder


def test_vlm_reads_image_parts_through_its_processor(toy_vlm_dir):
    from PIL import Image

    from egohorizon.llm.transformers_local import TransformersBackend

    backend = TransformersBackend(str(toy_vlm_dir), device="cpu")
    image = Image.new("RGB", (56, 56), (200, 30, 30))
    messages = [
        {
            "role": "user",
            "content": [{"type": "image", "image": image}, {"type": "text", "text": "describe the image"}],
        }
    ]
    answers = backend.generate(messages, max_new_tokens=4)
    assert len(answers) == 1 and isinstance(answers[0], str)
    assert backend.describe()["vlm"] is True
    inputs = backend._inputs(messages)
    # the processor turned the image into patches and marked image tokens (transformers 5 Qwen-VL)
    assert inputs["pixel_values"].shape[0] > 0 and "mm_token_type_ids" in inputs
    assert int(inputs["mm_token_type_ids"].sum()) > 0
    assert len(backend.generate("describe the image", max_new_tokens=3)) == 1  # text-only through a VLM


def test_local_backends_generate_in_bfloat16_where_the_device_has_it_and_the_toy_keeps_float32(tmp_path):
    import torch

    from egohorizon.backbones.base import TOY_MARKER
    from egohorizon.llm.local_dtype import local_generation_dtype
    from egohorizon.precision import native_bf16_cpu

    toy, real = tmp_path / "toy", tmp_path / "real"
    toy.mkdir(), real.mkdir()
    (toy / TOY_MARKER).write_text("{}")
    assert local_generation_dtype(None, "cpu", str(toy)) == "float32"  # the CPU tests' and caption_demo's figures
    assert local_generation_dtype(None, "cpu", str(real)) == ("bfloat16" if native_bf16_cpu() else "float32")
    assert local_generation_dtype("float32", "cpu", str(real)) == "float32"  # --dtype wins
    gpu_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    assert local_generation_dtype(None, "cuda", str(real)) == ("bfloat16" if gpu_bf16 else "float32")