"""Copies of real VRS files with parts removed, for the Aria ingest tests (issue 9).

``copy_vrs_without`` does what ``vrs copy original.vrs --to new.vrs - 214`` of the VRS command-line
tool does (that tool is not on PyPI): it rewrites the description record, the index and the records
without the given streams, and can drop file tags too (``calib_json``: an Aria Digital Twin depth or
segmentation VRS has neither an RGB stream nor a device calibration). Layout from facebookresearch/vrs
``FileFormat.h``, ``DescriptionRecord.cpp`` and ``IndexRecord.cpp``; only the classic index (format 2)
that Aria writes is handled.
"""

from __future__ import annotations

import json
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


def copy_vrs_without(src: Path, dst: Path, streams: set[str] = frozenset(), file_tags: set[str] = frozenset(),
                     config_values: dict[str, dict[str, int]] | None = None) -> Path:
    """Writes ``dst``: ``src`` without the streams ("214-1") and file tags named, and with the uint32
    fields of a stream's configuration record set as ``config_values`` says, e.g. ``{"214-1":
    {"image_width": 2880}}`` (the record is stored uncompressed)."""
    data = Path(src).read_bytes()
    drop = {_stream(s) for s in streams}
    _, _, _, header_size, record_header_size, index_offset, description_offset, first_record, _ = \
        struct.unpack_from("<IIQIIqqqQ", data, 0)

    # Description record: per stream its id and two tag maps, then the file tags.
    description = list(RECORD_HEADER.unpack_from(data, description_offset))
    pos = description_offset + record_header_size
    (count,), pos = struct.unpack_from("<I", data, pos), pos + 4
    kept_streams, layouts = [], {}
    for _ in range(count):
        stream_id, pos = struct.unpack_from("<iH", data, pos), pos + 6
        user_tags, pos = _read_map(data, pos)
        vrs_tags, pos = _read_map(data, pos)
        layouts[stream_id] = vrs_tags
        if stream_id not in drop:
            kept_streams.append(struct.pack("<iH", *stream_id) + _pack_map(user_tags) + _pack_map(vrs_tags))
    tags, _ = _read_map(data, pos)
    payload = struct.pack("<I", len(kept_streams)) + b"".join(kept_streams) + _pack_map(
        {k: v for k, v in tags.items() if k.decode() not in file_tags})
    description[0] = record_header_size + len(payload)
    out = bytearray(data[:header_size]) + RECORD_HEADER.pack(*description) + payload

    records, stream_ids = _read_index(data, index_offset, record_header_size)
    keep = np.array([(int(r["type_id"]), int(r["instance"])) not in drop for r in records], dtype=bool)
    edits = {_stream(name): values for name, values in (config_values or {}).items()}
    bodies = _kept_records(data, first_record, len(records), keep, edits, layouts, record_header_size)
    records = records[keep].copy()
    records["size"] = [len(body) for body in bodies]

    # Index record: stream ids, record count, then one DiskRecordInfo per record; the copy keeps it
    # uncompressed.
    index = list(RECORD_HEADER.unpack_from(data, index_offset))
    stream_ids = [s for s in stream_ids if s not in drop]
    payload = (struct.pack("<I", len(stream_ids)) + b"".join(struct.pack("<iH", *s) for s in stream_ids)
               + struct.pack("<I", len(records)) + records.tobytes())
    index[0], index[1], index[7], index[8] = record_header_size + len(payload), description[0], 0, 0
    new_index_offset = len(out)
    out += RECORD_HEADER.pack(*index) + payload
    struct.pack_into("<qqq", out, 24, new_index_offset, header_size, len(out))

    # The records themselves, each header's "previous record size" relinked.
    previous = index[0]
    for body in bodies:
        struct.pack_into("<I", body, 4, previous)
        out += body
        previous = len(body)
    Path(dst).write_bytes(bytes(out))
    return Path(dst)


def _read_index(data: bytes, index_offset: int, record_header_size: int) -> tuple[np.ndarray, list]:
    import zstandard

    index = RECORD_HEADER.unpack_from(data, index_offset)
    pos = index_offset + record_header_size
    (count,) = struct.unpack_from("<I", data, pos)
    stream_ids = [struct.unpack_from("<iH", data, pos + 4 + 6 * k) for k in range(count)]
    pos += 4 + 6 * count
    (record_count,) = struct.unpack_from("<I", data, pos)
    raw = data[pos + 4:index_offset + index[0]]
    if index[7]:
        raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return np.frombuffer(raw[:record_count * DISK_RECORD_INFO.itemsize], dtype=DISK_RECORD_INFO), stream_ids


CONFIGURATION = 2  # VRS Record::Type


def _kept_records(data: bytes, first_record: int, count: int, keep: np.ndarray, edits: dict, layouts: dict,
                  record_header_size: int) -> list[bytearray]:
    """The kept records' bytes, in order; a configuration record of a stream in ``edits`` rewritten."""
    bodies, pos = [], first_record
    for k in range(count):
        (size,) = struct.unpack_from("<I", data, pos)
        header = list(RECORD_HEADER.unpack_from(data, pos))
        stream_id, record_type = (header[2], header[5]), header[6]
        if keep[k] and stream_id in edits and record_type == CONFIGURATION:
            body = _decompressed(data[pos + record_header_size:pos + size], header[7], header[8])
            layout = json.loads(layouts[stream_id][f"DL:Configuration:{header[3]}:0".encode()])["data_layout"]
            offsets = {piece["name"]: piece["offset"] for piece in layout if "offset" in piece}
            for name, value in edits[stream_id].items():
                struct.pack_into("<I", body, offsets[name], value)
            header[0], header[7], header[8] = record_header_size + len(body), 0, 0
            bodies.append(bytearray(RECORD_HEADER.pack(*header)) + body)
        elif keep[k]:
            bodies.append(bytearray(data[pos:pos + size]))
        pos += size
    return bodies


def _decompressed(payload: bytes, compression: int, raw_size: int) -> bytearray:
    import zstandard

    if compression == 0:
        return bytearray(payload)
    if compression != 2:  # 1 is lz4, which Aria does not use for configuration records
        raise ValueError(f"record compression {compression} is not handled")
    return bytearray(zstandard.ZstdDecompressor().decompressobj().decompress(payload)[:raw_size])
