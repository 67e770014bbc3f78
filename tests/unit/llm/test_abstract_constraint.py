"""Constrained decoding of the abstractor (``llm.constraints``): whatever the model's scores,
greedy decoding under the constraint writes a reply the strict parser accepts; the constraint only
removes choices (a valid reply the model prefers comes out unchanged)."""

from __future__ import annotations

import pytest
import torch

from egohorizon.backbones.tokenizer import train_bpe_tokenizer
from egohorizon.formats.abstract import Group, parse_groups, render_groups
from egohorizon.llm.constraints import GroupingConstraint, grouping_processor


@pytest.fixture(scope="module")
def tokenizer():
    answers = [render_groups([Group(0, 2, "make a cup of coffee"), Group(3, 3, "check the phone"),
                              Group(4, 12 + n % 4, "answer e-mails at the desk")]) for n in range(40)]
    return train_bpe_tokenizer(answers * 5 + ["0-15: 13-14: 10-11: read a book chapter by chapter"] * 5,
                               vocab_size=400)


@pytest.mark.parametrize(("text", "state"), [
    ("", (0, None)), ("0-", (0, None)), ("0-4", (0, None)), ("0-2: a", (0, 2)), ("0-2: a\n", (3, None)),
    ("0-2: a\n3-4: b", (3, 4)), ("0-5", None), ("1", None), ("0-2: \n", None), ("0-4: x\n", None),
    ("0-2: a\n2", None), ("0-02", None), ("0-2", (0, None)),
])
def test_states_of_partial_replies(text, state):
    found = GroupingConstraint(5).state(text)
    assert (found and (found.first, found.last)) == state


def test_may_end_only_at_the_last_event_with_a_description():
    constraint = GroupingConstraint(5)
    assert constraint.may_end("0-2: a\n3-4: b")
    assert not constraint.may_end("0-2: a\n3-3: b") and not constraint.may_end("0-4:") and not constraint.may_end("0-4: ")


def greedy(tokenizer, scores_for_step, n_events: int, max_steps: int = 300) -> str:
    """Greedy decoding of one reply under the constraint, the scores given per step."""
    prompt = [tokenizer.pad_token_id] * 3  # the processor reads only what follows the prompt
    processor = grouping_processor(tokenizer, [n_events], prompt_length=len(prompt))
    ids = list(prompt)
    for step in range(max_steps):
        scores = scores_for_step(step, ids[len(prompt):]).clone()[None]
        chosen = int(processor(torch.tensor([ids]), scores)[0].argmax())
        if chosen == tokenizer.eos_token_id:
            break
        ids.append(chosen)
    else:
        raise AssertionError("no end of reply within the step budget")
    return tokenizer.decode(ids[len(prompt):])


@pytest.mark.parametrize("n_events", [1, 2, 9, 14, 16, 23])
@pytest.mark.parametrize("seed", range(4))
def test_any_scores_give_a_valid_grouping(tokenizer, n_events, seed):
    generator = torch.Generator().manual_seed(seed * 100 + n_events)
    size = len(tokenizer)
    ends = torch.zeros(size)
    ends[tokenizer.convert_tokens_to_ids("Ċ")] = ends[tokenizer.eos_token_id] = 4.0  # lines end now and then

    def random_scores(step, generated):
        return torch.randn(size, generator=generator) * 3 + ends

    reply = greedy(tokenizer, random_scores, n_events)
    groups = parse_groups(reply, n_events)  # raises on anything invalid
    assert groups[-1].last == n_events - 1


def test_a_valid_preferred_reply_comes_out_unchanged_and_an_overlong_one_is_cut(tokenizer):
    numbers = {t: i for t, i in tokenizer.get_vocab().items() if t.isascii() and t.isdigit()}

    def scripted(target: str):
        target_ids = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]

        def scores(step, generated):
            row = torch.zeros(len(tokenizer))
            for token, index in numbers.items():  # where its index is refused, the largest one allowed
                row[index] = int(token) / 100
            row[target_ids[min(step, len(target_ids) - 1)]] = 10.0
            return row

        return scores

    valid = "0-2: make a cup of coffee\n3-3: check the phone\n4-13: answer e-mails at the desk"
    assert greedy(tokenizer, scripted(valid), 14) == valid
    # the model writes groups past the last event (14 events, as if it held 16): the indices are held to
    # the run, the model's boundaries before that are kept
    overlong = "0-2: make a cup of coffee\n3-3: check the phone\n4-15: answer e-mails at the desk"
    reply = greedy(tokenizer, scripted(overlong), 14)
    groups = parse_groups(reply, 14)
    assert [(g.first, g.last) for g in groups][:2] == [(0, 2), (3, 3)] and groups[-1].last == 13
