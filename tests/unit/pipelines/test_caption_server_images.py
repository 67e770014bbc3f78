"""For a server, the caption job sends an image it draws nothing on as the shard stores it (no decode, no
re-encode: the close-up, frames without gaze) and decodes and rings the others
(``prepare_window(stored=True)``): the same prompt and the same pixels as the decoded path, less CPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("projectaria_tools")
from aria_sample_shards import ingested, shards  # noqa: F401 - fixtures


def raw_samples(folder):
    from webdataset.tariterators import group_by_keys, tar_file_expander, url_opener

    from egohorizon.data.shards.index import ShardIndex

    for url in sorted(ShardIndex.load(folder).urls()):
        yield from group_by_keys(tar_file_expander(url_opener([{"url": url}])))


def test_stored_images_are_the_shards_bytes_or_the_same_ringed_frames(shards):  # noqa: F811
    from egohorizon.data.shards.encode import decode_jpeg
    from egohorizon.pipelines.caption.settings import CaptionSettings
    from egohorizon.pipelines.caption.windows import prepare_window

    settings = CaptionSettings(prompt="caption", prompt_name="caption", prompt_version="x", frames_per_window=4)
    compared = ringed = passed = 0
    for raw in raw_samples(shards):
        info, decoded, ended = prepare_window(dict(raw), "s", settings)
        info_stored, stored, ended_stored = prepare_window(dict(raw), "s", settings, stored=True)
        if ended is not None:
            assert ended_stored is not None and ended_stored.skipped == ended.skipped
            continue
        assert stored["text"] == decoded["text"] and info_stored == info
        assert len(stored["images"]) == len(decoded["images"])
        for sent, reference in zip(stored["images"], decoded["images"]):
            if isinstance(sent, bytes):
                assert sent in raw.values()  # the shard's own JPEG, untouched
                np.testing.assert_array_equal(decode_jpeg(sent), reference)
                passed += 1
            else:
                np.testing.assert_array_equal(sent, reference)  # decoded and ringed exactly as before
                ringed += 1
        compared += 1
    print(f"compared {compared} windows: {passed} images sent as stored, {ringed} ringed")
    assert compared == 3 and passed >= 3 and ringed >= 1  # every close-up went as stored; gazed frames ringed


def test_a_truncated_stored_image_fails_its_window_as_input(shards):  # noqa: F811
    from egohorizon.pipelines.caption.settings import CaptionSettings
    from egohorizon.pipelines.caption.windows import prepare_window

    settings = CaptionSettings(prompt="caption", prompt_name="caption", prompt_version="x", frames_per_window=4)
    for raw in raw_samples(shards):
        raw = dict(raw)
        _, _, ended = prepare_window(dict(raw), "s", settings, stored=True)
        if ended is not None:
            continue
        for key in [k for k in raw if k.endswith(".jpg")]:
            raw[key] = raw[key][: len(raw[key]) // 2]  # cut every image short
        _, broken, outcome = prepare_window(raw, "s", settings, stored=True)
        assert broken is None and outcome.failure[0] == "input" and "corrupt" in outcome.failure[1]
        return
    pytest.fail("no window with frames")
