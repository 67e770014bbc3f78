"""Evaluation streams deal samples to ranks: every item is generated exactly once whatever the rank
count (1, 2, 3; also 3 ranks over 2 shards, where dealing shards left a rank with nothing and capped
every rank at zero batches), and all ranks run the same number of batches, the short ones padded
with a repeat of their last batch marked ``padding``; and the caption metrics that
GenerationEvalCallback computes from the gathered texts (padding dropped) are the same for 1, 2 and 3
ranks, with a stand-in captioner whose reply is derived from each window's id."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import pytest
from shard_helpers import all_keys, build_toy_shards

from egohorizon.data.shards.stream import WindowStream, is_padding, make_loader
from egohorizon.errors import DataError


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return build_toy_shards(tmp_path_factory.mktemp("shards"), days=1, sessions=2, seconds=120, samples_per_shard=4)


def rank_batches(index, rank: int, world_size: int, num_workers: int = 0, batch_size: int = 2) -> list[dict]:
    stream = WindowStream(index.urls(index.shards), expected_samples=index.expected_samples(),
                          batch_size=batch_size, shuffle=False, rank=rank, world_size=world_size)
    return list(make_loader(stream, num_workers=num_workers, persistent_workers=False))


def generated(index, world_size: int, num_workers: int = 0) -> tuple[Counter, list[int], int]:
    """The keys the ranks would generate (padding dropped), batches per rank, padded batches."""
    keys, lengths, padded = Counter(), [], 0
    for rank in range(world_size):
        batches = rank_batches(index, rank, world_size, num_workers)
        lengths.append(len(batches))
        padded += sum(is_padding(b) for b in batches)
        keys.update(w.key for b in batches if not is_padding(b) for w in b["samples"])
    return keys, lengths, padded


@pytest.mark.parametrize(("world_size", "num_workers"), [(1, 0), (2, 0), (3, 0), (3, 2)])
def test_every_item_is_generated_once_whatever_the_rank_count(index, world_size, num_workers):
    expected = all_keys(index)
    assert len(index.shards) < 3 < len(expected)  # fewer shards than three ranks
    keys, lengths, padded = generated(index, world_size, num_workers)
    assert set(keys) == expected and set(keys.values()) == {1}
    assert len(set(lengths)) == 1  # every rank steps the same number of times
    if world_size == 3 and num_workers == 0:
        assert padded == 1  # 8 windows: 3, 3 and 2 per rank -> 2, 2 and 1 batch of 2; the last rank pads


def test_a_padding_batch_repeats_the_ranks_last_batch(index):
    batches = rank_batches(index, 2, 3)
    assert [is_padding(b) for b in batches] == [False, True]
    assert [w.key for w in batches[1]["samples"]] == [w.key for w in batches[0]["samples"]]


def test_more_ranks_than_samples_is_refused_naming_the_counts(index):
    n = len(all_keys(index))
    with pytest.raises(DataError, match=f"{n} evaluation sample\\(s\\) for {n + 1} ranks"):
        rank_batches(index, 0, n + 1)


# -- the caption metrics from the gathered predictions: the same for 1, 2 and 3 ranks ------------------

def reply(key: str, order: list[str]) -> str:
    """The stand-in model's caption for one window, derived from its id: right for 5 of the 8 windows
    (the ones whose place in the split is not a multiple of 3), a wrong action for the others."""
    right = order.index(key) % 3 != 0
    return json.dumps({"start": 0, "end": 30, "action": f"step {order.index(key)}" if right else "look around"})


class CaptionerStandIn:
    """What GenerationEvalCallback needs of the module: generate_texts and the generation settings."""

    def __init__(self, order: list[str]):
        self.order = order
        self.generation = {"num_return_sequences": 1, "seed": 0}

    def generate_texts(self, batch, batch_idx):
        return [[reply(key, self.order)] for key in batch["ids"]]


def gold_windows(order: list[str]) -> dict:
    from egohorizon.schema import CaptionWindow

    return {key: CaptionWindow(id=key, window_s=30.0, actions=[{"start": 0, "end": 30, "action": f"step {i}"}],
                               source="demo", participant="p1", session="s1", start=30.0 * i, activity="work")
            for i, key in enumerate(order)}


def caption_metrics(index, world_size: int, monkeypatch, keep=lambda rank, batch_idx: True) -> dict:
    """Each simulated rank's callback collects its stream's batches (padding generated, its texts
    dropped, as on a real rank); rank zero's ``_finish`` gathers every rank's texts and scores them
    with the caption task. ``keep`` drops batches, to show that a lost item changes the figures."""
    from egohorizon.backbones.embedders import ExactEmbedder
    from egohorizon.callbacks import generation_eval

    order = sorted(all_keys(index))
    module = CaptionerStandIn(order)
    callbacks = [generation_eval.GenerationEvalCallback("caption", {"judge": "exact", "embedder": ExactEmbedder()})
                 for _ in range(world_size)]
    for rank, callback in enumerate(callbacks):
        for batch_idx, batch in enumerate(rank_batches(index, rank, world_size)):
            if keep(rank, batch_idx):
                callback._collect("val", module, {**batch, "ids": [w.key for w in batch["samples"]]}, batch_idx)
    # all_gather_object over the simulated ranks: rank zero's own texts first, then the others'
    monkeypatch.setattr(generation_eval, "gather_objects", lambda local: [local, *(c._texts["val"] for c in callbacks[1:])])
    logged = {}
    datamodule = SimpleNamespace(eval_items=lambda split: gold_windows(order), eval_options=lambda split: {})
    trainer = SimpleNamespace(is_global_zero=True, strategy=SimpleNamespace(broadcast=lambda obj, src: obj),
                              datamodule=datamodule, loggers=[], current_epoch=0)
    module.log_dict = lambda metrics, sync_dist: logged.update(metrics)
    callbacks[0]._finish("val", trainer, module)
    return logged


def test_caption_metrics_are_equal_for_one_two_and_three_ranks(index, monkeypatch):
    by_ranks = {n: caption_metrics(index, n, monkeypatch) for n in (1, 2, 3)}
    one = by_ranks[1]
    # 8 windows, one gold action each; 5 replies right (exact judge), 3 wrong: F1 5/8 micro and macro
    assert one["val/caption_n"] == 8 and one["val/caption_invalid_rate"] == 0.0
    assert one["val/caption_f1"] == pytest.approx(5 / 8) and one["val/caption_f1_macro"] == pytest.approx(5 / 8)
    assert by_ranks[2] == one and by_ranks[3] == one


def test_a_lost_batch_changes_the_caption_metrics(index, monkeypatch):
    # rank 1 of 3 loses its first batch (2 windows): they score invalid, as the old cap made them
    lost = caption_metrics(index, 3, monkeypatch, keep=lambda rank, batch_idx: (rank, batch_idx) != (1, 0))
    assert lost["val/caption_invalid_rate"] == pytest.approx(2 / 8)
    order = sorted(all_keys(index))
    lost_keys = [w.key for w in rank_batches(index, 1, 3)[0]["samples"]]
    right = 5 - sum(order.index(k) % 3 != 0 for k in lost_keys)
    # micro F1 = 2 TP / (predicted + gold actions) = 2 TP / (6 + 8), never the 5/8 of the full split
    assert lost["val/caption_f1"] == pytest.approx(2 * right / 14) != 5 / 8
