"""Text embedders for the memory: ``words`` (hashed bag of words, scikit-learn's HashingVectorizer:
instant, lexical, no model) or any sentence embedder of ``egohorizon.backbones.embedders`` (``minilm``
...: semantic, but loading and embedding a month of distinct descriptions costs a minute on a CPU).
scikit-learn comes with sentence-transformers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class WordEmbedder:
    """Unit-length hashed counts of the words (English stop words left out), 4096 dimensions."""

    def __init__(self, n_features: int = 4096):
        from sklearn.feature_extraction.text import HashingVectorizer

        self.vectorizer = HashingVectorizer(n_features=n_features, alternate_sign=False, norm="l2",
                                            stop_words="english")

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.vectorizer.transform(texts).toarray().astype(np.float32)


def text_embedder(name: str = "words") -> Callable[[list[str]], np.ndarray]:
    if name == "words":
        return WordEmbedder()
    from egohorizon.backbones.embedders import get_embedder

    return get_embedder(name).embed
