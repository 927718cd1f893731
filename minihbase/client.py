"""The cluster-side client the Thrift gateway uses (HBase's Connection/Table inside the Thrift server):
locates regions, waits for offline ones up to `client_retry_s`, and groups rows per region.

Every request reaches the region server holding the region as one call through that server's RPC handlers
(`RegionServer.ipc`, HBase's RpcServer): a get per row, a mutation call per region (HBase sends one multi per
region server), one call per scanner chunk of a region. The call waits for a free handler and is timed there.

Errors are HBase's: TableNotFound, TableNotEnabled, NoSuchColumnFamily; a region that stays offline (its server
died and recovery cannot write) gives RetriesExhausted naming the NotServingRegion cause. A mutation of a
READONLY table fails at once (DoNotRetryIOException, no retry): a single Put/Delete/Increment/Append/checkAndPut
with the region server's exception as HBase's client rethrows it, a batch (`mutate(..., batch=True)`, HBase's
`Table.put(List)` / `Table.batch`) with RetriesExhaustedWithDetailsException once the other regions are written.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, TypeVar

from minihbase.cells import PUT, Cell
from minihbase.errors import (
    DoNotRetryIOException,
    HBaseError,
    NotServingRegion,
    RegionReadOnly,
    RegionServerAborted,
    RetriesExhausted,
)
from minihbase.filters import Filter, parse_filter
from minihbase.ipc import KEYVALUE_OVERHEAD, cells_size, result_size
from minihbase.region import ColumnSelector, Region, now_ms

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

T = TypeVar("T")
ROW_LIMIT_PER_CHUNK = 1000
CLIENT = "minihbase-client"  # this process's connection to its region servers (Thrift gateways, sinks, control)
GET_REQUEST = 24  # bytes of a Get besides its row key (columns, time range)
SCAN_REQUEST = 24  # bytes of a ScanRequest for the next rows (scanner id, number of rows)


class BatchFailed(HBaseError):
    """`RetriesExhaustedWithDetailsException`, as `AsyncProcess`'s BatchErrors makes it when actions of a batch
    failed: "Failed N action(s): <cause>: M time(s), ..., servers with issues: <servername>, ...". A
    DoNotRetryIOException cause is named by its message (the server's `class: message` text, the client-side
    exception being rebuilt from it), any other by its class's simple name (`classifyExs`); every server once.
    Its `java_text()` (what Thrift1's IOError carries) starts with the class name, as getStackTraceAsString."""

    java_class = "org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException"

    def __init__(self, failures: list[tuple[HBaseError, str | None]]):
        self.failures = failures
        counts: dict[str, int] = {}
        for exc, _ in failures:
            key = exc.java_text() if isinstance(exc, DoNotRetryIOException) else exc.java_class.rpartition(".")[2]
            counts[key] = counts.get(key, 0) + 1
        desc = "".join(f"{k}: {n} time{'s' if n > 1 else ''}, " for k, n in counts.items())
        servers = ", ".join(dict.fromkeys(s if s is not None else "null" for _, s in failures))
        n = len(failures)
        super().__init__(f"Failed {n} action{'s' if n > 1 else ''}: {desc}servers with issues: {servers}")


def remote(e: HBaseError) -> DoNotRetryIOException:
    """The exception HBase's client throws for a DoNotRetryIOException a region server answered:
    `RemoteWithExtrasException.unwrapRemoteException()` builds the server's class with the RPC's error text,
    which is the server's `StringUtils.stringifyException` (`<class>: <message>` and the stack), so a Thrift1
    IOError (`Throwables.getStackTraceAsString`) starts with the class twice: `org.apache.hadoop.hbase.
    DoNotRetryIOException: org.apache.hadoop.hbase.DoNotRetryIOException: region is read only`."""
    return DoNotRetryIOException(e.java_text())


def _write_call(rows: list[list[Cell]], batch: bool) -> tuple[int, tuple[str, ...]]:
    """(request bytes, operation histograms) of a mutation call: a single Put or Delete (RSRpcServices.mutate),
    else a multi (doBatchOp: PutBatch if it holds puts, DeleteBatch if it holds deletes)."""
    size = 0
    puts = deletes = False
    for cells in rows:
        for c in cells:
            size += len(c[0]) + len(c[1]) + len(c[2]) + len(c[5]) + KEYVALUE_OVERHEAD
            if c[4] == PUT:
                puts = True
            else:
                deletes = True
    if not batch and len(rows) == 1 and puts != deletes:
        return size, ("put",) if puts else ("delete",)
    return size, ("putBatch",) * puts + ("deleteBatch",) * deletes


def call(region: Region, op, request_size: int, body: Callable[[], T],
         response_size: Callable[[T], int] | None = None) -> T:
    """Run `body` as one call to the region server holding `region`, through its general handlers."""
    rs = region.server
    if rs is None:
        raise NotServingRegion(f"Region {region.info.region_name.decode('latin-1')} is not online")
    ipc = rs.ipc
    return ipc.call(ipc.general, body, op, request_size, response_size, CLIENT)


def rpc(op, request_size: int, response_size: Callable | None = None):
    """Decorate `fn(region)` so that it runs as one call (`call`) to the server holding the region."""
    def wrap(fn: Callable[[Region], T]) -> Callable[[Region], T]:
        return lambda region: call(region, op, request_size, lambda: fn(region), response_size)
    return wrap


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
                except RegionReadOnly as e:
                    raise remote(e) from None  # DoNotRetry: no retry loop
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

        @rpc("get", len(row) + GET_REQUEST, lambda cells: result_size(row, cells))
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
               durable: bool = True, batch: bool = False) -> None:
        """Each element of `rows` is one row's cells (one WAL entry). Families are checked for every row before
        anything is written. `batch`: HBase's `Table.put(List)` / `Table.batch` (Thrift1 mutateRows, the
        replication sink): the actions a region refuses (READONLY) fail, the other regions' are written, then
        BatchFailed (RetriesExhaustedWithDetailsException) names the failures."""
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, {c.family for cells in rows for c in cells})
        ids = cluster_ids if cluster_ids is not None else [self.cluster.cluster_id]
        pending = [cells for cells in rows if cells]
        failures: list | None = [] if batch else None
        while pending:
            # Write the rows of the first row's region; re-grouped on every attempt, so a region that splits
            # or moves meanwhile is handled like HBase's client does: locate again, send what belongs there.
            pending = self._on_region(table, pending[0][0].row,
                                      lambda region: self._mutate_region(region, pending, ids, durable, failures))
        if failures:
            raise BatchFailed(failures)

    @staticmethod
    def _mutate_region(region: Region, pending: list, ids, durable, failures: list | None) -> list:
        """Write the rows of `pending` that belong to `region` in one call; return the others. With `failures`
        (a batch) a refusal of the region (READONLY) fails its actions, as a multi answers per action."""
        info = region.info
        rows = [cells for cells in pending if info.contains(cells[0].row)]
        size, ops = _write_call(rows, failures is not None)

        def body() -> None:
            rs = serving(region)
            try:
                rs.mutate(region, rows, ids, durable)
            except RegionReadOnly as e:
                if failures is None:
                    raise
                failures.extend((e, rs.servername) for _ in rows)
        call(region, ops, size, body)
        return [cells for cells in pending if not info.contains(cells[0].row)]

    def increment(self, table: bytes, row: bytes, family: bytes, qualifier: bytes, amount: int) -> int:
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, [family])
        size = len(row) + len(family) + len(qualifier) + 8 + KEYVALUE_OVERHEAD
        return self._on_region(table, row, lambda r: call(
            r, "increment", size, lambda: serving(r).increment(r, row, family, qualifier, amount)))

    def append(self, table: bytes, row: bytes, items: list[tuple[bytes, bytes, bytes]]) -> list[tuple[int, bytes]]:
        """Atomically append `value` to each (family, qualifier)'s newest value; returns (ts, new value) each."""
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, {f for f, _, _ in items})

        def run(region: Region):
            with region.lock:
                rs = serving(region)
                region.check_read_only()
                now = now_ms()
                cells, out = [], []
                for family, qualifier, value in items:
                    current = region.newest(row, family + b":" + qualifier, now)
                    old, ts = (current[1], max(now, current[0] + 1)) if current else (b"", now)
                    cells.append(Cell(row, family, qualifier, ts, PUT, old + value))
                    out.append((ts, old + value))
                rs.mutate(region, [cells], [self.cluster.cluster_id])
                return out
        size = sum(len(row) + len(f) + len(q) + len(v) + KEYVALUE_OVERHEAD for f, q, v in items)
        return self._on_region(table, row, lambda r: call(r, "append", size, lambda: run(r)))

    def check_and_put(self, table: bytes, row: bytes, colkey: bytes, expected: bytes | None,
                      cells: list[Cell]) -> bool:
        state = self.master.enabled_table(table)
        self.master.check_families(state.desc, {colkey.partition(b":")[0]} | {c.family for c in cells})

        def run(region: Region) -> bool:
            with region.lock:
                rs = serving(region)
                region.check_read_only()  # HRegion.checkAndMutate checks before comparing
                current = region.newest(row, colkey, now_ms())
                if (current[1] if current else None) != expected:
                    return False
                rs.mutate(region, [cells], [self.cluster.cluster_id])
                return True
        size = len(row) + len(colkey) + len(expected or b"") + cells_size([cells])
        return self._on_region(table, row, lambda r: call(r, "checkAndPut", size, lambda: run(r)))

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

    def raw_scan(self, table: bytes, start: bytes = b"", stop: bytes = b"", selector: ColumnSelector | None = None,
                 time_min: int | None = None, time_max: int | None = None, versions: int = 1,
                 limit: int | None = None) -> list[tuple[bytes, list[tuple[bytes, int, int, bytes]]]]:
        """A raw scan (`Scan.setRaw(true)`, the shell's `RAW => true`) of [start, stop): every row with a cell
        or a delete marker in range, its cells as `Region.raw_row` gives them (markers with their key types).
        Region by region, each read in one call under its lock; a region that moves or splits meanwhile is
        located again from where the scan stands. At most `limit` rows (None: all)."""
        state = self.master.enabled_table(table)
        selector = selector or ColumnSelector()
        self.master.check_families(state.desc, selector.referenced_families())
        out: list = []
        position = start

        def read(region: Region) -> tuple[list, bytes]:
            with region.lock:
                serving(region)
                region.read_requests += 1
                end = region.info.end_key
                upto = stop if stop and (not end or stop < end) else end
                now = now_ms()
                rows = []
                for key in region.raw_keys(max(position, region.info.start_key), upto):
                    cells = region.raw_row(key, selector, time_min, time_max, versions, now)
                    if cells:
                        rows.append((key, cells))
                return rows, end

        while True:
            found, end = self._on_region(table, position, lambda r: call(r, "scanTime", SCAN_REQUEST, lambda: read(r)))
            out.extend(found)
            if limit is not None and len(out) >= limit:
                return out[:limit]
            if not end or (stop and end >= stop):
                return out
            position = end


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
                pieces = self.partial
                for row, cells in rows:
                    if len(cells) <= size:  # most rows: whole, no slice copied
                        pieces.append((row, cells, False))
                        continue
                    for i in range(0, len(cells), size):
                        pieces.append((row, cells[i:i + size], i + size < len(cells)))
            else:
                out.extend(rows)
        return out

    def _fetch(self, n: int) -> list:
        rows: list = []
        while not rows and not self.done:
            @rpc("scanTime", SCAN_REQUEST, _scan_response_size)
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


def _scan_response_size(result) -> int:
    """Bytes of the cells a scanner call returns (ScanSize): `result_size` of every row, in one loop."""
    total = 0
    for row, cells in result[1][0]:
        total += (len(row) + KEYVALUE_OVERHEAD - 1) * len(cells)
        for c in cells:
            total += len(c[0]) + len(c[2])
    return total
