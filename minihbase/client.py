"""The cluster-side client the Thrift gateway uses (HBase's Connection/Table inside the Thrift server):
locates regions, waits for offline ones up to `client_retry_s`, and groups rows per region.

Errors are HBase's: TableNotFound, TableNotEnabled, NoSuchColumnFamily; a region that stays offline (its server
died and recovery cannot write) gives RetriesExhausted naming the NotServingRegion cause.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, TypeVar

from minihbase.cells import PUT, Cell
from minihbase.errors import HBaseError, NotServingRegion, RegionServerAborted, RetriesExhausted
from minihbase.filters import Filter, parse_filter
from minihbase.region import ColumnSelector, Region, now_ms

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

T = TypeVar("T")
ROW_LIMIT_PER_CHUNK = 1000


def serving(region: Region):
    """The region server serving `region` right now, or NotServingRegion (the caller re-locates and retries)."""
    rs = region.server
    if rs is None:
        raise NotServingRegion(f"Region {region.info.region_name.decode('latin-1')} is not online")
    rs._check(region)
    return rs


class ClusterClient:
    def __init__(self, cluster: "MiniHBaseCluster"):
        self.cluster = cluster

    @property
    def master(self):
        return self.cluster.master

    def _on_region(self, table: bytes, row: bytes, fn: Callable[[Region], T]) -> T:
        """Run `fn(region)` on the region holding `row`, retrying while it is offline or moving."""
        deadline = time.monotonic() + self.cluster.config.client_retry_s
        attempts = 0
        failed_on = None
        while True:
            attempts += 1
            region = self.master.locate(table, row)
            if region is not failed_on:
                # A region that moved or split while we waited for it is a fresh location: try it at once.
                deadline = max(deadline, time.monotonic() + 1.0)
            rs = region.server
            if rs is not None and rs.online:
                try:
                    return fn(region)
                except (NotServingRegion, RegionServerAborted) as e:
                    last: HBaseError = e
            else:
                last = NotServingRegion(f"Region {region.info.region_name.decode('latin-1')} is not online")
            failed_on = region
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RetriesExhausted(f"Failed after attempts={attempts}, exceptions:\n"
                                       f"{time.strftime('%Y-%m-%dT%H:%M:%S')}, {last.java_text()}")
            with self.master.changed:
                self.master.changed.wait(min(remaining, 0.1))

    # ------------------------------------------------------------------------------------------ reads
    def get(self, table: bytes, row: bytes, selector: ColumnSelector, time_max: int | None = None,
            versions: int = 1, time_min: int | None = None) -> list[tuple[bytes, int, bytes]]:
        """The row's cells (family:qualifier, ts, value): up to `versions` per column in [time_min, time_max)."""
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, selector.referenced_families())

        def read(region: Region):
            with region.lock:
                rs = serving(region)
                region.read_requests += 1
                rs.read_requests += 1
                return region.read_row(row, selector, time_max, versions, now_ms(), None, time_min)
        return self._on_region(table, row, read)

    def get_rows(self, table: bytes, rows: list[bytes], selector: ColumnSelector,
                 time_max: int | None = None) -> list[tuple[bytes, list]]:
        out = []
        for row in rows:
            cells = self.get(table, row, selector, time_max)
            if cells:
                out.append((row, cells))
        return out

    # ------------------------------------------------------------------------------------------ writes
    def mutate(self, table: bytes, rows: list[list[Cell]], cluster_ids: list[str] | None = None,
               durable: bool = True) -> None:
        """Each element of `rows` is one row's cells (one WAL entry). Families are checked for every row before
        anything is written."""
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, {c.family for cells in rows for c in cells})
        ids = cluster_ids if cluster_ids is not None else [self.cluster.cluster_id]
        pending = [cells for cells in rows if cells]
        while pending:
            # Write the rows of the first row's region; re-grouped on every attempt, so a region that splits
            # or moves meanwhile is handled like HBase's client does: locate again, send what belongs there.
            pending = self._on_region(table, pending[0][0].row,
                                      lambda region: self._mutate_region(region, pending, ids, durable))

    @staticmethod
    def _mutate_region(region: Region, pending: list, ids, durable) -> list:
        """Write the rows of `pending` that belong to `region`; return the others."""
        info = region.info
        batch = [cells for cells in pending if info.contains(cells[0].row)]
        serving(region).mutate(region, batch, ids, durable)
        return [cells for cells in pending if not info.contains(cells[0].row)]

    def increment(self, table: bytes, row: bytes, family: bytes, qualifier: bytes, amount: int) -> int:
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, [family])
        return self._on_region(table, row, lambda r: serving(r).increment(r, row, family, qualifier, amount))

    def append(self, table: bytes, row: bytes, items: list[tuple[bytes, bytes, bytes]]) -> list[tuple[int, bytes]]:
        """Atomically append `value` to each (family, qualifier)'s newest value; returns (ts, new value) each."""
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, {f for f, _, _ in items})

        def run(region: Region):
            with region.lock:
                rs = serving(region)
                now = now_ms()
                cells, out = [], []
                for family, qualifier, value in items:
                    current = region.newest(row, family + b":" + qualifier, now)
                    old, ts = (current[1], max(now, current[0] + 1)) if current else (b"", now)
                    cells.append(Cell(row, family, qualifier, ts, PUT, old + value))
                    out.append((ts, old + value))
                rs.mutate(region, [cells], [self.cluster.cluster_id])
                return out
        return self._on_region(table, row, run)

    def check_and_put(self, table: bytes, row: bytes, colkey: bytes, expected: bytes | None,
                      cells: list[Cell]) -> bool:
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, {colkey.partition(b":")[0]} | {c.family for c in cells})

        def run(region: Region) -> bool:
            with region.lock:
                rs = serving(region)
                current = region.newest(row, colkey, now_ms())
                if (current[1] if current else None) != expected:
                    return False
                rs.mutate(region, [cells], [self.cluster.cluster_id])
                return True
        return self._on_region(table, row, run)

    # ------------------------------------------------------------------------------------------ scans
    def open_scanner(self, table: bytes, start: bytes = b"", stop: bytes = b"", reversed_: bool = False,
                     selector: ColumnSelector | None = None, time_max: int | None = None,
                     filter_string: bytes | None = None, batch: int | None = None, versions: int = 1,
                     time_min: int | None = None, limit: int | None = None) -> "Scanner":
        """A scanner over [start, stop) (reversed: from start down to stop, exclusive): `versions` per column in
        [time_min, time_max); `batch` cells per result at most; `limit` rows in all (None or <= 0: no limit)."""
        state = self.master.enabled_table(table)
        selector = selector or ColumnSelector()
        self.master.check_families(state.desc, selector.referenced_families())
        if filter_string is not None:
            parse_filter(filter_string)  # malformed: fail at open, as HBase does
        return Scanner(self, table, start, stop, reversed_, selector, time_max, filter_string, batch, versions,
                       time_min, limit)


class Scanner:
    """A scan across regions, resumable after splits and moves: its position is the last row key examined.

    As in HBase, the filter is instantiated per region (a PageFilter limits rows per region, and a filter that
    ends "all remaining" ends only that region's part)."""

    def __init__(self, client: ClusterClient, table, start, stop, reversed_, selector, time_max,
                 filter_string, batch, versions: int = 1, time_min: int | None = None, limit: int | None = None):
        self.client = client
        self.table = table
        self.stop = stop
        self.reversed = reversed_
        self.selector = selector
        self.time_max = time_max
        self.filter_string = filter_string
        self.batch = batch
        self.versions = versions
        self.time_min = time_min
        self.rows_left = limit if limit and limit > 0 else None  # rows the scan may still return
        self.position: bytes | None = start if start else None
        self.inclusive = True
        self.region_key: str | None = None
        self.filter: Filter | None = None
        self.done = versions < 1  # no version wanted: HBase's column tracker skips every cell
        self.partial: list = []  # (row, cells, more cells of the row follow) pieces waiting when `batch` is set
        self.last_used = time.monotonic()

    def _filter_for(self, region: Region) -> Filter | None:
        if self.filter_string is None:
            return None
        if self.region_key != region.encoded_name or self.filter is None:
            self.filter = parse_filter(self.filter_string)
            self.filter.set_reversed(self.reversed)
            self.region_key = region.encoded_name
        return self.filter

    def _locate(self) -> Region:
        master = self.client.master
        if self.position is None:
            state = master.enabled_table(self.table)
            return state.regions[-1] if self.reversed else state.regions[0]
        region = master.locate(self.table, self.position)
        if self.reversed and not self.inclusive and self.position == region.info.start_key:
            before = master.region_before(self.table, region)
            if before is not None:
                return before
        return region

    def next(self, n: int) -> list[tuple[bytes, list]]:
        """Up to n results (rows, or partial rows when `batch` is set); [] at the end."""
        if not self.batch:
            return self._next(n)
        return [(row, cells) for row, cells, _ in self._next(n)]

    def next_results(self, n: int) -> list[tuple[bytes, list, bool]]:
        """As `next`, each result with HBase's `mayHaveMoreCellsInRow` (True when a batch cut the row and more of
        its cells follow in the next result)."""
        if not self.batch:
            return [(row, cells, False) for row, cells in self._next(n)]
        return self._next(n)

    def _next(self, n: int) -> list:
        self.last_used = time.monotonic()
        out: list = []
        while len(out) < n:
            if self.partial:
                take = n - len(out)
                out.extend(self.partial[:take])
                self.partial = self.partial[take:]
                continue
            if self.done:
                break
            want = n - len(out)
            if self.rows_left is not None:
                want = min(want, self.rows_left)
            rows = self._fetch(want)
            if self.rows_left is not None:
                rows = rows[:self.rows_left]
                self.rows_left -= len(rows)
                if self.rows_left <= 0:
                    self.done = True
            if self.batch:
                size = self.batch
                for row, cells in rows:
                    for i in range(0, len(cells), size):
                        self.partial.append((row, cells[i:i + size], i + size < len(cells)))
            else:
                out.extend(rows)
        return out

    def _fetch(self, n: int) -> list:
        rows: list = []
        while not rows and not self.done:
            def chunk(region: Region):
                with region.lock:
                    serving(region)
                    flt = self._filter_for(region)
                    result = region.scan_chunk(self.position, self.inclusive, self.stop, self.reversed,
                                               min(n, ROW_LIMIT_PER_CHUNK), self.selector, self.time_max,
                                               now_ms(), flt, 20000, self.versions, self.time_min)
                    region.read_requests += 1
                    return region, result
            region, (found, last, exhausted, filter_done) = self._on_scan_region(chunk)
            rows.extend(found)
            if last is not None:
                self.position, self.inclusive = last, False
            if exhausted or filter_done:
                self._advance(region)
        return rows

    def _on_scan_region(self, fn):
        deadline = time.monotonic() + self.client.cluster.config.client_retry_s
        attempts = 0
        failed_on = None
        while True:
            attempts += 1
            region = self._locate()
            if region is not failed_on:
                deadline = max(deadline, time.monotonic() + 1.0)
            failed_on = region
            if region.server is not None and region.server.online:
                try:
                    return fn(region)
                except (NotServingRegion, RegionServerAborted) as e:
                    last: HBaseError = e
            else:
                last = NotServingRegion(f"Region {region.info.region_name.decode('latin-1')} is not online")
            if time.monotonic() >= deadline:
                raise RetriesExhausted(f"Failed after attempts={attempts}, exceptions:\n{last.java_text()}")
            with self.client.master.changed:
                self.client.master.changed.wait(0.1)

    def _advance(self, region: Region) -> None:
        """Move past `region` to its neighbour in scan order, or finish."""
        info = region.info
        self.filter = None
        if not self.reversed:
            if not info.end_key or (self.stop and info.end_key >= self.stop):
                self.done = True
            else:
                self.position, self.inclusive = info.end_key, True
        else:
            if not info.start_key or (self.stop and info.start_key <= self.stop):
                self.done = True
            else:
                self.position, self.inclusive = info.start_key, False
