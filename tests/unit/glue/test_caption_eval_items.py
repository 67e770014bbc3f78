"""CaptionDataModule's gold windows for the caption task: read from the split's shard JSON only, with
times relative to each window, the activity type, and the training days' most frequent action."""

from __future__ import annotations

import json

import pytest
from shard_helpers import DAY0, make_source

from datamodules.caption import CaptionDataModule
from egohorizon.data.shards.writer import build_shards
from egohorizon.data.windows.sample import WindowConfig
from egohorizon.schema import Event


def _event(day, level, start, end, text, n):
    return Event(
        id=f"{day}-L{level}-{n}",
        participant="p1",
        day=day,
        session="s1",
        level=level,
        start=start,
        end=end,
        text=text,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("capitems")
    sources = []
    for d, (day, texts) in enumerate(
        [
            ("2023-11-14", ["type code", "type code"]),  # train
            ("2023-11-15", ["run the tests", "type code"]),  # train
            ("2023-11-16", ["read the log", "fix the bug"]),
        ]
    ):  # val
        start = DAY0 + d * 86400
        events = [
            _event(day, 1, start, start + 40, texts[0], 1),
            _event(day, 1, start + 40, start + 60, texts[1], 2),
            _event(day, 4, start, start + 60, "write software", 1),
        ]
        sources.append(make_source(day=day, session="s1", start=start, seconds=90, events=events))
    build_shards(
        sources,
        root / "shards",
        config=WindowConfig(long_side=32, crop_size=16),
        samples_per_shard=2,
        deid="off",
    )
    split = root / "split.json"
    split.write_text(
        json.dumps(
            {
                "version": 1,
                "participants": {
                    "p1": {"train": ["2023-11-14", "2023-11-15"], "val": ["2023-11-16"], "test": []}
                },
            }
        )
    )
    return CaptionDataModule(shards=str(root / "shards"), split_file=str(split), num_workers=0)


def test_eval_items_are_the_split_windows_with_gold_actions(data):
    items = data.eval_items("val")
    # 90 s -> windows at 0, 30, 60 s; the events end at 60 s, so the third window has no gold
    assert sorted(items) == ["p1_2023-11-16_s1_w00000", "p1_2023-11-16_s1_w00001"]
    first, second = items["p1_2023-11-16_s1_w00000"], items["p1_2023-11-16_s1_w00001"]
    assert first.actions == [{"start": 0.0, "end": 30.0, "action": "read the log"}]
    assert second.actions == [
        {"start": 0.0, "end": 10.0, "action": "read the log"},
        {"start": 10.0, "end": 30.0, "action": "fix the bug"},
    ]
    assert second.window_s == 30.0 and second.start == first.start + 30 and second.session == "s1"
    assert first.activity == "write software" and first.day == "2023-11-16"


def test_eval_options_give_the_training_days_most_frequent_action(data):
    # the training windows' gold actions: "type code" 4 times (3 on day 1, 1 on day 2), "run the tests"
    # twice; the val day's actions never count; these events say no place, so there is no gold scene
    assert data.eval_options("val") == {"most_frequent_action": "type code", "most_frequent_scene": None}
    assert data.eval_options("test") == data.eval_options("val")
