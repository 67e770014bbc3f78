"""Issue 22 item 21: `qa generate` shows its long steps (loading the world, drafting the questions) as
a progress bar with ETA on stderr when stderr is a terminal, and as log lines otherwise; stdout keeps
only the JSON result."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from egohorizon.cli import main
from egohorizon.data.demo import ensure_demo_world
from egohorizon.progress import StepProgress


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory):
    return ensure_demo_world(tmp_path_factory.mktemp("world"), seed=0, participants=1, weeks=1)


def test_qa_generate_draws_a_bar_with_eta_on_a_terminal(world_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    out = tmp_path / "qa.jsonl"
    assert main(["qa", "generate", "--world", str(world_dir), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)  # the bar stays off stdout
    assert "loading the demo world" in captured.err and "drafting questions" in captured.err
    days = sum(map(len, json.loads((tmp_path / "qa.splits.json").read_text())["participants"]["p01"].values()))
    questions = 14 * (days - 3)  # task types x days after the 3 history days
    assert f"{questions}/{questions}" in captured.err and "ETA" in captured.err and "questions/s" in captured.err
    assert result["items"] == len(out.read_text().splitlines()) > 0


def test_without_a_terminal_the_steps_are_logged_with_eta(caplog):
    caplog.set_level(logging.INFO, logger="egohorizon.progress")
    with StepProgress(live=False, log_every_s=0).step("drafting questions", 4, unit="questions") as advance:
        for _ in range(4):
            advance(1)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("drafting questions: 1/4 questions") and "ETA" in lines[0]
    assert lines[-1].startswith("drafting questions: 4/4 questions")
