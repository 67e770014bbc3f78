"""CaptionModule: the LoRA vision-language model (models.lora_lm) that turns a 30 s window's frames
(gaze drawn), its gaze close-up and its speech into the wearer's actions, one per line.

What is specific to captioning: the ``caption`` prompt, one output per window (a caption list, not N
sampled candidates) and, optionally, a closed answer set (``generation.answer_set: train``): decoding
may only write an answer that some training window has as its target, token by token along a trie of
those answers, so beam search picks the training answer the model finds most likely for the window
instead of stitching words of several phrases together (issue 11: the tiny captioner wrote mixtures
such as "type code for signal filtering in Stardew Valley", which no judge can match). The set comes
from the training days only (the datamodule's ``training_answers``). Parsing and scoring the captions
belong to the caption task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from egohorizon.errors import ConfigError
from egohorizon.prompts.caption import CAPTION_PROMPT_NAME
from models.lora_lm import LoRALanguageModule

ANSWER_SETS = (None, "train")


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

    def allowed(self, prefix: Sequence[int], fallback: int) -> list[int]:
        """Tokens that continue ``prefix`` into some answer; ``fallback`` (EOS) once an answer is done
        (a beam that is already finished only pads)."""
        return self.next.get(tuple(prefix), [fallback])


class CaptionModule(LoRALanguageModule):
    generation_defaults: ClassVar[dict[str, Any]] = {
        **LoRALanguageModule.generation_defaults,
        "num_candidates": 1,  # one caption list per window
        "temperature": 0.0,
        "strategy": "beam",  # with num_beams = 1: greedy decoding
        "num_beams": 1,
        "max_new_tokens": 160,  # a window holds ~5-15 actions of a few words each
        "answer_set": None,  # None: free text; "train": only answers of training windows
    }
    default_prompt: ClassVar[str] = CAPTION_PROMPT_NAME

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.generation["answer_set"] not in ANSWER_SETS:
            raise ConfigError(
                f"model.generation.answer_set: expected one of {ANSWER_SETS}, got {self.generation['answer_set']!r}"
            )
        self._trie: AnswerTrie | None = None

    def set_answers(self, answers: Sequence[str]) -> None:
        """The closed answer set, tokenised as the collator tokenises targets (+ EOS)."""
        eos = self.tokenizer.eos_token_id
        ids = self.tokenizer(list(answers), add_special_tokens=False)["input_ids"]
        self._trie = AnswerTrie([[*seq, eos] for seq in ids])

    def answer_trie(self) -> AnswerTrie:
        if self._trie is None:  # the training windows' targets, from the datamodule of the run
            self.set_answers(self.trainer.datamodule.training_answers())
        return self._trie

    def generation_constraints(self, batch: dict[str, Any]) -> dict[str, Any]:
        if self.generation["answer_set"] is None:
            return {}
        trie, start, eos = self.answer_trie(), batch["prompt_ids"].shape[1], self.tokenizer.eos_token_id
        return {"prefix_allowed_tokens_fn": lambda _, ids: trie.allowed(ids[start:].tolist(), eos)}
