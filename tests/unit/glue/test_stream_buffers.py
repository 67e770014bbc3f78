"""Decoding straight into reusable batch memory (arena + buffer pool): the same batches as the plain
path, padding zeroed in reused memory, and no batch overwritten while the consumer still holds it."""

from __future__ import annotations

import pickle
from multiprocessing.reduction import ForkingPickler

import cv2
import numpy as np
import pytest
import torch
from shard_helpers import build_toy_shards, numbered_frame

from datamodules.caption import CaptionInputs, _fill_images, collate_windows
from egohorizon.data.shards import buffers
from egohorizon.data.shards.arena import BatchLayout, DecodeArena
from egohorizon.data.shards.encode import decode_jpeg, encode_jpeg, jpeg_shape
from egohorizon.data.shards.stream import WindowStream, make_loader


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    # 2 days x 2 sessions x 70 s: windows of 30, 30 and 10 frames; every 10th frame has no gaze crop.
    return build_toy_shards(tmp_path_factory.mktemp("buf") / "shards", seconds=70, samples_per_shard=3)


def caption_stream(index, *, into_batch: bool, batch_size: int = 2, **kw) -> WindowStream:
    return WindowStream(index.urls(), expected_samples=index.expected_samples(), batch_size=batch_size,
                        model_inputs=CaptionInputs(), collate=collate_windows, shuffle=False,
                        decode_into_batch=into_batch, **kw)


def by_key(batches) -> dict[str, dict]:
    """Per window key: every field of its batch row (tensors as numpy, lists as items)."""
    out = {}
    for batch in batches:
        if "key" not in batch:
            continue
        for b, key in enumerate(batch["key"]):
            out[key] = {name: (value[b].numpy().copy() if isinstance(value, torch.Tensor) else value[b])
                        for name, value in batch.items() if name not in ("stream_stats",)}
    return out


def assert_same_rows(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for key, row in expected.items():
        for name, value in row.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(got[key][name], value, err_msg=f"{key} {name}")
            else:
                assert got[key][name] == value, (key, name)


def test_decode_matches_opencv_and_fills_a_given_buffer():
    image = numbered_frame(5, 40, 30)
    image[5:25, 10:30] = np.random.default_rng(0).integers(0, 255, (20, 20, 3))
    data = encode_jpeg(image, quality=90)
    reference = cv2.cvtColor(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(decode_jpeg(data), reference)
    target = np.full((30, 40, 3), 7, dtype=np.uint8)
    decoded = decode_jpeg(data, target)
    assert decoded.__array_interface__["data"][0] == target.__array_interface__["data"][0]
    np.testing.assert_array_equal(target, reference)
    assert jpeg_shape(data) == (30, 40)
    for bad in (data[: len(data) // 2], data[:20] + b"\0" * 200, b"garbage"):
        with pytest.raises(ValueError):
            decode_jpeg(bad)


def test_decoding_into_the_batch_gives_the_same_batches(toy):
    plain = by_key(caption_stream(toy, into_batch=False, batch_size=3))
    arena_rows = by_key(caption_stream(toy, into_batch=True, batch_size=3))
    assert len(plain) == 12
    assert_same_rows(arena_rows, plain)


def test_full_batches_are_claimed_without_copying(toy):
    loader = make_loader(caption_stream(toy, into_batch=True, batch_size=3), num_workers=0)
    assert sum(len(b["key"]) for b in loader) == 12
    # Shards of 3 windows (30, 30, 10 frames): every batch has the layout of its first window.
    counters = loader.monitor.counters()
    assert counters["batches_in_place"] == 4 and counters["batches_copied"] == 0
    subsampled = caption_stream(toy, into_batch=True, batch_size=3)
    subsampled.model_inputs = CaptionInputs(frames_per_window=4)  # picks frames: the batch is copied
    loader = make_loader(subsampled, num_workers=0)
    assert all(b["frames"].shape[1] == 4 for b in loader)
    assert loader.monitor.counters()["batches_copied"] == 4


def test_reused_memory_is_zeroed_where_the_batch_has_no_image():
    target = np.full((2, 3, 4, 5, 3), 255, dtype=np.uint8)
    small = np.ones((2, 5, 3), dtype=np.uint8)
    narrow = np.full((4, 3, 3), 2, dtype=np.uint8)
    _fill_images(target, [[small, None], [narrow]])
    assert (target[0, 0, :2] == 1).all() and (target[0, 0, 2:] == 0).all()
    assert (target[0, 1] == 0).all() and (target[0, 2] == 0).all()  # no crop, and past the window's end
    assert (target[1, 0, :, :3] == 2).all() and (target[1, 0, :, 3:] == 0).all()
    assert (target[1, 1:] == 0).all()


def test_arena_guess_spoiled_by_a_larger_window_falls_back_to_a_copy():
    arena = DecodeArena(batch_size=2)
    first = arena.place([(4, 6)] * 2, None)
    assert first is not None and all(t.shape == (4, 6, 3) for t in first[0])
    assert arena.place([(8, 6)] * 2, None) is None  # taller than the guess: decoded on its own
    with arena.collating():
        assert arena.claim(BatchLayout(2, 2, (8, 6), None), [[[], []]]) is None
    # The next batch starts a fresh guess; a narrower frame gets no target but the batch is claimable.
    targets = arena.place([(4, 6), (4, 5)], None)
    assert targets[0][1] is None
    arena.unplace()  # that window failed to decode: its slot goes to the next one
    assert arena.place([(4, 6)], None) is not None and arena.placed == 1


def test_small_tensors_travel_by_value():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    restored = ForkingPickler.loads(ForkingPickler.dumps(buffers.InlineTensor(array)))
    assert isinstance(restored, torch.Tensor) and restored.tolist() == array.tolist()
    with pytest.raises(TypeError, match="pooled"):
        pickle.dumps(buffers.batch_buffer(10))  # plain memory is never sent as a pooled buffer


def test_worker_batches_match_and_held_batches_are_never_overwritten(toy):
    expected = by_key(caption_stream(toy, into_batch=False, batch_size=2))
    loader = make_loader(caption_stream(toy, into_batch=True, batch_size=2), num_workers=2)
    held, checksums, rows = [], [], {}
    for epoch in range(3):
        batches = list(loader)  # every batch of the epoch stays alive until the end of the epoch
        if epoch == 0:
            held = [(b["frames"][0, :3], b["crops"].numpy()) for b in batches]  # a view, a numpy array
            checksums = [(frames.sum().item(), int(crops.sum())) for frames, crops in held]
            rows = by_key(batches)
    assert_same_rows(rows, expected)
    # Later epochs reused buffers, but none that epoch 0's views still pointed into.
    assert [(frames.sum().item(), int(crops.sum())) for frames, crops in held] == checksums
    # Buffers are mapped once and reused: a handful per worker, not one per batch (18 batches).
    assert 0 < len(buffers._MAPPINGS) <= 2 * buffers.MAX_BUFFERS


def test_mappings_of_exited_workers_are_dropped(toy):
    import os

    loader = make_loader(caption_stream(toy, into_batch=True), num_workers=2, persistent_workers=False)
    for _ in range(2):
        assert sum(len(b["key"]) for b in loader) == 12
        for pid, _slot in buffers._MAPPINGS:  # this epoch's workers have exited: nothing of theirs is kept
            os.kill(pid, 0)


def test_arena_reuses_its_buffer_after_a_failed_first_window():
    arena = DecodeArena(batch_size=2)
    arena.place([(4, 6)], None)
    first = arena.buffer
    arena.unplace()  # the batch's first window was corrupt
    arena.place([(4, 6)], None)
    assert arena.buffer is first


def test_corrupt_images_are_skipped_the_same_way_when_decoding_into_the_batch(tmp_path):
    from shard_helpers import rewrite_member

    index = build_toy_shards(tmp_path / "shards", seconds=70, samples_per_shard=3)
    paths = [index.path_of(e) for e in index.shards]
    rewrite_member(paths[0], lambda n: n.endswith(".f004.jpg"), lambda d: d[: len(d) // 2])  # truncated
    rewrite_member(paths[1], lambda n: n.endswith(".c002.jpg"), lambda d: b"garbage")  # a corrupt crop
    results = []
    for into_batch in (False, True):
        loader = make_loader(caption_stream(index, into_batch=into_batch, batch_size=2), num_workers=0,
                             max_bad_fraction=1.0)
        results.append((by_key(loader), loader.monitor.counters()))
    (plain, plain_counters), (arena_rows, arena_counters) = results
    assert len(plain) == 10 and plain_counters["corrupt_image"] == 2
    assert_same_rows(arena_rows, plain)
    assert arena_counters["corrupt_image"] == 2 and arena_counters["batches_in_place"] > 0
