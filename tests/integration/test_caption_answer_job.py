"""The answer set travels with the adapter (issue 11): an adapter trained with
``model.generation.answer_set=train`` carries ``answer_set.json``, and ``egohorizon caption --model ADAPTER``
decodes within it as validation did: the job's replies equal the eval path's (CaptionModule.generate_texts
on the datamodule's batches) for the same windows and adapter. A corrupt or missing file is a clear error
naming it; ``--no-answer-set`` decodes freely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toy_captioner import train_toy_captioner

from egohorizon.errors import ConfigError
from egohorizon.llm.answer_set import (
    ANSWER_SET_FILE,
    AnswerSet,
    AnswerTrie,
    answer_digest,
    read_answer_set,
    write_answer_set,
)

ANSWERS = [
    '{"start": 0.0, "end": 30.0, "action": "I look at the screen"}',
    '{"start": 0.0, "end": 12.0, "action": "I walk to the kitchen"}\n{"start": 12.0, "end": 30.0, "action": "I make tea"}',
    '{"start": 0.0, "end": 30.0, "action": "I read a book on the sofa"}',
]


# ------------------------------------------------------------------------------------------------
# The file
# ------------------------------------------------------------------------------------------------


def test_answer_set_file_round_trips_and_refuses_corruption_naming_the_file(tmp_path):
    assert read_answer_set(tmp_path) is None  # no file: no set
    written = write_answer_set(tmp_path, AnswerSet.of(ANSWERS, 7))
    loaded = read_answer_set(tmp_path)
    assert loaded.answers == tuple(ANSWERS) and loaded.training_windows == 7
    assert loaded.digest == answer_digest(ANSWERS) and loaded.path == str(written)
    obj = json.loads(written.read_text())
    assert obj["format"] == "egohorizon.answer_set" and obj["version"] == 1

    def corrupt(change, match):
        broken = {**obj, **change}
        written.write_text(json.dumps(broken))
        with pytest.raises(ConfigError, match=match) as error:
            read_answer_set(tmp_path)
        assert str(written) in str(error.value)

    corrupt({"answers": ANSWERS[:2]}, "digest")  # an answer lost: the digest no longer matches
    corrupt({"version": 2}, "version")
    corrupt({"format": "something else"}, "format")
    corrupt({"answers": []}, "answers")
    corrupt({"training_windows": 1}, "training_windows")
    written.write_text('{"format": "egohorizon.answer_set", "answers": [')  # cut short
    with pytest.raises(ConfigError, match="not valid JSON") as error:
        read_answer_set(tmp_path)
    assert str(written) in str(error.value)


def test_the_trie_allows_only_continuations_after_the_prompt():
    trie = AnswerTrie([[5, 6, 0], [5, 7, 0]])
    fn = trie.prefix_allowed_tokens_fn(prompt_length=2, eos=0)

    class Ids(list):
        def __getitem__(self, item):
            return Ids(super().__getitem__(item)) if isinstance(item, slice) else super().__getitem__(item)

        def tolist(self):
            return list(self)

    assert fn(0, Ids([9, 9])) == [5] and fn(0, Ids([9, 9, 5])) == [6, 7] and fn(0, Ids([9, 9, 5, 6, 0])) == [0]


def fake_adapter(folder: Path, generation: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    (folder / "egohorizon_adapter.json").write_text(json.dumps({"model_id": "m", "generation": generation}))
    return folder


def test_answer_set_command_refuses_what_it_must_not_write(tmp_path, capsys):
    from egohorizon.cli import main

    free = fake_adapter(tmp_path / "free.adapter", {"answer_set": None})
    assert main(["caption", "answer-set", str(free)]) == 2
    assert "not trained with model.generation.answer_set=train" in capsys.readouterr().err
    closed = fake_adapter(tmp_path / "closed.adapter", {"answer_set": "train"})
    write_answer_set(closed, AnswerSet.of(ANSWERS, 3))
    assert main(["caption", "answer-set", str(closed)]) == 2  # an existing file is kept without --force
    assert "exists (3 answers); pass --force" in capsys.readouterr().err
    assert main(["caption", "answer-set", str(closed), "--force"]) == 2  # --force needs the run's config
    assert "no config.yaml" in capsys.readouterr().err


def test_the_job_setup_applies_the_set_only_when_the_adapter_was_scored_with_it(tmp_path):
    from egohorizon.pipelines.caption.setup import ModelChoice, beam_width, use_answer_set

    closed = fake_adapter(tmp_path / "closed.adapter", {"answer_set": "train", "strategy": "beam", "num_beams": 3})
    choice = ModelChoice(model=str(closed), adapter=closed,
                         adapter_meta={"generation": {"answer_set": "train", "strategy": "beam", "num_beams": 3}})
    with pytest.raises(ConfigError, match="caption answer-set"):
        use_answer_set(choice, None)  # scored with a set that is not there
    assert use_answer_set(choice, False) is None
    write_answer_set(closed, AnswerSet.of(ANSWERS, 3))
    assert use_answer_set(choice, None).answers == tuple(ANSWERS)
    assert beam_width(choice, None, 0.0) == 3 and beam_width(choice, 1, 0.0) == 1 and beam_width(choice, None, 0.7) == 1
    free = ModelChoice(model="m", adapter=closed, adapter_meta={"generation": {"answer_set": None}})
    assert use_answer_set(free, None) is None and beam_width(free, None, 0.0) == 1
    with pytest.raises(ConfigError, match="only a trained adapter"):
        use_answer_set(ModelChoice(model="m", base_url="http://x"), True)


# ------------------------------------------------------------------------------------------------
# The job decodes as the eval path does (tiny model, the real Aria sample windows)
# ------------------------------------------------------------------------------------------------

pytest.importorskip("projectaria_tools")
from aria_sample_shards import ingested, shards  # noqa: F401 - fixtures
from test_caption_job import caption, lines, printed_report


def decoded_windows(folder: Path) -> list:
    from webdataset.tariterators import group_by_keys, tar_file_expander, url_opener

    from egohorizon.data.shards.encode import decode_window
    from egohorizon.data.shards.index import ShardIndex

    windows = []
    for url in sorted(ShardIndex.load(folder).urls()):
        for raw in group_by_keys(tar_file_expander(url_opener([{"url": url}]))):
            window = decode_window(raw)
            if window.frames:
                windows.append(window)
    return windows


def trained_module(windows: list, folder: Path):
    """The tiny captioner (LoRA on language and vision) trained for seconds to give each window another
    answer of the set, with beam search within the set as caption_demo decodes."""
    from datamodules.caption import CaptionSamples

    render = CaptionSamples(frames_per_window=2)
    samples = [{**render(w), "target": ANSWERS[i % len(ANSWERS)]} for i, w in enumerate(windows)]
    module, backbone = train_toy_captioner(
        samples, folder, ANSWERS * 5, steps=15, generation={"answer_set": "train", "num_beams": 3, "max_new_tokens": 60},
        adapter_metadata={"data": {"frames_per_window": 2, "crops": True}}, answers=AnswerSet.of(ANSWERS, len(windows)))
    module.eval()
    return module, backbone


def eval_replies(module, backbone, windows: list) -> dict[str, str]:
    """What validation and eval.py write: the datamodule's rendering and collation, generate_texts."""
    from datamodules.caption import CaptionSamples
    from egohorizon.backbones.collate import KeyedVisionTextCollator

    render = CaptionSamples(frames_per_window=2)
    batch = KeyedVisionTextCollator(backbone.load_processor(), with_prompts=True)([render(w) for w in windows])
    texts = module.generate_texts(batch)
    return {key: t[0].strip() for key, t in zip(batch["ids"], texts)}


@pytest.mark.slow
def test_the_job_decodes_within_the_adapters_answer_set_as_eval_does(shards, tmp_path, capsys):  # noqa: F811
    windows = decoded_windows(shards)
    assert len(windows) == 3
    module, backbone = trained_module(windows, tmp_path)
    adapter = module.save_adapter(tmp_path / "caption.adapter")
    saved = read_answer_set(adapter)
    assert saved.answers == tuple(ANSWERS) and saved.training_windows == 3
    expected = eval_replies(module, backbone, windows)
    assert all(text in ANSWERS for text in expected.values()), expected

    out = tmp_path / "out"
    assert caption(shards, out, "--model", str(adapter), "--batch-size", "3") == 0
    report = printed_report(capsys)
    assert report["counts"]["ok"] == 3
    run = json.loads((out / "caption_run.json").read_text())
    assert run["settings"]["num_beams"] == 3 and run["settings"]["answer_set"]["digest"] == saved.digest
    replies = {r["window"]: r["raw"] for r in lines(out / "captions.jsonl") if r["status"] == "ok"}
    assert replies == expected
    assert all(r["answer_set"] == saved.digest for r in lines(out / "captions.jsonl") if r["status"] == "ok")

    # Free decoding is an option; the same random-based weights then write other text.
    free = tmp_path / "free"
    assert caption(shards, free, "--model", str(adapter), "--batch-size", "3", "--no-answer-set",
                   "--max-failures", "1") == 0  # free text may not parse: counted, not fatal
    capsys.readouterr()
    free_replies = {r["window"]: r["raw"] for r in lines(free / "captions.jsonl") if r["raw"]}
    assert free_replies != expected
    assert all(r["answer_set"] is None for r in lines(free / "captions.jsonl"))

    # A corrupt file stops the job before any window, naming the file; a missing one says how to write it.
    (adapter / ANSWER_SET_FILE).write_text('{"format": "egohorizon.answer_set", "version": 1, "answers": [')
    assert caption(shards, tmp_path / "corrupt", "--model", str(adapter)) == 2
    assert str(adapter / ANSWER_SET_FILE) in capsys.readouterr().err
    (adapter / ANSWER_SET_FILE).unlink()
    assert caption(shards, tmp_path / "missing", "--model", str(adapter)) == 2
    err = capsys.readouterr().err
    assert "missing" in err and "caption answer-set" in err and "--no-answer-set" in err
