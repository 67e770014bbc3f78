"""The captioner's closed answer set (models.caption, ``generation.answer_set: train``): decoding can only
write an answer that a training window has, whatever the weights say."""

from __future__ import annotations

import pytest

from egohorizon.errors import ConfigError
from models.caption import AnswerTrie

ANSWERS = [
    '{"start": 0.0, "end": 30.0, "action": "watch Severance"}',
    '{"start": 0.0, "end": 30.0, "action": "arrange components in Figma"}',
    '{"start": 0.0, "end": 12.0, "action": "watch Severance"}\n{"start": 12.0, "end": 30.0, "action": "make tea"}',
]


def test_the_trie_allows_exactly_the_continuations_of_its_answers():
    trie = AnswerTrie([[1, 2, 3, 0], [1, 2, 4, 0], [1, 5, 0]])
    assert trie.allowed([], 0) == [1]
    assert trie.allowed([1], 0) == [2, 5] and trie.allowed([1, 2], 0) == [3, 4]
    assert trie.allowed([1, 2, 4], 0) == [0]
    assert trie.allowed([1, 2, 4, 0], 0) == [0]  # finished: only padding
    with pytest.raises(ConfigError, match="no answers"):
        AnswerTrie([])


def test_the_captioner_writes_only_answers_of_the_set(tmp_path):
    import torch

    from egohorizon.backbones import TinyBackbone
    from egohorizon.backbones.collate import VisionTextCollator
    from models.caption import CaptionModule

    backbone = TinyBackbone(cache_dir=str(tmp_path))
    backbone.prepare(lambda: [*ANSWERS, "Write what the wearer does."] * 3)
    prompts = [{"text": f"Write what the wearer does. {i}", "images": [], "target": None} for i in range(4)]
    for beams in (1, 3):
        model = CaptionModule(backbone, optimizer=torch.optim.AdamW, lora=None,
                              generation={"answer_set": "train", "num_beams": beams, "max_new_tokens": 60})
        model.configure_model()
        model.set_answers(ANSWERS)
        batch = VisionTextCollator(backbone.load_processor(), with_prompts=True)(prompts)
        texts = [t[0] for t in model.generate_texts(batch)]
        assert all(t in ANSWERS for t in texts), texts
        free = CaptionModule(backbone, optimizer=torch.optim.AdamW, lora=None,
                             generation={"num_beams": beams, "max_new_tokens": 60})
        free.configure_model()  # the same random weights write something else without the set
        assert not any(t[0] in ANSWERS for t in free.generate_texts(batch))
    with pytest.raises(ConfigError, match="answer_set"):
        CaptionModule(backbone, optimizer=torch.optim.AdamW, generation={"answer_set": "everything"})
