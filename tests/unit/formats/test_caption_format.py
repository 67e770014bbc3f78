"""The caption format: the tolerant parser never invents, and rendering reads back as itself."""

from __future__ import annotations

from egohorizon.formats.caption import (
    CaptionAction,
    gold_actions,
    parse_caption_output,
    render_caption_lines,
)


def test_a_clean_caption_reads_back_as_written():
    actions = [CaptionAction(0.0, 7.5, "I open the fridge"), CaptionAction(7.5, 15.0, "I take out the milk")]
    text = render_caption_lines(actions, "kitchen; the fridge is open")
    parse = parse_caption_output(text)
    assert parse.actions == actions and parse.scene == "kitchen; the fridge is open"
    assert (parse.dropped, parse.unparsed, parse.invalid) == (0, 0, False)


def test_bad_times_are_dropped_and_prose_is_unparsed_never_repaired():
    lines = [
        "Here is the caption:",
        "```json",
        '{"start": 0, "end": 5, "action": "I sit down"},',
        '{"start": 9, "end": 4, "action": "backwards"}',
        '{"start": 3, "end": 45, "action": "past the window"}',
        '{"start": "0", "end": 5, "action": "string time"}',
        '{"start": 5, "end": 6, "action": "   "}',
        '{"start": -0.3, "end": 30.4, "action": "  I   read  "}',
        '{"note": "no caption keys"}',
        '{"scene": "living room"}',
        '{"scene": "a second scene"}',
        "```",
    ]
    parse = parse_caption_output("\n".join(lines), window_s=30.0)
    assert parse.actions == [CaptionAction(0.0, 5.0, "I sit down"), CaptionAction(0.0, 30.0, "I read")]
    assert parse.scene == "living room"
    assert parse.dropped == 4 and parse.unparsed == 3 and not parse.invalid


def test_nothing_usable_is_invalid():
    assert parse_caption_output("I open the fridge, then I take the milk.").invalid
    assert parse_caption_output('{"start": 5, "end": 2, "action": "x"}').invalid
    assert parse_caption_output(None).invalid and parse_caption_output("").invalid


def test_gold_actions_are_the_windows_level_1_events_clipped_and_ordered():
    events = [
        {"level": 1, "start": 115.0, "end": 125.0, "text": "I stir the soup"},
        {"level": 1, "start": 95.0, "end": 104.0, "text": "I fill the pot"},
        {"level": 2, "start": 90.0, "end": 200.0, "text": "cook dinner"},
        {"level": 1, "start": 130.0, "end": 140.0, "text": "after the window"},
    ]
    assert gold_actions(events, 100.0, 130.0) == [
        CaptionAction(0.0, 4.0, "I fill the pot"),
        CaptionAction(15.0, 25.0, "I stir the soup"),
    ]
