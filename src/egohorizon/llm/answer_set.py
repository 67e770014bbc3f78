"""A closed answer set for decoding: the model may only write one of the answers, token by token along
a trie (issue 11: the tiny captioner decodes within its training windows' answers,
``model.generation.answer_set: train`` in models.caption).

One implementation for both places that decode: ``CaptionModule.generation_constraints`` (validation,
test, eval.py) and the offline job ``egohorizon caption --model ADAPTER``
(``egohorizon.llm.vision_local.LocalVLMBackend``), so the job decodes as the scored model did.

The set travels beside the adapter as ``answer_set.json`` (``write_answer_set``): a versioned file with
the answers, how many training windows they came from, and a digest of the answers, checked on load
(``read_answer_set``), so a truncated or edited file is refused with its name instead of silently
decoding within another set. Torch-free.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError

ANSWER_SET_FILE = "answer_set.json"
ANSWER_SET_FORMAT = "egohorizon.answer_set"
ANSWER_SET_VERSION = 1


class AnswerTrie:
    """The token sequences of a set of answers (each ending with EOS) as prefix -> allowed next tokens."""

    def __init__(self, sequences: Sequence[Sequence[int]]):
        if not sequences:
            raise ConfigError("model.generation.answer_set: the training windows have no answers")
        self.next: dict[tuple[int, ...], list[int]] = {}
        for seq in sequences:
            for i, token in enumerate(seq):
                allowed = self.next.setdefault(tuple(seq[:i]), [])
                if token not in allowed:
                    allowed.append(token)

    @classmethod
    def of_answers(cls, tokenizer, answers: Sequence[str]) -> AnswerTrie:
        """The answers tokenised as the collator tokenises targets (no special tokens) + EOS."""
        eos = tokenizer.eos_token_id
        ids = tokenizer(list(answers), add_special_tokens=False)["input_ids"]
        return cls([[*seq, eos] for seq in ids])

    def allowed(self, prefix: Sequence[int], fallback: int) -> list[int]:
        """Tokens that continue ``prefix`` into some answer; ``fallback`` (EOS) once an answer is done
        (a beam that is already finished only pads)."""
        return self.next.get(tuple(prefix), [fallback])

    def prefix_allowed_tokens_fn(self, prompt_length: int, eos: int) -> Callable[[int, Any], list[int]]:
        """transformers' ``generate(prefix_allowed_tokens_fn=...)`` for prompts ``prompt_length`` tokens
        long (left-padded batches: every row's answer starts there)."""
        return lambda _, ids: self.allowed(ids[prompt_length:].tolist(), eos)


def answer_digest(answers: Sequence[str]) -> str:
    """sha256 of the answers in their order (the order the trie was built in)."""
    return hashlib.sha256(json.dumps(list(answers), ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AnswerSet:
    answers: tuple[str, ...]
    training_windows: int  # training windows with a gold answer (answers are their distinct targets)
    digest: str
    path: str | None = None

    @classmethod
    def of(cls, answers: Sequence[str], training_windows: int) -> AnswerSet:
        return cls(tuple(answers), int(training_windows), answer_digest(answers))

    def summary(self) -> dict[str, Any]:
        """What a run report records (the answers themselves stay in the file)."""
        return {"file": self.path, "answers": len(self.answers), "training_windows": self.training_windows,
                "digest": self.digest}


def write_answer_set(folder: str | Path, answer_set: AnswerSet) -> Path:
    """``folder/answer_set.json``, written atomically."""
    from egohorizon.atomic_files import write_json_atomic

    path = Path(folder) / ANSWER_SET_FILE
    write_json_atomic(path, {"format": ANSWER_SET_FORMAT, "version": ANSWER_SET_VERSION,
                             "source": "the distinct gold answers of the training windows",
                             "training_windows": answer_set.training_windows, "digest": answer_set.digest,
                             "answers": list(answer_set.answers)})
    return path


def read_answer_set(folder: str | Path) -> AnswerSet | None:
    """The answer set saved beside an adapter; None when there is none; ConfigError naming the file and
    the field when it is unreadable, of another format or version, or its digest does not match."""
    path = Path(folder) / ANSWER_SET_FILE
    if not path.is_file():
        return None
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: corrupt answer set, not valid JSON ({error})") from None
    if not isinstance(obj, dict) or obj.get("format") != ANSWER_SET_FORMAT:
        raise ConfigError(f"{path}: not an answer set (field 'format' must be {ANSWER_SET_FORMAT!r})")
    if obj.get("version") != ANSWER_SET_VERSION:
        raise ConfigError(f"{path}: answer set version {obj.get('version')!r}; this egohorizon reads version "
                          f"{ANSWER_SET_VERSION}")
    answers = obj.get("answers")
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a for a in answers):
        raise ConfigError(f"{path}: field 'answers' must be a non-empty list of non-empty strings")
    windows = obj.get("training_windows")
    if not isinstance(windows, int) or windows < len(answers):
        raise ConfigError(f"{path}: field 'training_windows' must be an integer >= the {len(answers)} answers, "
                          f"got {windows!r}")
    digest = answer_digest(answers)
    if obj.get("digest") != digest:
        raise ConfigError(f"{path}: corrupt answer set: field 'digest' {obj.get('digest')!r} does not match its "
                          f"answers ({digest}); write it again (docs/captioning.md)")
    return AnswerSet(tuple(answers), windows, digest, str(path))


def training_answer_set(datamodule) -> AnswerSet:
    """The datamodule's training answers (``training_answers``, the trie's order) and how many training
    windows have one of them as their target (read from the training shards' JSON members)."""
    from egohorizon.formats.caption import render_caption_answer

    answers = datamodule.training_answers()
    known = set(answers)
    windows = 0
    for meta in datamodule.window_metas("train"):
        target = render_caption_answer(meta["events"], meta["start"], meta["end"])
        if target:
            if target not in known:  # the two reads of the training shards must agree
                raise ConfigError(f"training window {meta.get('key')}: its target is not in training_answers()")
            windows += 1
    return AnswerSet.of(answers, windows)
