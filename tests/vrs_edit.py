"""Copies of real VRS files with parts removed, for the Aria ingest tests (issue 9).

``copy_vrs_without`` does what ``vrs copy original.vrs --to new.vrs - 214`` of the VRS command-line
tool does (that tool is not on PyPI): it rewrites the description record, the index and the records
without the given streams, and can drop file tags too (``calib_json``: an Aria Digital Twin depth or
segmentation VRS has neither an RGB stream nor a device calibration). Layout from facebookresearch/vrs
``FileFormat.h``, ``DescriptionRecord.cpp`` and ``IndexRecord.cpp``; only the classic index (format 2)
that Aria writes is handled.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

RECORD_HEADER = struct.Struct("<IIiIdHBBI")  # size, previous size, type id, format, time, instance, type, compression, raw size
DISK_RECORD_INFO = np.dtype([("t", "<f8"), ("size", "<u4"), ("record_type", "u1"), ("type_id", "<i4"),
                             ("instance", "<u2")])


def _read_map(data: bytes, pos: int) -> tuple[dict[bytes, bytes], int]:
    (count,), pos = struct.unpack_from("<I", data, pos), pos + 4
    tags = {}
    for _ in range(count):
        (size,) = struct.unpack_from("<I", data, pos)
        key, pos = data[pos + 4:pos + 4 + size], pos + 4 + size
        (size,) = struct.unpack_from("<I", data, pos)
        tags[key], pos = data[pos + 4:pos + 4 + size], pos + 4 + size
    return tags, pos


def _pack_map(tags: dict[bytes, bytes]) -> bytes:
    return struct.pack("<I", len(tags)) + b"".join(
        struct.pack("<I", len(k)) + k + struct.pack("<I", len(v)) + v for k, v in tags.items())


def _stream(name: str) -> tuple[int, int]:
    type_id, instance = name.split("-")
    return int(type_id), int(instance)


def copy_vrs_without(src: Path, dst: Path, streams: set[str] = frozenset(), file_tags: set[str] = frozenset()) -> Path:
    """Writes ``dst``: ``src`` without the streams ("214-1") and file tags named."""
    import zstandard

    data = Path(src).read_bytes()
    drop = {_stream(s) for s in streams}
    _, _, _, header_size, record_header_size, index_offset, description_offset, first_record, _ = \
        struct.unpack_from("<IIQIIqqqQ", data, 0)

    # Description record: per stream its id and two tag maps, then the file tags.
    description = list(RECORD_HEADER.unpack_from(data, description_offset))
    pos = description_offset + record_header_size
    (count,), pos = struct.unpack_from("<I", data, pos), pos + 4
    kept_streams = []
    for _ in range(count):
        stream_id, pos = struct.unpack_from("<iH", data, pos), pos + 6
        user_tags, pos = _read_map(data, pos)
        vrs_tags, pos = _read_map(data, pos)
        if stream_id not in drop:
            kept_streams.append(struct.pack("<iH", *stream_id) + _pack_map(user_tags) + _pack_map(vrs_tags))
    tags, _ = _read_map(data, pos)
    payload = struct.pack("<I", len(kept_streams)) + b"".join(kept_streams) + _pack_map(
        {k: v for k, v in tags.items() if k.decode() not in file_tags})
    description[0] = record_header_size + len(payload)
    out = bytearray(data[:header_size]) + RECORD_HEADER.pack(*description) + payload

    # Index record: stream ids, record count, then one DiskRecordInfo per record (zstd-compressed);
    # the copy keeps it uncompressed.
    index = list(RECORD_HEADER.unpack_from(data, index_offset))
    pos = index_offset + record_header_size
    (count,) = struct.unpack_from("<I", data, pos)
    stream_ids = [struct.unpack_from("<iH", data, pos + 4 + 6 * k) for k in range(count)]
    pos += 4 + 6 * count
    (record_count,) = struct.unpack_from("<I", data, pos)
    raw = data[pos + 4:index_offset + index[0]]
    if index[7]:
        raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    records = np.frombuffer(raw[:record_count * DISK_RECORD_INFO.itemsize], dtype=DISK_RECORD_INFO)
    keep = np.array([(int(r["type_id"]), int(r["instance"])) not in drop for r in records], dtype=bool)
    stream_ids = [s for s in stream_ids if s not in drop]
    payload = (struct.pack("<I", len(stream_ids)) + b"".join(struct.pack("<iH", *s) for s in stream_ids)
               + struct.pack("<I", int(keep.sum())) + records[keep].tobytes())
    index[0], index[1], index[7], index[8] = record_header_size + len(payload), description[0], 0, 0
    new_index_offset = len(out)
    out += RECORD_HEADER.pack(*index) + payload
    struct.pack_into("<qqq", out, 24, new_index_offset, header_size, len(out))

    # The records themselves, each header's "previous record size" relinked.
    pos, previous = first_record, index[0]
    for k in range(record_count):
        (size,) = struct.unpack_from("<I", data, pos)
        if keep[k]:
            record = bytearray(data[pos:pos + size])
            struct.pack_into("<I", record, 4, previous)
            out += record
            previous = size
        pos += size
    Path(dst).write_bytes(bytes(out))
    return Path(dst)
