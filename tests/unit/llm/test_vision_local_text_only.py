"""A text-only adapter through the local backend the offline jobs use (LocalVLMBackend): the abstractor
trained on SmolLM2 was refused there ("no image processor"), so its whole held-out days could not be built.
A text-only model's tokenizer now stands in for the processor, prompts tokenised as the text datamodules
tokenise them, and images are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from egohorizon.errors import ConfigError
from egohorizon.llm.vision_local import LocalVLMBackend, TokenizerAsProcessor


@pytest.fixture(scope="module")
def backend(smollm2_backbone):
    """Raw prompts, as an adapter trained on raw prompts is fed (the abstractor's)."""
    return LocalVLMBackend(model=str(smollm2_backbone.folder()), chat_template=False)


def test_a_text_only_model_gets_its_tokenizer_as_processor(backend):
    processor = backend.load_processor()
    assert isinstance(processor, TokenizerAsProcessor) and processor.image_processor is None


def test_prompts_are_tokenised_as_the_text_datamodules_tokenise_them(backend):
    text = "1. open the fridge\n2. take the milk"
    batch = backend.encoder()([{"text": text, "images": []}, {"text": "short", "images": []}])
    tokenizer = backend.load_processor().tokenizer
    expected = tokenizer(text, add_special_tokens=False)["input_ids"]  # as datamodules/abstract.py encodes
    assert batch["prompt_ids"][0].tolist() == expected  # the longer prompt: no left padding
    short = tokenizer("short", add_special_tokens=False)["input_ids"]
    assert batch["prompt_ids"][1].tolist()[-len(short):] == short
    assert batch["prompt_mask"][1].tolist() == [0] * (len(expected) - len(short)) + [1] * len(short)
    assert "pixel_values" not in batch  # no dummy image: a text model has no vision tower


def test_images_for_a_text_only_model_are_refused_by_name(backend):
    with pytest.raises(ConfigError, match="a text-only model; images need a vision-language model"):
        backend.encoder()([{"text": "what is this?", "images": [np.zeros((8, 8, 3), np.uint8)]}])


def test_an_instruct_model_without_an_adapter_gets_its_chat_template(smollm2_backbone):
    plain = LocalVLMBackend(model=str(smollm2_backbone.folder()))
    plain.load_processor()
    text = plain.encoder().text("hello", n_images=0)
    assert plain.chat_template and text.startswith("<|im_start|>") and "hello" in text


def test_greedy_generation_runs_and_is_deterministic(backend):
    prompt = "In the kitchen I opened the fridge and took out the"
    first = backend.generate(prompt, max_new_tokens=12)
    assert first == backend.generate(prompt, max_new_tokens=12) and first[0].strip()
