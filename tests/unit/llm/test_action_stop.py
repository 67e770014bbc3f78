"""Stopping a candidate at K actions (issue 37, ``model.generation.actions`` first_k / exactly_k): the stopping
criterion ends a row once its list holds K finished actions (or has closed), each row with its input's K;
the parser reads such an unclosed reply as those K actions; as_written keeps its token budget and an
unclosed reply stays invalid there."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from egohorizon.backbones.tokenizer import train_bpe_tokenizer
from egohorizon.llm.action_count import ActionCountStoppingCriteria, ListProgress
from egohorizon.llm.constraints import token_texts
from egohorizon.metrics.parsing import close_stopped_reply
from egohorizon.tasks.forecast import ForecastTask

ACTIONS = ["open the fridge", "take out the milk", "pour the milk", "close the fridge"]


@pytest.fixture(scope="module")
def tokenizer():
    answers = [json.dumps({"candidates": [ACTIONS[: 1 + n % 4]]}) for n in range(40)]
    return train_bpe_tokenizer(answers * 5, vocab_size=300)


def progress(text: str) -> ListProgress:
    state = ListProgress()
    state.feed(text)
    return state


@pytest.mark.parametrize(("text", "k", "lists", "done"), [
    ('{"candidates": [["open the fridge", "take', 2, 1, False),  # the second action is not finished
    ('{"candidates": [["open the fridge", "take out the milk"', 2, 1, True),
    ('{"candidates": [["a [b]", "say \\"hi\\""', 2, 1, True),  # brackets and quotes inside strings
    ('{"candidates": [["open the fridge"]', 3, 1, True),  # closed early (first_k): nothing more is read
    ('{"candidates": [["a", "b"], ["c"', 2, 2, False),  # in_prompt: the second list has one action
    ('{"candidates": [["a", "b"], ["c", "d"', 2, 2, True),
    ("1. open the fridge\n2. take out the milk", 1, 1, False),  # another form: the token budget decides
])
def test_when_a_reply_is_done(text, k, lists, done):
    assert progress(text).done(k, lists) is done


def test_the_criterion_stops_each_row_at_its_inputs_k(tokenizer):
    prompt = [tokenizer.pad_token_id] * 3
    reply = tokenizer('{"candidates": [["open the fridge", "take out the milk", "pour the milk"',
                      add_special_tokens=False)["input_ids"]
    criterion = ActionCountStoppingCriteria(token_texts(tokenizer), ks=[1, 3], prompt_length=len(prompt))
    stopped_at = [None] * 4  # two inputs (K = 1, K = 3) x two sequences each
    for length in range(1, len(reply) + 1):  # called once per step with the rows so far, as generate does
        done = criterion(torch.tensor([prompt + reply[:length]] * 4), None)
        assert done.dtype == torch.bool and done.shape == (4,)
        for row, flag in enumerate(done.tolist()):
            if flag and stopped_at[row] is None:
                stopped_at[row] = tokenizer.decode(reply[:length])
    assert stopped_at[0] == stopped_at[1] and stopped_at[2] == stopped_at[3]
    assert progress(stopped_at[0]).items == 1 and progress(stopped_at[2]).items == 3
    assert len(stopped_at[0]) < len(stopped_at[2])


@pytest.mark.parametrize(("text", "closed"), [
    ('{"candidates": [["a", "b"', '{"candidates": [["a", "b"]]}'),
    ('{"candidates": [["a", "b",', '{"candidates": [["a", "b"]]}'),  # a token holding '",'
    ('{"candidates": [["a", "b", "c', '{"candidates": [["a", "b"]]}'),  # a token holding '", "'
    ('[["a", "b"', '[["a", "b"]]'),
    ('{"candidates": [["a", "b"], ["c", "d"', '{"candidates": [["a", "b"], ["c", "d"]]}'),
])
def test_a_reply_stopped_at_k_actions_is_closed_after_its_last_action(text, closed):
    assert close_stopped_reply(text, 2) == closed


@pytest.mark.parametrize("text", [
    '{"candidates": [["a"',  # fewer than K finished actions: an unfinished reply, not a stopped one
    '{"candidates": [["a", "b"]]}',  # already closed
    '{"candidates": [["a", "b"]], "note": "x',  # stopped elsewhere
    "1. a\n2. b",
])
def test_any_other_reply_is_left_as_it_is(text):
    assert close_stopped_reply(text, 2) == text


@pytest.mark.parametrize(("actions", "parsed"), [
    ("as_written", None),  # no stop rule there: an unclosed reply is malformed, as before
    ("first_k", [["open the fridge", "take out the milk"]]),
    ("exactly_k", [["open the fridge", "take out the milk"]]),
])
def test_the_task_reads_a_stopped_reply_as_its_k_actions(actions, parsed):
    task = ForecastTask(num_candidates=1, actions=actions)
    reply = '{"candidates": [["open the fridge", "take out the milk", "po'
    assert task.parse([reply], SimpleNamespace(k=2)) == parsed
    assert ForecastTask(num_candidates=1, actions=actions).parse(['{"candidates": [["open'],
                                                                 SimpleNamespace(k=2)) is None


def test_rows_that_beam_search_reorders_stop_by_their_own_reply(tokenizer):
    """After beam search swaps two rows, each stops by the reply it holds now (kept by reply, not row)."""
    one = tokenizer('{"candidates": [["open the fridge", "take out the milk", "pour the milk"',
                    add_special_tokens=False)["input_ids"]
    other = tokenizer('{"candidates": [["close the fridge" and then more words to write here',
                      add_special_tokens=False)["input_ids"]
    width = min(len(one), len(other))
    criterion = ActionCountStoppingCriteria(token_texts(tokenizer), ks=[2], prompt_length=0)
    for step in range(1, width + 1):
        rows = [one[:step], other[:step]] if step < width // 2 else [other[:step], one[:step]]
        done = criterion(torch.tensor(rows), None).tolist()
        assert done == [progress(tokenizer.decode(r)).done(2, 1) for r in rows], step
