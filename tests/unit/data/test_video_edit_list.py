"""Issue 36, item 9: an MP4 whose edit list hides frames its index lists (164 listed, 109 presented, as
a clip cut by a phone) is read by what is presented, in both readers of video: ``bench.video`` (probe,
frames by index) and ``ingest.video`` (1 Hz frames, the decode report); both counts are recorded."""

from __future__ import annotations

import json

import numpy as np
import pytest
from edit_list_video import cut_the_tail, level, write_head_cut_mp4

from egohorizon.bench.video import probe, read_frames
from egohorizon.data.ingest.video import DecodeReport, ingest_video, read_video_frames
from egohorizon.errors import DataError

LISTED, HIDDEN, FPS = 164, 55, 10  # presented: 109 frames, 10.9 s


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edit_list")
    head = folder / "head_cut.mp4"
    write_head_cut_mp4(head, LISTED, HIDDEN, FPS)
    both = folder / "both_cut.mp4"
    write_head_cut_mp4(both, LISTED, HIDDEN, FPS)
    cut_the_tail(both, 0.5)
    return head, both


def _presented(path):
    import av

    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def test_probe_counts_the_presented_frames_and_keeps_the_container_count(clips):
    head, both = clips
    info = probe(head)
    assert (info.frames, info.container_frames, info.fps, info.edit_list) == (109, 164, 10.0, True)
    assert len(_presented(head)) == 109
    tail = probe(both)
    assert (tail.frames, tail.container_frames, tail.edit_list) == (len(_presented(both)), 164, True)
    assert tail.frames in (54, 55)  # half of the 10.9 s edit


@pytest.mark.parametrize("which", [0, 1])
def test_frames_by_index_are_the_presented_ones_to_the_last(clips, which):
    path = clips[which]
    info = probe(path)
    every = _presented(path)
    indices = sorted({0, 1, 30, 31, info.frames // 2, info.frames - 2, info.frames - 1})
    got = read_frames(path, indices, info)
    assert all(np.array_equal(frame, every[i]) for frame, i in zip(got, indices, strict=True))
    # The first presented frame is the first one the edit list keeps, not the file's first sample.
    assert abs(float(got[0].mean()) - level(HIDDEN, LISTED)) < 3


def test_past_the_presented_frames_is_still_a_data_error(clips):
    info = probe(clips[0])
    with pytest.raises(DataError, match="ends before frame 120"):
        read_frames(clips[0], [120], info)


@pytest.mark.parametrize("backend", ["auto", "pyav"])
def test_ingest_samples_1hz_from_the_first_presented_frame_and_loses_nothing(clips, backend):
    report = DecodeReport()
    frames = list(read_video_frames(clips[0], 1.0, backend, report))
    assert [t for t, _ in frames] == pytest.approx([float(k) for k in range(11)])
    for k, (_, frame) in enumerate(frames):
        assert abs(float(frame.mean()) - level(HIDDEN + FPS * k, LISTED)) < 3, k
    assert report.backend == "pyav" and report.lost == []
    assert (report.expected_frames, report.decoded_frames, report.container_frames) == (109, 109, 164)


def test_decord_asked_for_by_name_names_the_edit_list(clips):
    with pytest.raises(DataError, match="decord does not apply the MP4's edit list .109 of the 164"):
        list(read_video_frames(clips[0], 1.0, "decord"))


def test_ingested_recording_records_both_counts(clips, tmp_path):
    recording = ingest_video(clips[1], tmp_path / "rec", participant="p01", day="2025-03-03")
    meta = json.loads((tmp_path / "rec" / "recording.json").read_text())["meta"]
    decode = meta["decode"]
    assert decode["edit_list"] is True and decode["frames_container"] == 164
    assert decode["frames_presented"] == decode["decoded_frames"] == probe(clips[1]).frames
    assert decode["lost"] == [] and meta["warnings"] == []
    assert recording is not None
