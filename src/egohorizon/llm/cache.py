"""An on-disk cache of completions, so that re-running a job makes no new model calls.

The key is a SHA-256 of everything that determines the answer: the backend's ``model_id``, the
messages (images by content hash), ``max_new_tokens``, ``temperature``, ``seed`` and ``n``, and what the
backend records of its own decoding (a local model's weights dtype and stop rule: issue 37, so answers made
in float32 are not served to a bfloat16 run). A cache that holds a local model's answers made under one
dtype or stop rule refuses a run of that model under another, naming both (a resumed job is one run). Values
are the list of completions. Storage is one SQLite file (stdlib ``sqlite3``, WAL mode) so several
threads and processes can share it safely.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError
from egohorizon.llm.base import LLMBackend, Prompt, as_messages

log = logging.getLogger(__name__)


def _canonical(value: Any) -> Any:
    """JSON-able form of a prompt; PIL images and bytes become content hashes."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if hasattr(value, "tobytes") and hasattr(value, "size") and hasattr(value, "mode"):  # PIL image
        return {
            "image_sha256": hashlib.sha256(value.tobytes()).hexdigest(),
            "size": list(value.size),
            "mode": value.mode,
        }
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot cache a prompt containing {type(value).__name__}")


def cache_key(model_id: str, prompt: Prompt, **params: Any) -> str:
    payload = {"model": model_id, "messages": _canonical(as_messages(prompt)), "params": _canonical(params)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class ResponseCache:
    """key -> list of completions, in ``<directory>/completions.sqlite``."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / "completions.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        with self._lock, self._connection:
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute(
                "CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, model TEXT, value TEXT)"
            )

    def get(self, key: str) -> list[str] | None:
        with self._lock:
            row = self._connection.execute("SELECT value FROM completions WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, model_id: str, value: Sequence[str]) -> None:
        with self._lock, self._connection:
            self._connection.execute(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?)",
                (key, model_id, json.dumps(list(value), ensure_ascii=False)),
            )

    def check_generation(self, model_id: str, record: dict[str, Any]) -> None:
        """Remembers how ``model_id``'s answers here were generated (``record``: dtype, stop rule) and
        refuses a run of the same model that generates otherwise."""
        if not record:
            return
        value = json.dumps(record, sort_keys=True)
        with self._lock, self._connection:
            self._connection.execute("CREATE TABLE IF NOT EXISTS generation (model TEXT PRIMARY KEY, record TEXT)")
            row = self._connection.execute("SELECT record FROM generation WHERE model = ?", (model_id,)).fetchone()
            if row is None:
                self._connection.execute("INSERT INTO generation VALUES (?, ?)", (model_id, value))
        if row is not None and row[0] != value:
            raise ConfigError(f"{self.path}: holds answers of {model_id} generated with {row[0]}, but this run "
                              f"generates with {value}; use another cache folder (or pass --dtype to match)")

    def __len__(self) -> int:
        with self._lock:
            return self._connection.execute("SELECT COUNT(*) FROM completions").fetchone()[0]


class CachedBackend(LLMBackend):
    """Wraps a backend: answers from the cache when it can, asks the backend only for the rest.

    ``hits`` and ``misses`` count prompts answered from the cache and sent to the backend.
    """

    def __init__(self, backend: LLMBackend, cache: ResponseCache | str | Path, chunk_size: int = 64) -> None:
        self.backend = backend
        self.chunk_size = chunk_size
        self.cache = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
        self.model_id = backend.model_id
        self.hits = 0
        self.misses = 0
        self._checked = False

    def generate(self, prompt: Prompt, **params: Any) -> list[str]:
        return self.generate_many([prompt], **params)[0]

    def generate_many(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        n: int = 1,
        **options: Any,
    ) -> list[list[str]]:
        # ``options``: a backend's own decoding options (e.g. the abstractor's grouping_events); part of the key.
        params = {"max_new_tokens": max_new_tokens, "temperature": temperature, "seed": seed, "n": n, **options}
        # the backend's dtype and stop rule key the answers, but are not request settings to pass on
        made = self.backend.generation_record()
        if not self._checked:
            self.cache.check_generation(self.model_id, made)
            self._checked = True
        keyed = {**params, **made}
        keys = [cache_key(self.model_id, p, **keyed) for p in prompts]
        results: list[list[str] | None] = [self.cache.get(k) for k in keys]
        missing = [i for i, r in enumerate(results) if r is None]
        self.hits += len(prompts) - len(missing)
        self.misses += len(missing)
        # In chunks, so an interrupted run keeps what it already paid for.
        for start in range(0, len(missing), self.chunk_size):
            chunk = missing[start : start + self.chunk_size]
            fresh = self.backend.generate_many([prompts[i] for i in chunk], **params)
            for i, completions in zip(chunk, fresh):
                self.cache.put(keys[i], self.model_id, completions)
                results[i] = completions
        return results  # type: ignore[return-value]

    def describe(self) -> dict[str, Any]:
        return {**self.backend.describe(), "cache": str(self.cache.path)}

    def generation_record(self) -> dict[str, Any]:
        return self.backend.generation_record()
