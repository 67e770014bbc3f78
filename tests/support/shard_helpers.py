"""Small recordings for the shard and stream tests: real writer, real tar files, toy sizes.

Frames are numbered colour patterns (frame k of a recording is a flat image whose red channel
encodes k), so a test can tell which frame it got back after JPEG round trips."""

from __future__ import annotations

import functools
import io
import tarfile
from pathlib import Path

import numpy as np

from egohorizon.data.ingest.ingested import GAZE_OK, Word
from egohorizon.data.shards.index import ShardIndex
from egohorizon.data.shards.sources import RecordingSource
from egohorizon.data.shards.writer import build_shards
from egohorizon.data.windows.sample import SourceFrame, WindowConfig
from egohorizon.schema import Event, Recording

DAY0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


def numbered_frame(k: int, width: int, height: int) -> np.ndarray:
    image = np.zeros((height, width, 3), dtype=np.uint8)
    image[:, :, 0] = (k * 7) % 256
    image[:, :, 1] = 128
    image[:, : width // 2, 2] = 255  # a vertical edge, so the picture has a left and a right
    return image


def make_source(participant: str = "p1", day: str = "2023-11-14", session: str = "s1", start: float = DAY0,
                seconds: int = 90, width: int = 64, height: int = 48, words: list[Word] | None = None,
                events: list[Event] | None = None) -> RecordingSource:
    """A recording of ``seconds`` 1 Hz frames with gaze drifting right (missing every 10th frame)."""
    frames = []
    for k in range(seconds):
        gaze = (min(width - 1.0, 5.0 + k % width), height / 2) if k % 10 != 9 else None
        frames.append(SourceFrame(t=start + k, load=functools.partial(numbered_frame, k, width, height),
                                  gaze=gaze, gaze_status=GAZE_OK if gaze else "missing",
                                  gaze_confidence=0.9 if gaze else None, gaze_dt=0.0))
    recording = Recording(id=f"{participant}/{day}/{session}", participant=participant, day=day,
                          session=session, start=start, end=start + seconds, source="test")
    return RecordingSource(recording=recording, frames=frames, words=words or [], events=events or [],
                           kind="demo")


def build_toy_shards(out: Path, *, days: int = 2, sessions: int = 2, seconds: int = 90,
                     samples_per_shard: int = 2, long_side: int = 32, crop_size: int = 16, **config) -> ShardIndex:
    """days x sessions recordings of ``seconds`` s for participant p1 (3 windows each by default)."""
    sources = []
    for d in range(days):
        for s in range(sessions):
            start = DAY0 + d * 86400 + s * 3600
            sources.append(make_source(day=f"2023-11-{14 + d:02d}", session=f"s{s}", start=start, seconds=seconds))
    return build_shards(sources, out, config=WindowConfig(long_side=long_side, crop_size=crop_size, **config),
                        samples_per_shard=samples_per_shard, deid="off")


def all_keys(index: ShardIndex) -> set[str]:
    import json

    keys = set()
    for entry in index.shards:
        sidecar = index.path_of(entry).with_suffix(".json")
        keys.update(json.loads(sidecar.read_text())["keys"])
    return keys


def rewrite_member(path, pick, change):
    """Rewrites a tar with ``change(data)`` applied to the first member ``pick(name)`` selects
    (``change`` returning None drops the member)."""
    with tarfile.open(path) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    done = False
    with tarfile.open(path, "w") as tar:
        for member, data in members:
            if not done and pick(member.name):
                done = True
                data = change(data)
                if data is None:
                    continue
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
