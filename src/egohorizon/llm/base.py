"""The generation interface shared by judges, captioning, abstraction and in-context forecasting.

A backend turns a prompt into ``n`` completions:

    backend.generate(prompt, max_new_tokens=256, temperature=0.0, seed=0, n=1) -> list[str]
    backend.generate_many(prompts, ...) -> list[list[str]]      # concurrent where the backend can

``prompt`` is a string (one user turn) or OpenAI-style chat messages
``[{"role": "system" | "user" | "assistant", "content": str | [parts]}]``; a part is
``{"type": "text", "text": ...}`` or an image: ``{"type": "image_url", "image_url": {"url": ...}}``
(http(s) or ``data:`` URL) or ``{"type": "image", "image": <path or PIL image>}``.
``temperature == 0`` means greedy decoding; ``seed`` makes sampling repeatable where the backend allows.
Every backend carries ``model_id``, written beside every prediction it produces.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from egohorizon.errors import EgohorizonError

Message = dict[str, Any]
Prompt = str | Sequence[Message]


class LLMError(EgohorizonError):
    """A backend could not produce an answer (server error after retries, bad request, bad reply)."""


def as_messages(prompt: Prompt) -> list[Message]:
    """A string becomes one user message; messages are checked for the fields every backend needs."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    messages = list(prompt)
    if not messages:
        raise LLMError("empty prompt: expected a string or at least one chat message")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise LLMError(
                f"chat message {index}: expected {{'role': ..., 'content': ...}}, got {message!r:.200}"
            )
    return messages


def message_text(message: Message) -> str:
    """The text of a message (its text parts joined), for backends and logs that need plain text."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
    )


class LLMBackend(ABC):
    """Base class: subclasses implement ``generate``; ``generate_many`` may run requests concurrently."""

    model_id: str = ""

    @abstractmethod
    def generate(
        self,
        prompt: Prompt,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        n: int = 1,
    ) -> list[str]:
        """``n`` completions of ``prompt``."""

    def generate_many(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        n: int = 1,
    ) -> list[list[str]]:
        return [
            self.generate(p, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, n=n)
            for p in prompts
        ]

    def describe(self) -> dict[str, Any]:
        """A JSON-able description written beside predictions."""
        return {"backend": type(self).__name__, "model": self.model_id}

    def generation_record(self) -> dict[str, Any]:
        """How this backend generates beyond the request's own settings (a local model: its weights' dtype
        and stop rule), written into every prediction record and the cache key. Empty for a server, whose
        precision is the server's own."""
        return {}
