"""Evaluation streams deal samples to ranks: every item is generated exactly once whatever the rank
count (1, 2, 3; also 3 ranks over 2 shards, where dealing shards left a rank with nothing and capped
every rank at zero batches), and all ranks run the same number of batches, the short ones padded
with a repeat of their last batch marked ``padding``."""

from __future__ import annotations

from collections import Counter

import pytest
from test_shards_helpers import all_keys, build_toy_shards

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
