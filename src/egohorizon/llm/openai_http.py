"""A client for OpenAI-compatible chat servers (OpenAI, vLLM, SGLang, llama.cpp, LM Studio, ...).

Standard library only (``urllib``), so judges and scoring need no SDK. ``POST {base_url}/chat/completions``
with ``model, messages, max_tokens, temperature, seed, n``. Failures that may pass (HTTP 408, 409,
425, 429 and 5xx, timeouts, refused or dropped connections) are retried with exponential backoff and
jitter, honouring ``Retry-After``; other HTTP errors (400, 401, 404, ...) fail at once with the
server's message. ``max_concurrency`` bounds the requests in flight across all threads of this client.
Servers that ignore ``n`` are asked again (seed + 1, + 2, ...) until ``n`` completions are in.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from egohorizon.llm.base import LLMBackend, LLMError, Prompt, as_messages

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class OpenAIChatBackend(LLMBackend):
    """``timeout``: seconds for connecting and for each read of the reply (urllib's socket timeout)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        max_concurrency: int = 8,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(f"base_url {base_url!r}: expected an http(s) URL such as http://127.0.0.1:8000/v1")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model_id = model
        self.api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_concurrency = max_concurrency
        self.extra_body = extra_body or {}
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self.requests_sent = 0  # every HTTP attempt, retries included
        self._count_lock = threading.Lock()

    # -------------------------------------------------------------------------------- public API

    def generate(
        self,
        prompt: Prompt,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        n: int = 1,
    ) -> list[str]:
        messages = as_messages(prompt)
        completions: list[str] = []
        for attempt in range(n):  # at most n requests if the server returns one choice each time
            body = {
                "model": self.model_id,
                "messages": messages,
                "max_tokens": max_new_tokens,
                "temperature": temperature,
                "seed": seed + attempt,
                "n": n - len(completions),
                **self.extra_body,
            }
            completions.extend(self._choices(self._post(body)))
            if len(completions) >= n:
                break
        return completions[:n]

    def generate_many(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        n: int = 1,
    ) -> list[list[str]]:
        if len(prompts) <= 1:
            return [
                self.generate(p, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, n=n)
                for p in prompts
            ]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(prompts))) as pool:
            futures = [
                pool.submit(
                    self.generate, p, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, n=n
                )
                for p in prompts
            ]
            return [f.result() for f in futures]

    def describe(self) -> dict[str, Any]:
        return {"backend": "openai_http", "model": self.model_id, "url": self.url}

    # -------------------------------------------------------------------------------- HTTP

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=False, default=str).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_problem = ""
        for attempt in range(self.max_retries + 1):
            try:
                with self._slots:
                    return self._send(
                        urllib.request.Request(self.url, data=data, headers=headers, method="POST")
                    )
            except _Retryable as problem:
                last_problem = str(problem)
                if attempt == self.max_retries:
                    break
                delay = min(self.max_backoff_s, self.backoff_s * 2**attempt) * (0.5 + random.random() / 2)
                if problem.retry_after is not None:
                    delay = min(self.max_backoff_s, max(delay, problem.retry_after))
                log.warning(
                    "%s: %s; retry %d/%d in %.1f s", self.url, problem, attempt + 1, self.max_retries, delay
                )
                time.sleep(delay)
        raise LLMError(f"{self.url}: no answer after {self.max_retries + 1} attempts; last: {last_problem}")

    def _send(self, request: urllib.request.Request) -> dict[str, Any]:
        with self._count_lock:
            self.requests_sent += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:500].decode("utf-8", "replace")
            if error.code in RETRY_STATUSES:
                raise _Retryable(f"HTTP {error.code}: {detail}", _retry_after(error.headers)) from error
            raise LLMError(f"{self.url}: HTTP {error.code} for model {self.model_id!r}: {detail}") from error
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as error:
            raise _Retryable(f"{type(error).__name__}: {getattr(error, 'reason', error)}") from error
        try:
            return json.loads(raw)
        except json.JSONDecodeError as error:
            raise LLMError(f"{self.url}: reply is not JSON: {raw[:200]!r}") from error

    def _choices(self, reply: dict[str, Any]) -> list[str]:
        try:
            choices = reply["choices"]
            return [_content_text(choice["message"].get("content")) for choice in choices]
        except (KeyError, TypeError, AttributeError) as error:
            raise LLMError(
                f"{self.url}: reply has no choices[].message.content: {str(reply)[:300]}"
            ) from error


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
