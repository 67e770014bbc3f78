"""ForecastDataModule: points from events, loss on the answer only, padding, bucketing, truncation."""

from __future__ import annotations

import json

import pytest
import torch
from forecast_toy_world import write_toy_events
from torch.utils.data import SequentialSampler

from datamodules.forecast import IGNORE_INDEX, BucketBatchSampler, ForecastDataModule
from egohorizon.backbones.tokenizer import train_bpe_tokenizer
from egohorizon.errors import ConfigError, LeakageError
from egohorizon.schema import ForecastPoint, load_jsonl, write_jsonl


@pytest.fixture(scope="module")
def events_file(tmp_path_factory):
    return write_toy_events(tmp_path_factory.mktemp("toy"))


def _datamodule(events_file, tmp_path=None, **kwargs) -> ForecastDataModule:
    args = {
        "events": str(events_file),
        "levels": [3],
        "ks": [1, 10],
        "n_context": 5,
        "max_eval_points": 10,
        "batch_size": 4,
        "eval_batch_size": 4,
        "max_length": 2048,
    }
    if tmp_path is not None:
        args["save_points_to"] = str(tmp_path / "points")
    return ForecastDataModule(**{**args, **kwargs})


@pytest.fixture(scope="module")
def prepared(events_file):
    datamodule = _datamodule(events_file)
    datamodule.set_tokenizer(train_bpe_tokenizer(datamodule.training_corpus(), vocab_size=400))
    datamodule.setup("fit")
    datamodule.setup("test")
    return datamodule


def test_points_are_built_split_by_day_and_saved(events_file, tmp_path):
    datamodule = _datamodule(events_file, tmp_path)
    points = datamodule.prepare_points()
    assert points["train"] and points["val"] and points["test"]
    assert {p.k for p in points["train"]} == {1, 10} and {p.level for p in points["train"]} == {3}
    days = {name: {(p.participant, p.day) for p in ps} for name, ps in points.items()}
    assert not days["train"] & days["test"] and not days["val"] & days["test"]
    by_k = {k: sum(p.k == k for p in points["test"]) for k in (1, 10)}
    assert max(by_k.values()) <= 10  # max_eval_points caps each (split, level, K) group
    saved = load_jsonl(tmp_path / "points" / "points_test.jsonl", ForecastPoint)
    assert [p.id for p in saved] == [p.id for p in points["test"]]
    assert json.loads((tmp_path / "points" / "splits.json").read_text())["participants"]


def test_a_k_may_have_its_own_eval_cap_and_keeps_the_same_points(events_file):
    """max_eval_points_by_k (the demo: 120 K = 1 points, 40 K = 10): a K's points are those the plain cap
    draws, whatever the other K's cap."""
    plain = _datamodule(events_file, max_eval_points=3).prepare_points()
    by_k = _datamodule(events_file, max_eval_points=3, max_eval_points_by_k={1: 6}).prepare_points()
    for split in ("val", "test"):
        count = {k: sum(p.k == k for p in by_k[split]) for k in (1, 10)}
        assert count[1] == 6 and count[10] == 3
        assert [p.id for p in by_k[split] if p.k == 10] == [p.id for p in plain[split] if p.k == 10]
        assert {p.id for p in plain[split] if p.k == 1} <= {p.id for p in by_k[split] if p.k == 1}
    assert [p.id for p in by_k["train"]] == [p.id for p in plain["train"]]

def test_the_test_split_may_have_its_own_caps(events_file):
    """max_test_points_by_k (the demo: validation 40 + 40, test 120 K = 1 + 40 K = 10) changes the test
    split only; validation keeps max_eval_points_by_k's points."""
    plain = _datamodule(events_file, max_eval_points=3).prepare_points()
    split_caps = _datamodule(events_file, max_eval_points=3, max_test_points_by_k={1: 6}).prepare_points()
    assert [p.id for p in split_caps["val"]] == [p.id for p in plain["val"]]
    assert [p.id for p in split_caps["train"]] == [p.id for p in plain["train"]]
    test = {k: [p.id for p in split_caps["test"] if p.k == k] for k in (1, 10)}
    assert len(test[1]) == 6 and test[10] == [p.id for p in plain["test"] if p.k == 10]


def test_training_labels_cover_exactly_the_answer_and_eos(prepared):
    batch = next(iter(prepared.train_dataloader()))
    tokenizer = prepared.tokenizer
    for row in range(batch["input_ids"].shape[0]):
        labels, ids, mask = batch["labels"][row], batch["input_ids"][row], batch["attention_mask"][row]
        answer = ids[labels != IGNORE_INDEX]
        assert answer[-1] == tokenizer.eos_token_id
        assert json.loads(tokenizer.decode(answer[:-1]))["candidates"][0]  # one trajectory of targets
        first = int((labels != IGNORE_INDEX).nonzero()[0])
        assert tokenizer.decode(ids[:first][mask[:first].bool()]).rstrip().endswith("activity descriptions.")
        # right padding: masked positions are padding and never in the loss
        assert torch.all(labels[mask == 0] == IGNORE_INDEX) and torch.all(
            ids[mask == 0] == tokenizer.pad_token_id
        )


def test_eval_batches_left_pad_prompts_and_keep_ids(prepared):
    batches = list(prepared.test_dataloader())
    ids = [pid for b in batches for pid in b["ids"]]
    assert sorted(ids) == sorted(p.id for p in prepared.points["test"])
    batch = batches[0]
    assert torch.all(batch["prompt_mask"][:, -1] == 1)  # left padding: every prompt ends at the right edge
    item = next(i for i in prepared._datasets["test"].items if i["id"] == batch["ids"][0])
    width = batch["prompt_ids"].shape[1]
    assert batch["prompt_ids"][0, width - len(item["prompt_ids"]) :].tolist() == item["prompt_ids"]
    ks = [k for b in batches for k in b["k"]]
    assert ks == sorted(ks)  # same K together: a batch's generation budget depends on its K


def test_long_prompts_lose_their_oldest_context_first(events_file):
    datamodule = _datamodule(events_file, max_length=10_000, n_context=8)
    datamodule.set_tokenizer(train_bpe_tokenizer(datamodule.training_corpus(), vocab_size=400))
    point = datamodule.prepare_points()["test"][0]
    full = datamodule.encode_point(point)
    datamodule.max_length = len(full["prompt_ids"]) + len(full["answer_ids"]) - 1
    cut = datamodule.encode_point(point)
    assert full["context_kept"] == len(point.context) and 0 < cut["context_kept"] < len(point.context)
    text = datamodule.tokenizer.decode(cut["prompt_ids"])
    assert point.context[-1]["text"] in text
    datamodule.max_length = 5
    with pytest.raises(ConfigError, match="even without context"):
        datamodule.encode_point(point)


def test_bucket_sampler_yields_every_index_once_in_similar_lengths():
    lengths = [5, 50, 6, 51, 7, 52, 8, 53, 9]
    sampler = BucketBatchSampler(
        SequentialSampler(range(len(lengths))),
        batch_size=2,
        drop_last=False,
        lengths=lengths,
        bucket_factor=10,
        seed=3,
    )
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(max(lengths[i] for i in b) - min(lengths[i] for i in b) <= 41 for b in batches)
    assert sum(1 for b in batches if {lengths[i] < 20 for i in b} == {True, False}) <= 1
    assert list(sampler) != batches or len(batches) < 3  # a new order each epoch


def test_points_dir_is_rechecked_by_the_leakage_guard(events_file, tmp_path):
    source = _datamodule(events_file, tmp_path)
    points = source.prepare_points()
    loaded = ForecastDataModule(
        points_dir=str(tmp_path / "points"), events=str(events_file), levels=[3], ks=[1]
    )
    assert [p.id for p in loaded.prepare_points()["test"]] == [p.id for p in points["test"] if p.k == 1]
    # A held-out point slipped into the training file: its targets lie on test days.
    folder = tmp_path / "leaky"
    write_jsonl(folder / "points_train.jsonl", points["train"][:3] + points["test"][:1])
    source.split.save(folder / "splits.json")
    with pytest.raises(LeakageError, match=points["test"][0].id.replace("/", ".")):
        ForecastDataModule(
            points_dir=str(folder), events=str(events_file), levels=[3], ks=[1, 10]
        ).prepare_points()


def test_configuration_mistakes_are_named(events_file, tmp_path):
    with pytest.raises(ConfigError, match="not a folder"):
        ForecastDataModule(points_dir=str(tmp_path / "nowhere")).prepare_points()
    with pytest.raises(ConfigError, match="does not exist"):
        ForecastDataModule(events=str(tmp_path / "missing.jsonl")).prepare_points()
    with pytest.raises(ConfigError, match="set_tokenizer"):
        _datamodule(events_file).setup("fit")


def test_the_evaluated_split_and_a_points_file_are_constructor_arguments(events_file, tmp_path):
    """eval.py's split=val and points=FILE are decided when the datamodule is built, not patched in."""
    plain = _datamodule(events_file).prepare_points()
    on_val = _datamodule(events_file, tmp_path, eval_split="val")
    points = on_val.prepare_points()
    assert [p.id for p in points["test"]] == [p.id for p in plain["val"]]
    assert [p.id for p in load_jsonl(tmp_path / "points" / "points_test.jsonl", ForecastPoint)] == [
        p.id for p in plain["test"]
    ]  # the saved split files keep their own points
    file = tmp_path / "mine.jsonl"
    write_jsonl(file, plain["val"][:3])
    from_file = _datamodule(events_file, points_file=str(file)).prepare_points()
    assert [p.id for p in from_file["test"]] == [p.id for p in plain["val"][:3]] and not from_file["train"]
    with pytest.raises(ConfigError, match="split: expected 'val' or 'test'"):
        _datamodule(events_file, eval_split="train")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ConfigError, match="holds no forecast points"):
        _datamodule(events_file, points_file=str(tmp_path / "empty.jsonl")).prepare_points()


def test_eval_options_hand_the_habit_baselines_the_training_days_only(events_file):
    from egohorizon.metrics.habits import learn_habits
    from egohorizon.schema import Event

    datamodule = _datamodule(events_file)
    points = datamodule.prepare_points()
    options = datamodule.eval_options("test")
    assert options["validation_points"] == points["val"]
    assert "validation_points" not in datamodule.eval_options("val")
    events = load_jsonl(events_file, Event)
    train_days = datamodule.split.days_in("train")
    assert options["history"] == learn_habits(events, train_days)
    held_out = [e for e in events if (e.participant, e.day) not in train_days]
    assert held_out and options["history"].n_train_events == len(events) - len(held_out)
    # points read from a file have no day split: no history, so no habit baseline is computed
    path = events_file.parent / "few_points.jsonl"
    write_jsonl(path, points["test"][:2])
    assert _datamodule(events_file, points_file=str(path)).eval_options("test") == {}


def test_a_points_file_with_the_run_s_split_file_gets_its_training_days(events_file, tmp_path):
    from egohorizon.metrics.habits import learn_habits
    from egohorizon.schema import Event

    datamodule = _datamodule(events_file, tmp_path)
    points = datamodule.prepare_points()
    write_jsonl(tmp_path / "few.jsonl", points["test"][:2])
    from_file = _datamodule(events_file, points_file=str(tmp_path / "few.jsonl"),
                            split_file=str(tmp_path / "points" / "splits.json"))
    options = from_file.eval_options("test")
    assert "validation_points" not in options  # no validation points at hand: no strongest rival chosen
    train_days = datamodule.split.days_in("train")
    assert options["history"] == learn_habits(load_jsonl(events_file, Event), train_days)
    # without the events at hand the points are still evaluated, without habit baselines
    missing = _datamodule(tmp_path / "gone.jsonl", points_file=str(tmp_path / "few.jsonl"),
                          split_file=str(tmp_path / "points" / "splits.json"))
    assert len(missing.prepare_points()["test"]) == 2 and missing.eval_options("test") == {}
