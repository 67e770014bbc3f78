"""CaptionModule: the LoRA vision-language model (models.lora_lm) that turns a 30 s window's frames
(gaze drawn), its gaze close-up and its speech into the wearer's actions, one per line.

What is specific to captioning: the ``caption`` prompt, one output per window (a caption list, not N
sampled candidates) and, optionally, a closed answer set (``generation.answer_set: train``): decoding
may only write an answer that some training window has as its target, token by token along a trie of
those answers, so beam search picks the training answer the model finds most likely for the window
instead of stitching words of several phrases together (issue 11: the tiny captioner wrote mixtures
such as "type code for signal filtering in Stardew Valley", which no judge can match). The set comes
from the training days only (the datamodule's ``training_answers``) and is saved beside every adapter
(``answer_set.json``, ``egohorizon.llm.answer_set``: versioned, with the training-window count and a
digest), where the offline ``egohorizon caption --model ADAPTER`` job reads it and decodes through the
same trie. Parsing and scoring the captions belong to the caption task.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from egohorizon.errors import ConfigError
from egohorizon.llm.answer_set import AnswerSet, AnswerTrie, training_answer_set, write_answer_set
from egohorizon.prompts.caption import CAPTION_PROMPT_NAME
from models.lora_lm import LoRALanguageModule

__all__ = ["ANSWER_SETS", "AnswerTrie", "CaptionModule", "training_answer_set"]

ANSWER_SETS = (None, "train")


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
        self._answer_set: AnswerSet | None = None

    def set_answers(self, answers: Sequence[str] | AnswerSet) -> None:
        """The closed answer set (an ``AnswerSet``, or bare answers: a set of unknown window count),
        tokenised as the collator tokenises targets (+ EOS)."""
        if not isinstance(answers, AnswerSet):
            answers = AnswerSet.of(answers, len(answers))
        self._answer_set = answers
        self._trie = AnswerTrie.of_answers(self.tokenizer, answers.answers)

    def answer_set(self) -> AnswerSet:
        if self._answer_set is None:  # the training windows' targets, from the datamodule of the run
            self.set_answers(training_answer_set(self.trainer.datamodule))
        return self._answer_set

    def answer_trie(self) -> AnswerTrie:
        self.answer_set()
        return self._trie

    def generation_constraints(self, batch: dict[str, Any]) -> dict[str, Any]:
        if self.generation["answer_set"] is None:
            return {}
        fn = self.answer_trie().prefix_allowed_tokens_fn(batch["prompt_ids"].shape[1], self.tokenizer.eos_token_id)
        return {"prefix_allowed_tokens_fn": fn}

    def save_adapter(self, folder: str | Path) -> Path:
        """The adapter folder, plus ``answer_set.json`` when decoding is restricted to the training answers:
        the offline job (``egohorizon caption --model ADAPTER``) loads it and decodes as validation did."""
        folder = super().save_adapter(folder)
        if self.generation["answer_set"] == "train":
            write_answer_set(folder, self.answer_set())
        return folder
