"""What a VRS file's own index says it holds, to tell a complete recording from a cut one.

Aria writes the index near the start of the file (after the description record), listing every
record: time, byte size, stream and type. When a copy is cut short, the VRS reader drops the records
past the end with only a C++ log line ("N records are beyond the end of the file"), and
projectaria-tools then serves the frames before the cut as if they were the whole recording (issue 9).
Comparing the index with the file's size finds the loss and says which frames it took.

Layout (facebookresearch/vrs ``FileFormat.h``, ``IndexRecord.cpp``): a file header, then records that
each start with a 32-byte header. The classic index record (format version 2, the one Aria writes)
holds ``uint32 stream count, (int32 type id, uint16 instance) per stream, uint32 record count`` and
then one 19-byte ``DiskRecordInfo`` per record, zstd-compressed when the header says so.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egohorizon.errors import DataError

FILE_HEADER = struct.Struct("<IIQIIqqq")  # magic x2, creation id, header sizes, index/description/first-record offsets
RECORD_HEADER = struct.Struct("<IIiIdHBBI")  # size, previous size, type id, format, time, instance, type, compression, raw size
CLASSIC_INDEX_FORMAT = 2
DATA_RECORD = 3  # vrs::Record::Type::DATA (1 tags, 2 configuration)
DISK_RECORD_INFO = np.dtype([("t", "<f8"), ("size", "<u4"), ("record_type", "u1"), ("type_id", "<i4"),
                             ("instance", "<u2")])
VRS_MAGIC = b"VisionRe"


@dataclass
class VrsIndex:
    """The records a VRS file's index lists, and how many of them the file really holds."""

    path: Path
    file_bytes: int
    expected_bytes: int  # where the last indexed record ends
    records: np.ndarray  # DISK_RECORD_INFO, in file order
    present: int  # the first ``present`` records lie wholly inside the file

    @property
    def truncated(self) -> bool:
        return self.present < len(self.records)

    def data_records(self, stream: str, *, missing: bool) -> np.ndarray:
        """Device times (ns) of one stream's data records that are missing from the file, or present."""
        type_id, instance = (int(part) for part in stream.split("-"))
        part = self.records[self.present:] if missing else self.records[:self.present]
        mask = (part["type_id"] == type_id) & (part["instance"] == instance) & (part["record_type"] == DATA_RECORD)
        # Aria records are stamped with the capture time in device seconds (a double).
        return np.round(part["t"][mask] * 1e9).astype(np.int64)


def read_vrs_index(path: str | os.PathLike) -> VrsIndex | None:
    """The index of an Aria VRS file; None when the file has no index of the classic kind (VRS then
    rebuilds one from the records present, and nothing tells what is missing)."""
    path = Path(path)
    with open(path, "rb") as handle:
        data = handle.read(FILE_HEADER.size)
        if len(data) < FILE_HEADER.size or not data.startswith(VRS_MAGIC):
            raise DataError(f"{path}: not a VRS file (no VRS file header)")
        _, _, _, _, record_header_size, index_offset, _, first_record = FILE_HEADER.unpack(data)
        file_bytes = os.fstat(handle.fileno()).st_size
        if index_offset <= 0 or index_offset + record_header_size > file_bytes:
            return None
        handle.seek(index_offset)
        header = RECORD_HEADER.unpack(handle.read(RECORD_HEADER.size))
        index_size, format_version, compression = header[0], header[3], header[7]
        handle.seek(index_offset + record_header_size)
        body = handle.read(index_size - record_header_size)
    if format_version != CLASSIC_INDEX_FORMAT or first_record <= 0:
        return None
    records = _index_records(body, compressed=compression != 0, path=path)
    ends = first_record + np.cumsum(records["size"], dtype=np.int64)
    return VrsIndex(path=path, file_bytes=file_bytes, expected_bytes=int(ends[-1]) if len(ends) else first_record,
                    records=records, present=int(np.searchsorted(ends, file_bytes, side="right")))


def _index_records(body: bytes, *, compressed: bool, path: Path) -> np.ndarray:
    import zstandard

    try:
        (stream_count,) = struct.unpack_from("<I", body, 0)
        (record_count,) = struct.unpack_from("<I", body, 4 + 6 * stream_count)
        raw = body[8 + 6 * stream_count:]
        if compressed:
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    except (struct.error, zstandard.ZstdError) as error:
        raise DataError(f"{path}: cannot read the VRS index record ({error})") from error
    if len(raw) < record_count * DISK_RECORD_INFO.itemsize:
        raise DataError(f"{path}: the VRS index record is incomplete ({len(raw)} bytes for {record_count} records)")
    return np.frombuffer(raw[:record_count * DISK_RECORD_INFO.itemsize], dtype=DISK_RECORD_INFO)
