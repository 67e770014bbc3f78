"""MP4s with an edit list (``elst``), made with PyAV alone (issue 36, item 9): the container's index lists
more frames than a decoder presents, as in clips cut by phones and web tools."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

SIZE = (64, 48)


def level(i: int, frames: int) -> int:
    """The grey level of frame ``i`` of ``frames``: a ramp, so a decoded frame tells which one it is."""
    return round(20 + 200 * i / (frames - 1))


def write_head_cut_mp4(path: Path, frames: int, hidden: int, fps: int = 10, gop: int = 30) -> None:
    """H.264 grey frames whose first ``hidden`` frames the edit list hides: they get negative
    presentation times, which the MP4 muxer keeps in the sample table and cuts with an edit list."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = *SIZE, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        stream.codec_context.gop_size = gop
        for i in range(frames):
            image = np.full((SIZE[1], SIZE[0], 3), level(i, frames), np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = i - hidden
            container.mux(stream.encode(frame))
        container.mux(stream.encode())


def cut_the_tail(path: Path, keep: float) -> None:
    """Shortens the (single, version 0) edit of ``path`` to ``keep`` of its duration in place: the
    samples past it stay in the index, hidden, as a trimming tool leaves them."""
    data = bytearray(path.read_bytes())
    at = data.find(b"elst")
    assert at > 0 and data[at + 4] == 0 and struct.unpack_from(">I", data, at + 8)[0] == 1, "one v0 edit"
    duration = struct.unpack_from(">I", data, at + 12)[0]
    struct.pack_into(">I", data, at + 12, int(duration * keep))
    path.write_bytes(bytes(data))
