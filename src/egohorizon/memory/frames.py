"""Where every stored frame of a shard folder lies, by participant and time: random access to a
participant's past without streaming it.

``FrameCatalog.build(shard_dir)`` reads each tar's headers and JSON members once (no image is decoded)
and keeps, per participant, numpy arrays sorted by frame time: the time, the window it belongs to,
and the JPEG's shard, byte offset and size. A frame is then read with one seek and one read
(``read``), so sampling N frames from a month costs N small reads and N decodes, whatever the month's
length; the catalog itself is 28 bytes a frame plus one small record a window.

Queries never see the future: ``frames_before(participant, t)`` and ``windows_before`` return only
frames with time < t and windows that end at or before t (a window's end is exclusive: its last
frame lies before its end).
"""

from __future__ import annotations

import bisect
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egohorizon.data.shards.encode import decode_jpeg
from egohorizon.errors import DataError


@dataclass(frozen=True)
class Window:
    key: str
    participant: str
    start: float
    end: float
    captions: tuple[str, ...]
    first_frame: int  # row of its first frame in the participant's arrays
    n_frames: int


@dataclass
class _Frames:
    times: np.ndarray  # float64, sorted
    window: np.ndarray  # int32: index into the participant's windows
    shard: np.ndarray  # int32: index into the catalog's shard paths
    offset: np.ndarray  # int64: byte offset of the JPEG in its shard
    size: np.ndarray  # int32: byte size of the JPEG


class FrameCatalog:
    def __init__(self, shards: list[str], frames: dict[str, _Frames], windows: dict[str, list[Window]]):
        self.shards, self._frames, self._windows = shards, frames, windows
        self._window_ends = {p: [w.end for w in ws] for p, ws in windows.items()}
        self._by_key = {w.key: w for ws in windows.values() for w in ws}

    @classmethod
    def build(cls, shard_dir: str | Path, participants: set[str] | None = None,
              days: set[str] | None = None) -> FrameCatalog:
        """The catalog of a shard folder's frames (of ``participants`` and ``days`` when given)."""
        from egohorizon.data.shards.index import ShardIndex

        index = ShardIndex.load(shard_dir)
        entries = [e for e in index.shards if (participants is None or e["participant"] in participants)
                   and (days is None or e["day"] in days)]
        shards = index.urls(entries)
        rows: dict[str, list[tuple[float, str, int, int, int]]] = {}
        metas: dict[str, dict[str, dict]] = {}
        for s, path in enumerate(shards):
            for key, meta, members in _scan(path):
                metas.setdefault(meta["participant"], {})[key] = meta
                for i, frame in enumerate(meta["frames"]):
                    member = members.get(f"{key}.f{i:03d}.jpg")
                    if member is None:
                        raise DataError(f"{path}: sample {key!r} lists frame {i} but has no member "
                                        f"{key}.f{i:03d}.jpg")
                    rows.setdefault(meta["participant"], []).append((float(frame["t"]), key, s, *member))
        frames, windows = {}, {}
        for participant, part in rows.items():
            part.sort(key=lambda r: (r[0], r[1]))
            keys = sorted(metas[participant], key=lambda k: (metas[participant][k]["start"], k))
            position = {k: i for i, k in enumerate(keys)}
            frames[participant] = _Frames(
                times=np.array([r[0] for r in part], dtype=np.float64),
                window=np.array([position[r[1]] for r in part], dtype=np.int32),
                shard=np.array([r[2] for r in part], dtype=np.int32),
                offset=np.array([r[3] for r in part], dtype=np.int64),
                size=np.array([r[4] for r in part], dtype=np.int32))
            first = {}
            for row, w in enumerate(frames[participant].window.tolist()):
                first.setdefault(w, row)
            windows[participant] = [
                Window(key=k, participant=participant, start=float(metas[participant][k]["start"]),
                       end=float(metas[participant][k]["end"]), captions=tuple(metas[participant][k].get("captions", [])),
                       first_frame=first.get(i, -1), n_frames=len(metas[participant][k]["frames"]))
                for i, k in enumerate(keys)]
        return cls(shards, frames, windows)

    # -- queries (strictly before t) -----------------------------------------------------------------

    def participants(self) -> list[str]:
        return sorted(self._frames)

    def n_frames_before(self, participant: str, t: float) -> int:
        frames = self._frames.get(participant)
        return 0 if frames is None else int(np.searchsorted(frames.times, t, side="left"))

    def frame_times(self, participant: str, rows: np.ndarray) -> np.ndarray:
        return self._frames[participant].times[rows]

    def windows_before(self, participant: str, t: float) -> list[Window]:
        """Windows that end at or before ``t`` (every frame of them lies before ``t``)."""
        ends = self._window_ends.get(participant, [])
        return self._windows.get(participant, [])[: bisect.bisect_right(ends, t)]

    def window(self, key: str) -> Window | None:
        return self._by_key.get(key)

    def window_frames(self, participant: str, window: Window, t: float) -> np.ndarray:
        """Rows of the window's frames that lie before ``t``."""
        rows = np.arange(window.first_frame, window.first_frame + window.n_frames)
        return rows[self._frames[participant].times[rows] < t] if window.first_frame >= 0 else rows[:0]

    # -- reading -------------------------------------------------------------------------------------

    def read(self, participant: str, rows: np.ndarray) -> list[np.ndarray]:
        """The frames at ``rows`` (RGB uint8), one seek and read each, files opened once per call."""
        f = self._frames[participant]
        handles: dict[int, object] = {}
        images = []
        try:
            for row in np.asarray(rows).tolist():
                s = int(f.shard[row])
                handle = handles.get(s)
                if handle is None:
                    handle = handles[s] = open(self.shards[s], "rb")  # noqa: SIM115 (closed below)
                handle.seek(int(f.offset[row]))
                images.append(decode_jpeg(handle.read(int(f.size[row]))))
        finally:
            for handle in handles.values():
                handle.close()
        return images

    def read_bytes(self, participant: str, rows: np.ndarray) -> list[bytes]:
        """The JPEG bytes at ``rows`` (for timing the decode alone)."""
        f = self._frames[participant]
        out = []
        for row in np.asarray(rows).tolist():
            with open(self.shards[int(f.shard[row])], "rb") as handle:
                handle.seek(int(f.offset[row]))
                out.append(handle.read(int(f.size[row])))
        return out

    def nbytes(self) -> int:
        return sum(a.nbytes for f in self._frames.values()
                   for a in (f.times, f.window, f.shard, f.offset, f.size))


def _scan(path: str):
    """(key, meta, {member name: (offset, size)}) per sample of one tar, headers and JSON only."""
    try:
        with tarfile.open(path) as tar:
            members: dict[str, dict[str, tuple[int, int]]] = {}
            metas: dict[str, dict] = {}
            for member in tar:
                key, _, _ = member.name.partition(".")
                if member.name.endswith(".json"):
                    metas[key] = json.loads(tar.extractfile(member).read())
                elif member.name.endswith(".jpg"):
                    members.setdefault(key, {})[member.name] = (member.offset_data, member.size)
    except (tarfile.TarError, OSError, json.JSONDecodeError) as error:
        raise DataError(f"{path}: cannot read the shard ({error})") from None
    for key, meta in metas.items():
        yield key, meta, members.get(key, {})
