"""Reading forecaster output: tolerant of wrapping, strict about shape; never guesses."""

import pytest

from egohorizon.metrics.parsing import parse_forecast_output


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            '{"candidates": [["make coffee", "drink coffee"], ["check phone"]]}',
            [["make coffee", "drink coffee"], ["check phone"]],
        ),
        # code fence, text around it, whitespace and empty strings dropped
        (
            (
                "Sure! Here you go:\n```json\n"
                '{"candidates": [[" make coffee ", "", "drink coffee"], ["  "], ["read"]]}\n'
                "```\nHope this helps."
            ),
            [["make coffee", "drink coffee"], ["read"]],
        ),
        # JSON embedded in prose without a fence
        ('My answer is {"candidates": [["walk to kitchen"]]} as requested.', [["walk to kitchen"]]),
        # a bare list of lists, and a single list (one candidate)
        ('[["a", "b"], ["c"]]', [["a", "b"], ["c"]]),
        ('["a", "b", "c"]', [["a", "b", "c"]]),
        # plain-text fallback with headers, markdown and a trailing remark
        (
            "Candidate 1:\n1. make coffee\n2. drink coffee\nCandidate 2:\n1. check phone\n",
            [["make coffee", "drink coffee"], ["check phone"]],
        ),
        (
            (
                "Here are my guesses.\n**Candidate 1 (most likely):**\n1. cook\n2. eat\n\n"
                "**Candidate 2:**\n- wash up\n\nThese follow the routine."
            ),
            [["cook", "eat"], ["wash up"]],
        ),
        ("Candidate 1: cook; eat\nCandidate 2: sleep", [["cook", "eat"], ["sleep"]]),
        # a numbered list and nothing else is one candidate
        ("1. cook\n2. eat", [["cook", "eat"]]),
    ],
)
def test_accepted_forms(text, expected):
    assert parse_forecast_output(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "I think the person will probably make coffee.",
        '{"predictions": [["a"]]}',  # object without "candidates"
        '{"candidates": []}',  # nothing to score
        '{"candidates": [["", " "]]}',  # only empty strings
        "[1, 2, 3]",  # numbers, not actions
        '{"candidates": [["a", 3]]}',  # a number among actions
        '[["a"], "b"]',  # mixed shapes
        "Candidate 1:\n1. cook\nI am not sure.\n2. eat",  # an action after prose: ambiguous
        "Maybe:\n1. cook\nthen something else",
    ],
)
def test_malformed_outputs_are_invalid(text):
    assert parse_forecast_output(text) is None
