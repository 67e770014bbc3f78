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
    from egohorizon.prompts.caption import IMAGE_MARK, render_caption_answer, render_caption_prompt

    assert IMAGE_MARK == IMAGE_PLACEHOLDER
    text = render_caption_prompt([0.0, 15.0], "  ", window_s=30.0, with_crop=True)
    assert text.count(IMAGE_MARK) == 3 and text.startswith(f"t=0s {IMAGE_MARK}\nt=15s {IMAGE_MARK}\n")
    assert "2 first-person frames of one 30-second window" in text and "Speech heard in the window: (none)" in text
    assert render_caption_answer(["I open the fridge", " ", "I take the milk "]) == "I open the fridge\nI take the milk"
