"""Resume by key ranges: what a copy finished, as key ranges, taken out of a new plan.

A partition is named after its key range, and the ranges come from the source's regions. A region split, a
merge or a normalizer run between two attempts changes the ranges, so a resume that matched partition ids would
not recognise the finished ones and would copy them again. Instead every finished partition is kept as a key
range with the scope fingerprint it was copied under (`TableScope.fingerprint`: window, versions, families), and
the finished ranges are subtracted from each partition of the new plan: what is left is copied, in pieces named
after their own ranges, and nothing finished is read again whatever the regions are now.

Records written before the fingerprint was stored (ledger schema < 5, savepoints of earlier releases) carry
none: such a record counts when its id is the id its range has under the current fingerprint, which is exactly
the test the old id matching made. Pure.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from hbase_migration.data.partitions import Partition, partition_id


@dataclass(frozen=True)
class FinishedRange:
    """One finished partition as the store recorded it: `[start, stop)` (b"" stop = end of table)."""

    partition_id: str
    start: bytes
    stop: bytes
    fingerprint: str | None = None  # None: recorded before fingerprints were kept


@dataclass(frozen=True)
class ResumePlan:
    todo: tuple[Partition, ...]  # what is left to copy, renumbered from 0
    skipped: int  # planned partitions wholly finished already
    trimmed: int  # planned partitions partly finished: only their unfinished pieces are in `todo`
    finished: int  # finished ranges of this table and scope (the plan's total is finished + len(todo))


def _before_stop(key: bytes, stop: bytes) -> bool:
    """key < stop, where stop b"" is the end of the table (+infinity)."""
    return not stop or key < stop


def merge_ranges(ranges: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Sorted, disjoint ranges covering exactly the union of `ranges` (touching ranges joined; empty dropped)."""
    ordered = sorted((a, b) for a, b in ranges if _before_stop(a, b))
    merged: list[tuple[bytes, bytes]] = []
    for start, stop in ordered:
        if merged:
            last_start, last_stop = merged[-1]
            if not last_stop:  # the last range runs to the end of the table: it covers this one
                continue
            if start <= last_stop:  # overlapping or touching: one range
                merged[-1] = (last_start, b"" if not stop else max(last_stop, stop))
                continue
        merged.append((start, stop))
    return merged


def subtract(lo: bytes, hi: bytes, finished: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The pieces of `[lo, hi)` that no range of `finished` (sorted and disjoint: `merge_ranges`) covers."""
    pieces: list[tuple[bytes, bytes]] = []
    cur = lo
    for start, stop in finished:
        if hi and start >= hi:
            break
        if stop and stop <= cur:
            continue
        if start > cur:
            pieces.append((cur, start))
        if not stop:
            return pieces
        cur = max(cur, stop)
        if hi and cur >= hi:
            return pieces
    pieces.append((cur, hi))
    return pieces


def relevant(finished: Iterable[FinishedRange], table: str, fingerprint: str) -> list[FinishedRange]:
    """The finished ranges copied under `fingerprint` (a record without one: when its id proves it)."""
    out = []
    for r in finished:
        if r.fingerprint == fingerprint or (
                r.fingerprint is None and r.partition_id == partition_id(table, r.start, r.stop, fingerprint)):
            out.append(r)
    return out


def resume_plan(partitions: Sequence[Partition], finished: Iterable[FinishedRange], table: str,
                fingerprint: str) -> ResumePlan:
    """`partitions` (a fresh plan) without what `finished` already covers."""
    mine = relevant(finished, table, fingerprint)
    covered = merge_ranges((r.start, r.stop) for r in mine)
    todo: list[Partition] = []
    skipped = trimmed = 0
    for p in partitions:
        pieces = subtract(p.start_row, p.stop_row, covered)
        if pieces == [(p.start_row, p.stop_row)]:
            todo.append(p)
        elif not pieces:
            skipped += 1
        else:
            trimmed += 1
            todo += [dataclasses.replace(p, start_row=a, stop_row=b, est_rows=None,
                                         partition_id=partition_id(table, a, b, fingerprint)) for a, b in pieces]
    todo = [dataclasses.replace(p, index=i) for i, p in enumerate(todo)]
    return ResumePlan(tuple(todo), skipped, trimmed, len(mine))


def finished_from_records(records: Mapping[str, Mapping[str, Any]]) -> list[FinishedRange]:
    """Savepoint entries (`{partition_id: {start_row, stop_row, fingerprint?}}`, rows in hex) as ranges."""
    return [FinishedRange(pid, bytes.fromhex(r["start_row"]), bytes.fromhex(r["stop_row"]), r.get("fingerprint"))
            for pid, r in records.items()]
