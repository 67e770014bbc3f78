"""The EgoHome LLM judge: the paper's prompt, any ``egohorizon.llm`` backend, every verdict cached.

Cache file: ``<cache_dir>/llm-<model>-<prompt>-v<version>.jsonl``, one line per decided pair:
``{"gold", "pred", "match", "raw", "judge", "model", "prompt", "prompt_version"}``; the key is
(judge, model, prompt name and version, gold, pred). Lines with other key fields are ignored, so a
changed prompt version or model never reuses old verdicts. The file doubles as a ``verdicts:`` table.

A reply is read as JSON ``{"match": true|false, ...}`` (code fences and text around it tolerated);
a reply without a boolean ``match`` counts as ``unparseable`` and as no match (the prompt says to
lean false when unsure); its raw text is kept in the cache for inspection.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path

# the judge is a language model; only the backend interface is imported (torch-free)
from egohorizon.llm.base import LLMBackend
from egohorizon.metrics.judges import Judge, Pair
from egohorizon.prompts import Prompt, load_prompt

log = logging.getLogger(__name__)

_MATCH = re.compile(r'"match"\s*:\s*(true|false)', re.IGNORECASE)


def parse_verdict(text: str) -> bool | None:
    """True/False from the judge's reply, or None when it gives no boolean ``match``."""
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("match"), bool):
            return value["match"]
    found = {m.group(1).lower() for m in _MATCH.finditer(text)}
    return (found.pop() == "true") if len(found) == 1 else None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[-80:] or "model"


class LLMJudge(Judge):
    name = "llm"

    def __init__(
        self,
        backend: LLMBackend,
        prompt: Prompt | str = "judge_subtask",
        cache_dir: str | Path | None = None,
        max_new_tokens: int = 128,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.prompt = load_prompt(prompt) if isinstance(prompt, str) else prompt
        self.model = backend.model_id
        self.prompt_version = f"{self.prompt.name}@{self.prompt.version}"
        self.max_new_tokens = max_new_tokens
        self.stats.update({"cached": 0, "backend_calls": 0, "unparseable": 0})
        self._lock = threading.Lock()
        self.cache_path = None
        self._cache: dict[Pair, bool] = {}
        if cache_dir is not None:
            self.cache_path = (
                Path(cache_dir) / f"llm-{_slug(self.model)}-{self.prompt.name}-v{self.prompt.version}.jsonl"
            )
            self._cache = self._load_cache()

    def _key_fields(self) -> dict:
        return {
            "judge": self.name,
            "model": self.model,
            "prompt": self.prompt.name,
            "prompt_version": self.prompt.version,
        }

    def _load_cache(self) -> dict[Pair, bool]:
        cache: dict[Pair, bool] = {}
        if not self.cache_path or not self.cache_path.is_file():
            return cache
        key = self._key_fields()
        with open(self.cache_path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    log.warning("%s:%d: unreadable cache line skipped", self.cache_path, number)
                    continue
                if all(row.get(k) == v for k, v in key.items()) and isinstance(row.get("match"), bool):
                    cache[(row["gold"], row["pred"])] = row["match"]
        log.info("judge cache %s: %d verdicts", self.cache_path, len(cache))
        return cache

    def _store(self, verdicts: dict[Pair, tuple[bool, str]]) -> None:
        with self._lock:
            for pair, (match, _) in verdicts.items():
                self._cache[pair] = match
            if not self.cache_path or not verdicts:
                return
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            # One write of whole lines in append mode: concurrent runs never interleave half lines.
            lines = "".join(
                json.dumps(
                    {"gold": g, "pred": p, "match": m, "raw": raw, **self._key_fields()}, ensure_ascii=False
                )
                + "\n"
                for (g, p), (m, raw) in verdicts.items()
            )
            with open(self.cache_path, "a", encoding="utf-8") as handle:
                handle.write(lines)

    def _record_ruled(self, verdicts: dict[Pair, bool]) -> None:
        new = {
            pair: (match, "generic-label rule") for pair, match in verdicts.items() if pair not in self._cache
        }
        self._store(new)

    def _decide(self, pairs: list[Pair]) -> list[bool]:
        todo = [pair for pair in pairs if pair not in self._cache]
        self.stats["cached"] += len(pairs) - len(todo)
        if todo:
            prompts = [self.prompt.render(gold=g, pred=p) for g, p in todo]
            self.stats["backend_calls"] += len(todo)
            replies = self.backend.generate_many(
                prompts, max_new_tokens=self.max_new_tokens, temperature=0.0, seed=0, n=1
            )
            fresh = {}
            for pair, reply in zip(todo, replies):
                text = reply[0] if reply else ""
                verdict = parse_verdict(text)
                if verdict is None:
                    self.stats["unparseable"] += 1
                    log.warning(
                        "judge reply without a boolean 'match' for gold %r / pred %r: %.200r", *pair, text
                    )
                fresh[pair] = (bool(verdict), text)
            self._store(fresh)
        return [self._cache[pair] for pair in pairs]

    def describe(self) -> dict:
        return {
            **super().describe(),
            "backend": self.backend.describe(),
            "cache": str(self.cache_path) if self.cache_path else None,
        }
