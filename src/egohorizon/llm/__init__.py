"""Text and vision generation backends with one interface (see ``base.LLMBackend``):

- ``OpenAIChatBackend``: any OpenAI-compatible chat server (stdlib HTTP, retries, concurrency limit);
- ``TransformersBackend``: a local transformers causal LM or VLM by hub id, path, backbone config name
  or trained adapter (``local_model.local_backend``), text and image parts;
- ``CachedBackend``: wraps either with an on-disk completion cache (a re-run makes no new calls).

``make_backend`` builds one from plain options. Importing this package imports no torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from egohorizon.llm.base import LLMBackend, LLMError, Message, Prompt, as_messages

__all__ = ["LLMBackend", "LLMError", "Message", "Prompt", "as_messages", "make_backend"]


def make_backend(
    model: str, *, base_url: str | None = None, cache_dir: str | Path | None = None, **options: Any
) -> LLMBackend:
    """An HTTP client when ``base_url`` is given, else a local transformers model (``local_model``: a folder,
    hub id, backbone config name such as ``smollm2_135m``, or a trained adapter); cached if ``cache_dir``.

    options: passed to ``OpenAIChatBackend`` (api_key, api_key_env, timeout, max_retries,
    max_concurrency, ...) or ``TransformersBackend`` (device, dtype, trust_remote_code).
    """
    backend: LLMBackend
    if base_url:
        from egohorizon.llm.openai_http import OpenAIChatBackend

        backend = OpenAIChatBackend(base_url, model, **options)
    else:
        from egohorizon.llm.local_model import local_backend

        backend = local_backend(model, **options)
    if cache_dir is not None:
        from egohorizon.llm.cache import CachedBackend

        backend = CachedBackend(backend, cache_dir)
    return backend
