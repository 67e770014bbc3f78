import pytest

from egohorizon.errors import ConfigError
from egohorizon.prompts import load_prompt


def test_load_and_render_a_prompt_file(tmp_path):
    path = tmp_path / "greet.txt"
    path.write_text("# version: 3\nHello {name}, it is {time}.\n")
    prompt = load_prompt(str(path))
    assert (prompt.name, prompt.version, prompt.fields) == ("greet", "3", {"name", "time"})
    assert prompt.render(name="Ada", time="noon") == "Hello Ada, it is noon.\n"
    with pytest.raises(ConfigError, match="needs values for \\['time'\\]"):
        prompt.render(name="Ada")


def test_missing_header_and_missing_file(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("no header\n")
    with pytest.raises(ConfigError, match="bad.txt:1: expected a '# version: N' header"):
        load_prompt(str(path))
    with pytest.raises(ConfigError, match="not found"):
        load_prompt("no_such_prompt")


def test_caption_prompt_marks_each_image_where_the_collator_expects_it():
    from egohorizon.backbones.collate import IMAGE_PLACEHOLDER
    from egohorizon.formats.caption import render_caption_answer
    from egohorizon.prompts.caption import IMAGE_MARK, render_caption_prompt

    assert IMAGE_MARK == IMAGE_PLACEHOLDER
    text = render_caption_prompt([0.0, 15.0], "  ", window_s=30.0, with_crop=True)
    assert text.count(IMAGE_MARK) == 3 and text.startswith(f"t=0s {IMAGE_MARK}\nt=15s {IMAGE_MARK}\n")
    assert "2 first-person frames of one 30-second window" in text and "Speech heard in the window: (none)" in text
    assert '{"start": S, "end": E, "action": "TEXT"}' in text and "0 <= S < E <= 30" in text
    events = [{"level": 1, "start": 95.0, "end": 112.5, "text": "open the fridge"},
              {"level": 2, "start": 90.0, "end": 200.0, "text": "make breakfast"},
              {"level": 1, "start": 112.5, "end": 140.0, "text": "take the milk"}]
    assert render_caption_answer(events, 100.0, 130.0) == (
        '{"start": 0.0, "end": 12.5, "action": "open the fridge"}\n'
        '{"start": 12.5, "end": 30.0, "action": "take the milk"}')
    assert render_caption_answer(events[1:2], 100.0, 130.0) is None


def test_caption_sample_is_the_same_prompt_for_training_and_inference():
    import numpy as np

    from egohorizon.formats.caption import parse_caption_output
    from egohorizon.prompts.caption import IMAGE_MARK, caption_sample

    frames = [np.zeros((40, 60, 3), np.uint8) for _ in range(5)]
    crops = [None, np.full((8, 8, 3), 7, np.uint8), None, None, np.full((8, 8, 3), 9, np.uint8)]
    meta = {"key": "w1", "start": 100.0, "end": 130.0, "transcript": "hello", "gaze_drawn": False,
            "frames": [{"t": 100.0 + 7 * i, "gaze": [30.0, 20.0] if i != 2 else None} for i in range(5)],
            "events": [{"level": 1, "start": 90.0, "end": 110.0, "text": "open the fridge"}]}
    sample = caption_sample(meta, frames, crops, frames_per_window=3, with_crop=True)
    # frames 0, 2, 4 (evenly spread); last, the close-up of the chosen frame nearest the middle that has
    # one (4: frame 1's crop is not of a chosen frame)
    assert sample["text"].startswith(f"t=0s {IMAGE_MARK}\nt=14s {IMAGE_MARK}\nt=28s {IMAGE_MARK}\nclose-up")
    assert len(sample["images"]) == 4 and sample["images"][3][0, 0, 0] == 9
    assert sample["images"][0].any() and not sample["images"][1].any()  # ring drawn where there is gaze
    assert not frames[0].any()  # ... on a copy
    assert sample["key"] == "w1" and "Speech heard in the window: hello" in sample["text"]
    assert [(a.start, a.end, a.text) for a in parse_caption_output(sample["target"]).actions] == [
        (0.0, 10.0, "open the fridge")]
    no_gold = caption_sample({**meta, "events": []}, frames, None, frames_per_window=2, with_crop=True)
    assert no_gold["target"] is None and len(no_gold["images"]) == 2 and "close-up" not in no_gold["text"]


def test_training_windows_can_show_one_random_frame_of_each_stretch():
    import numpy as np

    from datamodules.caption import CaptionSamples
    from egohorizon.prompts.caption import pick_frames

    rng = np.random.default_rng(0)
    picks = [pick_frames(30, 2, rng) for _ in range(200)]
    # one frame from each half, every frame of the half drawn at some point, never the same frame twice
    assert all(0 <= a < 15 <= b < 30 for a, b in picks)
    assert {a for a, _ in picks} == set(range(15)) and {b for _, b in picks} == set(range(15, 30))
    assert pick_frames(30, 2) == [0, 29] and pick_frames(2, 2, rng) == [0, 1]  # evaluation: even spread

    from types import SimpleNamespace

    def window():  # a decoded shard window whose frame i is filled with the value i
        meta = {"key": "w7", "start": 0.0, "end": 30.0, "transcript": "", "gaze_drawn": True,
                "frames": [{"t": float(i), "gaze": None} for i in range(30)], "events": []}
        return SimpleNamespace(meta=meta, frames=[np.full((8, 8, 3), i, np.uint8) for i in range(30)], crops=None)

    def shown(samples):
        return tuple(int(im[0, 0, 0]) for im in samples(window())["images"])

    training = CaptionSamples(frames_per_window=2, crops=False, random_frames=True, seed=3)
    drawn = {shown(training) for _ in range(20)}
    assert len(drawn) > 5  # other frames on each call (each epoch) ...
    # ... and the same draws from a fresh copy with the same seed (reproducible runs)
    first, second = (CaptionSamples(2, False, random_frames=True, seed=3) for _ in range(2))
    assert [shown(first) for _ in range(10)] == [shown(second) for _ in range(10)]
    assert shown(CaptionSamples(frames_per_window=2, crops=False)) == (0, 29)  # evaluation
