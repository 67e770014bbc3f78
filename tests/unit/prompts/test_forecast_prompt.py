"""The forecasting prompt: times, gaps, day changes, windows, and an answer format the parser reads."""

import pytest

from egohorizon.metrics.parsing import parse_forecast_output
from egohorizon.prompts import load_prompt
from egohorizon.prompts.forecast import (
    FORECAST_PROMPT_NAME,
    format_duration,
    prompt_identity,
    render_forecast_answer,
    render_forecast_prompt,
)
from egohorizon.schema import ForecastPoint

MON = 1_709_510_400.0  # Mon 2024-03-04 00:00 UTC
H = 3600.0


def _ctx(id_, start, end, text):
    return {"id": id_, "start": start, "end": end, "text": text, "day": "", "session": "s"}


def _point(k=2):
    context = [
        _ctx("a", MON + 21 * H, MON + 22 * H + 20 * 60, "watch a film on the sofa"),
        _ctx("b", MON + 22 * H + 20 * 60, MON + 22 * H + 21 * 60, "brush teeth"),
        _ctx("c", MON + 24 * H + 7.5 * H, MON + 24 * H + 7.5 * H + 105, "switch off the alarm"),
    ]
    t0 = MON + 24 * H + 9 * H + 35 * 60
    windows = [[t0, t0 + 32 * 60], [t0 + 32 * 60, t0 + 15 * H]][:k]
    return ForecastPoint(id="demo/p/L3/K2/x", source="demo", participant="p", level=3, k=k, t0=t0,
                         context=context, targets=["answer emails", "cook dinner"][:k], windows=windows)


EXPECTED = """Forecast what one person does next, from their own recent history.
Level 3 of 5 (activities).

History, oldest first (start-end, duration, activity):
Mon 2024-03-04
21:00-22:20 (1 h 20 min) watch a film on the sofa
22:20-22:21 (1 min) brush teeth
gap 9 h 09 min
Tue 2024-03-05
07:30-07:31 (2 min) switch off the alarm

Now: Tue 2024-03-05 09:35, 2 h 03 min after the last activity.
Predict the next 2 activities, one for each of these windows:
1. 09:35-10:07 (32 min)
2. 10:07-00:35 (14 h 28 min)

Answer with JSON only: {"candidates": [[...], ...]} holding 3 lists of exactly 2 short activity descriptions.
"""


def test_full_rendering():
    assert render_forecast_prompt(_point()) == EXPECTED


def test_window_on_another_day_is_dated_and_context_can_be_trimmed():
    point = _point()
    point.windows[1] = [point.t0 + 15 * H, point.t0 + 16 * H]  # Wed 00:35-01:35
    text = render_forecast_prompt(point, n_candidates=1, max_context=1)
    assert "1. 09:35-10:07 (32 min)\ngap 14 h 28 min\nWed 2024-03-06\n2. 00:35-01:35 (1 h 00 min)" in text
    assert "watch a film" not in text and "Tue 2024-03-05\n07:30-07:31 (2 min) switch off" in text
    assert "holding 1 list of exactly 2 short activity descriptions" in text
    empty = render_forecast_prompt(point, max_context=0)
    assert "(nothing recorded before now)" in empty and "after the last activity" not in empty


def test_short_spans_show_seconds_and_singulars():
    point = _point(k=1)
    point.windows = [[point.t0, point.t0 + 12.4]]
    text = render_forecast_prompt(point, n_candidates=1)
    assert "07:30:00-07:31:45 (2 min) switch off the alarm" in text
    assert "Now: Tue 2024-03-05 09:35:00, 2 h 03 min after" in text
    assert "the next 1 activity, one for each" in text and "1. 09:35:00-09:35:12 (12 s)" in text
    assert "holding 1 list of exactly 1 short activity description." in text


def test_relative_times_show_day_numbers():
    point = _point(k=1)
    shift = MON - 86400  # the first context event now starts on relative day 1 at 21:00
    point.t0 -= shift
    point.windows = [[a - shift, b - shift] for a, b in point.windows]
    point.context = [{**c, "start": c["start"] - shift, "end": c["end"] - shift} for c in point.context]
    text = render_forecast_prompt(point)
    assert "day 2\n21:00-22:20 (1 h 20 min) watch a film" in text and "Now: day 3 09:35," in text


def test_overlapping_context_measures_gaps_from_the_latest_end():
    point = _point()
    point.context = [_ctx("x", MON, MON + 2 * H, "work"), _ctx("y", MON + 600, MON + 700, "drink water"),
                     _ctx("z", MON + 2 * H + 300, MON + 2 * H + 400, "walk")]
    text = render_forecast_prompt(point)
    assert "00:10-00:11 (2 min) drink water\ngap 5 min\n02:05" in text  # from 02:00, not from 00:11


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (44.6, "45 s"), (59.4, "59 s"), (59.6, "1 min"),
                                           (3599, "1 h 00 min"), (7500, "2 h 05 min"),
                                           (90000 + 60, "1 d 1 h 01 min")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_answer_format_round_trips_through_the_parser():
    trajectories = [["answer emails", "cook dinner"], ["go for a run", "take a shower \"quickly\""]]
    answer = render_forecast_answer(trajectories)
    assert answer == ('{"candidates": [["answer emails", "cook dinner"], '
                      '["go for a run", "take a shower \\"quickly\\""]]}')
    assert parse_forecast_output(answer) == trajectories
    with pytest.raises(ValueError):
        render_forecast_answer(["not", "nested"])


def test_prompt_is_versioned_and_accepts_dicts_and_other_templates(tmp_path):
    prompt = load_prompt(FORECAST_PROMPT_NAME)
    assert prompt_identity() == {"prompt": "forecast", "prompt_version": prompt.version}
    assert render_forecast_prompt(_point().to_dict()) == EXPECTED
    custom = tmp_path / "short.txt"
    custom.write_text("# version: 7\nL{level} K{k} N{n_candidates}\n{history}\n{now}\n{windows}\n{level_name}\n")
    assert render_forecast_prompt(_point(k=1), prompt=str(custom)).startswith("L3 K1 N3\n")
    assert prompt_identity(str(custom)) == {"prompt": "short", "prompt_version": "7"}
