"""The Thrift1 data path: HBase's `Hbase.thrift` gateway through happybase's generated client.

Thrift1 facts it is built around (HBase's `ThriftHBaseServiceHandler`):
- A scan returns only the newest version of each column, and its `timestamp` is an exclusive upper bound
  (`[0, ts)`): the end of a time range goes to the server, the start is applied here. Thrift1's TScan has
  `batchSize` too (happybase's `scan_batching`): a wide row comes in slices of that many columns, each slice's
  older versions read by getVer (so a slice holds at most batchSize x VERSIONS cells). `getRow*`/`getRows*`
  have no such limit: a row fetched by key comes whole (verify fetches rows it saw wide by scanning them).
- Older versions come only from `getVer`/`getVerTs`, one call per column: reading N versions of a family that
  keeps more than one costs a (pipelined) call per column.
- `mutateRowsTs` writes every cell of a call with one timestamp, so cells are grouped by timestamp and each
  group is one call. Rows written at distinct times make one call per row; writer threads with pipelined
  calls hide that round trip.
- A delete through `mutateRowTs` removes every version of the column at or below its timestamp (there is no
  exact-version delete), and masks later puts at or below it.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from hbase_migration.clusters.idl import hbase_thrift
from hbase_migration.clusters.thrift import ThriftSession, is_transient, retrying
from hbase_migration.data.datapath.base import (
    FIRST_KEY_ONLY,
    KEY_ONLY,
    CallSize,
    DataPath,
    PartitionFailed,
    Region,
    ScanPosition,
    ThreadedWriter,
    Writer,
    check_in_range,
)
from hbase_migration.data.scope import Cell, Row, cell_order, to_string_binary, window_cells

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

TsGroup = tuple  # (timestamp, [(row, [(column, value), ...]), ...])


class Thrift1Path(DataPath):
    kind = "thrift1"
    exact_deletes = False
    default_writers = 16  # one mutateRowsTs per distinct timestamp: many calls in flight hide the round trips

    def __init__(self, cluster: "Cluster", timeout_s: float | None = None, retries: int = 8,
                 wait_cap_s: float = 20.0, gateway: str | None = None):
        timeout_s = timeout_s if timeout_s is not None else cluster.timeout_s
        super().__init__(cluster, ThriftSession(cluster, timeout_s, gateway), timeout_s, retries, wait_cap_s)

    def read_families(self, table: str) -> dict[bytes, int]:
        T = hbase_thrift()
        try:
            descriptors = self.session.call("getColumnDescriptors", table.encode("utf-8"))
        except T.IOError:
            return {}
        return {bytes(name).rstrip(b":"): int(d.maxVersions) for name, d in descriptors.items()}

    def regions(self, table: str) -> list[Region]:
        return regions_from_thrift(self.session.call("getTableRegions", table.encode("utf-8")))

    def region_server(self, table: str, row: bytes) -> str:
        """`getRegionInfo` of the row's hbase:meta key (`table,row,99999999999999`, the closest region row at or
        before it): `host,port` of the region server holding `row` (Thrift1 gives no start code)."""
        info = self.session.call("getRegionInfo", b"%s,%s,99999999999999" % (table.encode("utf-8"), row))
        host = info.serverName.decode("latin-1") if isinstance(info.serverName, bytes) else info.serverName
        return f"{host},{info.port}"

    def _history(self, table: str, versions: int | None) -> dict[bytes, int]:
        """Families whose older versions need getVer: family -> versions to read."""
        if versions == 1:
            return {}
        return {f: (v if versions is None else min(v, versions)) for f, v in self.families(table).items() if v > 1}

    def scan(self, table: str, start_row: bytes, stop_row: bytes, *, columns: Sequence[bytes] | None = None,
             start_ms: int | None = None, end_ms: int | None = None, versions: int | None = 1,
             batch_rows: int = 500, batch_cells: int | None = None, call_cells: int | None = None,
             keys_only: bool = False, first_key_only: bool = False,
             stats: dict[str, int] | None = None) -> Iterator[list[Row]]:
        # FirstKeyOnlyFilter gives one cell, maybe outside the window: with a start time every column's newest
        # cell is needed to tell whether the row has a cell in range (in slices, of which the first with a cell
        # in range counts).
        flt = (FIRST_KEY_ONLY if start_ms is None else KEY_ONLY) if first_key_only else KEY_ONLY if keys_only else None
        history = {} if keys_only or first_key_only else self._history(table, versions)
        batch_size = None if first_key_only and start_ms is None else batch_cells
        counted: bytes | None = None  # first_key_only: the last row already given (its later slices are not)
        for batch in scan_rows(self.session, table, start_row, stop_row, timestamp=end_ms, columns=columns,
                               batch_rows=batch_rows, batch_cells=batch_size, call_cells=call_cells,
                               filter_string=flt, retries=self.retries, wait_cap=self.wait_cap_s, stats=stats):
            if history:
                older = read_versions(self.session, table, batch, history, end_ms)
                batch = [(row, merge_versions(cells, older.get(row, {}))) for row, cells in batch]
            out = self._in_range(batch, start_ms, end_ms, first_key_only)
            if first_key_only:
                out = [piece for piece in out if piece[0] != counted]
                counted = out[-1][0] if out else counted
            if out:
                yield out

    @staticmethod
    def _in_range(rows: Iterable[Row], start_ms: int | None, end_ms: int | None, first_only: bool) -> list[Row]:
        out = []
        for row, cells in rows:
            if start_ms is not None:
                cells = window_cells(cells, start_ms, end_ms)
            if first_only:
                cells = cells[:1]
            if cells:
                out.append((row, cells))
        return out

    def get_rows(self, table: str, keys: Sequence[bytes], *, columns: Sequence[bytes] | None = None,
                 start_ms: int | None = None, end_ms: int | None = None,
                 versions: int | None = 1) -> dict[bytes, list[Cell]]:
        table_b = table.encode("utf-8")
        history = self._history(table, versions)
        out: dict[bytes, list[Cell]] = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            if columns and end_ms is not None:
                found = self.session.call("getRowsWithColumnsTs", table_b, chunk, list(columns), end_ms, {})
            elif columns:
                found = self.session.call("getRowsWithColumns", table_b, chunk, list(columns), {})
            elif end_ms is not None:
                found = self.session.call("getRowsTs", table_b, chunk, end_ms, {})
            else:
                found = self.session.call("getRows", table_b, chunk, {})
            rows = [(r.row, sorted(((col, c.timestamp, c.value) for col, c in (r.columns or {}).items()),
                                   key=cell_order)) for r in found]
            if history:
                older = read_versions(self.session, table, rows, history, end_ms)
                rows = [(row, merge_versions(cells, older.get(row, {}))) for row, cells in rows]
            out.update(self._in_range(rows, start_ms, end_ms, False))
        return out

    def writer(self, table: str, *, writers: int = 4, pipeline: int = 1, batch_cells: int = 5000,
               batch_bytes: int = 4 << 20) -> Writer:
        return CellWriter(self.cluster, table, writers=writers, pipeline=pipeline, retries=self.retries,
                          wait_cap=self.wait_cap_s, timeout_s=self.timeout_s, batch_cells=batch_cells)

    def delete(self, table: str, row: bytes, cells: Sequence[tuple[bytes, int]]) -> None:
        T = hbase_thrift()
        by_ts: dict[int, list[bytes]] = {}
        for column, ts in cells:
            by_ts.setdefault(ts, []).append(column)
        for ts, columns in sorted(by_ts.items()):
            mutations = [T.Mutation(isDelete=True, column=c, writeToWAL=True) for c in columns]
            self.session.call("mutateRowTs", table.encode("utf-8"), row, mutations, ts, {})


def scan_rows(
    session: ThriftSession,
    table: str,
    start_row: bytes,
    stop_row: bytes,
    *,
    timestamp: int | None = None,
    columns: Sequence[bytes] | None = None,
    batch_rows: int = 500,
    batch_cells: int | None = None,
    call_cells: int | None = None,
    filter_string: str | None = None,
    retries: int = 8,
    wait_cap: float = 20.0,
    stats: dict[str, int] | None = None,
) -> Iterator[list[Row]]:
    """Scan `[start_row, stop_row)` and yield lists of (row, [(column, ts, value)]).

    A transient error (lost connection, expired scanner lease) re-opens the connection and the scanner where
    the scan stopped (`ScanPosition`: also inside a row cut by `batch_cells`), so no cell is lost or repeated.
    Columns come sorted (`sortColumns`, HBase's order), one (newest) version each, with `ts < timestamp` when a
    timestamp is given; with `batch_cells` a wider row comes as consecutive pieces of that many columns.
    """
    T = hbase_thrift()
    table_b = table.encode("utf-8")
    position = ScanPosition(start_row)
    size = CallSize(batch_rows, batch_cells, call_cells)
    state: dict[str, Any] = {"scanner": None, "connection": None}

    def next_batch() -> list:
        # A scanner lives on the connection (and gateway) that opened it: after any re-open (this scan's retry,
        # or another call on the session) open a new one where the scan stopped. An old id reused on another
        # gateway could name another scan's scanner.
        if state["scanner"] is None or state["connection"] != session.reconnects:
            position.reopen()
            scan = T.TScan(startRow=position.start, stopRow=stop_row or None, timestamp=timestamp,
                           columns=list(columns) if columns else None, caching=size.next, batchSize=batch_cells,
                           filterString=filter_string.encode("utf-8") if filter_string else None,
                           sortColumns=True)
            state["scanner"] = session.client.scannerOpenWithScan(table_b, scan, {})
            state["connection"] = session.reconnects
        return session.client.scannerGetList(state["scanner"], size.next)

    def lost_scanner(_error: BaseException) -> None:
        state["scanner"] = None
        if stats is not None:
            stats["retries"] = stats.get("retries", 0) + 1

    try:
        while True:
            try:
                items = retrying(session, next_batch, retries, wait_cap, f"scan of {table}", lost_scanner,
                                 transient=scanner_lost)
            except Exception as e:
                if not scanner_lost(e):
                    raise
                raise PartitionFailed(f"scan of {table!r} from {to_string_binary(position.start)} failed "
                                      f"{retries} times: {type(e).__name__}: {e}") from e
            if not items:
                return
            batch = [(it.row, [(c.columnName, c.cell.timestamp, c.cell.value) for c in (it.sortedColumns or ())])
                     for it in items]
            check_in_range(batch[0][0], batch[-1][0], position.start, stop_row, table)
            batch = [piece for piece in batch if piece[1]]
            size.observe(len(items), sum(len(cells) for _, cells in batch))
            batch = position.trim(batch)
            if batch:
                position.yielded(batch)
                yield batch
    finally:
        if state["scanner"] is not None and state["connection"] == session.reconnects:
            try:
                session.client.scannerClose(state["scanner"])
            except Exception:  # a scanner on a dead connection is released by the server's lease
                pass


def scanner_lost(exc: BaseException) -> bool:
    """Errors after which a scan re-opens its scanner just after the last row: transient ones, and a scanner id
    the gateway does not know (HBase's handler answers IllegalArgument("scanner ID is invalid") when the lease
    expired, or the session moved to another gateway)."""
    return is_transient(exc) or (type(exc).__name__ == "IllegalArgument" and b"scanner ID is invalid" in (
        exc.message if isinstance(getattr(exc, "message", None), bytes) else str(exc).encode()))


def read_versions(
    session: ThriftSession, table: str, rows: Sequence[Row], history: Mapping[bytes, int], end_time: int | None,
) -> dict[bytes, dict[bytes, list[Cell]]]:
    """The versions of every scanned column of a family in `history` (family -> versions to read).

    One pipelined getVer (getVerTs with a window end: `[0, ts)`) per column.
    """
    wanted = [
        (row, cell[0], history[cell[0].partition(b":")[0]]) for row, cells in rows for cell in cells
        if cell[0].partition(b":")[0] in history
    ]
    if not wanted:
        return {}
    table_b = table.encode("utf-8")
    api = "getVer" if end_time is None else "getVerTs"
    bound = {} if end_time is None else {"timestamp": end_time}
    calls = [dict(tableName=table_b, row=r, column=c, numVersions=n, attributes={}, **bound)
             for r, c, n in wanted]
    out: dict[bytes, dict[bytes, list[Cell]]] = {}
    for i in range(0, len(calls), 256):
        chunk = calls[i:i + 256]
        answers = retrying(session, lambda chunk=chunk: session.pipelined(api, chunk), what=api)
        for (row, column, _n), cells in zip(wanted[i:i + 256], answers):
            out.setdefault(row, {})[column] = [(column, c.timestamp, c.value) for c in (cells or ())]
    return out


class CellWriter(ThreadedWriter):
    """Writes cells with `mutateRowsTs` (pipelined calls on `writers` connections, see `ThreadedWriter`).

    `put(rows)` groups the cells by timestamp (one call per timestamp and at most `batch_cells` cells), since
    Thrift1 writes every cell of a call at the call's one timestamp.
    """

    def __init__(self, cluster: "Cluster", table: str, writers: int = 16, pipeline: int = 1, retries: int = 8,
                 wait_cap: float = 20.0, timeout_s: float = 60.0, batch_cells: int = 5000):
        self.table = table.encode("utf-8")
        self.batch_cells = batch_cells
        self._T = hbase_thrift()
        gateways = iter(list(cluster.thrift_servers) * writers)  # writers spread over the gateways
        super().__init__(cluster, lambda: ThriftSession(cluster, timeout_s, next(gateways)), writers=writers,
                         pipeline=pipeline, retries=retries, wait_cap=wait_cap, what="mutateRowsTs")

    def encode(self, rows: Sequence[Row]) -> Iterator[dict[str, Any]]:
        T = self._T
        for ts, group in group_by_timestamp(rows, max_cells=self.batch_cells):
            batches = [T.BatchMutation(row=row, mutations=[T.Mutation(isDelete=False, column=c, value=v,
                                                                      writeToWAL=True) for c, v in muts])
                       for row, muts in group]
            yield dict(tableName=self.table, rowBatches=batches, timestamp=ts, attributes={})

    def send(self, session: ThriftSession, window: list[dict[str, Any]]) -> None:
        session.pipelined("mutateRowsTs", window)


def group_by_timestamp(
    rows: Iterable[Row], max_cells: int | None = None
) -> list[TsGroup]:
    """Cells of many rows grouped into one `mutateRowsTs` call per timestamp.

    Returns [(ts, [(row, [(column, value), ...]), ...]), ...] sorted by ts, rows
    in input order, each group carrying at most `max_cells` cells (split on row
    boundaries; one row's cells at one timestamp are never split).
    """
    by_ts: dict[int, dict[bytes, list[tuple[bytes, bytes]]]] = {}
    for row, cells in rows:
        for column, ts, value in cells:
            by_ts.setdefault(ts, {}).setdefault(row, []).append((column, value))
    out: list[TsGroup] = []
    for ts in sorted(by_ts):
        batch: list[tuple[bytes, list[tuple[bytes, bytes]]]] = []
        n = 0
        for row, muts in by_ts[ts].items():
            if max_cells and batch and n + len(muts) > max_cells:
                out.append((ts, batch))
                batch, n = [], 0
            batch.append((row, muts))
            n += len(muts)
        if batch:
            out.append((ts, batch))
    return out


def merge_versions(scanned: Sequence[Cell], versions: Mapping[bytes, Sequence[Cell]]) -> list[Cell]:
    """The scanned newest cells with each multi-version column replaced by its getVer list."""
    out: list[Cell] = []
    for cell in scanned:
        older = versions.get(cell[0])
        if older:
            out.extend(older)
        else:
            out.append(cell)
    return out


def replica_id(region_name: bytes) -> int:
    """The replica id in a region name: `<table>,<start key>,<region id>[_<replica id, hex>].<encoded>.` (HBase's
    RegionInfo.createRegionName; the start key may hold commas, the id part none). 0: the primary."""
    id_part = bytes(region_name or b"").rsplit(b",", 1)[-1].split(b".", 1)[0]
    _, sep, replica = id_part.partition(b"_")
    try:
        return int(replica, 16) if sep else 0
    except ValueError:
        return 0


def regions_from_thrift(items: Iterable[Any]) -> list[Region]:
    """TRegionInfo objects or happybase `Table.regions()` dicts, sorted by start key (serverName: the hostname).
    Only primaries: a table with REGION_REPLICATION > 1 also lists its secondary replicas, which cover the same
    key ranges (a copy plans, and a create splits, by the primaries)."""
    out = []
    for it in items:
        if isinstance(it, Mapping):
            start, end, name = it.get("start_key", b""), it.get("end_key", b""), it.get("name", b"")
            host = it.get("server_name", b"")
        else:
            start, end, name, host = it.startKey, it.endKey, it.name, it.serverName
        if replica_id(bytes(name or b"")):
            continue
        host = host.decode("utf-8", "replace") if isinstance(host, bytes) else str(host or "")
        out.append(Region(bytes(start or b""), bytes(end or b""), bytes(name or b""), host))
    return sorted(out, key=lambda r: r.start_key)
