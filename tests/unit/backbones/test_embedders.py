"""What reaches a sentence-transformers model: lone surrogates repaired, huge texts cut (issue 9)."""

from __future__ import annotations

import logging
import zlib

import numpy as np
import pytest

from egohorizon.backbones.embedders import (
    CHARS_PER_TOKEN,
    SentenceTransformerEmbedder,
    get_embedder,
    repair_surrogates,
)


class StrictModel:
    """Stands in for a SentenceTransformer: refuses invalid Unicode as Rust tokenizers do."""

    max_seq_length = 8

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts, **_):
        for text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise TypeError("TextEncodeInput must be Union[TextInputSequence, ...]") from None
            self.seen.append(text)
        rng = [np.random.default_rng(zlib.crc32(t.encode("utf-8"))) for t in texts]
        return np.stack([r.normal(size=4) for r in rng]) if texts else np.zeros((0, 4))

    def get_sentence_embedding_dimension(self) -> int:
        return 4


def strict_embedder() -> tuple[SentenceTransformerEmbedder, StrictModel]:
    embedder = SentenceTransformerEmbedder("strict", name="strict")
    embedder._model = StrictModel()
    return embedder, embedder._model


def test_lone_surrogates_are_replaced_counted_and_logged(caplog):
    embedder, model = strict_embedder()
    with caplog.at_level(logging.WARNING, logger="egohorizon.backbones.embedders"):
        vectors = embedder.embed(["pick up \udcff cup", "pick up cup"])
    assert model.seen == ["pick up \ufffd cup", "pick up cup"]
    assert embedder.repaired_texts == 1 and embedder.truncated_texts == 0
    assert "1 text(s) held lone surrogates" in caplog.text
    # the broken string scores as its repaired form would
    np.testing.assert_allclose(vectors[0], embedder.embed(["pick up \ufffd cup"])[0])


def test_repair_keeps_valid_text_and_joins_split_pairs():
    assert repair_surrogates("ok \u00e9") == "ok \u00e9"
    assert repair_surrogates("a\udcffb\ud800") == "a\ufffdb\ufffd"
    assert repair_surrogates("\ud83d\ude00") == "\U0001f600"  # a pair left as two code points


def test_huge_texts_are_cut_before_the_tokenizer_sees_them():
    embedder, model = strict_embedder()
    huge = "wash the cup " * 400_000  # 5.2 MB
    limit = StrictModel.max_seq_length * CHARS_PER_TOKEN
    first = embedder.embed([huge, "short"])
    assert [len(t) for t in model.seen] == [limit, 5]
    assert model.seen[0] == huge[:limit]
    assert embedder.truncated_texts == 1
    # stored under the original string: a second request does not reach the model
    np.testing.assert_allclose(embedder.embed([huge])[0], first[0])
    assert len(model.seen) == 2


@pytest.mark.slow
def test_minilm_embeds_surrogates_and_huge_texts():
    embedder = get_embedder("minilm")
    repaired, broken = embedder.embed(["pick up the \ufffd cup", "pick up the \udcff cup"])
    np.testing.assert_allclose(broken, repaired, atol=1e-6)
    assert embedder.max_chars == 256 * CHARS_PER_TOKEN
    # MiniLM reads 256 tokens: a 5 MB text embeds like its first 4,000 characters (~800 tokens)
    huge = "rinse the mug, put it on the rack, " * 150_000
    long_vector, prefix_vector = embedder.embed([huge, huge[:4000]])
    np.testing.assert_allclose(long_vector, prefix_vector, atol=1e-5)
    assert embedder.truncated_texts == 1 and embedder.repaired_texts == 1
