"""Demo-world hand clips (issue 14): records per SPEC, days held out whole, Ego4D verbs, hands that
leave the frame, occlude each other and change scale, and frames drawn from the records alone."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict

import numpy as np

from egohorizon.data.demo.hands.clips import (
    GRID,
    SUBTASKS,
    build_hand_clips,
    clip_from_record,
    gold_box,
    make_clip,
)
from egohorizon.data.demo.hands.render import render_hand_frame
from egohorizon.data.splits import DaySplit
from egohorizon.metrics.judges import ego4d_verb
from egohorizon.schema import HandBox, Segment


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_built_clips_follow_spec_and_hold_out_whole_days(tmp_path):
    counts = build_hand_clips(tmp_path, days=6, clips_per_day=4, val_days=1, test_days=1)
    assert counts == {"clips": {"train": 16, "val": 4, "test": 4}, "days": {"train": 4, "val": 1, "test": 1}}
    clips = _read(tmp_path / "clips.jsonl")
    split = DaySplit.load(tmp_path / "split.json")
    assert all(split.split_of(c["participant"], c["day"]) == c["split"] for c in clips)
    for record in _read(tmp_path / "boxes.jsonl"):
        box, problems = HandBox.from_dict(record)
        assert problems == [] and box.grid == GRID and box.frame % GRID == 0
    segments = []
    for record in _read(tmp_path / "segments.jsonl"):
        segment, problems = Segment.from_dict(record)
        assert problems == [], (record, problems)
        segments.append(segment)
    for segment in segments:
        if segment.kind == "hand_action":
            assert ego4d_verb(segment.label) is not None, segment.label
        if segment.kind == "subtask":
            assert segment.label in SUBTASKS
    # subtasks tile each clip exactly
    by_clip = defaultdict(list)
    for s in segments:
        if s.kind == "subtask":
            by_clip[s.clip].append(s)
    for clip in clips:
        own = sorted(by_clip[clip["clip"]], key=lambda s: s.start)
        assert own[0].start == 0 and own[-1].end == clip["duration"]
        assert all(a.end == b.start for a, b in itertools.pairwise(own))


def test_extra_training_days_keep_the_held_out_clips(tmp_path):
    base, more = tmp_path / "base", tmp_path / "more"
    build_hand_clips(base, days=6, clips_per_day=3, val_days=1, test_days=1)
    counts = build_hand_clips(more, days=6, clips_per_day=3, val_days=1, test_days=1, extra_train_days=25)
    assert counts == {"clips": {"train": 87, "val": 3, "test": 3}, "days": {"train": 29, "val": 1, "test": 1}}
    for name in ("clips.jsonl", "boxes.jsonl", "segments.jsonl"):
        before, after = _read(base / name), _read(more / name)
        assert after[: len(before)] == before  # the same clips, the extra ones appended
    clips = _read(more / "clips.jsonl")
    assert {c["split"] for c in clips[18:]} == {"train"} and len({c["clip"] for c in clips}) == len(clips)
    assert clips[-1]["day"] == "2024-05-31" and DaySplit.load(more / "split.json").split_of("p01", "2024-05-31")


def test_clips_are_reproducible_from_their_record(tmp_path):
    build_hand_clips(tmp_path, days=2, clips_per_day=2, val_days=1, test_days=0)
    record = _read(tmp_path / "clips.jsonl")[3]
    clip = clip_from_record(record)
    assert clip.clip == record["clip"]
    frame = render_hand_frame(clip, 1.0)
    assert frame.shape == (record["height"], record["width"], 3) and frame.dtype == np.uint8
    assert np.array_equal(frame, render_hand_frame(clip_from_record(record), 1.0))
    boxes = [b for b in _read(tmp_path / "boxes.jsonl") if b["clip"] == record["clip"] and b["frame"] == 30]
    assert {b["hand"]: b["box"] for b in boxes} == {h: gold_box(clip, h, 1.0) for h in ("left", "right")
                                                     if gold_box(clip, h, 1.0) is not None}


def test_hands_leave_the_frame_occlude_and_change_scale():
    clips = [make_clip(0, i, "p01", "2024-05-01", "train") for i in range(40)]
    scales = [c.scale for c in clips]
    assert max(scales) / min(scales) > 1.6
    out_of_view = overlapping = 0
    for clip in clips:
        for t in np.arange(0, clip.duration, 0.5):
            left, right = gold_box(clip, "left", t), gold_box(clip, "right", t)
            out_of_view += left is None or right is None
            if left and right and min(left[2], right[2]) > max(left[0], right[0]) and \
                    min(left[3], right[3]) > max(left[1], right[1]):
                overlapping += 1
    assert out_of_view > 20 and overlapping > 20


def test_each_gold_box_holds_its_own_hand_drawn_in_its_own_colour():
    from egohorizon.data.demo.hands.render import SKIN

    checked = 0
    for i in range(20):
        clip = make_clip(0, i, "p01", "2024-05-01", "train")
        for t in (0.5, 2.0, 4.0):
            frame = render_hand_frame(clip, t)
            for hand in ("left", "right"):
                box = gold_box(clip, hand, t)
                ys, xs = np.nonzero((frame == SKIN[hand]).all(axis=2))
                if box is None:
                    assert len(xs) == 0 or ys.min() >= clip.height - 3  # at most a sliver at the bottom
                    continue
                if len(xs) < 50:
                    continue  # hidden under the other hand or the object it holds
                assert box[0] - 1 <= xs.min() and xs.max() <= box[2] + 1
                assert box[1] - 1 <= ys.min() and ys.max() <= box[3] + 1
                checked += 1
    assert checked > 50
