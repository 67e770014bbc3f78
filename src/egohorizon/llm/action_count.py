"""Constrained decoding of a forecast: no list of actions closes before it holds K of them.

A forecaster trained for a few steps often ends a K = 10 answer after one action
(``{"candidates": [["Continue stirring"]]}``): the soft edit distance then pays nine deletions, whatever
the one action is. ``model.generation.actions=exactly_k`` forbids that ending: while the open inner list
of ``{"candidates": [[...], ...]}`` holds fewer than K finished strings, no token may close it, and the
reply may not end inside an open list. Every word is still the model's; longer lists are cut to their
first K actions afterwards (``tasks.forecast``). Replies in another form (numbered lines, prose) open no
JSON list and are left alone.

``ListState`` is torch-free (a character scanner over the JSON reply); ``ActionCountLogitsProcessor``
applies it to a transformers ``generate`` call, one K per batch row. Hand-written: transformers has
length constraints in tokens, none that counts list items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ListState:
    """Where a partial JSON reply stands: list depth, whether inside a string (and after a backslash),
    finished strings in the open inner list, and inner lists closed so far."""

    depth: int = 0
    in_string: bool = False
    escaped: bool = False
    items: int = 0
    lists_closed: int = 0

    def feed(self, piece: str, k: int) -> ListState | None:
        """The state after ``piece``, or None when ``piece`` closes an inner list before its K-th action
        or the outer list before any inner one."""
        state = self
        for char in piece:
            state = state._step(char, k)
            if state is None:
                return None
        return state

    def _step(self, char: str, k: int) -> ListState | None:
        if self.in_string:
            if self.escaped:
                return replace(self, escaped=False)
            if char == "\\":
                return replace(self, escaped=True)
            if char == '"':
                return replace(self, in_string=False, items=self.items + (self.depth == 2))
            return self
        if char == '"':
            return replace(self, in_string=True)
        if char == "[":
            return replace(self, depth=self.depth + 1, items=0 if self.depth + 1 == 2 else self.items)
        if char == "]":
            if self.depth == 2:
                return None if self.items < k else replace(self, depth=1, lists_closed=self.lists_closed + 1)
            if self.depth == 1 and self.lists_closed == 0:
                return None
            return replace(self, depth=max(0, self.depth - 1))
        return self

    @property
    def may_end(self) -> bool:
        """Whether the reply may end here: not inside an open list."""
        return self.depth == 0


def reply_state(text: str, k: int) -> ListState | None:
    """The state after the whole reply ``text`` (None: it already broke the constraint)."""
    return ListState().feed(text, k)


class ActionCountLogitsProcessor:
    """A transformers logits processor: per batch row, the tokens that would close a list too early, and
    the end of the reply inside an open list, get -inf.

    ``token_texts[i]`` is token ``i``'s text (``constraints.token_texts``); only the few tokens holding a
    ``]`` are checked against the row's state, so a step costs a short scan per row, not a pass over the
    vocabulary. ``ks[i]`` is input ``i``'s K; rows repeat each input ``num_return_sequences`` times.
    """

    def __init__(self, token_texts: Sequence[str], eos_id: int, ks: Sequence[int], prompt_length: int) -> None:
        self.token_texts = list(token_texts)
        self.eos_id, self.ks, self.prompt_length = eos_id, list(ks), prompt_length
        self.closing_ids = [i for i, text in enumerate(self.token_texts) if "]" in text]
        # The state after each reply seen at the last step, and whether it has ended (EOS), keyed by
        # (input, generated ids): a row is fed only its newest token, from its parent's state. Keyed by the
        # reply, not by the row, because beam search reorders rows between steps (row i may continue
        # what row j held). And the refused ids of each (state, K) met, worked out once: a K = 10 batch
        # of 48 rows rescanned every reply and every closing token at each step before.
        self._states = PrefixStates(self._feed, (ListState(), False))
        self._refused: dict[tuple[ListState, int], list[int]] = {}

    def banned(self, k: int, ids: Sequence[int]) -> list[int]:
        """The token ids refused after the reply ``ids`` (empty once it has ended or left the form)."""
        if self.eos_id in ids:
            return []
        text = "".join(self.token_texts[i] if i < len(self.token_texts) else "" for i in ids)
        state = reply_state(text, k)
        if state is None:  # cannot happen from a constrained start; the parser reports what it gets
            return []
        banned = [i for i in self.closing_ids if state.feed(self.token_texts[i], k) is None]
        if not state.may_end:
            banned.append(self.eos_id)
        return banned

    def _refused_after(self, state: ListState, k: int) -> list[int]:
        key = (state, k)
        if key not in self._refused:
            refused = [i for i in self.closing_ids if state.feed(self.token_texts[i], k) is None]
            self._refused[key] = refused if state.may_end else [*refused, self.eos_id]
        return self._refused[key]

    def _feed(self, kept: tuple[ListState | None, bool], token: int, k: int) -> tuple[ListState | None, bool]:
        state, ended = kept
        if ended or state is None:  # a reply that ended, or left the form, stays so
            return kept
        if token == self.eos_id:
            return state, True
        return state.feed(self.token_texts[token] if token < len(self.token_texts) else "", k), False

    def __call__(self, input_ids, scores):
        """What ``banned`` says for each row's reply so far (same ids), from its parent reply's state."""
        rows = input_ids.shape[0]
        per_input = rows // max(1, len(self.ks))
        kept = self._states.step(input_ids[:, self.prompt_length:].tolist(), [self.ks[r // per_input] for r in range(rows)],
                                 [r // per_input for r in range(rows)])
        for row, (state, ended) in enumerate(kept):
            if ended or state is None:  # a reply that ended, or left the form, is not constrained
                continue
            banned = [i for i in self._refused_after(state, self.ks[row // per_input]) if i < scores.shape[-1]]
            if banned:  # (the tokenizer may know more ids than the model scores)
                scores[row, banned] = float("-inf")
        return scores


class PrefixStates:
    """Per-row scan states of replies that grow a token a step, kept between steps by reply.

    ``step(replies, ks, inputs)`` gives each reply's state: the state of the same reply at the last step
    (a row may be asked twice), or its parent's (the reply less its newest token) fed that token, or,
    for a reply whose parent was not seen (the first step, a skipped call), a scan from ``start``.
    Only the latest step's states are kept. ``feed(state, token, k)`` must not mutate ``state``.
    Hand-written: transformers' processors get the rows, not which beam a row continues.
    """

    def __init__(self, feed, start) -> None:
        self.feed, self.start = feed, start
        self._last: dict[tuple[int, tuple[int, ...]], object] = {}

    def step(self, replies: Sequence[Sequence[int]], ks: Sequence[int], inputs: Sequence[int]) -> list:
        now: dict[tuple[int, tuple[int, ...]], object] = {}
        for reply, k, source in zip(replies, ks, inputs):
            key = (source, tuple(reply))
            if key not in now:
                now[key] = self._state_of(key, k)
        self._last = now
        return [now[(source, tuple(reply))] for reply, source in zip(replies, inputs)]

    def _state_of(self, key: tuple[int, tuple[int, ...]], k: int):
        source, reply = key
        if key in self._last:
            return self._last[key]
        parent = (source, reply[:-1])
        if reply and parent in self._last:
            return self.feed(self._last[parent], reply[-1], k)
        state = self.start
        for token in reply:
            state = self.feed(state, token, k)
        return state


def action_count_processor(tokenizer, ks: Sequence[int], prompt_length: int) -> ActionCountLogitsProcessor:
    """The processor for a batch whose inputs ask for ``ks`` actions, prompts left-padded to
    ``prompt_length`` tokens (decodes the whole vocabulary: a caller generating many batches keeps
    ``constraints.token_texts`` and builds ``ActionCountLogitsProcessor`` itself)."""
    from egohorizon.llm.constraints import token_texts

    return ActionCountLogitsProcessor(token_texts(tokenizer), tokenizer.eos_token_id, ks, prompt_length)


@dataclass
class ListProgress:
    """How far a reply has written its lists, tolerant of any shape (a list may close early under
    first_k): inner lists opened and closed, finished strings in the latest inner list."""

    depth: int = 0
    in_string: bool = False
    escaped: bool = False
    items: int = 0
    opened: int = 0
    closed: int = 0

    def feed(self, piece: str) -> None:
        for char in piece:
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif char == "\\":
                    self.escaped = True
                elif char == '"':
                    self.in_string = False
                    self.items += self.depth == 2
            elif char == '"':
                self.in_string = True
            elif char == "[":
                self.depth += 1
                if self.depth == 2:
                    self.opened, self.items = self.opened + 1, 0
            elif char == "]":
                self.closed += self.depth == 2
                self.depth = max(0, self.depth - 1)

    def done(self, k: int, lists: int) -> bool:
        """Whether the reply's ``lists``-th inner list holds K finished actions or has closed: whatever
        follows is never read (the parse keeps the first ``lists`` lists, each cut to K)."""
        return self.closed >= lists or (self.opened >= lists and self.depth == 2 and self.items >= k)


class ActionCountStoppingCriteria:
    """A transformers stopping criterion (per row): a candidate stops once its list holds K finished
    actions (``ks[i]`` for input ``i``; ``lists`` lists per reply: 1 when each reply is one candidate).
    The reply then ends inside its open list (``…, "action K"``); the forecast task closes it before
    parsing. Each reply's tokens are scanned once, as they come (``token_texts``: each id's text), kept
    by reply as the logits processor keeps them (beam search reorders rows)."""

    def __init__(self, token_texts: Sequence[str], ks: Sequence[int], prompt_length: int, lists: int = 1) -> None:
        self.token_texts, self.ks = token_texts, list(ks)
        self.prompt_length, self.lists = prompt_length, lists
        self._states = PrefixStates(self._feed, ListProgress())

    def _feed(self, progress: ListProgress, token: int, k: int) -> ListProgress:
        grown = replace(progress)  # a copy: the parent's progress may be the state of another row too
        grown.feed(self.token_texts[token] if token < len(self.token_texts) else "")
        return grown

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        rows = input_ids.shape[0]
        per_input = rows // max(1, len(self.ks))
        ks = [self.ks[r // per_input] for r in range(rows)]
        kept = self._states.step(input_ids[:, self.prompt_length:].tolist(), ks, [r // per_input for r in range(rows)])
        done = [progress.done(k, self.lists) for progress, k in zip(kept, ks)]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
