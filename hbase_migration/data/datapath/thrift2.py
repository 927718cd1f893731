"""The Thrift2 data path: HBase's `THBaseService` (`hbase thrift2`), through the toolkit's own IDL (hbase2.thrift).

What makes it the faithful path (HBase's `ThriftHBaseServiceHandler` and `ThriftUtilities`, thrift2 package):
- a scan returns every version up to `maxVersions` inside `timeRange` [min, max), each cell with its timestamp:
  one scan per partition reads the whole history of the window;
- a `TPut` cell carries its own timestamp, so one `putMultiple` writes any mix of timestamps for many rows;
- `TDelete` with `DELETE_COLUMN` removes exactly one version (a repair can delete a target-only version without
  touching the others).
Cluster ids cannot be set through Thrift2 either: writes carry the receiving cluster's id, as with Thrift1.
"""
from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from hbase_migration.clusters.idl import hbase2
from hbase_migration.clusters.thrift import connect_any, failover, is_transient, pipelined, retrying
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
from hbase_migration.data.scope import LATEST_TIMESTAMP, Cell, Row, to_string_binary

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

ALL_VERSIONS = (1 << 31) - 1  # Scan.readAllVersions(): Integer.MAX_VALUE; each family still keeps its VERSIONS


def table_name(table: str) -> Any:
    """`ns:qualifier` (or `qualifier` in the default namespace) as a TTableName."""
    ns, _, qualifier = table.rpartition(":")
    return hbase2().TTableName(ns=ns.encode("utf-8") if ns else None, qualifier=qualifier.encode("utf-8"))


class Thrift2Session:
    """One connection to one Thrift2 gateway of a cluster, re-opened (on another gateway, if there are several)
    after a transport error. Checks the server really is a Thrift2 server (`getThriftServerType`)."""

    def __init__(self, cluster: "Cluster", timeout_s: float | None = None, gateway: str | None = None):
        self.cluster = cluster
        self.timeout_s = timeout_s if timeout_s is not None else cluster.timeout_s
        self.gateway = gateway or cluster.thrift2_servers[0]
        self.client: Any = None
        self.reconnects = 0
        self.open()

    def open(self) -> None:
        connect_any(self, self.cluster.thrift2_servers, self._connect)

    def _connect(self, gateway: str) -> None:
        from hbase_migration.clusters import channels

        T = hbase2()
        try:
            self.client = channels.thrift2(self.cluster, gateway, self.timeout_s, T.THBaseService)
            kind = self.client.getThriftServerType()
        except channels.auth_errors():
            self.close()
            raise  # not a ConnectionError: another gateway or a retry would be refused the same way
        except Exception as e:
            self.close()
            raise ConnectionError(f"cluster {self.cluster.name!r}: cannot reach the Thrift2 server at "
                                  f"{gateway}: {type(e).__name__}: {e}") from e
        if kind != T.TThriftServerType.TWO:
            self.close()
            raise ConnectionError(f"cluster {self.cluster.name!r}: {gateway} is a Thrift1 server (thrift "
                                  "server type ONE); thrift2_servers must name `hbase thrift2` gateways")

    def reopen(self) -> None:
        self.close()
        self.reconnects += 1
        self.gateway = failover(self.gateway, self.cluster.thrift2_servers)
        self.open()

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            except Exception:  # a broken socket may fail to close; nothing is left to release
                pass
            self.client = None

    def __enter__(self) -> "Thrift2Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, api: str, *args: Any, retries: int = 5, wait_cap: float = 10.0) -> Any:
        """One call, retried (with a fresh connection) on a transient error."""
        return retrying(self, lambda: getattr(self.client, api)(*args), retries, wait_cap, api)

    def pipelined(self, api: str, calls: Sequence[dict[str, Any]]) -> list[Any]:
        return pipelined(self.client, api, calls)


def _is_missing_table(exc: BaseException, table: str) -> bool:
    """A TIOError for a table that does not exist: real HBase's handler passes TableNotFoundException's message,
    which is the bare table name (seen on HBase 2.6); older gateways and minihbase name the class."""
    if type(exc).__name__ != "TIOError":
        return False
    message = str(getattr(exc, "message", "") or "")
    return "TableNotFoundException" in message or message in (table, f"default:{table}")


def _cells(result: Any) -> list[Cell]:
    """A TResult's cells as (b"family:qualifier", ts, value), in the order HBase sends them (family, qualifier,
    newest first: the toolkit's order, `scope.cell_order`)."""
    return [(cv.family + b":" + cv.qualifier, cv.timestamp, cv.value) for cv in result.columnValues]


class Thrift2Path(DataPath):
    kind = "thrift2"
    exact_deletes = True
    default_writers = 2  # putMultiple carries a whole batch: two connections keep one call always in flight

    def __init__(self, cluster: "Cluster", timeout_s: float | None = None, retries: int = 8,
                 wait_cap_s: float = 20.0, gateway: str | None = None):
        timeout_s = timeout_s if timeout_s is not None else cluster.timeout_s
        super().__init__(cluster, Thrift2Session(cluster, timeout_s, gateway), timeout_s, retries, wait_cap_s)
        self.gateway = gateway

    def read_families(self, table: str) -> dict[bytes, int]:
        if not self.session.call("tableExists", table_name(table)):
            return {}
        try:
            desc = self.session.call("getTableDescriptor", table_name(table))
        except Exception as e:
            if _is_missing_table(e, table):  # dropped in between
                return {}
            raise
        return {bytes(c.name): int(c.maxVersions or 1) for c in desc.columns or ()}

    def regions(self, table: str) -> list[Region]:
        try:
            locations = self.session.call("getAllRegionLocations", table.encode("utf-8"))
        except Exception as e:
            if _is_missing_table(e, table):
                return []
            raise
        out = []
        for loc in locations:
            info = loc.regionInfo
            if info.replicaId:  # a secondary replica (REGION_REPLICATION > 1): same key range as its primary
                continue
            start, end = bytes(info.startKey or b""), bytes(info.endKey or b"")
            out.append(Region(start, end, b"%s,%s,%d" % (table.encode("utf-8"), start, info.regionId),
                              loc.serverName.hostName if loc.serverName else ""))
        return sorted(out, key=lambda r: r.start_key)

    def region_server(self, table: str, row: bytes) -> str:
        """`getRegionLocation(table, row, reload=true)`: the servername of the region server holding `row`."""
        name = self.session.call("getRegionLocation", table.encode("utf-8"), row, True).serverName
        return f"{name.hostName},{name.port},{name.startCode}"

    @staticmethod
    def _columns(columns: Sequence[bytes] | None) -> list[Any] | None:
        T = hbase2()
        out = []
        for c in columns or ():
            family, sep, qualifier = c.partition(b":")
            out.append(T.TColumn(family=family, qualifier=qualifier if sep else None))
        return out or None

    def _read(self, columns: Sequence[bytes] | None, start_ms: int | None, end_ms: int | None,
              versions: int | None) -> dict[str, Any]:
        T = hbase2()
        return {"columns": self._columns(columns), "maxVersions": ALL_VERSIONS if versions is None else versions,
                "timeRange": T.TTimeRange(minStamp=start_ms or 0, maxStamp=LATEST_TIMESTAMP if end_ms is None
                                          else end_ms)}

    def scan(self, table: str, start_row: bytes, stop_row: bytes, *, columns: Sequence[bytes] | None = None,
             start_ms: int | None = None, end_ms: int | None = None, versions: int | None = 1,
             batch_rows: int = 500, batch_cells: int | None = None, call_cells: int | None = None,
             keys_only: bool = False, first_key_only: bool = False,
             stats: dict[str, int] | None = None) -> Iterator[list[Row]]:
        """One scanner over the range (a lost connection or scanner re-opens it where it stopped)."""
        T = hbase2()
        table_b = table.encode("utf-8")
        flt = FIRST_KEY_ONLY if first_key_only else KEY_ONLY if keys_only else None
        read = self._read(columns, start_ms, end_ms, 1 if first_key_only else versions)
        batch_size = None if first_key_only else batch_cells  # FirstKeyOnlyFilter: one cell per row already
        position = ScanPosition(start_row)
        size = CallSize(batch_rows, batch_size, call_cells)
        state: dict[str, Any] = {"scanner": None, "connection": None}

        def next_batch() -> list:
            # A scanner lives on the connection (and gateway) that opened it: after any re-open, open a new one
            # where the scan stopped (an old id on another gateway could name another scan's scanner).
            if state["scanner"] is None or state["connection"] != self.session.reconnects:
                position.reopen()
                scan = T.TScan(startRow=position.start, stopRow=stop_row or None, caching=size.next,
                               batchSize=batch_size, filterString=flt.encode("utf-8") if flt else None,
                               cacheBlocks=False, **read)
                state["scanner"] = self.session.client.openScanner(table_b, scan)
                state["connection"] = self.session.reconnects
            return self.session.client.getScannerRows(state["scanner"], size.next)

        def lost_scanner(_error: BaseException) -> None:
            state["scanner"] = None  # gone with its connection, or expired: open a new one where the scan stopped
            if stats is not None:
                stats["retries"] = stats.get("retries", 0) + 1

        try:
            while True:
                try:
                    results = retrying(self.session, next_batch, self.retries, self.wait_cap_s, f"scan of {table}",
                                       lost_scanner, transient=_lost)
                except Exception as e:
                    if not _lost(e):
                        raise
                    raise PartitionFailed(f"scan of {table!r} from {to_string_binary(position.start)} failed "
                                          f"{self.retries} times: {type(e).__name__}: {e}") from e
                if not results:
                    return
                check_in_range(results[0].row, results[-1].row, position.start, stop_row, table)
                batch = [(r.row, _cells(r)) for r in results if r.columnValues]
                size.observe(len(results), sum(len(cells) for _, cells in batch))
                batch = position.trim(batch)
                if batch:
                    position.yielded(batch)
                    yield batch
        finally:
            if state["scanner"] is not None and state["connection"] == self.session.reconnects:
                try:
                    self.session.client.closeScanner(state["scanner"])
                except Exception:  # a scanner on a dead connection is released by the server's lease
                    pass

    def get_rows(self, table: str, keys: Sequence[bytes], *, columns: Sequence[bytes] | None = None,
                 start_ms: int | None = None, end_ms: int | None = None,
                 versions: int | None = 1) -> dict[bytes, list[Cell]]:
        T = hbase2()
        read = self._read(columns, start_ms, end_ms, versions)
        out: dict[bytes, list[Cell]] = {}
        for i in range(0, len(keys), 500):
            gets = [T.TGet(row=k, **read) for k in keys[i:i + 500]]
            for result in self.session.call("getMultiple", table.encode("utf-8"), gets):
                if result is not None and result.row is not None and result.columnValues:
                    out[result.row] = _cells(result)
        return out

    def writer(self, table: str, *, writers: int = 4, pipeline: int = 1, batch_cells: int = 5000,
               batch_bytes: int = 4 << 20) -> Writer:
        return PutWriter(self.cluster, table, writers=writers, pipeline=pipeline, retries=self.retries,
                         wait_cap=self.wait_cap_s, timeout_s=self.timeout_s, batch_cells=batch_cells,
                         batch_bytes=batch_bytes, gateway=self.gateway)

    def delete(self, table: str, row: bytes, cells: Sequence[tuple[bytes, int]]) -> None:
        """Exactly these versions (DELETE_COLUMN: HBase's `Delete.addColumn(family, qualifier, ts)`)."""
        if not cells:
            return
        T = hbase2()
        columns = []
        for column, ts in cells:
            family, _, qualifier = column.partition(b":")
            columns.append(T.TColumn(family=family, qualifier=qualifier, timestamp=ts))
        self.session.call("deleteMultiple", table.encode("utf-8"),
                          [T.TDelete(row=row, columns=columns, deleteType=T.TDeleteType.DELETE_COLUMN)])


def _lost(exc: BaseException) -> bool:
    """Errors after which the scan re-opens: transient ones, and a scanner the server no longer knows
    (TIllegalArgument "Invalid scanner Id": expired lease, restarted gateway)."""
    return is_transient(exc) or type(exc).__name__ == "TIllegalArgument" or isinstance(exc, socket.timeout)


class PutWriter(ThreadedWriter):
    """`putMultiple` calls, each at most `batch_cells` cells and `batch_bytes` bytes, every cell a TColumnValue
    with its own timestamp; sent by the threads of `ThreadedWriter`, with the WAL (the copy's writes must
    reach the target's WAL, and its own peers)."""

    def __init__(self, cluster: "Cluster", table: str, writers: int = 4, pipeline: int = 1, retries: int = 8,
                 wait_cap: float = 20.0, timeout_s: float = 60.0, batch_cells: int = 5000,
                 batch_bytes: int = 4 << 20, gateway: str | None = None):
        self.table = table.encode("utf-8")
        self.batch_cells = batch_cells
        self.batch_bytes = batch_bytes
        gateways = iter(list(cluster.thrift2_servers) * writers if gateway is None else [gateway] * writers)
        super().__init__(cluster, lambda: Thrift2Session(cluster, timeout_s, next(gateways)), writers=writers,
                         pipeline=pipeline, retries=retries, wait_cap=wait_cap, what="putMultiple")

    def encode(self, rows: Sequence[Row]) -> Iterator[dict[str, Any]]:
        T = hbase2()
        TColumnValue, TPut = T.TColumnValue, T.TPut
        puts: list[Any] = []
        cells = size = 0
        for row, row_cells in rows:
            values = []
            for column, ts, value in row_cells:
                family, _, qualifier = column.partition(b":")
                values.append(TColumnValue(family=family, qualifier=qualifier, value=value, timestamp=ts))
                size += len(row) + len(column) + len(value) + 8
            puts.append(TPut(row=row, columnValues=values))
            cells += len(values)
            if cells >= self.batch_cells or size >= self.batch_bytes:
                yield {"table": self.table, "tputs": puts}
                puts, cells, size = [], 0, 0
        if puts:
            yield {"table": self.table, "tputs": puts}

    def send(self, session: Thrift2Session, window: list[dict[str, Any]]) -> None:
        session.pipelined("putMultiple", window)
