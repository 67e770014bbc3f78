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
