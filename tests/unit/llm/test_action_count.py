"""Constrained decoding of a forecast's length (``llm.action_count``, ``model.generation.actions``):
whatever the model's scores, no list of actions closes before K of them and the reply does not end
inside an open list; a reply that already has K actions comes out unchanged; the task keeps the first K."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from egohorizon.backbones.tokenizer import train_bpe_tokenizer
from egohorizon.llm.action_count import ListState, action_count_processor, reply_state
from egohorizon.metrics.parsing import parse_forecast_output
from egohorizon.tasks.forecast import ForecastTask

ACTIONS = ["open the fridge", "take out the milk", "pour the milk", "close the fridge", "drink the coffee"]


@pytest.fixture(scope="module")
def tokenizer():
    answers = [json.dumps({"candidates": [ACTIONS[: 1 + n % 5]]}) for n in range(40)]
    return train_bpe_tokenizer(answers * 5 + ['"say \\"hi\\""]] and more'] * 5, vocab_size=400)


@pytest.mark.parametrize(("text", "depth", "items"), [
    ("", 0, 0),
    ('{"candidates": [', 1, 0),
    ('{"candidates": [["open', 2, 0),
    ('{"candidates": [["open the fridge", "take', 2, 1),
    ('{"candidates": [["open the fridge", "take out the milk"', 2, 2),
    ('{"candidates": [["say \\"hi\\" twice", "a [b]"', 2, 2),  # escaped quotes and brackets inside strings
    ("Next I will open the fridge.", 0, 0),  # prose opens no list: nothing to count
])
def test_states_of_partial_replies(text, depth, items):
    state = reply_state(text, k=3)
    assert (state.depth, state.items) == (depth, items)


def test_an_inner_list_closes_only_at_k_actions_and_the_outer_only_after_one():
    two = reply_state('{"candidates": [["a", "b"', k=3)
    assert two.feed("]", k=3) is None and two.feed("]]}", k=3) is None
    assert two.feed(', "c"]]}', k=3).may_end
    assert two.feed(', "c]', k=3).in_string  # a bracket inside a string closes nothing
    assert reply_state('{"candidates": []', k=1) is None  # no inner list: no candidate at all
    assert reply_state('{"candidates": [["a"], ["b"', k=1).lists_closed == 1


def test_the_reply_may_end_only_outside_every_list():
    assert ListState().may_end
    assert not reply_state('{"candidates": [["a", "b", "c"]', k=3).may_end
    assert reply_state('{"candidates": [["a", "b", "c"]]}', k=3).may_end


def greedy(tokenizer, choices, k: int, max_steps: int = 120) -> str:
    """Greedy decoding of one reply under the constraint. ``choices(text)`` plays the model: the texts it
    wants next, most wanted first (each one's first token gets a lower score than the one before); the end
    of the reply is its first choice once it has closed every list."""
    prompt = [tokenizer.pad_token_id] * 2
    processor = action_count_processor(tokenizer, [k], prompt_length=len(prompt))
    ids = list(prompt)
    for _step in range(max_steps):
        text = tokenizer.decode(ids[len(prompt):], skip_special_tokens=True)
        scores = torch.full((1, len(tokenizer)), -10.0)
        for rank, wanted in enumerate(choices(text)):
            first = tokenizer(wanted, add_special_tokens=False)["input_ids"][0]
            scores[0, first] = max(float(scores[0, first]), 10.0 - rank)
        state = reply_state(text, k=0)  # the model itself counts nothing
        done = state is not None and state.may_end and state.lists_closed > 0
        scores[0, tokenizer.eos_token_id] = 20.0 if done else -5.0
        chosen = int(processor(torch.tensor([ids]), scores)[0].argmax())
        if chosen == tokenizer.eos_token_id:
            break
        ids.append(chosen)
    return tokenizer.decode(ids[len(prompt):], skip_special_tokens=True)


def stops_after_one_action(text: str) -> list[str]:
    """A model that would close the list after its first action; its second choice is the next action."""
    opening = '{"candidates": [["'
    if len(text) < len(opening):
        return [opening[len(text):]]
    state = reply_state(text, k=0)  # the model itself counts nothing
    if state.in_string:
        written = text[text.rindex('"') + 1:]
        action = ACTIONS[min(state.items, len(ACTIONS) - 1)]
        rest = action[len(written):] if action.startswith(written) else ""
        return [rest] if rest else ['"]]}', '"']
    if state.depth == 2:
        return [' "', '"'] if text.rstrip().endswith(",") else ["]]}", ', "']
    return ["]}", "}"] if state.depth == 1 else ["}"]


def test_a_model_that_stops_after_one_action_writes_k_under_the_constraint(tokenizer):
    for k in (1, 3, 5):
        reply = greedy(tokenizer, stops_after_one_action, k)
        parsed = parse_forecast_output(reply)
        assert parsed is not None, reply
        assert len(parsed[0]) >= k, reply
        assert parsed[0][0] == "open the fridge"


def test_a_reply_that_already_has_k_actions_is_unchanged(tokenizer):
    full = json.dumps({"candidates": [ACTIONS[:3]]})

    def writes_three(text: str) -> list[str]:
        return [full[len(text.replace(" ", "")) + full.count(" ", 0, len(text)):] or "}"]

    reply = greedy(tokenizer, writes_three, k=3)
    assert reply.replace(" ", "") == full.replace(" ", "")


def test_rows_repeat_each_input_and_only_closing_tokens_and_eos_are_refused(tokenizer):
    processor = action_count_processor(tokenizer, [1, 3], prompt_length=0)
    ids = tokenizer('{"candidates": [["open the fridge"', add_special_tokens=False)["input_ids"]
    rows = torch.tensor([ids] * 4)  # two inputs x two sequences each
    scores = processor(rows, torch.zeros(4, len(tokenizer)))
    refused = [set(torch.nonzero(row == float("-inf")).flatten().tolist()) for row in scores]
    # K = 1: one action written, the list may close; only ending inside it is refused
    assert refused[0] == refused[1] == {tokenizer.eos_token_id}
    assert refused[2] == refused[3] and tokenizer.eos_token_id in refused[2]
    assert all("]" in tokenizer.decode([i]) for i in refused[2] - {tokenizer.eos_token_id})
    assert len(refused[2]) > 1


@pytest.mark.parametrize(("actions", "lengths"), [("as_written", [3, 1]), ("first_k", [2, 1]),
                                                  ("exactly_k", [2, 1])])
def test_the_task_keeps_the_first_k_actions_unless_as_written(actions, lengths):
    task = ForecastTask(num_candidates=3, actions=actions)
    point = SimpleNamespace(k=2)
    texts = [json.dumps({"candidates": [ACTIONS[:3]]}), json.dumps({"candidates": [ACTIONS[:1]]})]
    parsed = task.parse(texts, point)
    assert [len(c) for c in parsed] == lengths and parsed[0][:2] == ACTIONS[:2]
    assert task.parse(["no list here"], point) is None


def test_the_task_refuses_an_unknown_setting_and_cutting_without_the_point():
    with pytest.raises(ValueError, match="actions"):
        ForecastTask(actions="shortest")
    with pytest.raises(ValueError, match="needs the point"):
        ForecastTask(actions="first_k").parse([json.dumps({"candidates": [["a"]]})])
    generation = {"mode": "sequences", "num_candidates": 3}
    assert ForecastTask.from_generation(generation).actions == "as_written"  # checkpoints from before
    assert ForecastTask.from_generation({**generation, "actions": "exactly_k"}).actions == "exactly_k"


def test_the_kept_row_states_refuse_what_a_rescan_of_each_reply_refuses(tokenizer):
    """The processor feeds each row only its new tokens; at every step it refuses exactly what
    ``banned`` (a scan of the whole reply) refuses, through an early close, a K reached and an EOS."""
    replies = ['{"candidates": [["open the fridge", "pour the milk"]]}',
               '{"candidates": [["open the fridge"]]}',
               '{"candidates": [["a \\\\" quote", "b"], ["c"]]}']
    ids = [tokenizer(r, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id, tokenizer.pad_token_id]
           for r in replies]
    width = max(map(len, ids))
    rows = torch.tensor([i + [tokenizer.pad_token_id] * (width - len(i)) for i in ids])
    processor = action_count_processor(tokenizer, [2, 1, 2], prompt_length=0)
    for step in range(1, width + 1):
        scores = processor(rows[:, :step], torch.zeros(3, len(tokenizer)))
        for row in range(3):
            expected = set(processor.banned([2, 1, 2][row], rows[row, :step].tolist()))
            assert set(torch.nonzero(scores[row] == float("-inf")).flatten().tolist()) == expected, (row, step)


def beam_rows(tokenizer, replies: list[str]) -> list[list[list[int]]]:
    """Rows of one input's two beams at each step, as beam search hands them to a processor: until the
    middle the rows hold replies 0 and 1; from then on row 0 continues reply 1 and row 1 reply 0 (the
    beams reordered), and at the last step both rows continue reply 0 (one beam forked into two)."""
    a, b = (tokenizer(r, add_special_tokens=False)["input_ids"] for r in replies)
    width = min(len(a), len(b))
    steps = [[a[:s], b[:s]] for s in range(1, width // 2)]
    steps += [[b[:s], a[:s]] for s in range(width // 2, width)]
    return steps + [[a[:width], a[:width - 1] + [b[width - 1]]]]


def test_rows_that_beam_search_reorders_are_refused_what_their_own_reply_refuses(tokenizer):
    """Beam search reorders rows between steps: each row is judged by the reply it now holds, not by what
    the same row held before (a state kept by row index would judge row 0 by reply 0's past)."""
    replies = ['{"candidates": [["open the fridge", "pour the milk", "close the fridge"]]}',
               '{"candidates": [["take out the milk"]], "x": ["drink the coffee", "close the fridge"]}']
    processor = action_count_processor(tokenizer, [2], prompt_length=1)
    for rows in beam_rows(tokenizer, replies):
        ids = torch.tensor([[tokenizer.pad_token_id] + row for row in rows])
        scores = processor(ids, torch.zeros(2, len(tokenizer)))
        for row, reply in enumerate(rows):
            expected = set(processor.banned(2, reply))
            assert set(torch.nonzero(scores[row] == float("-inf")).flatten().tolist()) == expected, (row, rows)
