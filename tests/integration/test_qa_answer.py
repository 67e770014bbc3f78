"""The text-only in-context QA baseline (issue 13): `egohorizon qa answer` with the memory's notes,
through a loopback OpenAI-compatible server (`egohorizon qa serve`) in front of the tiny local model;
every item answered, letters extracted without guessing, scored next to chance and majority position."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from egohorizon.data.demo import ensure_demo_world, load_demo_world
from egohorizon.data.demo.qa.items import generate_items
from egohorizon.data.splits import make_day_split
from egohorizon.schema import QAPrediction, load_jsonl, write_jsonl

pytestmark = pytest.mark.slow  # a server subprocess loads torch and the tiny model (~25 s CPU)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from egohorizon.backbones import TinyBackbone

    tmp = tmp_path_factory.mktemp("qa_answer")
    world = load_demo_world(ensure_demo_world(tmp / "world", seed=0, participants=1, weeks=3))
    items, _ = generate_items(world, make_day_split(world.events), seed=0)
    write_jsonl(tmp / "qa.jsonl", items)
    backbone = TinyBackbone(cache_dir=str(tmp / "cache"), hidden_size=32, intermediate_size=64, num_layers=1,
                            num_heads=2, num_kv_heads=1, vocab_size=400)
    backbone.prepare(corpus=lambda: [i.question + " " + " ".join(i.options) for i in items] + ["A", "B", "C", "D"])
    return tmp, world, items, _servable(backbone.base_path, tmp / "served")


# Qwen's chat format in a few lines: the tiny backbone is trained without a chat template, and a served
# VLM needs one (a real checkpoint ships its own).
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}"
            "{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _servable(base: str, folder):
    import shutil

    from transformers import AutoProcessor

    shutil.copytree(base, folder)
    processor = AutoProcessor.from_pretrained(folder)
    processor.chat_template = TEMPLATE
    processor.tokenizer.chat_template = TEMPLATE
    processor.save_pretrained(folder)
    return str(folder)


def test_answer_through_a_loopback_server(setup):
    from egohorizon.cli import main

    tmp, world, items, model = setup
    server = subprocess.Popen([sys.executable, "-m", "egohorizon.cli", "qa", "serve", "--model", model,
                               "--lifetime", "300"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        out = tmp / "answers"
        assert main(["qa", "answer", str(tmp / "qa.jsonl"), "--world", str(world.path), "--out", str(out),
                     "--model", "tiny", "--base-url", f"http://127.0.0.1:{port}/v1", "--notes", "6"]) == 0
    finally:
        server.terminate()
        server.wait(timeout=30)
    test_items = [i for i in items if i.meta["split"] == "test"]
    rows = load_jsonl(out / "predictions.jsonl", QAPrediction)
    assert [r.id for r in rows] == [i.id for i in test_items]
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == len(test_items) and report["model"] == "tiny"
    # A random tiny model does not write a letter: invalid answers are counted, never guessed.
    assert report["invalid"] == sum(1 for r in rows if r.answer is None)
    assert report["baselines"]["majority_position"]["n"] == len(test_items)
    assert 0.2 <= report["baselines"]["chance"] <= 0.3


def test_notes_zero_needs_no_question_time(setup, tmp_path, capsys):
    from egohorizon.cli import main

    _, world, items, model = setup
    bare = [i.to_dict() | {"meta": {"split": i.meta["split"]}} for i in items[:5]]
    (tmp_path / "bare.jsonl").write_text("".join(json.dumps(b) + "\n" for b in bare))
    assert main(["qa", "answer", str(tmp_path / "bare.jsonl"), "--split", "all", "--notes", "0",
                 "--out", str(tmp_path / "out"), "--model", model]) == 0
    assert len(load_jsonl(tmp_path / "out" / "predictions.jsonl", QAPrediction)) == 5
    # With memory notes every item needs its question time: the leakage guard refuses the file.
    assert main(["qa", "answer", str(tmp_path / "bare.jsonl"), "--split", "all", "--notes", "3",
                 "--world", str(world.path), "--out", str(tmp_path / "out2"), "--model", model]) == 2
    assert "meta.t_question: expected a number" in capsys.readouterr().err
