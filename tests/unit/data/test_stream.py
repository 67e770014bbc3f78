"""The streaming pipeline: stage order, exactly-once epochs, resampling, and corrupt input."""

from __future__ import annotations

import json

import pytest
from shard_helpers import all_keys, build_toy_shards, rewrite_member

from egohorizon.data.shards.stream import WindowStream, make_loader
from egohorizon.errors import DataError


def keys_of(loader) -> list[str]:
    return [w.key for batch in loader for w in batch["samples"]]


def stream_for(index, **kw) -> WindowStream:
    return WindowStream(index.urls(), expected_samples=index.expected_samples(), **kw)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return build_toy_shards(tmp_path_factory.mktemp("toy") / "shards")


def test_stage_names(toy):
    assert stream_for(toy).stage_names == ["shard_list", "shard_shuffle", "split_by_node", "split_by_worker",
                                           "tar_to_samples", "sample_shuffle", "decode", "model_inputs", "batch"]
    assert stream_for(toy, resampled=True).stage_names[:2] == ["shard_list", "tar_to_samples"]


def test_every_sample_once_per_epoch_with_workers(toy):
    loader = make_loader(stream_for(toy, batch_size=3, seed=1), num_workers=2)
    first, second = keys_of(loader), keys_of(loader)
    assert sorted(first) == sorted(all_keys(toy)) and len(first) == 12
    assert sorted(second) == sorted(first)
    assert first != second  # reshuffled per epoch (shards and samples)
    assert loader.monitor.counters()["samples_ok"] == 12 and loader.monitor.counters()["bad_fraction"] == 0


def test_ranks_split_shards_without_overlap(toy):
    seen = []
    for rank in range(2):
        stream = stream_for(toy, batch_size=2, rank=rank, world_size=2)
        loader = make_loader(stream, num_workers=2, equalize_ranks=False)
        seen.append(keys_of(loader))
    assert not set(seen[0]) & set(seen[1])
    assert sorted(seen[0] + seen[1]) == sorted(all_keys(toy))


def test_equalized_ranks_yield_the_same_number_of_batches(tmp_path):
    index = build_toy_shards(tmp_path / "s", days=1, sessions=3, samples_per_shard=4)  # 9 windows: shards 4, 4, 1
    counts = []
    for rank in range(2):
        loader = make_loader(stream_for(index, batch_size=2, rank=rank, world_size=2), num_workers=0)
        counts.append(sum(1 for _ in loader))
        assert len(loader) == counts[-1]
    assert counts[0] == counts[1]


def test_resampling_has_a_fixed_epoch_length(toy):
    loader = make_loader(stream_for(toy, batch_size=2, resampled=True, seed=3), num_workers=2, epoch_batches=5)
    assert len(loader) == 5
    keys = keys_of(loader)
    assert len(keys) == 10 and set(keys) <= all_keys(toy)


# ------------------------------------------------------------------------------------------------
# Corrupt input: each kind is skipped and counted; above the threshold the run stops naming shards
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def damaged(tmp_path):
    """12 samples in 6 shards; four shards damaged in four different ways."""
    index = build_toy_shards(tmp_path / "shards")
    paths = [index.path_of(e) for e in index.shards]
    data = paths[0].read_bytes()
    paths[0].write_bytes(data[: len(data) // 2])  # truncated shard
    paths[1].write_bytes(b"this is not a tar file" * 100)  # garbage shard
    rewrite_member(paths[2], lambda n: n.endswith(".f004.jpg"), lambda d: d[:20] + b"\0" * 200)  # corrupt JPEG
    rewrite_member(paths[3], lambda n: n.endswith(".f007.jpg"), lambda d: None)  # a sample missing a field
    return index, paths


def run_epoch(index, max_bad_fraction):
    loader = make_loader(stream_for(index, batch_size=2, shuffle=False), num_workers=2,
                         max_bad_fraction=max_bad_fraction, min_samples=1000)
    keys = keys_of(loader)
    return keys, loader.monitor


def test_each_kind_of_damage_is_skipped_and_counted(damaged):
    index, paths = damaged
    keys, monitor = run_epoch(index, max_bad_fraction=1.0)
    counters = monitor.counters()
    # Shards 4 and 5 are intact (4 samples); shard 0 keeps its first sample; shards 2 and 3 keep one each.
    assert len(keys) == 7 and counters["samples_ok"] == 7
    assert counters["corrupt_image"] == 1 and counters["missing_field"] >= 1
    assert counters["shard_errors"] >= 1  # the garbage shard does not open
    assert counters["samples_bad"] == 5 and counters["bad_fraction"] == pytest.approx(5 / 12)
    bad = monitor.bad_shards()
    assert set(bad) == {str(p) for p in paths[:4]}
    assert bad[str(paths[1])][0] == 2  # both of its samples lost


def test_bad_share_above_threshold_stops_with_shard_names(damaged):
    index, paths = damaged
    with pytest.raises(DataError) as error:
        run_epoch(index, max_bad_fraction=0.2)
    message = str(error.value)
    assert "above the limit of 20.0%" in message
    for path in paths[:4]:
        assert str(path) in message


def test_below_threshold_runs_on(tmp_path):
    index = build_toy_shards(tmp_path / "shards")
    path = index.path_of(index.shards[2])
    rewrite_member(path, lambda n: n.endswith(".f004.jpg"), lambda d: b"garbage")
    keys, monitor = run_epoch(index, max_bad_fraction=0.1)  # 1 of 12 bad = 8.3%
    assert len(keys) == 11 and monitor.counters()["corrupt_image"] == 1


def test_bad_metadata_is_counted(tmp_path):
    index = build_toy_shards(tmp_path / "shards", days=1, sessions=1, samples_per_shard=3)
    rewrite_member(index.path_of(index.shards[0]), lambda n: n.endswith(".json"), lambda d: b"{not json")
    keys, monitor = run_epoch(index, max_bad_fraction=1.0)
    assert len(keys) == 2 and monitor.counters()["bad_metadata"] == 1
    meta = json.loads(index.path_of(index.shards[0]).with_suffix(".json").read_text())
    assert meta["entry"]["samples"] == 3
