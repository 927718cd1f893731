"""Cells, key types and the binary codec shared by minihbase's WAL and store files.

A cell is HBase's KeyValue reduced to what the toolkit observes: row, family, qualifier, timestamp, key type
and value. Key type codes are HBase's `KeyValue.Type` bytes so a WAL entry reads like HBase's.
"""
from __future__ import annotations

import struct
from typing import Iterable, NamedTuple

# HBase KeyValue.Type codes.
PUT = 4
DELETE = 8  # one exact version of a column
DELETE_FAMILY_VERSION = 10
DELETE_COLUMN = 12  # every version of a column with ts <= T
DELETE_FAMILY = 14  # every column of a family with ts <= T

TYPE_NAMES = {
    PUT: "Put", DELETE: "Delete", DELETE_FAMILY_VERSION: "DeleteFamilyVersion",
    DELETE_COLUMN: "DeleteColumn", DELETE_FAMILY: "DeleteFamily",
}
TYPES_BY_NAME = {v: k for k, v in TYPE_NAMES.items()}

# HConstants.LATEST_TIMESTAMP: "use the server's clock".
LATEST_TIMESTAMP = (1 << 63) - 1


class Cell(NamedTuple):
    row: bytes
    family: bytes
    qualifier: bytes
    timestamp: int
    type: int
    value: bytes = b""

    @property
    def column(self) -> bytes:
        return self.family + b":" + self.qualifier

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, str(self.type))

    def heap_size(self) -> int:
        """Rough byte size, used for memstore accounting and region split decisions."""
        return len(self.row) + len(self.family) + len(self.qualifier) + len(self.value) + 24


_CELL_HEAD = struct.Struct(">IBIqBI")  # row len, family len, qualifier len, ts, type, value len


def encode_cells(cells: Iterable[Cell]) -> bytes:
    parts = []
    append = parts.append
    pack = _CELL_HEAD.pack
    for row, family, qualifier, ts, typ, value in cells:
        append(pack(len(row), len(family), len(qualifier), ts, typ, len(value)))
        append(row)
        append(family)
        append(qualifier)
        append(value)
    return b"".join(parts)


def decode_cells(buf: bytes | memoryview, offset: int, count: int) -> tuple[list[Cell], int]:
    """`count` cells from `buf` at `offset`; returns them and the offset after the last one."""
    cells = []
    unpack = _CELL_HEAD.unpack_from
    size = _CELL_HEAD.size
    data = bytes(buf) if isinstance(buf, memoryview) else buf
    for _ in range(count):
        rlen, flen, qlen, ts, typ, vlen = unpack(data, offset)
        offset += size
        row = data[offset:offset + rlen]
        offset += rlen
        family = data[offset:offset + flen]
        offset += flen
        qualifier = data[offset:offset + qlen]
        offset += qlen
        value = data[offset:offset + vlen]
        offset += vlen
        cells.append(Cell(row, family, qualifier, ts, typ, value))
    return cells, offset


def parse_column(column: bytes) -> tuple[bytes, bytes | None]:
    """HBase's `CellUtil.parseColumn`: `fam` -> (fam, None) = whole family; `fam:` -> (fam, b"") = the empty
    qualifier; `fam:q` -> (fam, q). The qualifier may itself contain ':'."""
    family, sep, qualifier = column.partition(b":")
    if not sep:
        return family, None
    return family, qualifier
