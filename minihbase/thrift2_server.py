"""The Thrift2 gateway (`hbase thrift2`, `THBaseService`): minihbase's own `hbase2.thrift`, buffered transport and
binary protocol (HBase's defaults), one thread per connection, over the same cluster client, storage, WAL and
replication as the Thrift1 gateway (so its writes carry the local cluster id and replicate like Thrift1's).

Behaviour follows HBase 2.x's `thrift2.ThriftHBaseServiceHandler` and `ThriftUtilities`:
- TPut: a TColumnValue's `timestamp`, else the TPut's, else the server's now; the value's `type` is ignored;
  durability SKIP_WAL is not logged (nor replicated), as Thrift1's writeToWAL=false.
- TGet/TScan: up to `maxVersions` (default 1) versions per column in `timeRange` [min, max) (TGet `timestamp`:
  that exact version), never more than the family's VERSIONS, TTL-expired cells hidden; cells in HBase's order
  (family, qualifier, newest first), each with `timestamp` and `type` 4 (Put). `columns`, `filterString` (the
  ParseFilter language), `limit` (rows), `reversed`, `batchSize` (`partial` set when more of the row follows).
- TDelete (`deleteFromThrift`): with columns, each TColumn by `deleteType`: DELETE_COLUMN = one version (the
  TColumn's timestamp, else the newest version at delete time), DELETE_COLUMNS = every version <= ts,
  DELETE_FAMILY = the family <= ts, DELETE_FAMILY_VERSION = the family at exactly ts (a timestamp is required).
  A TColumn without qualifier means the empty qualifier except for the family types, and the TDelete's own
  timestamp is not used, exactly as HBase 2.x converts them. Without columns: the whole row (every family)
  <= the TDelete's timestamp, else now.
- putMultiple/deleteMultiple go through `Table.put(List)`/`Table.delete(List)` semantics: an action naming an
  unknown family fails alone (the others are applied) and the call answers TIOError with the
  RetriesExhaustedWithDetailsException text ("Failed N actions: ..."); deleteMultiple returns [] on success.
- Errors: TIOError carrying the Java exception's text (`org.apache.hadoop.hbase.TableNotFoundException: t`);
  scanner ids unknown or expired: TIllegalArgument("Invalid scanner Id") from getScannerRows (closeScanner
  succeeds, as HBase 2.6's does); an IllegalArgumentException (a
  malformed filter string, a bad time range, a put without cells) is not caught by HBase's handler and answers
  TApplicationException(INTERNAL_ERROR); an IDL method minihbase does not implement answers TIOError
  ("java.lang.UnsupportedOperationException: <m> is not implemented by minihbase"), one outside the IDL
  TApplicationException UNKNOWN_METHOD. The connection survives every error.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

import thriftpy2

from bedkit.idl import THRIFT2
from minihbase.cells import (
    DELETE,
    DELETE_COLUMN,
    DELETE_FAMILY,
    DELETE_FAMILY_VERSION,
    LATEST_TIMESTAMP,
    PUT,
    Cell,
)
from minihbase.client import Scanner
from minihbase.errors import (
    HBaseError,
    JavaIllegalArgument,
    NoSuchColumnFamily,
    RetriesExhaustedWithDetails,
    WrongRowIOException,
)
from minihbase.hdfs import HDFSError
from minihbase.region import ColumnSelector
from minihbase.schema import FamilyDescriptor, TableDescriptor, validate_table_name
from minihbase.table_attributes import family_values_settings, table_values_settings
from minihbase.thrift_gateway import GatewayProcessor, GatewayServer, IllegalArgumentAnswer, ScannerRegistry

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

log = logging.getLogger(__name__)

T2 = thriftpy2.load(str(THRIFT2), module_name="minihbase_hbase2_thrift")

_new_tuple = tuple.__new__  # builds a Cell without namedtuple's slower Python-level constructor
SKIP_WAL = T2.TDurability.SKIP_WAL
INVALID_SCANNER = "Invalid scanner Id"

# Enum values of the IDL <-> minihbase's FamilyDescriptor strings (HBase's *FromHBase/*FromThrift mappings; a
# bloom type the IDL lacks goes out as ROW, as bloomFilterFromHBase's default does).
BLOOM = {"NONE": 0, "ROW": 1, "ROWCOL": 2, "ROWPREFIX_FIXED_LENGTH": 3}
COMPRESSION = {"LZO": 0, "GZ": 1, "NONE": 2, "SNAPPY": 3, "LZ4": 4, "BZIP2": 5, "ZSTD": 6}
ENCODING = {"NONE": 0, "PREFIX": 2, "DIFF": 3, "FAST_DIFF": 4, "ROW_INDEX_V1": 7}
KEEP_DELETED = {"FALSE": 0, "TRUE": 1, "TTL": 2}


def _unsupported(what: str) -> HBaseError:
    err = HBaseError(f"{what} is not implemented by minihbase")
    err.java_class = "java.lang.UnsupportedOperationException"
    return err


def _check_row(row: bytes | None) -> bytes:
    """Mutation.checkRow / Get(row): a row key is required."""
    if row is None:
        raise JavaIllegalArgument("Row buffer is null")
    if not row:
        raise JavaIllegalArgument("Row length is 0")
    return row


def _check_ts(ts: int) -> int:
    if ts < 0:
        raise JavaIllegalArgument(f"Timestamp cannot be negative. ts={ts}")
    return ts


def _time_range(tr) -> tuple[int, int]:
    """HBase's TimeRange(min, max) checks; returns (min, max) with max exclusive."""
    lo, hi = tr.minStamp, tr.maxStamp
    if lo is None or hi is None:
        raise JavaIllegalArgument("TTimeRange needs minStamp and maxStamp")
    if lo < 0 or hi < 0:
        raise JavaIllegalArgument(f"Timestamp cannot be negative. minStamp:{lo}, maxStamp:{hi}")
    if hi < lo:
        raise JavaIllegalArgument("maxStamp is smaller than minStamp")
    return lo, hi


def _selector(columns) -> ColumnSelector:
    """TColumn with a family only = the whole family; with a qualifier (possibly empty) = that column."""
    if not columns:
        return ColumnSelector()
    families, cols = set(), set()
    for c in columns:
        if c.qualifier is None:
            families.add(c.family)
        else:
            cols.add(c.family + b":" + c.qualifier)
    return ColumnSelector(families, cols)


def _result(row: bytes | None, cells, partial: bool = False):
    """ThriftUtilities.resultFromHBase: no cell = no row."""
    values = []
    append = values.append
    for colkey, ts, value in cells:
        family, _, qualifier = colkey.partition(b":")
        append(T2.TColumnValue(family=family, qualifier=qualifier, value=value, timestamp=ts, type=PUT))
    return T2.TResult(row=row if values else None, columnValues=values, stale=False, partial=partial)


def _table_name(tname) -> bytes:
    """TableName.valueOf(ns, qualifier): no or empty namespace (or `default`) = the default namespace."""
    if tname is None or not tname.qualifier:
        raise JavaIllegalArgument("Table qualifier must not be empty")
    ns = tname.ns or b""
    name = tname.qualifier if ns in (b"", b"default") else ns + b":" + tname.qualifier
    validate_table_name(name)
    return name


def _ttable_name(name: bytes):
    ns, sep, qualifier = name.partition(b":")
    if not sep:
        ns, qualifier = b"default", name
    return T2.TTableName(ns=ns, qualifier=qualifier)


def _family_descriptor(f: FamilyDescriptor):
    """ThriftUtilities.columnFamilyDescriptorFromHBase; `attributes` are every value of the descriptor as HBase
    2.5 keeps them (its defaults included, values as strings), `configuration` the family's CONFIGURATION."""
    attributes = f.hbase_values()
    return T2.TColumnFamilyDescriptor(
        name=f.name, attributes={k.encode(): v.encode() for k, v in attributes.items()},
        configuration=dict(f.configuration),
        blockSize=f.block_size, bloomnFilterType=BLOOM.get(f.bloom_filter_type, BLOOM["ROW"]),
        compressionType=COMPRESSION.get(f.compression.upper(), COMPRESSION["NONE"]),
        dfsReplication=int(f.values.get("DFS_REPLICATION", "0")),
        dataBlockEncoding=ENCODING.get(f.data_block_encoding, 0), keepDeletedCells=KEEP_DELETED.get(
            f.keep_deleted_cells, 0), maxVersions=f.max_versions, minVersions=f.min_versions,
        scope=f.replication_scope, timeToLive=f.ttl_s, blockCacheEnabled=f.block_cache_enabled,
        cacheBloomsOnWrite=f.values.get("CACHE_BLOOMS_ON_WRITE") == "true",
        cacheDataOnWrite=f.values.get("CACHE_DATA_ON_WRITE") == "true",
        cacheIndexesOnWrite=f.values.get("CACHE_INDEX_ON_WRITE") == "true",
        compressTags=f.values.get("COMPRESS_TAGS", "true") == "true",
        evictBlocksOnClose=f.values.get("EVICT_BLOCKS_ON_CLOSE") == "true", inMemory=f.in_memory)


def _family_from_thrift(c) -> FamilyDescriptor:
    """ColumnFamilyDescriptorBuilder defaults (HBase 2.x: VERSIONS 1) for whatever the client leaves unset."""
    if not c.name:
        raise JavaIllegalArgument("Column Family name can not be empty")
    by_value = {v: k for k, v in BLOOM.items()}
    f = FamilyDescriptor(c.name, max_versions=1)
    # attributes (raw setValue), then configuration, then the typed fields: ThriftUtilities' order.
    settings = family_values_settings({k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                                       for k, v in (c.attributes or {}).items()})
    settings["configuration"] = dict(c.configuration or {})
    for key, value in settings.items():
        setattr(f, key, value)
    if c.maxVersions is not None:
        f.max_versions = c.maxVersions
    if c.minVersions is not None:
        f.min_versions = c.minVersions
    if c.timeToLive is not None:
        f.ttl_s = c.timeToLive
    if c.scope is not None:
        f.replication_scope = c.scope
    if c.bloomnFilterType is not None:
        f.bloom_filter_type = by_value.get(c.bloomnFilterType, "ROW")
    if c.compressionType is not None:
        f.compression = {v: k for k, v in COMPRESSION.items()}.get(c.compressionType, "NONE")
    if c.dataBlockEncoding is not None:
        f.data_block_encoding = {v: k for k, v in ENCODING.items()}.get(c.dataBlockEncoding, "NONE")
    if c.keepDeletedCells is not None:
        f.keep_deleted_cells = {v: k for k, v in KEEP_DELETED.items()}.get(c.keepDeletedCells, "FALSE")
    if c.blockSize is not None:
        f.block_size = c.blockSize
    if c.blockCacheEnabled is not None:
        f.block_cache_enabled = c.blockCacheEnabled
    if c.inMemory is not None:
        f.in_memory = c.inMemory
    return f


class Thrift2Handler:
    """The THBaseService methods minihbase implements; every other IDL method answers TIOError
    (UnsupportedOperationException). Methods raise HBase-side exceptions; `Thrift2Processor` maps them."""

    def __init__(self, cluster: "MiniHBaseCluster"):
        self.cluster = cluster
        self.client = cluster.client
        self.master = cluster.master
        self.scanners = ScannerRegistry()

    def getThriftServerType(self):
        return T2.TThriftServerType.TWO

    # ------------------------------------------------------------------------------------------ reads
    def _read_args(self, tget) -> tuple[ColumnSelector, int | None, int | None, int]:
        """(selector, time_min, time_max, versions) of a TGet (getFromThrift: timestamp wins over timeRange)."""
        for field in ("filterBytes", "storeLimit", "storeOffset"):
            if getattr(tget, field) is not None:
                raise _unsupported(f"TGet.{field}")
        if tget.existence_only:
            raise _unsupported("TGet.existence_only")
        time_min = time_max = None
        if tget.timestamp is not None:
            time_min, time_max = _check_ts(tget.timestamp), tget.timestamp + 1
        elif tget.timeRange is not None:
            time_min, time_max = _time_range(tget.timeRange)
        versions = 1
        if tget.maxVersions is not None:
            if tget.maxVersions <= 0:
                raise HBaseError("versions must be positive")  # Get.readVersions
            versions = tget.maxVersions
        return _selector(tget.columns), time_min, time_max, versions

    def _get(self, table: bytes, tget):
        selector, time_min, time_max, versions = self._read_args(tget)
        row = _check_row(tget.row)
        if tget.filterString is None:
            return _result(row, self.client.get(table, row, selector, time_max, versions, time_min))
        # A Get with a filter is a one-row scan in HBase; so it is here (the filter sees the row key too).
        scanner = self.client.open_scanner(table, row, row + b"\x00", False, selector, time_max, tget.filterString,
                                           None, versions, time_min)
        rows = scanner.next(1)
        return _result(row, rows[0][1] if rows else [])

    def get(self, table, tget):
        return self._get(table, tget)

    def getMultiple(self, table, tgets):
        return [self._get(table, g) for g in tgets or []]

    def exists(self, table, tget):
        return bool(self._get(table, tget).columnValues)

    def existsAll(self, table, tgets):
        return [bool(self._get(table, g).columnValues) for g in tgets or []]

    # ------------------------------------------------------------------------------------------ writes
    @staticmethod
    def _put_cells(tput) -> tuple[list[Cell], bool]:
        """ThriftUtilities.putFromThrift: (cells, durable)."""
        if tput.cellVisibility is not None:
            raise _unsupported("TPut.cellVisibility")
        if not tput.columnValues:
            raise JavaIllegalArgument("No columns to insert")  # HTable.validatePut
        row = _check_row(tput.row)
        default_ts = _check_ts(tput.timestamp) if tput.timestamp is not None else LATEST_TIMESTAMP
        cells = []
        for cv in tput.columnValues:
            ts = _check_ts(cv.timestamp) if cv.timestamp is not None else default_ts
            cells.append(_new_tuple(Cell, (row, cv.family, cv.qualifier or b"", ts, PUT, cv.value or b"")))
        return cells, tput.durability != SKIP_WAL

    def _delete_cells(self, tdelete, families_of: Callable[[], list[bytes]]) -> tuple[list[Cell], bool]:
        """ThriftUtilities.deleteFromThrift (HBase 2.x), then HRegion.prepareDelete for a whole-row delete:
        (cells, durable). A delete key at LATEST_TIMESTAMP becomes the server's now, except a one-version delete
        (type Delete), which the region server points at the newest version, as HBase does."""
        row = _check_row(tdelete.row)
        cells = []
        if tdelete.columns is not None:
            # HBase builds `new Delete(row)` here: the TDelete's timestamp is not used with columns.
            dtype = tdelete.deleteType if tdelete.deleteType is not None else T2.TDeleteType.DELETE_COLUMNS
            for col in tdelete.columns:
                ts = _check_ts(col.timestamp) if col.timestamp is not None else LATEST_TIMESTAMP
                qualifier = col.qualifier or b""  # Delete.addColumn(s)(family, null): the empty qualifier
                if dtype == T2.TDeleteType.DELETE_COLUMN:
                    cells.append(_new_tuple(Cell, (row, col.family, qualifier, ts, DELETE, b"")))
                elif dtype == T2.TDeleteType.DELETE_COLUMNS:
                    cells.append(_new_tuple(Cell, (row, col.family, qualifier, ts, DELETE_COLUMN, b"")))
                elif dtype == T2.TDeleteType.DELETE_FAMILY:
                    cells.append(_new_tuple(Cell, (row, col.family, b"", ts, DELETE_FAMILY, b"")))
                elif dtype == T2.TDeleteType.DELETE_FAMILY_VERSION:
                    if col.timestamp is None:
                        raise JavaIllegalArgument("Timestamp is required for TDelete with DeleteFamilyVersion type")
                    cells.append(_new_tuple(Cell, (row, col.family, b"", ts, DELETE_FAMILY_VERSION, b"")))
                else:
                    raise JavaIllegalArgument(f"Unknown delete type {dtype}")
            if tdelete.columns:
                return cells, tdelete.durability != SKIP_WAL
            ts = LATEST_TIMESTAMP  # an empty column list: a whole-row Delete(row)
        else:
            ts = _check_ts(tdelete.timestamp) if tdelete.timestamp is not None else LATEST_TIMESTAMP
        cells = [_new_tuple(Cell, (row, f, b"", ts, DELETE_FAMILY, b"")) for f in families_of()]
        return cells, tdelete.durability != SKIP_WAL

    def _families_of(self, table: bytes) -> Callable[[], list[bytes]]:
        return lambda: sorted(self.master.enabled_table(table).desc.families)

    def _write(self, table: bytes, actions: list[tuple[list[Cell], bool]]) -> None:
        """Table.put(List)/delete(List): each action is one row's cells. Actions naming a family the table lacks
        fail alone; the others are written (consecutive ones of the same durability in one call, so a batch
        keeps its order); any failure answers RetriesExhaustedWithDetails."""
        desc = self.master.enabled_table(table).desc
        failures = []
        runs: list[tuple[bool, list[list[Cell]]]] = []
        for cells, durable in actions:
            if not cells:
                continue
            missing = next((c.family for c in cells if c.family not in desc.families), None)
            if missing is not None:
                region = self.master.locate(table, cells[0].row)
                try:
                    self.master.check_families(desc, [missing], region)
                except NoSuchColumnFamily as e:
                    failures.append((e, region.server.servername if region.server else None))
                continue
            if runs and runs[-1][0] == durable:
                runs[-1][1].append(cells)
            else:
                runs.append((durable, [cells]))
        for durable, rows in runs:
            self.client.mutate(table, rows, durable=durable)
        if failures:
            raise RetriesExhaustedWithDetails(failures)

    def put(self, table, tput):
        cells, durable = self._put_cells(tput)
        self.client.mutate(table, [cells], durable=durable)

    def putMultiple(self, table, tputs):
        actions = [self._put_cells(p) for p in tputs or []]  # all converted (and checked) before any is sent
        if actions:
            self._write(table, actions)

    def deleteSingle(self, table, tdelete):
        cells, durable = self._delete_cells(tdelete, self._families_of(table))
        if cells:
            self.client.mutate(table, [cells], durable=durable)

    def deleteMultiple(self, table, tdeletes):
        families = self._families_of(table)
        actions = [self._delete_cells(d, families) for d in tdeletes or []]
        if actions:
            self._write(table, actions)
        return []  # HBase 2.x: always empty, failures answer TIOError

    def mutateRow(self, table, trowMutations):
        """RowMutations: every mutation of the one row, atomically and in order (one WAL entry). Logged unless
        every mutation asks SKIP_WAL (HBase skips the WAL per mutation; minihbase logs the row as one entry)."""
        row = trowMutations.row
        cells, durable = [], False
        families = self._families_of(table)
        for m in trowMutations.mutations or []:
            if m.put is not None:
                mrow = m.put.row
                part, d = self._put_cells(m.put)
            elif m.deleteSingle is not None:
                mrow = m.deleteSingle.row
                part, d = self._delete_cells(m.deleteSingle, families)
            else:
                continue
            if mrow != row:
                raise WrongRowIOException(
                    f"The row in the recently added Put/Delete <{_binary(mrow)}> doesn't match the original one "
                    f"<{_binary(row)}>")
            cells.extend(part)
            durable = durable or d
        if cells:
            self.client.mutate(table, [cells], durable=durable)

    # ------------------------------------------------------------------------------------------ scanners
    def _open(self, table: bytes, tscan) -> Scanner:
        """ThriftUtilities.scanFromThrift; caching, cacheBlocks, readType, consistency, attributes and
        authorizations change nothing observable here."""
        if tscan.filterBytes is not None:
            raise _unsupported("TScan.filterBytes")
        if tscan.colFamTimeRangeMap:
            raise _unsupported("TScan.colFamTimeRangeMap")
        time_min = time_max = None
        if tscan.timeRange is not None and tscan.timeRange.minStamp is not None \
                and tscan.timeRange.maxStamp is not None:
            time_min, time_max = _time_range(tscan.timeRange)
        versions = tscan.maxVersions if tscan.maxVersions is not None else 1
        batch = tscan.batchSize if tscan.batchSize and tscan.batchSize > 0 else None
        return self.client.open_scanner(table, tscan.startRow or b"", tscan.stopRow or b"", bool(tscan.reversed),
                                        _selector(tscan.columns), time_max, tscan.filterString, batch, versions,
                                        time_min, tscan.limit)

    @staticmethod
    def _results(scanner: Scanner, n: int) -> list:
        if n <= 0:
            return []
        return [_result(row, cells, partial) for row, cells, partial in scanner.next_results(n)]

    def openScanner(self, table, tscan):
        return self.scanners.add(self._open(table, tscan))

    def getScannerRows(self, scannerId, numRows):
        entry = self.scanners.get(scannerId)
        if entry is None:
            raise IllegalArgumentAnswer(INVALID_SCANNER)
        return self._results(entry[0], 1 if numRows is None else numRows)

    def closeScanner(self, scannerId):
        # HBase 2.6 answers an unknown (or already closed) id with success, not TIllegalArgument (seen by the
        # conformance suite); getScannerRows does answer "Invalid scanner Id"
        self.scanners.remove(scannerId)

    def getScannerResults(self, table, tscan, numRows):
        return self._results(self._open(table, tscan), 1 if numRows is None else numRows)

    # ------------------------------------------------------------------------------------------ regions
    @staticmethod
    def _location(region):
        """ThriftUtilities.regionLocationFromHBase. HBase never sets THRegionInfo.regionId there, so a real
        server sends the required field's default, 0; minihbase sends the same. A region between servers has
        no location: hostName "" and port 0 (as minihbase's Thrift1 getTableRegions)."""
        rs = region.server
        info = region.info
        return T2.THRegionLocation(
            serverName=T2.TServerName(hostName=rs.host if rs else "", port=rs.port if rs else 0,
                                      startCode=rs.startcode if rs else 0),
            regionInfo=T2.THRegionInfo(regionId=0, tableName=info.table, startKey=info.start_key,
                                       endKey=info.end_key, offline=False, split=False, replicaId=0))

    def getAllRegionLocations(self, table):
        # HBase 2.x's RegionLocator.getAllRegionLocations() scans hbase:meta for the table's rows; an unknown table
        # has none, so the answer is an empty list, not TableNotFoundException (HRegionLocator.listRegionLocations;
        # Thrift1's getTableRegions answers [] the same way).
        state = self.master.tables.get(table)
        if state is None:
            return []
        return [self._location(r) for r in list(state.regions)]

    def getRegionLocation(self, table, row, reload):
        # locateRegion: an unknown table is a TableNotFoundException, a disabled one TableNotEnabledException.
        return self._location(self.master.locate(table, row or b""))

    # ------------------------------------------------------------------------------------------ tables
    def getTableDescriptor(self, table):
        return self._descriptor(self.master.table(_table_name(table)).desc)

    def getTableDescriptors(self, tables):
        # Admin.listTableDescriptors(List<TableName>): the tables that exist, unknown ones left out.
        out = []
        for t in tables or []:
            state = self.master.tables.get(_table_name(t))
            if state is not None:
                out.append(self._descriptor(state.desc))
        return out

    @staticmethod
    def _descriptor(desc: TableDescriptor):
        """ThriftUtilities.tableDescriptorFromHBase: every table value in `attributes`, DURABILITY as the enum."""
        families = [_family_descriptor(f) for f in sorted(desc.families.values(), key=lambda f: f.name)]
        attributes = {k.encode(): v.encode() for k, v in desc.attributes().items()}
        durability = getattr(T2.TDurability, desc.values.get("DURABILITY", "USE_DEFAULT"))
        return T2.TTableDescriptor(tableName=_ttable_name(desc.name), columns=families, attributes=attributes,
                                   durability=durability)

    def tableExists(self, tableName):
        return _table_name(tableName) in self.master.tables

    def createTable(self, desc, splitKeys):
        name = _table_name(desc.tableName)
        families: dict[bytes, FamilyDescriptor] = {}
        for c in desc.columns or []:
            f = _family_from_thrift(c)
            if f.name in families:
                raise JavaIllegalArgument(f"Column Family {f.name.decode('latin-1')} already exists")
            families[f.name] = f
        keys = sorted(splitKeys or [])
        for i, key in enumerate(keys):
            if not key:
                raise JavaIllegalArgument("Empty split key must not be passed in the split keys.")
            if i and key == keys[i - 1]:
                raise JavaIllegalArgument(f"All split keys must be unique, found duplicate: {_binary(key)}, "
                                          f"{_binary(key)}")
        # tableDescriptorFromThrift: attributes as raw values, then the durability when set.
        settings = table_values_settings({k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                                          for k, v in (desc.attributes or {}).items()})
        values = settings.get("values", {})
        if desc.durability is not None:
            values["DURABILITY"] = T2.TDurability._VALUES_TO_NAMES[desc.durability]
        self.master.create_table(TableDescriptor(name, families, readonly=settings.get("readonly"), values=values),
                                 keys)

    def deleteTable(self, tableName):
        self.master.delete_table(_table_name(tableName))

    def enableTable(self, tableName):
        self.master.enable_table(_table_name(tableName))

    def disableTable(self, tableName):
        self.master.disable_table(_table_name(tableName))

    def isTableEnabled(self, tableName):
        return self.master.table(_table_name(tableName)).desc.enabled

    def isTableDisabled(self, tableName):
        return not self.master.table(_table_name(tableName)).desc.enabled


def _binary(b: bytes) -> str:
    """Bytes.toStringBinary."""
    return "".join(chr(c) if 32 <= c < 127 and c != 92 else f"\\x{c:02X}" for c in b)


class Thrift2Processor(GatewayProcessor):
    """TIOError (the Java text) for HBase and HDFS errors, TIllegalArgument for unknown scanners; an
    IllegalArgumentException escapes HBase's Thrift2 handler everywhere, so it answers INTERNAL_ERROR."""

    def __init__(self, handler: Thrift2Handler, latency_ms: Callable[[], float],
                 reset_at: Callable[[], str | None] | None = None):
        super().__init__(T2.THBaseService, handler, latency_ms, reset_at)

    def io_error(self, message: str):
        return T2.TIOError(message=message)

    def answer(self, api: str, e: Exception, result):
        if isinstance(e, (HBaseError, HDFSError)):
            return "io", T2.TIOError(message=e.java_text())
        if isinstance(e, IllegalArgumentAnswer):
            return "ia", T2.TIllegalArgument(message=str(e))
        if isinstance(e, JavaIllegalArgument):
            log.warning("%s: %s", api, e.java_text())
            return None
        log.exception("Internal error processing %s", api)
        return None


class Thrift2Gateway(GatewayServer):
    """The Thrift2 gateway (`hbase thrift2`)."""

    kind = "thrift2"

    def make_processor(self) -> Thrift2Processor:
        self.handler = Thrift2Handler(self.cluster)
        return Thrift2Processor(self.handler, self.call_latency_ms, self.call_reset)


__all__ = ["T2", "Thrift2Gateway", "Thrift2Handler"]
