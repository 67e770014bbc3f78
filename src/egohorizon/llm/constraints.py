"""Constrained decoding of the abstractor's answer: only valid groupings can be written.

The strict parser (``formats.abstract.parse_groups``) refuses a reply whose groups do not start at 0,
are not contiguous, run past the last event or stop before it. A small model's boundaries are often
right while its indices are not (it writes ``13-15`` for a 14-event run), and a refused reply predicts
nothing. Here the decoder is only allowed tokens that keep the reply a valid prefix of
``FIRST-LAST: DESCRIPTION`` lines over ``n_events`` events:

- FIRST is fixed (0, then the previous LAST + 1), so a line's header is forced up to LAST;
- LAST may be any index from FIRST to the last event (the model chooses among those);
- the description is free text without a line break, and must say something before the line ends;
- a line break is allowed only while events are left, the end of the reply only when none are.

The model still decides every boundary and every word; the constraint only removes choices that the
parser would refuse. ``GroupingConstraint`` is torch-free (what is allowed after a text);
``GroupingLogitsProcessor`` applies it to a transformers ``generate`` call, one run per batch row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

HEADER_CHARS = frozenset("0123456789-:")


@dataclass(frozen=True)
class State:
    """Where a partial reply stands: the current line's ``first`` index, the text of that line so far,
    and, once its header is complete, its ``last`` index and description so far."""

    first: int
    line: str
    last: int | None = None
    description: str = ""


def _is_index(digits: str) -> bool:
    return digits.isdigit() and (digits == "0" or not digits.startswith("0"))


class GroupingConstraint:
    """What may follow a partial reply about a run of ``n_events`` events (canonical form only: the
    form the answers are trained in, ``0-2: make coffee``)."""

    def __init__(self, n_events: int) -> None:
        if n_events < 1:
            raise ValueError("a grouping needs at least one event")
        self.n_events = n_events

    def state(self, text: str) -> State | None:
        """The state after ``text``, or None when ``text`` is already off the valid form."""
        first = 0
        lines = text.split("\n")
        for line in lines[:-1]:  # finished lines
            header, sep, description = line.partition(":")
            last = self._last_index(header, first)
            if not sep or last is None or not description.strip() or last >= self.n_events - 1:
                return None
            first = last + 1
        line = lines[-1]
        header, sep, description = line.partition(":")
        if not sep:
            return State(first, line) if self._header_viable(header, first) else None
        last = self._last_index(header, first)
        return None if last is None else State(first, line, last, description)

    def _last_index(self, header: str, first: int) -> int | None:
        want = f"{first}-"
        digits = header[len(want):]
        if not header.startswith(want) or not _is_index(digits):
            return None
        last = int(digits)
        return last if first <= last < self.n_events else None

    def _header_viable(self, header: str, first: int) -> bool:
        """Whether ``header`` (no ``:`` yet) can still become ``FIRST-LAST`` with a valid LAST."""
        want = f"{first}-"
        if len(header) <= len(want):
            return want.startswith(header)
        if not header.startswith(want):
            return False
        digits = header[len(want):]
        return digits.isdigit() and any(str(last).startswith(digits) for last in range(first, self.n_events))

    def allows(self, text: str, piece: str) -> bool:
        """Whether ``text + piece`` is still a valid partial reply."""
        return self.state(text + piece) is not None

    def may_end(self, text: str) -> bool:
        """Whether the reply may end after ``text``: its last group ends at the last event, described."""
        state = self.state(text)
        return (state is not None and state.last == self.n_events - 1 and bool(state.description.strip()))


def _plain_text(piece: str) -> bool:
    """A token that can sit inside a description: whole characters (a byte-level fragment of a character
    decodes to U+FFFD alone, and fragments could join into a line separator) and no line break of any kind
    (the parser splits lines as ``str.splitlines`` does: also U+2028, U+0085, form feed, ...)."""
    return bool(piece) and "\ufffd" not in piece and len(f"a{piece}a".splitlines()) == 1


class GroupingLogitsProcessor:
    """A transformers logits processor: per batch row, the tokens ``GroupingConstraint`` refuses get -inf.

    ``token_texts[i]`` is token ``i``'s text; ``special`` the ids never allowed inside a reply (padding,
    vision markers); ``eos_id`` ends a reply. Header positions check the few tokens made of digits, ``-``
    and ``:``; description positions allow every ordinary token without a line break, so a step costs a
    mask lookup, not a pass over the vocabulary.
    """

    def __init__(self, token_texts: Sequence[str], eos_id: int, special: Sequence[int], n_events: Sequence[int],
                 prompt_length: int) -> None:
        import torch

        self.token_texts = list(token_texts)
        self.eos_id, self.prompt_length = eos_id, prompt_length
        self.constraints = [GroupingConstraint(n) for n in n_events]
        special_set = set(special) | {eos_id}
        plain = [i not in special_set and _plain_text(t) for i, t in enumerate(self.token_texts)]
        self.text_mask = torch.tensor(plain, dtype=torch.bool)
        self.header_ids = [i for i, t in enumerate(self.token_texts)
                           if plain[i] and t and set(t) <= HEADER_CHARS]
        self.newline_ids = [i for i, t in enumerate(self.token_texts) if t == "\n" and i not in special_set]

    def reply_text(self, ids: Sequence[int]) -> str | None:
        """The reply so far; None once it has ended (EOS), so the row is left alone."""
        if self.eos_id in ids:
            return None
        return "".join(self.token_texts[i] if i < len(self.token_texts) else "\ufffd" for i in ids)

    def allowed(self, row: int, ids: Sequence[int], vocab_size: int) -> Any:
        import torch

        text = self.reply_text(ids)
        mask = torch.zeros(vocab_size, dtype=torch.bool)
        if text is None:
            mask[:] = True
            return mask
        constraint = self.constraints[row]
        state = constraint.state(text)
        if state is None:  # cannot happen from a valid start; let the parser report it
            mask[:] = True
            return mask
        if state.last is not None:
            mask[: len(self.text_mask)] = self.text_mask[:vocab_size]
        else:
            for i in self.header_ids:
                if constraint.allows(text, self.token_texts[i]):
                    mask[i] = True
        if state.last is not None and state.description.strip():
            if state.last < constraint.n_events - 1:
                mask[self.newline_ids] = True
            else:
                mask[self.eos_id] = True
        if not mask.any():  # never expected; a stuck row ends and the parser reports why
            mask[self.eos_id] = True
        return mask

    def __call__(self, input_ids, scores):
        import torch

        rows = input_ids.shape[0]
        per_row = rows // max(1, len(self.constraints))  # num_return_sequences / beams repeat each input
        for row in range(rows):
            generated = input_ids[row, self.prompt_length:].tolist()
            mask = self.allowed(row // per_row, generated, scores.shape[-1]).to(scores.device)
            scores[row] = torch.where(mask, scores[row], torch.full_like(scores[row], float("-inf")))
        return scores


def token_texts(tokenizer) -> list[str]:
    """Each token id's text as it decodes alone (byte-level pieces of a character decode to U+FFFD and are
    never allowed: a description is written in whole characters)."""
    return [tokenizer.decode([i], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            for i in range(len(tokenizer))]


def grouping_processor(tokenizer, n_events: Sequence[int], prompt_length: int) -> GroupingLogitsProcessor:
    """The processor for a batch of runs with ``n_events`` events each, prompts left-padded to
    ``prompt_length`` tokens."""
    texts = token_texts(tokenizer)
    special = [tokenizer.convert_tokens_to_ids(t) for t in tokenizer.all_special_tokens]
    return GroupingLogitsProcessor(texts, tokenizer.eos_token_id, special, n_events, prompt_length)
