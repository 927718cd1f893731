"""Prove a copy: row counts, range hashes with bisection, a row diff, re-compare, optional repair.

After HBase's tools in `org.apache.hadoop.hbase.mapreduce`: RowCounter (`FirstKeyOnlyFilter AND
KeyOnlyFilter`, one cell per row), HashTable/SyncTable (MD5 over row, family,
qualifier, timestamp and value, in batches aligned to row boundaries) and
`replication.VerifyReplication` (a merge-join by row key into GOODROWS, CONTENT_DIFFERENT,
ONLY_IN_SOURCE, ONLY_IN_PEER, timestamps compared, a re-compare after a sleep).

How one partition is verified (`verify_partition`):
1. Each side is scanned once and cut into hash batches. A batch starts at a row
   whose key hashes to 0 modulo `batch_rows` (content-defined cuts), so the two
   sides cut at the same keys without talking to each other: a side's pass needs
   only its own data and yields a few bytes per batch. (HashTable cuts by size
   and makes the target follow the source's cuts; content-defined cuts let both
   passes run at once, independently.)
2. `compare_batches` merges the two batch streams. Where both sides cut at the
   same key the ranges line up and the digests are compared; a cut key present
   on one side only is itself a differing row, and the range up to the next
   common cut is marked different.
3. A differing range is bisected: re-hashed on both sides with 16x finer batches,
   recursing into the sub-ranges that still differ, until a range holds at most
   `leaf_rows` rows or bisection stops narrowing (most of the range differs);
   then both sides of that range are merge-joined row by row (`diff_rows`).
4. Differing rows (up to `max_diff_rows` per partition) are fetched again after
   `recompare_sleep_s` and re-classified (edits in flight), then optionally
   repaired: puts with the source's timestamps, deletes of target-only cells.

Everything compared is bounded by the window: cells with `start_time <= ts <
end_time` (the cutoff excludes edits still in flight) in the families asked,
source families renamed to their target names.

Thrift1 has no exact-version delete: a delete through `mutateRowTs` removes
*every* version of the column at or below its timestamp, and masks any later
put at or below it. The repair therefore refuses (and reports as a conflict) a
delete that would mask a source cell of the same column, and, when the window
has a start time, any delete (it would also remove versions older than the
window, which were not compared). The same masking works against the repair's
puts: a row or column deleted on the target at a later time keeps hiding cells
written with their (older) source timestamps until a major compaction drops the
marker; the repair counts such rows (`masked_by_delete`) and says so.
"""
from __future__ import annotations

import hashlib
import logging
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from hbase_migration.datapath import DataPath, open_data_path, prefetch
from hbase_migration.partitions import Partition
from hbase_migration.scope import (
    Cell,
    CopyConfigError,
    Row,
    TableScope,
    positive_option,
    rename_column,
    to_string_binary,
    versions_text,
)

if TYPE_CHECKING:
    from hbase_migration.cluster import Cluster

log = logging.getLogger(__name__)

MATCHING = "matching"
CONTENT_DIFFERENT = "content_different"
ONLY_IN_SOURCE = "only_in_source"
ONLY_IN_TARGET = "only_in_target"
DIFFERENT = (CONTENT_DIFFERENT, ONLY_IN_SOURCE, ONLY_IN_TARGET)
LEVELS = ("rows", "content")


@dataclass(frozen=True)
class VerifyOptions(TableScope):
    """What to compare and how.

    - level: "rows" compares row counts only (RowCounter's key-only scan, cheap);
      "content" (default) compares every cell through hashes and a row diff.
    - batch_rows: average rows per hash batch (a power of two; 256 ~ HashTable's 8 KB
      batches for 30-byte cells). Smaller batches: more digests, shorter re-scans.
    - leaf_rows: a differing range this small is diffed row by row.
    - recompare_sleep_s: pause before differing rows are fetched again (0 = no re-compare).
    - max_diff_rows: differing rows kept per partition for re-compare/repair (counts stay exact).
    - sample_limit: differing row keys listed per category in the result.
    - repair: write the source's cells to the target and delete target-only cells.
    """

    level: str = "content"
    batch_rows: int = 256
    leaf_rows: int = 64
    recompare_sleep_s: float = 0.0
    max_diff_rows: int = 10_000
    sample_limit: int = 20
    repair: bool = False
    scan_batch_rows: int = 1000  # both sides are only read: bigger batches than a copy's

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.level not in LEVELS:
            raise CopyConfigError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        for name in ("batch_rows", "leaf_rows", "max_diff_rows", "sample_limit"):
            object.__setattr__(self, name, positive_option(getattr(self, name), name))
        if self.batch_rows & (self.batch_rows - 1):
            raise CopyConfigError(f"batch_rows must be a power of two, got {self.batch_rows}")
        try:
            sleep_s = float(self.recompare_sleep_s)
        except (TypeError, ValueError):
            raise CopyConfigError(f"recompare_sleep_s must be seconds >= 0, got {self.recompare_sleep_s!r}") from None
        if not sleep_s >= 0:
            raise CopyConfigError(f"recompare_sleep_s must be seconds >= 0, got {self.recompare_sleep_s!r}")
        object.__setattr__(self, "recompare_sleep_s", sleep_s)
        if not isinstance(self.repair, bool):
            raise CopyConfigError(f"repair must be true or false, got {self.repair!r}")
        if self.repair and self.level != "content":
            raise CopyConfigError("repair needs level 'content' (row counts alone do not say what to repair)")



# --------------------------------------------------------------------------------------------------
# Hashing (pure)

_LEN = struct.Struct(">I").pack
_TS = struct.Struct(">q").pack


def normalize_cells(cells: Iterable[Cell]) -> tuple[Cell, ...]:
    """Cells in HBase's order within a row: by column, newest version first."""
    return tuple(sorted(cells, key=lambda c: (c[0], -c[1])))


PUT_TYPE = b"\x04"  # KeyValue.Type.Put: the only type a (non-raw) scan returns


def update_digest(digest: Any, row: bytes, cells: Sequence[Cell]) -> int:
    """Feed one row into an MD5: row, family, qualifier, timestamp, type and value of every cell (every version
    compared, not only the newest).

    Every part is length-prefixed, so no two different rows feed the same bytes
    (HashTable concatenates them bare). Returns the bytes fed, for batch sizes.
    """
    parts: list[bytes] = []
    row_len = _LEN(len(row))
    for column, ts, value in cells:
        family, _, qualifier = column.partition(b":")
        parts += (row_len, row, _LEN(len(family)), family, _LEN(len(qualifier)), qualifier, _TS(ts), PUT_TYPE,
                  _LEN(len(value)), value)
    chunk = b"".join(parts)  # one update per row: the same bytes as one per cell, fewer calls
    digest.update(chunk)
    return len(chunk)


def is_cut(row: bytes, batch_rows: int) -> bool:
    """True when `row` starts a new hash batch: its key hashes to 0 modulo batch_rows.

    Depends on the key alone, so both sides cut at the same rows; with batch_rows
    a power of two, every cut at one level is also a cut at every finer level.
    """
    if batch_rows <= 1:
        return True
    h = int.from_bytes(hashlib.blake2b(row, digest_size=8).digest(), "big")
    return h & (batch_rows - 1) == 0


@dataclass(frozen=True)
class HashBatch:
    """One batch of one side: rows from `start` up to the next batch's start."""

    start: bytes
    rows: int
    cells: int
    digest: bytes


def hash_batches(rows: Iterable[Row], start: bytes, batch_rows: int) -> Iterator[HashBatch]:
    """Cut a side's rows (sorted, within [start, ...)) into content-defined batches.

    The first batch starts at `start` (the range start, even when its first row
    comes later) and is always produced, empty or not, so both sides begin alike.
    """
    digest = hashlib.md5()
    batch_start, nrows, ncells = start, 0, 0
    for row, cells in rows:
        if row != batch_start and is_cut(row, batch_rows):
            yield HashBatch(batch_start, nrows, ncells, digest.digest())
            digest = hashlib.md5()
            batch_start, nrows, ncells = row, 0, 0
        update_digest(digest, row, cells)
        nrows += 1
        ncells += len(cells)
    yield HashBatch(batch_start, nrows, ncells, digest.digest())


@dataclass(frozen=True)
class RangeVerdict:
    """A key range `[lo, hi)` (b"" hi = open end) and whether both sides' batches agree in it."""

    lo: bytes
    hi: bytes
    equal: bool
    source_rows: int
    target_rows: int
    source_cells: int = 0
    target_cells: int = 0


def compare_batches(source: Iterable[HashBatch], target: Iterable[HashBatch], hi: bytes) -> Iterator[RangeVerdict]:
    """Merge two sides' batch streams (both starting at the same key) into range verdicts.

    Ranges close where both sides cut at the same key; a range is equal when both
    sides hold the same batches (same cuts, same digests) in it. Streams: holds
    only the batches since the last common cut.
    """
    s_it, t_it = iter(source), iter(target)
    s, t = next(s_it), next(t_it)
    if s.start != t.start:
        raise ValueError(f"batch streams start at different keys: {s.start!r} != {t.start!r}")
    acc_s, acc_t = [s], [t]
    ns, nt = next(s_it, None), next(t_it, None)
    while True:
        if (ns is None and nt is None) or (ns is not None and nt is not None and ns.start == nt.start):
            end = hi if ns is None else ns.start
            equal = [(b.start, b.digest) for b in acc_s] == [(b.start, b.digest) for b in acc_t]
            yield RangeVerdict(acc_s[0].start, end, equal, sum(b.rows for b in acc_s), sum(b.rows for b in acc_t),
                               sum(b.cells for b in acc_s), sum(b.cells for b in acc_t))
            if ns is None:
                return
            acc_s, acc_t = [ns], [nt]
            ns, nt = next(s_it, None), next(t_it, None)
        elif nt is None or (ns is not None and ns.start < nt.start):
            acc_s.append(ns)
            ns = next(s_it, None)
        else:
            acc_t.append(nt)
            nt = next(t_it, None)


MISSING_ON_TARGET, ONLY_ON_TARGET, VALUE_DIFFERS = "missing_on_target", "only_on_target", "value_differs"


def version_differences(source_cells: Sequence[Cell], target_cells: Sequence[Cell],
                        limit: int = 10) -> tuple[tuple[bytes, int, str], ...]:
    """The versions that differ between two sides of one row: (column, timestamp, kind), at most `limit`.

    kind: `missing_on_target` (a source version the target lacks), `only_on_target`, `value_differs` (same
    column and timestamp, another value)."""
    source = {(c, ts): v for c, ts, v in source_cells}
    target = {(c, ts): v for c, ts, v in target_cells}
    out = []
    for key in sorted(source.keys() | target.keys(), key=lambda k: (k[0], -k[1])):
        if key not in target:
            out.append((key[0], key[1], MISSING_ON_TARGET))
        elif key not in source:
            out.append((key[0], key[1], ONLY_ON_TARGET))
        elif source[key] != target[key]:
            out.append((key[0], key[1], VALUE_DIFFERS))
        if len(out) >= limit:
            break
    return tuple(out)


def diff_rows(source: Iterable[Row], target: Iterable[Row]) -> Iterator[tuple[bytes, str, tuple]]:
    """VerifyReplication's merge-join: (row, status, differing versions) for every row on either side, in key
    order. Rows are compared cell by cell, every version and timestamp (`Result.compareResults`); the versions
    that differ are named for every differing row (all of a row's versions when it is on one side only)."""
    s_it, t_it = iter(source), iter(target)
    s, t = next(s_it, None), next(t_it, None)
    while s is not None or t is not None:
        if t is None or (s is not None and s[0] < t[0]):
            yield s[0], ONLY_IN_SOURCE, version_differences(s[1], ())
            s = next(s_it, None)
        elif s is None or t[0] < s[0]:
            yield t[0], ONLY_IN_TARGET, version_differences((), t[1])
            t = next(t_it, None)
        else:
            if tuple(s[1]) == tuple(t[1]):
                yield s[0], MATCHING, ()
            else:
                yield s[0], CONTENT_DIFFERENT, version_differences(s[1], t[1])
            s, t = next(s_it, None), next(t_it, None)


def row_status(source_cells: Sequence[Cell] | None, target_cells: Sequence[Cell] | None) -> str | None:
    """The status of one row from both sides' cells (None: absent or empty); None if on neither."""
    if not source_cells and not target_cells:
        return None
    if not target_cells:
        return ONLY_IN_SOURCE
    if not source_cells:
        return ONLY_IN_TARGET
    return MATCHING if tuple(source_cells) == tuple(target_cells) else CONTENT_DIFFERENT


@dataclass
class Tally:
    """Row counts by status plus the differing rows kept for re-compare and repair."""

    max_kept: int = 10_000
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys((MATCHING,) + DIFFERENT, 0))
    differing: dict[bytes, str] = field(default_factory=dict)
    versions: dict[bytes, tuple] = field(default_factory=dict)  # a kept row's differing versions
    truncated: bool = False

    def add(self, row: bytes, status: str, versions: tuple = ()) -> None:
        self.counts[status] += 1
        if status != MATCHING:
            if len(self.differing) < self.max_kept:
                self.differing[row] = status
                if versions:
                    self.versions[row] = versions
            else:
                self.truncated = True

    def add_matching(self, rows: int) -> None:
        self.counts[MATCHING] += rows

    def reclassify(self, row: bytes, status: str | None, versions: tuple = ()) -> None:
        """A kept differing row seen again: move it to its new status (None: gone from both sides)."""
        old = self.differing.pop(row)
        self.versions.pop(row, None)
        self.counts[old] -= 1
        if status is None:
            return
        self.counts[status] += 1
        if status != MATCHING:
            self.differing[row] = status
            if versions:
                self.versions[row] = versions

    @property
    def source_rows(self) -> int:
        return self.counts[MATCHING] + self.counts[CONTENT_DIFFERENT] + self.counts[ONLY_IN_SOURCE]

    @property
    def target_rows(self) -> int:
        return self.counts[MATCHING] + self.counts[CONTENT_DIFFERENT] + self.counts[ONLY_IN_TARGET]


# --------------------------------------------------------------------------------------------------
# Repair planning (pure)


@dataclass
class RepairPlan:
    """What makes one target row equal to the source's: puts, deletes, and what the data path cannot fix."""

    puts: list[Cell] = field(default_factory=list)
    deletes: list[tuple[bytes, int]] = field(default_factory=list)  # (column, ts) versions to delete
    conflicts: list[tuple[bytes, int, str]] = field(default_factory=list)


def plan_repair(source_cells: Sequence[Cell], target_cells: Sequence[Cell], windowed: bool = False,
                exact_deletes: bool = False) -> RepairPlan:
    """Puts of source cells the target lacks (or holds with another value), deletes of target-only cells.

    With `exact_deletes` (Thrift2's DELETE_COLUMN) every target-only version is deleted by itself. A Thrift1
    delete at ts removes all versions <= ts of the column and masks later
    puts at or below ts, so a target-only cell is left (as a conflict) when the
    source has a version of that column at or below it, or when the comparison
    was windowed (older versions outside the window would go too).
    """
    plan = RepairPlan()
    target_by_key = {(c, ts): v for c, ts, v in target_cells}
    source_keys = {(c, ts) for c, ts, _ in source_cells}
    for column, ts, value in source_cells:
        if target_by_key.get((column, ts)) != value:
            plan.puts.append((column, ts, value))
    for column, ts, _ in target_cells:
        if (column, ts) in source_keys:
            continue
        if exact_deletes:
            plan.deletes.append((column, ts))
            continue
        masked = [s for s in source_cells if s[0] == column and s[1] <= ts]
        if masked:
            plan.conflicts.append((column, ts, f"a delete at {ts} would also hide the source's version at "
                                               f"{masked[0][1]} (Thrift1 deletes all versions <= ts)"))
        elif windowed:
            plan.conflicts.append((column, ts, "window has a start time: a Thrift1 delete would also remove "
                                               "versions older than the window"))
        else:
            plan.deletes.append((column, ts))
    return plan


# --------------------------------------------------------------------------------------------------
# Results (pure)


@dataclass
class PartitionVerdict:
    """One partition's verdict; small and JSON-ready."""

    partition_id: str
    index: int
    start_row: bytes
    stop_row: bytes
    status: str = "verified"  # verified | failed
    counts: dict[str, int] = field(default_factory=dict)
    source_rows: int = 0
    target_rows: int = 0
    source_cells: int = 0
    target_cells: int = 0
    differing: list[tuple[bytes, str]] = field(default_factory=list)  # capped at sample_limit per status
    versions: list[tuple[bytes, bytes, int, str]] = field(default_factory=list)  # (row, column, ts, kind), capped
    truncated: bool = False
    recompared: int = 0
    recompare_changed: int = 0
    bisections: int = 0
    leaf_diffs: int = 0
    repair: dict[str, Any] | None = None
    elapsed_s: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start_row"] = self.start_row.hex()
        d["stop_row"] = self.stop_row.hex()
        d["differing"] = [[to_string_binary(r), s] for r, s in self.differing]
        d["versions"] = [version_dict(*v) for v in self.versions]
        return d


def version_dict(row: bytes, column: bytes, ts: int, kind: str) -> dict[str, Any]:
    return {"row": to_string_binary(row), "column": to_string_binary(column), "timestamp": ts, "kind": kind}


def summarize_verify(verdicts: Iterable[PartitionVerdict], options: VerifyOptions, elapsed_s: float) -> dict:
    """The verify result JSON: totals, VerifyReplication's counters, a capped sample of differing keys."""
    verdicts = sorted(verdicts, key=lambda v: v.index)
    ok = [v for v in verdicts if v.status == "verified"]
    failed = [v for v in verdicts if v.status != "verified"]
    total = dict.fromkeys((MATCHING,) + DIFFERENT, 0)
    for v in ok:
        for k in total:
            total[k] += v.counts.get(k, 0)
    samples: dict[str, list[str]] = {k: [] for k in DIFFERENT}
    for v in ok:
        for row, status in v.differing:
            if len(samples[status]) < options.sample_limit:
                samples[status].append(to_string_binary(row))
    source_rows = sum(v.source_rows for v in ok)
    target_rows = sum(v.target_rows for v in ok)
    bad = sum(total[k] for k in DIFFERENT)
    result: dict[str, Any] = {
        "table": options.table,
        "target_table": options.target_table,
        "level": options.level,
        "start_time_ms": options.start_time_ms,
        "end_time_ms": options.end_time_ms,
        "versions": versions_text(options.versions),
        "partitions": len(verdicts),
        "failed_partitions": len(failed),
        "source_rows": source_rows,
        "target_rows": target_rows,
        "source_cells": sum(v.source_cells for v in ok) if options.level == "content" else None,
        "target_cells": sum(v.target_cells for v in ok) if options.level == "content" else None,
        "differing_versions_sample": [version_dict(*x) for v in ok for x in v.versions][:options.sample_limit],
        "matching": total[MATCHING] if options.level == "content" else None,
        "content_different": total[CONTENT_DIFFERENT] if options.level == "content" else None,
        "only_in_source": total[ONLY_IN_SOURCE] if options.level == "content" else None,
        "only_in_target": total[ONLY_IN_TARGET] if options.level == "content" else None,
        "differing_rows_sample": samples,
        "sample_limit": options.sample_limit,
        "recompared_rows": sum(v.recompared for v in ok),
        "recompare_changed_rows": sum(v.recompare_changed for v in ok),
        "recompare_sleep_s": options.recompare_sleep_s,
        "differing_rows_truncated": any(v.truncated for v in ok),
        "elapsed_s": round(elapsed_s, 3),
        "rows_per_s": round(max(source_rows, target_rows) / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        "failures": [{"partition_id": v.partition_id, "index": v.index, "start_row": to_string_binary(v.start_row),
                      "stop_row": to_string_binary(v.stop_row), "error": v.error} for v in failed],
    }
    if options.level == "rows":
        result["row_count_mismatch_partitions"] = sum(1 for v in ok if v.source_rows != v.target_rows)
        result["identical"] = not failed and all(v.source_rows == v.target_rows for v in ok)
    else:
        result["verifyreplication_counters"] = {
            "GOODROWS": total[MATCHING], "BADROWS": bad, "CONTENT_DIFFERENT_ROWS": total[CONTENT_DIFFERENT],
            "ONLY_IN_SOURCE_TABLE_ROWS": total[ONLY_IN_SOURCE], "ONLY_IN_PEER_TABLE_ROWS": total[ONLY_IN_TARGET],
        }
        result["identical"] = not failed and bad == 0
    if options.repair:
        keys = ("rows_repaired", "cells_put", "cells_deleted", "conflicts", "still_different", "masked_by_delete",
                "not_repaired")
        rep: dict[str, Any] = {k: sum((v.repair or {}).get(k, 0) for v in ok) for k in keys}
        hints = sorted({v.repair["hint"] for v in ok if v.repair and v.repair.get("hint")})
        if hints:
            rep["hint"] = hints[0]
        rep["conflict_sample"] = [c for v in ok for c in (v.repair or {}).get("conflict_sample", [])][
            : options.sample_limit]
        result["repair"] = rep
    return result


def exit_code(result: dict[str, Any]) -> int:
    """0: identical; 1: differences found or a partition failed."""
    return 0 if result.get("identical") else 1


def repaired_clean(result: dict[str, Any]) -> bool:
    """Whether a verification with repair left both sides equal: every differing row it found was repaired and
    read back equal (nothing still different, no conflict, nothing left unrepaired, no failed partition)."""
    repair = result.get("repair")
    return bool(repair) and not result.get("failed_partitions") and \
        repair["still_different"] == repair["conflicts"] == repair["not_repaired"] == 0


# --------------------------------------------------------------------------------------------------
# I/O


class Side:
    """One side of a comparison: a data path, its table, and how its cells map to target terms."""

    def __init__(self, name: str, path: DataPath, table: str, options: VerifyOptions, is_source: bool):
        self.name = name
        self.path = path
        self.table = table
        self.options = options
        self.is_source = is_source
        self.columns = options.source_columns if is_source else options.target_columns

    def normalize(self, cells: Sequence[Cell]) -> Sequence[Cell]:
        """The source's cells renamed to target terms (and re-ordered, as a rename may move a column). Both data
        paths already return cells in one canonical order, inside the window."""
        renames = self.options.renames if self.is_source else None
        if not renames:
            return cells
        return normalize_cells((rename_column(c, renames), ts, v) for c, ts, v in cells)

    def _read(self) -> dict[str, Any]:
        o = self.options
        return {"columns": self.columns, "start_ms": o.start_time_ms, "end_ms": o.end_time_ms, "versions": o.versions}

    def batches(self, lo: bytes, hi: bytes, keys_only: bool = False) -> Iterator[list[Row]]:
        """The side's rows in [lo, hi), normalized, one scan batch at a time (batches, not rows, cross the
        prefetch queue: a queue hand-off per row costs more than the row)."""
        for batch in self.path.scan(self.table, lo, hi, batch_rows=self.options.scan_batch_rows, keys_only=keys_only,
                                    **self._read()):
            yield [(row, self.normalize(cells)) for row, cells in batch]

    def fetch(self, keys: Sequence[bytes]) -> dict[bytes, tuple[Cell, ...]]:
        """Rows by key, normalized (absent rows, or rows with nothing in range, are left out)."""
        found = self.path.get_rows(self.table, keys, **self._read())
        return {row: self.normalize(cells) for row, cells in found.items()}

    def count(self, lo: bytes, hi: bytes) -> int:
        """Rows with a cell in the window: RowCounter's key-only scan (one cell per row)."""
        o = self.options
        return sum(len(batch) for batch in self.path.scan(
            self.table, lo, hi, columns=self.columns, start_ms=o.start_time_ms, end_ms=o.end_time_ms,
            batch_rows=max(o.scan_batch_rows, 2000), first_key_only=True))


def _open_paths(source: "Cluster", target: "Cluster", partition: Partition, options: VerifyOptions) -> list[DataPath]:
    """The source read through the partition's gateway, the target through one of its gateways in turn."""
    args = (options.timeout_s, options.retries, options.retry_wait_max_s)
    return [open_data_path(source, *args, partition.gateway or None),
            open_data_path(target, *args, target.gateways[partition.index % len(target.gateways)])]


def count_partition(source: "Cluster", target: "Cluster", partition: Partition,
                    options: VerifyOptions) -> PartitionVerdict:
    """Level "rows": both sides' row counts for one partition."""
    started = time.monotonic()
    paths = _open_paths(source, target, partition, options)
    with paths[0], paths[1]:
        src = Side("source", paths[0], options.table, options, True)
        tgt = Side("target", paths[1], options.target_table, options, False)
        with ThreadPoolExecutor(1, thread_name_prefix="count-source") as pool:  # both sides at once
            source_count = pool.submit(src.count, partition.start_row, partition.stop_row)
            target_rows = tgt.count(partition.start_row, partition.stop_row)
            source_rows = source_count.result()
    return PartitionVerdict(partition.partition_id, partition.index, partition.start_row, partition.stop_row,
                            source_rows=source_rows, target_rows=target_rows,
                            elapsed_s=round(time.monotonic() - started, 3))


def verify_partition(
    source: "Cluster", target: "Cluster", partition: Partition, options: VerifyOptions,
    sleep: Callable[[float], None] = time.sleep,
) -> PartitionVerdict:
    """Level "content": hash, bisect, diff, re-compare and (if asked) repair one partition."""
    if options.level == "rows":
        return count_partition(source, target, partition, options)
    started = time.monotonic()
    verdict = PartitionVerdict(partition.partition_id, partition.index, partition.start_row, partition.stop_row)
    tally = Tally(max_kept=options.max_diff_rows)
    paths = _open_paths(source, target, partition, options)
    try:
        # Each side is read in its own thread and connection; the main thread hashes and compares.
        src = Side("source", paths[0], options.table, options, True)
        tgt = Side("target", paths[1], options.target_table, options, False)
        find_differences(src, tgt, partition.start_row, partition.stop_row, options, tally, verdict)
        if options.recompare_sleep_s > 0 and tally.differing:
            sleep(options.recompare_sleep_s)
            keys = sorted(tally.differing)
            verdict.recompared = len(keys)
            fresh_s, fresh_t = src.fetch(keys), tgt.fetch(keys)
            for row in keys:
                s_cells, t_cells = fresh_s.get(row, ()), fresh_t.get(row, ())
                status = row_status(s_cells, t_cells)
                if status != tally.differing[row]:
                    verdict.recompare_changed += 1
                tally.reclassify(row, status, version_differences(s_cells, t_cells))
        if options.repair:
            verdict.repair = _repair(src, tgt, tally, options)
    finally:
        for path in paths:
            path.close()
    verdict.counts = dict(tally.counts)
    verdict.source_rows, verdict.target_rows = tally.source_rows, tally.target_rows
    verdict.truncated = tally.truncated
    per_status: dict[str, int] = {}
    for row in sorted(tally.differing):
        status = tally.differing[row]
        if per_status.get(status, 0) < options.sample_limit:
            per_status[status] = per_status.get(status, 0) + 1
            verdict.differing.append((row, status))
        for column, ts, kind in tally.versions.get(row, ()):
            if len(verdict.versions) < options.sample_limit:
                verdict.versions.append((row, column, ts, kind))
    verdict.elapsed_s = round(time.monotonic() - started, 3)
    bad = sum(tally.counts[k] for k in DIFFERENT)
    log.info("partition %s verified: %d source rows, %d target rows, %d matching, %d different "
             "(%d content, %d only in source, %d only in target) in %.1fs",
             partition.describe(), verdict.source_rows, verdict.target_rows, tally.counts[MATCHING], bad,
             tally.counts[CONTENT_DIFFERENT], tally.counts[ONLY_IN_SOURCE], tally.counts[ONLY_IN_TARGET],
             verdict.elapsed_s)
    return verdict


def _rows(batches: Iterable[list[Row]]) -> Iterator[Row]:
    return chain.from_iterable(batches)


def find_differences(src: Any, tgt: Any, lo: bytes, hi: bytes, options: VerifyOptions, tally: Tally,
                     verdict: PartitionVerdict) -> None:
    """Classify every row of [lo, hi) into `tally`: hash both sides, bisect what differs, diff rows.

    `src`/`tgt` need only `batches(lo, hi, keys_only=False)` yielding lists of sorted
    (row, cells) in target terms, so the algorithm runs the same over Thrift or in memory.
    """
    differing = []
    for rv in compare_batches(hash_batches(_rows(prefetch(src.batches(lo, hi), 2)), lo, options.batch_rows),
                              hash_batches(_rows(prefetch(tgt.batches(lo, hi), 2)), lo, options.batch_rows), hi):
        verdict.source_cells += rv.source_cells
        verdict.target_cells += rv.target_cells
        if rv.equal:
            tally.add_matching(rv.source_rows)
        else:
            differing.append(rv)
    for rv in differing:
        _locate(src, tgt, rv, options.batch_rows, options, tally, verdict)


def _locate(src: Side, tgt: Side, rv: RangeVerdict, batch_rows: int, options: VerifyOptions,
            tally: Tally, verdict: PartitionVerdict) -> None:
    """Find the differing rows of a differing range: bisect while it narrows, then diff rows."""
    if rv.source_rows == 0 or rv.target_rows == 0:
        # One side is empty here: every row of the other is one-sided; keys suffice.
        side, status = (tgt, ONLY_IN_TARGET) if rv.source_rows == 0 else (src, ONLY_IN_SOURCE)
        for row, _cells in _rows(side.batches(rv.lo, rv.hi, keys_only=True)):
            tally.add(row, status)
        return
    if max(rv.source_rows, rv.target_rows) <= options.leaf_rows or batch_rows <= 1:
        _diff_range(src, tgt, rv, tally, verdict)
        return
    finer = max(1, batch_rows // 16)
    verdict.bisections += 1
    subs = list(compare_batches(hash_batches(_rows(src.batches(rv.lo, rv.hi)), rv.lo, finer),
                                hash_batches(_rows(tgt.batches(rv.lo, rv.hi)), rv.lo, finer), rv.hi))
    differing = [s for s in subs if not s.equal]
    still = sum(max(s.source_rows, s.target_rows) for s in differing)
    if still * 2 > max(rv.source_rows, rv.target_rows):
        # Most of the range differs: bisecting further would re-read it for nothing.
        _diff_range(src, tgt, rv, tally, verdict)
        return
    for s in subs:
        if s.equal:
            tally.add_matching(s.source_rows)
        else:
            _locate(src, tgt, s, finer, options, tally, verdict)


def _diff_range(src: Side, tgt: Side, rv: RangeVerdict, tally: Tally, verdict: PartitionVerdict) -> None:
    verdict.leaf_diffs += 1
    for row, status, versions in diff_rows(_rows(prefetch(src.batches(rv.lo, rv.hi), 2)),
                                           _rows(tgt.batches(rv.lo, rv.hi))):
        tally.add(row, status, versions)


def _repair(src: Side, tgt: Side, tally: Tally, options: VerifyOptions) -> dict[str, Any]:
    """Make the kept differing rows equal on the target; report what could not be done."""
    keys = sorted(tally.differing)
    report: dict[str, Any] = {"rows_repaired": 0, "cells_put": 0, "cells_deleted": 0, "conflicts": 0,
                              "still_different": 0, "masked_by_delete": 0, "not_repaired": 0,
                              "conflict_sample": []}
    if tally.truncated:
        report["not_repaired"] = sum(tally.counts[k] for k in DIFFERENT) - len(keys)
    if not keys:
        return report
    src_rows, tgt_rows = src.fetch(keys), tgt.fetch(keys)
    puts: list[Row] = []
    conflict_rows: set[bytes] = set()
    for row in keys:
        plan = plan_repair(src_rows.get(row, ()), tgt_rows.get(row, ()), windowed=options.start_time_ms is not None,
                           exact_deletes=tgt.path.exact_deletes)
        if plan.deletes:
            tgt.path.delete(tgt.table, row, plan.deletes)
        if plan.puts:
            puts.append((row, plan.puts))
        report["cells_put"] += len(plan.puts)
        report["cells_deleted"] += len(plan.deletes)
        report["conflicts"] += len(plan.conflicts)
        if plan.conflicts:
            conflict_rows.add(row)
        for column, ts, reason in plan.conflicts:
            if len(report["conflict_sample"]) < options.sample_limit:
                report["conflict_sample"].append({
                    "row": to_string_binary(row), "column": to_string_binary(column), "timestamp": ts,
                    "reason": reason,
                })
        if plan.puts or plan.deletes:
            report["rows_repaired"] += 1
    if puts:
        writer = tgt.path.writer(tgt.table, writers=1)
        writer.put(puts)
        writer.close()
    # What the target looks like now, from both sides again.
    after_s, after_t = src.fetch(keys), tgt.fetch(keys)
    put_cells = {row: cells for row, cells in puts}
    for row in keys:
        status = row_status(after_s.get(row), after_t.get(row))
        if status is not None and status != MATCHING:
            report["still_different"] += 1
            now_there = set(after_t.get(row, ()))
            if row not in conflict_rows and any(c not in now_there for c in put_cells.get(row, ())):
                # Written with its source timestamp, yet not visible: a delete marker on the target (the row or
                # column was deleted there at a later time) hides it until a major compaction drops the marker.
                report["masked_by_delete"] += 1
    if report["masked_by_delete"]:
        report["hint"] = ("cells written with their source timestamps are hidden by delete markers on the target; "
                          "run a major compaction of the target table (it drops the markers), then repair again")
    log.info("repair of %s: %d rows repaired (%d cells put, %d deleted), %d conflicts, %d still different "
             "(%d hidden by delete markers)", tgt.table, report["rows_repaired"], report["cells_put"],
             report["cells_deleted"], report["conflicts"], report["still_different"], report["masked_by_delete"])
    return report


def verify_partition_safely(source: "Cluster", target: "Cluster", partition: Partition,
                            options: VerifyOptions) -> PartitionVerdict:
    """`verify_partition` that turns a failure into a `failed` verdict (listed, and the job exits 1)."""
    started = time.monotonic()
    try:
        return verify_partition(source, target, partition, options)
    except Exception as e:
        log.error("verification of partition %s failed: %s: %s", partition.describe(), type(e).__name__, e)
        return PartitionVerdict(partition.partition_id, partition.index, partition.start_row, partition.stop_row,
                                status="failed", elapsed_s=round(time.monotonic() - started, 3),
                                error=f"{type(e).__name__}: {e}")
