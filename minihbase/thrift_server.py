"""The Thrift1 gateway: HBase's `Hbase.thrift` (vendored from happybase, which ships HBase's IDL), buffered
transport and binary protocol (HBase's defaults), one thread per connection.

Behaviour follows HBase 2.x's ThriftHBaseServiceHandler: column strings through `CellUtil.parseColumn`
(`fam` = whole family, `fam:` = empty qualifier); `*Ts` methods read `[0, ts)`; `mutateRowTs` applies deletes
before the put and `mutateRowsTs` all puts before all deletes, every cell with the call's one timestamp;
scans return the newest version per column; `getTableRegions` gives hostname-only server names, the RS RPC
port and version 1, and an empty list for an unknown table. Errors: `IOError` whose message starts with the
Java exception (`org.apache.hadoop.hbase.TableNotFoundException: t`), `IllegalArgument`, `AlreadyExists`; an
IllegalArgumentException outside the methods that catch it (e.g. a malformed filter string) is answered as
Thrift's `TApplicationException(INTERNAL_ERROR, "Internal error processing <method>")`, as HBase's server does.
Any IDL method minihbase does not implement answers `IOError`; the connection survives every error.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

import thriftpy2

from bedkit.idl import THRIFT1
from minihbase.cells import (
    DELETE_COLUMN,
    DELETE_FAMILY,
    LATEST_TIMESTAMP,
    PUT,
    Cell,
    parse_column,
)
from minihbase.client import Scanner
from minihbase.errors import HBaseError, JavaIllegalArgument, TableExists
from minihbase.hdfs import HDFSError
from minihbase.region import ColumnSelector
from minihbase.schema import FOREVER, FamilyDescriptor, TableDescriptor, validate_table_name
from minihbase.thrift_gateway import GatewayProcessor, GatewayServer, IllegalArgumentAnswer, ScannerRegistry

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

log = logging.getLogger(__name__)

Hbase = thriftpy2.load(str(THRIFT1), module_name="minihbase_Hbase_thrift")

BLOOM_TYPES = {"NONE", "ROW", "ROWCOL", "ROWPREFIX_FIXED_LENGTH", "ROWPREFIX_DELIMITED"}
COMPRESSIONS = {"none", "gz", "lzo", "snappy", "lz4", "bzip2", "zstd"}
HREGION_VERSION = 1
_new_tuple = tuple.__new__  # builds a Cell without namedtuple's slower Python-level constructor


def selector(columns) -> ColumnSelector:
    if not columns:
        return ColumnSelector()
    families, cols = set(), set()
    for column in columns:
        family, qualifier = parse_column(column)
        if qualifier is None:
            families.add(family)
        else:
            cols.add(family + b":" + qualifier)
    return ColumnSelector(families, cols)


def _row_result(row: bytes, cells, sort_columns: bool = False):
    if sort_columns:
        return Hbase.TRowResult(row=row, sortedColumns=[
            Hbase.TColumn(columnName=c, cell=Hbase.TCell(value=v, timestamp=ts)) for c, ts, v in cells])
    return Hbase.TRowResult(row=row, columns={c: Hbase.TCell(value=v, timestamp=ts) for c, ts, v in cells})


def _tcells(cells) -> list:
    return [Hbase.TCell(value=v, timestamp=ts) for _, ts, v in cells]


class Handler:
    """The Hbase service. Methods raise HBase-side exceptions; `_thrift_errors` maps them."""

    # Methods whose HBase implementation catches IllegalArgumentException and answers IllegalArgument.
    CATCH_IAE = {"createTable", "mutateRow", "mutateRowTs", "mutateRows", "mutateRowsTs", "checkAndPut"}

    def __init__(self, cluster: "MiniHBaseCluster"):
        self.cluster = cluster
        self.client = cluster.client
        self.master = cluster.master
        self._scanners = ScannerRegistry()

    # ------------------------------------------------------------------------------------------ tables
    def getTableNames(self):
        return sorted(self.master.tables)

    def getColumnDescriptors(self, tableName):
        desc = self.master.table(tableName).desc
        return {
            f.name + b":": Hbase.ColumnDescriptor(
                name=f.name + b":", maxVersions=f.max_versions, compression=f.compression,
                inMemory=f.in_memory, bloomFilterType=f.bloom_filter_type, bloomFilterVectorSize=0,
                bloomFilterNbHashes=0, blockCacheEnabled=f.block_cache_enabled, timeToLive=f.ttl_s)
            for f in sorted(desc.families.values(), key=lambda f: f.name)
        }

    def getTableRegions(self, tableName):
        state = self.master.tables.get(tableName)
        if state is None:
            return []
        out = []
        for region in state.regions:
            rs = region.server
            info = region.info
            out.append(Hbase.TRegionInfo(
                startKey=info.start_key, endKey=info.end_key, id=info.region_id, name=info.region_name,
                version=HREGION_VERSION, serverName=(rs.host.encode() if rs else b""), port=(rs.port if rs else 0)))
        return out

    def createTable(self, tableName, columnFamilies):
        validate_table_name(tableName)
        if tableName in self.master.tables:
            raise TableExists("table name already in use")
        families = {}
        for col in columnFamilies or []:
            if not col.name:
                raise JavaIllegalArgument("column name is empty")
            name = parse_column(col.name)[0]
            bloom = col.bloomFilterType or "NONE"
            if bloom not in BLOOM_TYPES:
                raise JavaIllegalArgument(f"No enum constant org.apache.hadoop.hbase.regionserver.BloomType.{bloom}")
            compression = (col.compression or "NONE").lower()
            if compression not in COMPRESSIONS:
                raise JavaIllegalArgument(f"Unsupported compression algorithm name: {compression}")
            if col.maxVersions is None or col.maxVersions < 1:
                raise JavaIllegalArgument("Maximum versions must be positive")
            ttl = col.timeToLive if col.timeToLive and col.timeToLive > 0 else FOREVER
            families[name] = FamilyDescriptor(name, col.maxVersions, ttl, compression.upper(), bool(col.inMemory),
                                              bloom, bool(col.blockCacheEnabled))
        self.master.create_table(TableDescriptor(tableName, families))

    def deleteTable(self, tableName):
        if tableName not in self.master.tables:
            raise HBaseError("table does not exist")
        self.master.delete_table(tableName)

    def enableTable(self, tableName):
        self.master.enable_table(tableName)

    def disableTable(self, tableName):
        self.master.disable_table(tableName)

    def isTableEnabled(self, tableName):
        return self.master.table(tableName).desc.enabled

    def compact(self, tableNameOrRegionName):
        self.cluster.compact(tableNameOrRegionName)

    def majorCompact(self, tableNameOrRegionName):
        self.cluster.compact(tableNameOrRegionName, major=True)

    # ------------------------------------------------------------------------------------------ gets
    def get(self, tableName, row, column, attributes):
        return _tcells(self.client.get(tableName, row, selector([column])))

    def getVer(self, tableName, row, column, numVersions, attributes):
        return _tcells(self.client.get(tableName, row, selector([column]), None, max(numVersions, 1)))

    def getVerTs(self, tableName, row, column, timestamp, numVersions, attributes):
        return _tcells(self.client.get(tableName, row, selector([column]), timestamp, max(numVersions, 1)))

    def getRow(self, tableName, row, attributes):
        return self.getRowWithColumnsTs(tableName, row, None, LATEST_TIMESTAMP, attributes)

    def getRowWithColumns(self, tableName, row, columns, attributes):
        return self.getRowWithColumnsTs(tableName, row, columns, LATEST_TIMESTAMP, attributes)

    def getRowTs(self, tableName, row, timestamp, attributes):
        return self.getRowWithColumnsTs(tableName, row, None, timestamp, attributes)

    def getRowWithColumnsTs(self, tableName, row, columns, timestamp, attributes):
        cells = self.client.get(tableName, row, selector(columns), timestamp)
        return [_row_result(row, cells)] if cells else []

    def getRows(self, tableName, rows, attributes):
        return self.getRowsWithColumnsTs(tableName, rows, None, LATEST_TIMESTAMP, attributes)

    def getRowsWithColumns(self, tableName, rows, columns, attributes):
        return self.getRowsWithColumnsTs(tableName, rows, columns, LATEST_TIMESTAMP, attributes)

    def getRowsTs(self, tableName, rows, timestamp, attributes):
        return self.getRowsWithColumnsTs(tableName, rows, None, timestamp, attributes)

    def getRowsWithColumnsTs(self, tableName, rows, columns, timestamp, attributes):
        return [_row_result(row, cells)
                for row, cells in self.client.get_rows(tableName, rows or [], selector(columns), timestamp)]

    # ------------------------------------------------------------------------------------------ mutations
    @staticmethod
    def _cells(row: bytes, mutations, ts: int, strict: bool):
        deletes, puts, durable = [], [], True
        for m in mutations or []:
            family, sep, qualifier = (m.column or b"").partition(b":")  # CellUtil.parseColumn
            if m.isDelete:
                if not sep:
                    deletes.append(_new_tuple(Cell, (row, family, b"", ts, DELETE_FAMILY, b"")))
                else:
                    deletes.append(_new_tuple(Cell, (row, family, qualifier, ts, DELETE_COLUMN, b"")))
            elif not sep:
                if strict:
                    raise JavaIllegalArgument("Invalid famAndQf provided.")
                log.warning("No column qualifier specified. Delete is the only mutation supported over the "
                            "whole column family.")
            else:
                puts.append(_new_tuple(Cell, (row, family, qualifier, ts, PUT, m.value or b"")))
            if m.writeToWAL is not None:
                durable = bool(m.writeToWAL)
        return deletes, puts, durable

    def mutateRow(self, tableName, row, mutations, attributes):
        self.mutateRowTs(tableName, row, mutations, LATEST_TIMESTAMP, attributes)

    def mutateRowTs(self, tableName, row, mutations, timestamp, attributes):
        deletes, puts, durable = self._cells(row, mutations, timestamp, strict=False)
        if deletes:
            self.client.mutate(tableName, [deletes], durable=durable)
        if puts:
            self.client.mutate(tableName, [puts], durable=durable)

    def mutateRows(self, tableName, rowBatches, attributes):
        self.mutateRowsTs(tableName, rowBatches, LATEST_TIMESTAMP, attributes)

    def mutateRowsTs(self, tableName, rowBatches, timestamp, attributes):
        all_puts, all_deletes, durable = [], [], True
        for batch in rowBatches or []:
            deletes, puts, d = self._cells(batch.row, batch.mutations, timestamp, strict=True)
            durable = durable and d
            if puts:
                all_puts.append(puts)
            if deletes:
                all_deletes.append(deletes)
        if all_puts:  # Table.put(List) / Table.delete(List): batches (RetriesExhaustedWithDetailsException)
            self.client.mutate(tableName, all_puts, durable=durable, batch=True)
        if all_deletes:
            self.client.mutate(tableName, all_deletes, durable=durable, batch=True)

    def deleteAll(self, tableName, row, column, attributes):
        self.deleteAllTs(tableName, row, column, LATEST_TIMESTAMP, attributes)

    def deleteAllTs(self, tableName, row, column, timestamp, attributes):
        family, qualifier = parse_column(column)
        if qualifier is None:
            cell = Cell(row, family, b"", timestamp, DELETE_FAMILY)
        else:
            cell = Cell(row, family, qualifier, timestamp, DELETE_COLUMN)
        self.client.mutate(tableName, [[cell]])

    def deleteAllRow(self, tableName, row, attributes):
        self.deleteAllRowTs(tableName, row, LATEST_TIMESTAMP, attributes)

    def deleteAllRowTs(self, tableName, row, timestamp, attributes):
        desc = self.master.enabled_table(tableName).desc
        self.client.mutate(tableName, [[Cell(row, f, b"", timestamp, DELETE_FAMILY) for f in sorted(desc.families)]])

    def atomicIncrement(self, tableName, row, column, value):
        family, qualifier = parse_column(column)
        return self.client.increment(tableName, row, family, qualifier or b"", value)

    def increment(self, increment):
        if not increment.row or not increment.table:
            raise JavaIllegalArgument("Must supply a table and a row key; can't increment")
        family, qualifier = parse_column(increment.column)
        self.client.increment(increment.table, increment.row, family, qualifier or b"", increment.ammount or 0)

    def incrementRows(self, increments):
        for inc in increments or []:
            self.increment(inc)

    def append(self, append):
        if not append.row or not append.table:
            raise JavaIllegalArgument("Must supply a table and a row key; can't append")
        items = []
        for column, value in zip(append.columns or [], append.values or []):
            family, qualifier = parse_column(column)
            items.append((family, qualifier or b"", value or b""))
        return [Hbase.TCell(value=v, timestamp=ts) for ts, v in self.client.append(append.table, append.row, items)]

    def checkAndPut(self, tableName, row, column, value, mput, attributes):
        family, qualifier = parse_column(mput.column or b"")
        if qualifier is None:
            raise JavaIllegalArgument("Invalid famAndQf provided.")
        put = Cell(row, family, qualifier, LATEST_TIMESTAMP, PUT, mput.value or b"")
        cfam, cqual = parse_column(column)
        return self.client.check_and_put(tableName, row, cfam + b":" + (cqual or b""), value, [put])

    # ------------------------------------------------------------------------------------------ scanners
    def _add_scanner(self, scanner: Scanner, sort_columns: bool) -> int:
        return self._scanners.add(scanner, sort_columns)

    def _open(self, tableName, start=b"", stop=b"", columns=None, timestamp=None, filter_string=None,
              batch=None, reversed_=False, sort_columns=False) -> int:
        scanner = self.client.open_scanner(tableName, start or b"", stop or b"", bool(reversed_),
                                           selector(columns), timestamp, filter_string, batch)
        return self._add_scanner(scanner, bool(sort_columns))

    def scannerOpenWithScan(self, tableName, scan, attributes):
        return self._open(tableName, scan.startRow, scan.stopRow, scan.columns, scan.timestamp,
                          scan.filterString, scan.batchSize, scan.reversed, scan.sortColumns)

    def scannerOpen(self, tableName, startRow, columns, attributes):
        return self._open(tableName, startRow, b"", columns)

    def scannerOpenWithStop(self, tableName, startRow, stopRow, columns, attributes):
        return self._open(tableName, startRow, stopRow, columns)

    def scannerOpenWithPrefix(self, tableName, startAndPrefix, columns, attributes):
        prefix = (startAndPrefix or b"").replace(b"'", b"''")
        return self._open(tableName, startAndPrefix, b"", columns,
                          filter_string=b"WHILE PrefixFilter('" + prefix + b"')")

    def scannerOpenTs(self, tableName, startRow, columns, timestamp, attributes):
        return self._open(tableName, startRow, b"", columns, timestamp)

    def scannerOpenWithStopTs(self, tableName, startRow, stopRow, columns, timestamp, attributes):
        return self._open(tableName, startRow, stopRow, columns, timestamp)

    def _scanner(self, sid):
        entry = self._scanners.get(sid)
        if entry is None:
            raise IllegalArgumentAnswer("scanner ID is invalid")
        return entry

    def scannerGetList(self, id, nbRows):
        scanner, sort_columns = self._scanner(id)
        return [_row_result(row, cells, sort_columns) for row, cells in scanner.next(max(nbRows, 1))]

    def scannerGet(self, id):
        return self.scannerGetList(id, 1)

    def scannerClose(self, id):
        self._scanner(id)
        self._scanners.remove(id)

    def getRegionInfo(self, row):
        table, _, rest = (row or b"").partition(b",")
        key = rest.rpartition(b",")[0] if b"," in rest else rest
        region = self.master.locate(table, key)
        rs = region.server
        info = region.info
        return Hbase.TRegionInfo(startKey=info.start_key, endKey=info.end_key, id=info.region_id,
                                 name=info.region_name, version=HREGION_VERSION,
                                 serverName=rs.host.encode() if rs else b"", port=rs.port if rs else 0)


class Processor(GatewayProcessor):
    """Maps HBase-side exceptions to the IDL's: AlreadyExists, IOError (the Java text), IllegalArgument where
    HBase's handler catches IllegalArgumentException, else TApplicationException INTERNAL_ERROR."""

    def __init__(self, handler: Handler, latency_ms: Callable[[], float],
                 reset_at: Callable[[], str | None] | None = None):
        super().__init__(Hbase.Hbase, handler, latency_ms, reset_at)

    def io_error(self, message: str):
        return Hbase.IOError(message=message)

    def answer(self, api: str, e: Exception, result):
        if isinstance(e, TableExists):
            return "exist", Hbase.AlreadyExists(message=e.message)
        if isinstance(e, (HBaseError, HDFSError)):
            return "io", Hbase.IOError(message=e.java_text())
        if isinstance(e, IllegalArgumentAnswer):
            return "ia", Hbase.IllegalArgument(message=str(e))
        if isinstance(e, JavaIllegalArgument):
            if api in Handler.CATCH_IAE and self.declares(result, "ia"):
                return "ia", Hbase.IllegalArgument(message=e.java_text())
            log.warning("%s: %s", api, e.java_text())
            return None
        log.exception("Internal error processing %s", api)
        return None


class ThriftGateway(GatewayServer):
    """The Thrift1 gateway (`hbase thrift`)."""

    kind = "thrift"

    def make_processor(self) -> Processor:
        self.handler = Handler(self.cluster)
        return Processor(self.handler, self.call_latency_ms, self.call_reset)
