"""Hash verification's pure core: leaves, their hashes, the time bound, which key ranges to compare by cells.

A table is cut into **leaves**: key ranges of about `leaf_bytes` (1 MiB) of cells, planned once from the source
(its regions, each cut at evenly spaced sampled row keys into as many leaves as its size asks) and used on both
sides, so the leaf `n` of the source and the leaf `n` of the target cover the same rows. Each side hashes its
leaves beside its own cluster; only the digests (16 bytes a leaf, with three counts) meet. A leaf whose digests
differ is hashed again on both sides after a pause (an edit in flight is no difference), and only the leaves that
still differ are compared cell by cell (`verify.py`'s merge-join and its re-compare), reading just those ranges
across the WAN.

What a leaf's digest covers (SHA-256 of a byte stream, the first 16 bytes kept), in HBase's order of cells
(row, family, qualifier, newest first, then the type: markers before puts), in the target's terms (a renamed
family under its target name):

    each row, when the row key changes:  0x01 | u32 len(row) | row
    each cell:                           u16 len(column) | column ("family:qualifier") | i64 timestamp
                                         | u8 type (KeyValue.Type: Put 4, Delete 8, DeleteFamilyVersion 10,
                                           DeleteColumn 12, DeleteFamily 14) | u32 len(value) | value

(big-endian). Every version of every cell is in it, value included, and a delete marker when the reader sees
markers. A row cut into pieces by the scan's batch hashes as if whole, so both sides agree whatever their batching.
Both sides hash only cells older than the same **time bound** (`time_bound`: the verification's start minus the
clock-skew margin, or the window's end if earlier): a cell written since is excluded on both, and the cut-over's
bounded check covers from there on (`migration/bounded_check.py`).

Pure: no I/O. `hashverify.py` runs it against clusters.
"""
from __future__ import annotations

import hashlib
import math
import struct
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from hbase_migration.data.partitions import Partition, RegionSample, split_points
from hbase_migration.data.scope import CopyConfigError, to_string_binary

PUT, DELETE, DELETE_FAMILY_VERSION, DELETE_COLUMN, DELETE_FAMILY = 4, 8, 10, 12, 14  # HBase's KeyValue.Type
TYPE_NAMES = {PUT: "Put", DELETE: "Delete", DELETE_FAMILY_VERSION: "DeleteFamilyVersion",
              DELETE_COLUMN: "DeleteColumn", DELETE_FAMILY: "DeleteFamily"}
DEFAULT_LEAF_BYTES = 1 << 20
DIGEST_BYTES = 16
ROWS_PER_LEAF_UNSIZED = 1000  # a region whose size is unknown: leaves of this many sampled rows

_ROW = struct.Struct(">BI")
_COLUMN = struct.Struct(">H")
_CELL = struct.Struct(">qBI")
EMPTY_DIGEST = hashlib.sha256(b"").digest()[:DIGEST_BYTES]


def time_bound(verify_started_ms: int, skew_margin_ms: int, end_time_ms: int | None = None) -> int:
    """The newest timestamp both sides hash is below this: the verification's start minus the skew margin (a
    region server whose clock is that much behind stamps a cell written after the start below it: it is left to
    the bounded check), or the window's end when that is earlier."""
    if skew_margin_ms < 0:
        raise CopyConfigError(f"skew_margin_ms must be >= 0, got {skew_margin_ms}")
    bound = verify_started_ms - skew_margin_ms
    return bound if end_time_ms is None else min(bound, end_time_ms)


def choose_method(method: str, table_bytes: int | None, min_bytes: int) -> tuple[str, str]:
    """(cells | hash, why): the method asked, or for "auto" hash when the table's store files reach `min_bytes`
    (reading both sides whole from one place costs the WAN the table; below that the plan and the two passes cost
    more than they save), cells when smaller or of unknown size."""
    from hbase_migration.data.progress import human_bytes

    if method in ("cells", "hash"):
        return method, f"method {method}"
    if method != "auto":
        raise CopyConfigError(f"method must be cells, hash or auto, got {method!r}")
    if table_bytes is None:
        return "cells", "auto: the table's size is unknown (its region servers' /jmx was not read): cells"
    if table_bytes >= min_bytes:
        return "hash", f"auto: {human_bytes(table_bytes)} of store files >= hash_verify_min_bytes " \
                       f"{human_bytes(min_bytes)}: hash"
    return "cells", f"auto: {human_bytes(table_bytes)} of store files < hash_verify_min_bytes " \
                    f"{human_bytes(min_bytes)}: cells"


def leaves_wanted(region_bytes: int | None, leaf_bytes: int, rows: int) -> int:
    """How many leaves a key range of `rows` rows is cut into: its bytes over `leaf_bytes` (at least 1), or, its
    size unknown, one per `ROWS_PER_LEAF_UNSIZED` rows; never more than its rows (a leaf ends at a row boundary)."""
    if region_bytes is not None:
        wanted = max(1, math.ceil(region_bytes / leaf_bytes))
    else:
        wanted = max(1, math.ceil(rows / ROWS_PER_LEAF_UNSIZED))
    return max(1, min(wanted, rows))


# --------------------------------------------------------------------------------------------------
# The plan: leaves, numbered across the table


@dataclass(frozen=True)
class HashPartition:
    """One task's key range and its leaves: `bounds` are the row keys inside `[start_row, stop_row)` where a new
    leaf begins; its leaves are numbered from `first_leaf` on, across the whole table."""

    index: int
    start_row: bytes
    stop_row: bytes
    bounds: tuple[bytes, ...] = ()
    first_leaf: int = 0
    region: str = ""
    host: str = ""
    gateway: str = ""

    @property
    def leaves(self) -> int:
        return len(self.bounds) + 1

    def leaf_range(self, i: int) -> tuple[bytes, bytes]:
        """The key range `[start, stop)` of its leaf `i` (0-based within the partition)."""
        edges = (self.start_row, *self.bounds, self.stop_row)
        return edges[i], edges[i + 1]

    def leaf_of(self, row: bytes) -> int:
        """Which of its leaves (0-based) holds `row`."""
        return bisect_right(self.bounds, row)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "start_row": self.start_row.hex(), "stop_row": self.stop_row.hex(),
                "bounds": [b.hex() for b in self.bounds], "first_leaf": self.first_leaf, "region": self.region,
                "host": self.host, "gateway": self.gateway}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HashPartition":
        return cls(int(d["index"]), bytes.fromhex(d["start_row"]), bytes.fromhex(d["stop_row"]),
                   tuple(bytes.fromhex(b) for b in d.get("bounds") or ()), int(d.get("first_leaf", 0)),
                   d.get("region", ""), d.get("host", ""), d.get("gateway", ""))

    def describe(self) -> str:
        return f"#{self.index} [{to_string_binary(self.start_row)}, {to_string_binary(self.stop_row) or '<end>'})"


def plan_leaves(partitions: Sequence[Partition], samples: Mapping[str, RegionSample], leaf_bytes: int,
                table_bytes: int | None = None) -> list[HashPartition]:
    """Cut each partition (`partitions.plan_partitions`: one per source region, or pieces of one) into leaves of
    about `leaf_bytes`: `samples` maps a region's name to its row count and sampled row keys, evenly spaced, in
    order (`partitions.sample_region`); `table_bytes` (None: unknown, leaves then by rows) is spread over the rows,
    so a region's leaves follow its rows. A region cut into several partitions gives each the share of its rows
    its sampled keys hold."""
    leaf_bytes = int(leaf_bytes)
    if leaf_bytes <= 0:
        raise CopyConfigError(f"hash_leaf_bytes must be a positive number of bytes, got {leaf_bytes}")
    total_rows = sum(s.rows for s in samples.values())
    per_row = table_bytes / total_rows if table_bytes is not None and total_rows else None
    out: list[HashPartition] = []
    first = 0
    for p in partitions:
        sample = samples.get(p.region) or RegionSample(0, ())
        keys = [k for k in sample.keys if k >= p.start_row and (not p.stop_row or k < p.stop_row)]
        rows = sample.rows if len(keys) == len(sample.keys) else sample.rows * len(keys) // max(1, len(sample.keys))
        size = None if per_row is None else int(rows * per_row)
        bounds = tuple(split_points(keys, leaves_wanted(size, leaf_bytes, rows), p.start_row, p.stop_row))
        out.append(HashPartition(p.index, p.start_row, p.stop_row, bounds, first, p.region, p.host, p.gateway))
        first += len(bounds) + 1
    return out


def sample_keys_wanted(table_bytes: int | None, regions: int, leaf_bytes: int) -> int:
    """How many keys to sample of each region: twice the leaves a region four times the average would need (at
    least 1024), so that each cut falls near its place."""
    if table_bytes is None:
        return 1024
    return max(1024, 2 * math.ceil(4 * table_bytes / max(1, regions) / leaf_bytes))


def leaf_count(plan: Sequence[HashPartition]) -> int:
    return sum(p.leaves for p in plan)


def leaf_ranges(plan: Sequence[HashPartition], leaves: Iterable[int]) -> list[tuple[int, bytes, bytes]]:
    """(leaf number, start, stop) of the given leaves, in key order."""
    wanted = sorted(set(leaves))
    out = []
    it = iter(plan)
    part = next(it, None)
    for n in wanted:
        while part is not None and n >= part.first_leaf + part.leaves:
            part = next(it, None)
        if part is None or n < part.first_leaf:
            raise ValueError(f"leaf {n} is not in the plan")
        start, stop = part.leaf_range(n - part.first_leaf)
        out.append((n, start, stop))
    return out


def merge_ranges(ranges: Iterable[tuple[int, bytes, bytes]]) -> list[tuple[bytes, bytes, tuple[int, ...]]]:
    """Adjacent leaves as one range (one scan instead of several): (start, stop, leaf numbers)."""
    out: list[tuple[bytes, bytes, tuple[int, ...]]] = []
    for n, start, stop in sorted(ranges, key=lambda r: r[0]):
        if out and out[-1][1] == start and out[-1][1] != b"":
            s, _e, ns = out[-1]
            out[-1] = (s, stop, ns + (n,))
        else:
            out.append((start, stop, (n,)))
    return out


# --------------------------------------------------------------------------------------------------
# Hashing


@dataclass
class LeafDigests:
    """One side's leaves of one partition: digest, rows, cells and bytes of cells of each, in leaf order (a cell's
    bytes: its row, column and value, and 9 for its timestamp and type)."""

    index: int
    first_leaf: int
    digests: list[bytes] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    cells: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    status: str = "hashed"  # hashed | failed
    error: str | None = None
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "first_leaf": self.first_leaf, "digests": b"".join(self.digests).hex(),
                "rows": self.rows, "cells": self.cells, "bytes": self.nbytes, "status": self.status,
                "error": self.error, "elapsed_s": self.elapsed_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LeafDigests":
        raw = bytes.fromhex(d.get("digests") or "")
        digests = [raw[i:i + DIGEST_BYTES] for i in range(0, len(raw), DIGEST_BYTES)]
        return cls(int(d["index"]), int(d["first_leaf"]), digests, list(d.get("rows") or []),
                   list(d.get("cells") or []), list(d.get("bytes") or []), d.get("status", "hashed"),
                   d.get("error"), float(d.get("elapsed_s", 0.0)))

    def by_leaf(self) -> dict[int, bytes]:
        return {self.first_leaf + i: d for i, d in enumerate(self.digests)}


class LeafHasher:
    """Hashes one partition's rows, as they stream in key order, into its leaves (the format in the module
    docstring). `add(row, cells)` takes a row or a piece of one; cells are `(column, timestamp, value)` puts or
    `(column, timestamp, value, type)`. `finish()` returns the partition's `LeafDigests`, empty leaves included."""

    def __init__(self, part: HashPartition):
        self.part = part
        self.out = LeafDigests(part.index, part.first_leaf)
        self._leaf = 0
        self._next_bound = part.bounds[0] if part.bounds else None
        self._sha = hashlib.sha256()
        self._rows = self._cells = self._bytes = 0
        self._last_row: bytes | None = None

    def _close_leaf(self) -> None:
        self.out.digests.append(self._sha.digest()[:DIGEST_BYTES])
        self.out.rows.append(self._rows)
        self.out.cells.append(self._cells)
        self.out.nbytes.append(self._bytes)
        self._sha = hashlib.sha256()
        self._rows = self._cells = self._bytes = 0
        self._leaf += 1
        bounds = self.part.bounds
        self._next_bound = bounds[self._leaf] if self._leaf < len(bounds) else None

    def add(self, row: bytes, cells: Sequence[tuple]) -> None:
        if row != self._last_row:
            if self._last_row is not None and row < self._last_row:
                raise ValueError(f"rows out of key order: {to_string_binary(row)} after "
                                 f"{to_string_binary(self._last_row)}")
            while self._next_bound is not None and row >= self._next_bound:
                self._close_leaf()
            self._last_row = row
            self._rows += 1
            parts = [_ROW.pack(1, len(row)), row]
        else:
            parts = []
        n = len(cells) * (len(row) + 9)  # each cell's row, timestamp and type, as HBase's cells carry them
        pack_column, pack_cell = _COLUMN.pack, _CELL.pack
        for cell in cells:
            column, ts, value = cell[0], cell[1], cell[2]
            kind = cell[3] if len(cell) > 3 else PUT
            parts += (pack_column(len(column)), column, pack_cell(ts, kind, len(value)), value)
            n += len(column) + len(value)
        self._sha.update(b"".join(parts))
        self._cells += len(cells)
        self._bytes += n

    def add_batch(self, pieces: Iterable[tuple[bytes, Sequence[tuple]]]) -> None:
        for row, cells in pieces:
            self.add(row, cells)

    def finish(self) -> LeafDigests:
        while self._leaf <= len(self.part.bounds):
            self._close_leaf()
        return self.out


def hash_rows(part: HashPartition, pieces: Iterable[tuple[bytes, Sequence[tuple]]]) -> LeafDigests:
    """A partition's leaf digests from its rows (pieces) in key order."""
    hasher = LeafHasher(part)
    hasher.add_batch(pieces)
    return hasher.finish()


# --------------------------------------------------------------------------------------------------
# Where the sides meet


def digests_by_leaf(results: Iterable[LeafDigests]) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for r in results:
        if r.status == "hashed":
            out.update(r.by_leaf())
    return out


def differing_leaves(source: Mapping[int, bytes], target: Mapping[int, bytes], leaves: Iterable[int]) -> list[int]:
    """The leaves (of `leaves`) whose digests differ, or that a side could not hash (a failed partition: its
    leaves are then compared by cells)."""
    return sorted(n for n in leaves if n not in source or n not in target or source[n] != target[n])


def side_totals(results: Sequence[LeafDigests]) -> dict[str, int]:
    """Leaves hashed, rows, cells and bytes of cells one side read, and its partitions that failed."""
    ok = [r for r in results if r.status == "hashed"]
    return {"leaves": sum(len(r.digests) for r in ok), "rows": sum(sum(r.rows) for r in ok),
            "cells": sum(sum(r.cells) for r in ok), "bytes": sum(sum(r.nbytes) for r in ok),
            "failed_partitions": len(results) - len(ok)}


def difference_dict(row: bytes, column: bytes, ts: int, kind: str, marker: str | None = None) -> dict[str, Any]:
    """One differing cell as the hash verification's verdict names it: row, family, qualifier, timestamp, type
    (Put, or the delete marker's type) and kind (missing_on_target, only_on_target, value_differs, ...)."""
    family, _, qualifier = column.partition(b":")
    return {"row": to_string_binary(row), "family": to_string_binary(family),
            "qualifier": to_string_binary(qualifier), "timestamp": ts, "type": marker or TYPE_NAMES[PUT],
            "kind": kind}
