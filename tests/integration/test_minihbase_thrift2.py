"""A thriftpy2 client built from minihbase's `hbase2.thrift` against minihbase's Thrift2 gateway (THBaseService):
results exactly as HBase 2.x's ThriftHBaseServiceHandler gives them, the same data as through Thrift1, the
same replication, and several gateways per cluster that can be stopped and started.

One cluster for the module (`minihbase_dc1`, which runs one Thrift2 gateway by default); each test works in its
own table. Tests needing other settings start their own cluster (`minihbase_factory`, `minihbase_pair`).
"""
from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import happybase
import pytest
import thriftpy2
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException, TClient
from thriftpy2.transport import TBufferedTransportFactory, TSocket, TTransportException

from minihbase.testing import MiniHBaseError
from tests.polling import wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
T2 = thriftpy2.load(str(REPO / "bedkit" / "hbase2.thrift"), module_name="test_t2_hbase2_thrift")
# The same service with one method more, to call a method the server's IDL does not have.
EXTRA = thriftpy2.load_fp(io.StringIO("service THBaseService { i32 noSuchMethod(1: i32 x) }"),
                          module_name="test_t2_extra_thrift")
DT = T2.TDeleteType


def connect(host: str, port: int, timeout: int = 30000):
    return make_client(T2.THBaseService, host, port, trans_factory=TBufferedTransportFactory(),
                       proto_factory=TBinaryProtocolFactory(), timeout=timeout)


@pytest.fixture
def client(minihbase_dc1):
    c = connect(minihbase_dc1.thrift2_host, minihbase_dc1.thrift2_port)
    yield c
    c.close()


def _name(prefix: str = "t2") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def table(minihbase_dc1) -> bytes:
    name = _name()
    minihbase_dc1.create_table(name, {"cf": {"max_versions": 5}, "two": {"max_versions": 2},
                                      "meta": {"max_versions": 1}})
    return name.encode()


def cv(column: bytes, value: bytes, ts: int | None = None):
    family, _, qualifier = column.partition(b":")
    return T2.TColumnValue(family=family, qualifier=qualifier, value=value, timestamp=ts)


def col(column: bytes, ts: int | None = None):
    family, sep, qualifier = column.partition(b":")
    return T2.TColumn(family=family, qualifier=qualifier if sep else None, timestamp=ts)


def cells(result) -> list[tuple[bytes, int, bytes]]:
    return [(c.family + b":" + c.qualifier, c.timestamp, c.value) for c in result.columnValues]


def every_version(client, table: bytes, row: bytes, **kwargs) -> list[tuple[bytes, int, bytes]]:
    return cells(client.get(table, T2.TGet(row=row, maxVersions=100, **kwargs)))


def scan_all(client, table: bytes, scan, page: int = 1000) -> list[tuple[bytes, list]]:
    sid = client.openScanner(table, scan)
    out = []
    while True:
        results = client.getScannerRows(sid, page)
        if not results:
            break
        out.extend((r.row, cells(r)) for r in results)
    client.closeScanner(sid)
    return out


def now_ms() -> int:
    return int(time.time() * 1000)


# ------------------------------------------------------------------------------------------------ tables

def test_server_type_create_table_and_descriptors(client, minihbase_dc1):
    assert client.getThriftServerType() == T2.TThriftServerType.TWO
    name = _name().encode()
    tname = T2.TTableName(qualifier=name)
    desc = T2.TTableDescriptor(tableName=tname, columns=[
        T2.TColumnFamilyDescriptor(name=b"d", maxVersions=4, scope=1, timeToLive=3600),
        T2.TColumnFamilyDescriptor(name=b"a")])
    client.createTable(desc, [b"m", b"f"])
    assert client.tableExists(tname) is True
    assert client.tableExists(T2.TTableName(ns=b"default", qualifier=b"no_such_table")) is False

    got = client.getTableDescriptor(T2.TTableName(ns=b"default", qualifier=name))
    assert got.tableName == T2.TTableName(ns=b"default", qualifier=name)
    assert got.durability == T2.TDurability.USE_DEFAULT and got.attributes == {}
    # Families sorted by name; what the client left unset has HBase 2.x's defaults (VERSIONS 1, TTL FOREVER).
    assert [(f.name, f.maxVersions, f.minVersions, f.scope, f.timeToLive) for f in got.columns] == [
        (b"a", 1, 0, 0, 2147483647), (b"d", 4, 0, 1, 3600)]
    d = got.columns[1]
    assert (d.bloomnFilterType, d.compressionType, d.dataBlockEncoding, d.keepDeletedCells) == (
        T2.TBloomFilterType.ROW, T2.TCompressionAlgorithm.NONE, T2.TDataBlockEncoding.NONE,
        T2.TKeepDeletedCells.FALSE)
    assert (d.blockSize, d.blockCacheEnabled, d.inMemory, d.dfsReplication) == (65536, True, False, 0)
    assert d.attributes == {b"BLOOMFILTER": b"ROW", b"VERSIONS": b"4", b"MIN_VERSIONS": b"0", b"TTL": b"3600",
                            b"REPLICATION_SCOPE": b"1", b"COMPRESSION": b"NONE", b"BLOCKSIZE": b"65536",
                            b"IN_MEMORY": b"false", b"BLOCKCACHE": b"true", b"KEEP_DELETED_CELLS": b"FALSE",
                            b"DATA_BLOCK_ENCODING": b"NONE", b"INDEX_BLOCK_ENCODING": b"NONE"}
    # The table exists for the whole cluster: its regions, and the families through Thrift1.
    regions = minihbase_dc1.status()["tables"][name.decode()]["regions"]
    assert [r["name"].split(",")[1] for r in regions] == ["", "f", "m"]
    families = minihbase_dc1.connection().table(name).families()
    assert (families[b"d"]["max_versions"], families[b"d"]["time_to_live"]) == (4, 3600)

    # Several at once: the unknown one is left out (Admin.listTableDescriptors).
    several = client.getTableDescriptors([tname, T2.TTableName(qualifier=b"no_such_table")])
    assert [t.tableName.qualifier for t in several] == [name]

    with pytest.raises(T2.TIOError) as e:
        client.createTable(desc, [])
    assert e.value.message == f"org.apache.hadoop.hbase.TableExistsException: {name.decode()}"
    with pytest.raises(T2.TIOError) as e:
        client.getTableDescriptor(T2.TTableName(qualifier=b"no_such_table"))
    assert e.value.message == "org.apache.hadoop.hbase.TableNotFoundException: no_such_table"
    # An IllegalArgumentException escapes HBase's handler: Thrift's INTERNAL_ERROR, and the connection goes on.
    for bad in ([b"k", b"k"], [b""]):
        with pytest.raises(TApplicationException) as e:
            client.createTable(T2.TTableDescriptor(tableName=T2.TTableName(qualifier=_name().encode()),
                                                   columns=[T2.TColumnFamilyDescriptor(name=b"cf")]), bad)
        assert (e.value.type, e.value.message) == (TApplicationException.INTERNAL_ERROR,
                                                   "Internal error processing createTable")
    assert client.tableExists(tname) is True


# ------------------------------------------------------------------------------------------------ puts and gets

def test_put_multiple_writes_each_cell_at_its_own_timestamp(client, table):
    before = now_ms()
    client.putMultiple(table, [
        T2.TPut(row=b"r1", columnValues=[cv(b"cf:a", b"a100", 100), cv(b"cf:a", b"a200", 200), cv(b"cf:b", b"b7", 7),
                                         cv(b"meta:m", b"m5", 5)]),
        T2.TPut(row=b"r2", timestamp=300, columnValues=[cv(b"cf:a", b"put's ts"), cv(b"cf:b", b"own", 301)]),
        # No timestamp anywhere: the server's now. A put's `type` is ignored (this is no delete).
        T2.TPut(row=b"r3", columnValues=[T2.TColumnValue(family=b"cf", qualifier=b"a", value=b"now", type=12)]),
        T2.TPut(row=b"r1", columnValues=[cv(b"cf:a", b"a150", 150)]),  # the same row again in the batch
    ])
    after = now_ms()
    assert every_version(client, table, b"r1") == [
        (b"cf:a", 200, b"a200"), (b"cf:a", 150, b"a150"), (b"cf:a", 100, b"a100"), (b"cf:b", 7, b"b7"),
        (b"meta:m", 5, b"m5")]
    assert every_version(client, table, b"r2") == [(b"cf:a", 300, b"put's ts"), (b"cf:b", 301, b"own")]
    [(column, ts, value)] = every_version(client, table, b"r3")
    assert (column, value) == (b"cf:a", b"now") and before <= ts <= after

    # Default maxVersions 1; every cell carries its timestamp and type Put (4).
    result = client.get(table, T2.TGet(row=b"r1"))
    assert (result.row, result.stale, result.partial) == (b"r1", False, False)
    assert cells(result) == [(b"cf:a", 200, b"a200"), (b"cf:b", 7, b"b7"), (b"meta:m", 5, b"m5")]
    assert [c.type for c in result.columnValues] == [4, 4, 4] and {c.tags for c in result.columnValues} == {None}
    # Columns: a family alone is the whole family, family + qualifier that column.
    selected = client.get(table, T2.TGet(row=b"r1", columns=[col(b"meta"), col(b"cf:b")], maxVersions=5))
    assert cells(selected) == [(b"cf:b", 7, b"b7"), (b"meta:m", 5, b"m5")]
    # A missing row: neither row nor cells. getMultiple keeps the order of its gets.
    empty = client.get(table, T2.TGet(row=b"nope"))
    assert (empty.row, empty.columnValues) == (None, [])
    assert [r.row for r in client.getMultiple(table, [T2.TGet(row=b"r2"), T2.TGet(row=b"zz"), T2.TGet(row=b"r1")])] \
        == [b"r2", None, b"r1"]
    assert client.exists(table, T2.TGet(row=b"r2")) is True
    assert client.exists(table, T2.TGet(row=b"zz")) is False
    assert client.existsAll(table, [T2.TGet(row=b"zz"), T2.TGet(row=b"r3")]) == [False, True]
    # A filter on a get (ParseFilter language), as a one-row scan.
    filtered = client.get(table, T2.TGet(row=b"r1", filterString=b"QualifierFilter(=, 'binary:b')"))
    assert cells(filtered) == [(b"cf:b", 7, b"b7")]


def test_versions_never_exceed_the_familys(client, table):
    # `two` keeps VERSIONS => 2: of four puts only the newest two come back, whatever maxVersions asks.
    for ts in (1, 2, 3, 4):
        client.putMultiple(table, [T2.TPut(row=b"v", columnValues=[cv(b"two:q", b"%d" % ts, ts),
                                                                   cv(b"cf:q", b"%d" % ts, ts)])])
    assert cells(client.get(table, T2.TGet(row=b"v", columns=[col(b"two")], maxVersions=10))) == [
        (b"two:q", 4, b"4"), (b"two:q", 3, b"3")]
    assert cells(client.get(table, T2.TGet(row=b"v", columns=[col(b"two")]))) == [(b"two:q", 4, b"4")]
    assert cells(client.get(table, T2.TGet(row=b"v", columns=[col(b"cf:q")], maxVersions=3))) == [
        (b"cf:q", 4, b"4"), (b"cf:q", 3, b"3"), (b"cf:q", 2, b"2")]
    assert scan_all(client, table, T2.TScan(maxVersions=10)) == [
        (b"v", [(b"cf:q", 4, b"4"), (b"cf:q", 3, b"3"), (b"cf:q", 2, b"2"), (b"cf:q", 1, b"1"),
                (b"two:q", 4, b"4"), (b"two:q", 3, b"3")])]
    assert scan_all(client, table, T2.TScan()) == [(b"v", [(b"cf:q", 4, b"4"), (b"two:q", 4, b"4")])]
    with pytest.raises(T2.TIOError) as e:
        client.get(table, T2.TGet(row=b"v", maxVersions=0))
    assert e.value.message == "java.io.IOException: versions must be positive"  # Get.readVersions


def test_time_range_is_min_inclusive_max_exclusive(client, table, minihbase_dc1):
    client.put(table, T2.TPut(row=b"t", columnValues=[cv(b"cf:q", b"%d" % ts, ts) for ts in (10, 20, 30, 40)]))

    def in_range(lo: int, hi: int, n: int = 10):
        return [ts for _, ts, _ in cells(client.get(
            table, T2.TGet(row=b"t", timeRange=T2.TTimeRange(minStamp=lo, maxStamp=hi), maxVersions=n)))]

    assert in_range(20, 40) == [30, 20]
    assert in_range(20, 21) == [20]
    assert in_range(21, 30) == []
    assert in_range(10, 41) == [40, 30, 20, 10]
    assert in_range(10, 41, n=1) == [40]
    assert in_range(0, 40, n=2) == [30, 20]  # versions are counted inside the range
    # TGet.timestamp is that exact version, and wins over a time range.
    assert every_version(client, table, b"t", timestamp=30) == [(b"cf:q", 30, b"30")]
    assert every_version(client, table, b"t", timestamp=31) == []
    assert every_version(client, table, b"t", timestamp=10,
                         timeRange=T2.TTimeRange(minStamp=30, maxStamp=50)) == [(b"cf:q", 10, b"10")]
    scanned = scan_all(client, table, T2.TScan(timeRange=T2.TTimeRange(minStamp=10, maxStamp=30), maxVersions=9))
    assert scanned == [(b"t", [(b"cf:q", 20, b"20"), (b"cf:q", 10, b"10")])]
    with pytest.raises(TApplicationException, match="Internal error processing get"):
        client.get(table, T2.TGet(row=b"t", timeRange=T2.TTimeRange(minStamp=40, maxStamp=30)))
    # Thrift1 on the same cells: the newest version, and `[0, ts)` for a timestamp.
    happy = minihbase_dc1.connection().table(table)
    assert happy.row(b"t", include_timestamp=True) == {b"cf:q": (b"40", 40)}
    assert happy.row(b"t", timestamp=30, include_timestamp=True) == {b"cf:q": (b"20", 20)}


# ------------------------------------------------------------------------------------------------ deletes

def put_versions(client, table: bytes, row: bytes, columns: list[bytes], stamps) -> None:
    client.put(table, T2.TPut(row=row, columnValues=[cv(c, b"%s@%d" % (c, ts), ts) for c in columns
                                                     for ts in stamps]))


def stamps(client, table: bytes, row: bytes) -> list[tuple[bytes, int]]:
    return [(c, ts) for c, ts, _ in every_version(client, table, row)]


def test_delete_column_masks_exactly_one_version_until_a_major_compaction(client, table, minihbase_dc1):
    put_versions(client, table, b"d", [b"cf:q", b"cf:other"], (1, 2, 3))
    one = T2.TDelete(row=b"d", columns=[col(b"cf:q", 2)], deleteType=DT.DELETE_COLUMN)
    client.deleteSingle(table, one)
    assert stamps(client, table, b"d") == [(b"cf:other", 3), (b"cf:other", 2), (b"cf:other", 1), (b"cf:q", 3),
                                           (b"cf:q", 1)]
    client.put(table, T2.TPut(row=b"d", columnValues=[cv(b"cf:q", b"again", 2)]))  # that version stays masked
    assert stamps(client, table, b"d")[3:] == [(b"cf:q", 3), (b"cf:q", 1)]
    # Without a timestamp: the newest version at delete time (Delete.addColumn(f, q)). The TDelete's own
    # timestamp is not used when columns are given (ThriftUtilities.deleteFromThrift builds `new Delete(row)`).
    client.deleteSingle(table, T2.TDelete(row=b"d", columns=[col(b"cf:q")], timestamp=1, deleteType=DT.DELETE_COLUMN))
    assert stamps(client, table, b"d")[3:] == [(b"cf:q", 1)]
    client.put(table, T2.TPut(row=b"d", columnValues=[cv(b"cf:q", b"again", 3)]))
    assert stamps(client, table, b"d")[3:] == [(b"cf:q", 1)]
    # A major compaction drops the markers: the same versions can be written again.
    minihbase_dc1.compact(table.decode(), major=True)
    client.put(table, T2.TPut(row=b"d", columnValues=[cv(b"cf:q", b"two", 2), cv(b"cf:q", b"three", 3)]))
    assert every_version(client, table, b"d", columns=[col(b"cf:q")]) == [
        (b"cf:q", 3, b"three"), (b"cf:q", 2, b"two"), (b"cf:q", 1, b"cf:q@1")]


def test_delete_columns_removes_every_version_up_to_its_timestamp(client, table):
    put_versions(client, table, b"d", [b"cf:q", b"cf:other"], (1, 2, 3, 4))
    client.deleteSingle(table, T2.TDelete(row=b"d", columns=[col(b"cf:q", 2)], deleteType=DT.DELETE_COLUMNS))
    assert stamps(client, table, b"d")[4:] == [(b"cf:q", 4), (b"cf:q", 3)]
    client.put(table, T2.TPut(row=b"d", columnValues=[cv(b"cf:q", b"late", 1), cv(b"cf:q", b"new", 5)]))
    assert stamps(client, table, b"d")[4:] == [(b"cf:q", 5), (b"cf:q", 4), (b"cf:q", 3)]
    # deleteType defaults to DELETE_COLUMNS; without a timestamp: every version up to now.
    client.deleteSingle(table, T2.TDelete(row=b"d", columns=[col(b"cf:q")]))
    assert stamps(client, table, b"d") == [(b"cf:other", 4), (b"cf:other", 3), (b"cf:other", 2), (b"cf:other", 1)]


def test_delete_family_and_family_version(client, table):
    put_versions(client, table, b"d", [b"cf:a", b"cf:b", b"meta:m"], (1, 2, 3))
    client.deleteSingle(table, T2.TDelete(row=b"d", columns=[col(b"cf", 2)], deleteType=DT.DELETE_FAMILY))
    assert stamps(client, table, b"d") == [(b"cf:a", 3), (b"cf:b", 3), (b"meta:m", 3)]

    put_versions(client, table, b"e", [b"cf:a", b"cf:b", b"meta:m"], (1, 2, 3))
    client.deleteSingle(table, T2.TDelete(row=b"e", columns=[col(b"cf", 2)], deleteType=DT.DELETE_FAMILY_VERSION))
    assert stamps(client, table, b"e") == [(b"cf:a", 3), (b"cf:a", 1), (b"cf:b", 3), (b"cf:b", 1), (b"meta:m", 3)]
    client.put(table, T2.TPut(row=b"e", columnValues=[cv(b"cf:c", b"late", 2), cv(b"cf:c", b"other", 4)]))
    assert stamps(client, table, b"e") == [(b"cf:a", 3), (b"cf:a", 1), (b"cf:b", 3), (b"cf:b", 1), (b"cf:c", 4),
                                           (b"meta:m", 3)]  # that version of the family stays masked
    with pytest.raises(TApplicationException, match="Internal error processing deleteSingle"):
        client.deleteSingle(table, T2.TDelete(row=b"e", columns=[col(b"cf")], deleteType=DT.DELETE_FAMILY_VERSION))
    # DELETE_FAMILY without a timestamp: the whole family up to now.
    client.deleteSingle(table, T2.TDelete(row=b"e", columns=[col(b"cf")], deleteType=DT.DELETE_FAMILY))
    assert stamps(client, table, b"e") == [(b"meta:m", 3)]


def test_a_family_only_column_with_a_column_delete_type_means_the_empty_qualifier(client, table):
    # HBase 2.x's deleteFromThrift calls Delete.addColumns(family, null) here: the column `cf:` (empty
    # qualifier), not the family; DELETE_FAMILY is how a Thrift2 client deletes a family.
    put_versions(client, table, b"d", [b"cf:", b"cf:a"], (1, 2))
    client.deleteSingle(table, T2.TDelete(row=b"d", columns=[col(b"cf")]))
    assert stamps(client, table, b"d") == [(b"cf:a", 2), (b"cf:a", 1)]


def test_whole_row_deletes(client, table):
    put_versions(client, table, b"w", [b"cf:a", b"two:b", b"meta:m"], (1, 2, 3))
    client.deleteSingle(table, T2.TDelete(row=b"w", timestamp=2))  # every family, <= 2
    assert stamps(client, table, b"w") == [(b"cf:a", 3), (b"meta:m", 3), (b"two:b", 3)]
    client.deleteSingle(table, T2.TDelete(row=b"w"))
    assert client.get(table, T2.TGet(row=b"w")).columnValues == []


def test_delete_multiple_returns_an_empty_list_and_fails_only_bad_actions(client, table, minihbase_dc1):
    for row in (b"a", b"b", b"c"):
        put_versions(client, table, row, [b"cf:q", b"meta:m"], (1, 2))
    assert client.deleteMultiple(table, [
        T2.TDelete(row=b"a", columns=[col(b"cf:q", 2)], deleteType=DT.DELETE_COLUMN),
        T2.TDelete(row=b"b", columns=[col(b"meta")], deleteType=DT.DELETE_FAMILY),
    ]) == []
    assert stamps(client, table, b"a") == [(b"cf:q", 1), (b"meta:m", 2)]
    assert stamps(client, table, b"b") == [(b"cf:q", 2), (b"cf:q", 1)]
    # Table.delete(List): an action naming an unknown family fails alone, the others are applied.
    region = minihbase_dc1.status()["tables"][table.decode()]["regions"][0]
    with pytest.raises(T2.TIOError) as e:
        client.deleteMultiple(table, [
            T2.TDelete(row=b"c", columns=[col(b"nope:q")]),
            T2.TDelete(row=b"c", columns=[col(b"cf:q", 1)], deleteType=DT.DELETE_COLUMN),
        ])
    assert e.value.message == (
        "Failed 1 action: org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: Column family nope "
        f"does not exist in region {region['name']} in table '{table.decode()}', "
        "{NAME => 'cf', VERSIONS => '5', TTL => 'FOREVER', REPLICATION_SCOPE => '0'}, "
        "{NAME => 'meta', VERSIONS => '1', TTL => 'FOREVER', REPLICATION_SCOPE => '0'}, "
        "{NAME => 'two', VERSIONS => '2', TTL => 'FOREVER', REPLICATION_SCOPE => '0'}: 1 time, "
        f"servers with issues: {region['server']}")
    assert stamps(client, table, b"c") == [(b"cf:q", 2), (b"meta:m", 2)]


def test_mutate_row_applies_puts_and_deletes_of_one_row_in_order(client, table):
    put_versions(client, table, b"m", [b"cf:a"], (1, 2))
    client.mutateRow(table, T2.TRowMutations(row=b"m", mutations=[
        T2.TMutation(deleteSingle=T2.TDelete(row=b"m", columns=[col(b"cf:a", 2)], deleteType=DT.DELETE_COLUMNS)),
        T2.TMutation(put=T2.TPut(row=b"m", columnValues=[cv(b"cf:b", b"b", 5), cv(b"cf:a", b"a3", 3)])),
    ]))
    assert stamps(client, table, b"m") == [(b"cf:a", 3), (b"cf:b", 5)]
    with pytest.raises(T2.TIOError) as e:
        client.mutateRow(table, T2.TRowMutations(row=b"m", mutations=[
            T2.TMutation(put=T2.TPut(row=b"other", columnValues=[cv(b"cf:a", b"x", 9)]))]))
    assert e.value.message == ("org.apache.hadoop.hbase.client.WrongRowIOException: The row in the recently added "
                               "Put/Delete <other> doesn't match the original one <m>")
    assert stamps(client, table, b"m") == [(b"cf:a", 3), (b"cf:b", 5)]


# ------------------------------------------------------------------------------------------------ scans

@pytest.fixture
def rows25(client, table) -> bytes:
    client.putMultiple(table, [T2.TPut(row=b"r%02d" % i, columnValues=[cv(b"cf:a", b"%d" % i, 10 + i),
                                                                       cv(b"cf:b", b"b", 1), cv(b"meta:m", b"m", 1)])
                               for i in range(25)])
    return table


def test_scanner_pages_to_the_end_and_closes(client, rows25):
    table = rows25
    sid = client.openScanner(table, T2.TScan(caching=10, columns=[col(b"cf:a")]))
    pages = [client.getScannerRows(sid, 10) for _ in range(4)]
    assert [len(p) for p in pages] == [10, 10, 5, 0]
    assert [r.row for p in pages for r in p] == [b"r%02d" % i for i in range(25)]
    assert cells(pages[2][4]) == [(b"cf:a", 34, b"24")]
    assert client.getScannerRows(sid, 10) == []  # still at the end
    client.closeScanner(sid)
    for call in (lambda: client.getScannerRows(sid, 1), lambda: client.getScannerRows(987654, 1)):
        with pytest.raises(T2.TIllegalArgument) as e:
            call()
        assert e.value.message == "Invalid scanner Id"
    assert client.closeScanner(sid) is None  # HBase 2.6: closing an unknown id succeeds
    assert client.getThriftServerType() == T2.TThriftServerType.TWO  # the same connection goes on
    # numRows defaults to 1
    sid = client.openScanner(table, T2.TScan(startRow=b"r20"))
    assert [r.row for r in client.getScannerRows(sid)] == [b"r20"]
    client.closeScanner(sid)


def test_scan_options(client, rows25):
    table = rows25
    assert [r.row for r in client.getScannerResults(table, T2.TScan(), 7)] == [b"r%02d" % i for i in range(7)]
    assert [r.row for r in client.getScannerResults(table, T2.TScan(startRow=b"r10", stopRow=b"r13"), 100)] == [
        b"r10", b"r11", b"r12"]
    reverse = client.getScannerResults(table, T2.TScan(startRow=b"r05", stopRow=b"r02", reversed=True), 100)
    assert [r.row for r in reverse] == [b"r05", b"r04", b"r03"]
    # limit: rows in all, across getScannerRows calls
    assert [row for row, _ in scan_all(client, table, T2.TScan(limit=5), page=2)] == [b"r%02d" % i for i in range(5)]
    prefixed = scan_all(client, table, T2.TScan(filterString=b"PrefixFilter('r1')", columns=[col(b"meta")]))
    assert prefixed == [(b"r%02d" % i, [(b"meta:m", 1, b"m")]) for i in range(10, 20)]
    # batchSize: a row's cells in several results, `partial` while more of the row follows
    batched = client.getScannerResults(table, T2.TScan(startRow=b"r00", stopRow=b"r02", batchSize=2), 10)
    assert [(r.row, len(r.columnValues), r.partial) for r in batched] == [
        (b"r00", 2, True), (b"r00", 1, False), (b"r01", 2, True), (b"r01", 1, False)]
    with pytest.raises(TApplicationException, match="Internal error processing openScanner"):
        client.openScanner(table, T2.TScan(filterString=b"NoSuchFilter()"))


def test_batch_size_slices_rows_as_hbase_does(client, table):
    """TScan.batchSize (Scan.setBatch): at most that many cells per result, a row's slices in (family, qualifier,
    newest first) order with the same row key; getScannerRows' numRows counts results (slices), not rows;
    `partial` (mayHaveMoreCellsInRow) only where more of the row follows, so not on a last slice that is exactly
    full; `limit` counts rows."""
    client.putMultiple(table, [
        T2.TPut(row=b"a", columnValues=[cv(b"cf:%d" % i, b"v", 5) for i in range(3)]),  # exactly one batch
        T2.TPut(row=b"b", columnValues=[cv(b"cf:x", b"v%d" % v, v) for v in range(1, 5)]  # 4 versions of cf:x
                + [cv(b"meta:m", b"m", 1)]),
        T2.TPut(row=b"c", columnValues=[cv(b"two:y", b"y", 1)]),
    ])
    scan = T2.TScan(batchSize=3, maxVersions=10)
    sid = client.openScanner(table, scan)
    first = client.getScannerRows(sid, 2)
    assert [(r.row, len(r.columnValues), r.partial) for r in first] == [(b"a", 3, False), (b"b", 3, True)]
    rest = client.getScannerRows(sid, 10)
    client.closeScanner(sid)
    assert [(r.row, len(r.columnValues), r.partial) for r in rest] == [(b"b", 2, False), (b"c", 1, False)]
    b_cells = cells(first[1]) + cells(rest[0])
    assert b_cells == [(b"cf:x", 4, b"v4"), (b"cf:x", 3, b"v3"), (b"cf:x", 2, b"v2"), (b"cf:x", 1, b"v1"),
                       (b"meta:m", 1, b"m")]  # versions sliced like any cells, in HBase's order
    limited = client.getScannerResults(table, T2.TScan(batchSize=3, maxVersions=10, limit=2), 10)
    assert [(r.row, len(r.columnValues)) for r in limited] == [(b"a", 3), (b"b", 3), (b"b", 2)]


# ------------------------------------------------------------------------------------------------ errors

def test_unknown_tables_and_families_answer_hbase_exceptions(client, table, minihbase_dc1):
    unknown = "org.apache.hadoop.hbase.TableNotFoundException: no_such_table"
    for call in (lambda t: client.get(t, T2.TGet(row=b"r")),
                 lambda t: client.put(t, T2.TPut(row=b"r", columnValues=[cv(b"cf:a", b"v")])),
                 lambda t: client.putMultiple(t, [T2.TPut(row=b"r", columnValues=[cv(b"cf:a", b"v")])]),
                 lambda t: client.deleteMultiple(t, [T2.TDelete(row=b"r")]),
                 lambda t: client.deleteSingle(t, T2.TDelete(row=b"r", columns=[col(b"cf:a")])),
                 lambda t: client.openScanner(t, T2.TScan()),
                 lambda t: client.getRegionLocation(t, b"r", False)):
        with pytest.raises(T2.TIOError) as e:
            call(b"no_such_table")
        assert e.value.message == unknown
    # HBase's RegionLocator scans hbase:meta: an unknown table simply has no region.
    assert client.getAllRegionLocations(b"no_such_table") == []

    nsf = "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: Column family nope does not exist in"
    with pytest.raises(T2.TIOError) as e:
        client.put(table, T2.TPut(row=b"r", columnValues=[cv(b"nope:q", b"v")]))
    assert e.value.message.startswith(nsf)
    with pytest.raises(T2.TIOError) as e:
        client.get(table, T2.TGet(row=b"r", columns=[col(b"nope")]))
    assert e.value.message.startswith(nsf)
    # putMultiple through Table.put(List): the good puts are written, the bad one is reported.
    region = minihbase_dc1.status()["tables"][table.decode()]["regions"][0]
    with pytest.raises(T2.TIOError) as e:
        client.putMultiple(table, [T2.TPut(row=b"ok1", columnValues=[cv(b"cf:a", b"1", 1)]),
                                   T2.TPut(row=b"bad1", columnValues=[cv(b"nope:q", b"v")]),
                                   T2.TPut(row=b"bad2", columnValues=[cv(b"cf:a", b"v"), cv(b"nope:q", b"v")]),
                                   T2.TPut(row=b"ok2", columnValues=[cv(b"meta:m", b"2", 2)])])
    assert e.value.message.startswith(f"Failed 2 actions: {nsf} region {region['name']} in table '{table.decode()}'")
    assert e.value.message.endswith(f": 2 times, servers with issues: {region['server']}")
    assert every_version(client, table, b"ok1") == [(b"cf:a", 1, b"1")]
    assert every_version(client, table, b"ok2") == [(b"meta:m", 2, b"2")]
    assert client.get(table, T2.TGet(row=b"bad2")).columnValues == []
    # Bad input HBase's handler does not catch: INTERNAL_ERROR, nothing written.
    for bad, method in ((T2.TPut(row=b"x", columnValues=[]), "put"),
                        (T2.TPut(row=b"", columnValues=[cv(b"cf:a", b"v")]), "put"),
                        (T2.TPut(row=b"x", columnValues=[cv(b"cf:a", b"v", -1)]), "put")):
        with pytest.raises(TApplicationException) as e:
            client.put(table, bad)
        assert (e.value.type, e.value.message) == (TApplicationException.INTERNAL_ERROR,
                                                   f"Internal error processing {method}")
    assert client.get(table, T2.TGet(row=b"x")).columnValues == []


def test_unimplemented_and_unknown_methods_leave_the_connection_usable(minihbase_dc1, table):
    sock = TSocket(minihbase_dc1.thrift2_host, minihbase_dc1.thrift2_port, socket_timeout=30000)
    trans = TBufferedTransportFactory().get_transport(sock)
    trans.open()
    try:
        prot = TBinaryProtocolFactory().get_protocol(trans)
        client, extra = TClient(T2.THBaseService, prot), TClient(EXTRA.THBaseService, prot)
        with pytest.raises(T2.TIOError) as e:
            client.increment(table, T2.TIncrement(row=b"r", columns=[
                T2.TColumnIncrement(family=b"cf", qualifier=b"c")]))
        assert e.value.message == "java.lang.UnsupportedOperationException: increment is not implemented by minihbase"
        with pytest.raises(T2.TIOError, match="listNamespaces is not implemented by minihbase"):
            client.listNamespaces()
        with pytest.raises(TApplicationException) as e:
            extra.noSuchMethod(1)
        assert e.value.type == TApplicationException.UNKNOWN_METHOD
        # The very same connection still serves.
        client.put(table, T2.TPut(row=b"r", columnValues=[cv(b"cf:a", b"still here", 7)]))
        assert every_version(client, table, b"r") == [(b"cf:a", 7, b"still here")]
        assert client.getThriftServerType() == T2.TThriftServerType.TWO
    finally:
        trans.close()


# ------------------------------------------------------------------------------------------------ regions

def test_region_locations_match_thrift1_regions(client, minihbase_dc1):
    name = _name("split")
    minihbase_dc1.create_table(name, {"cf": {}}, split_keys=[b"g", b"p"])
    locations = client.getAllRegionLocations(name.encode())
    thrift1 = minihbase_dc1.connection().table(name).regions()
    assert [(loc.regionInfo.startKey, loc.regionInfo.endKey, loc.serverName.hostName.encode(), loc.serverName.port)
            for loc in locations] == [(r["start_key"], r["end_key"], r["server_name"], r["port"]) for r in thrift1]
    servers = {rs["servername"] for rs in minihbase_dc1.region_servers}
    for loc in locations:
        sn = loc.serverName
        assert f"{sn.hostName},{sn.port},{sn.startCode}" in servers
        info = loc.regionInfo
        # HBase's regionLocationFromHBase never sets regionId: the required field goes out as 0.
        assert (info.regionId, info.tableName, info.offline, info.split, info.replicaId) == (
            0, name.encode(), False, False, 0)
    assert len({loc.serverName.port for loc in locations}) == 3  # one region per region server
    middle = client.getRegionLocation(name.encode(), b"h", False)
    assert (middle.regionInfo.startKey, middle.regionInfo.endKey) == (b"g", b"p")
    assert middle == locations[1]
    assert client.getRegionLocation(name.encode(), b"", True) == locations[0]


# ------------------------------------------------------------------------------------------------ with Thrift1

def test_thrift1_and_thrift2_see_the_same_cells(client, table, minihbase_dc1):
    happy = minihbase_dc1.connection().table(table)
    happy.put(b"one", {b"cf:a": b"from thrift1"}, timestamp=1234)
    assert every_version(client, table, b"one") == [(b"cf:a", 1234, b"from thrift1")]
    client.putMultiple(table, [T2.TPut(row=b"two", columnValues=[cv(b"cf:a", b"old", 5), cv(b"cf:a", b"new", 6),
                                                                 cv(b"meta:m", b"m", 7)])])
    assert happy.row(b"two", include_timestamp=True) == {b"cf:a": (b"new", 6), b"meta:m": (b"m", 7)}
    assert happy.cells(b"two", b"cf:a", versions=5, include_timestamp=True) == [(b"new", 6), (b"old", 5)]
    client.deleteSingle(table, T2.TDelete(row=b"two", columns=[col(b"cf:a", 6)], deleteType=DT.DELETE_COLUMN))
    assert happy.row(b"two", include_timestamp=True) == {b"cf:a": (b"old", 5), b"meta:m": (b"m", 7)}
    happy.delete(b"one")
    assert client.get(table, T2.TGet(row=b"one")).columnValues == []


def test_latency_injection_slows_thrift2_calls(client, minihbase_dc1):
    client.getThriftServerType()
    minihbase_dc1.set_latency(150)
    try:
        started = time.monotonic()
        for _ in range(3):
            client.getThriftServerType()
        assert time.monotonic() - started >= 0.45
    finally:
        minihbase_dc1.set_latency(0)


def test_writes_go_on_while_a_region_server_dies(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=2)
    cluster.create_table("t", {"cf": {"max_versions": 3}})
    c = connect(cluster.thrift2_host, cluster.thrift2_port, timeout=60000)
    try:
        c.putMultiple(b"t", [T2.TPut(row=b"before%02d" % i, columnValues=[cv(b"cf:a", b"b", i)]) for i in range(20)])
        [victim] = c.getAllRegionLocations(b"t")
        servername = f"{victim.serverName.hostName},{victim.serverName.port},{victim.serverName.startCode}"
        assert cluster.kill_rs(servername) == servername
        # The client inside the gateway waits for the region to come back (the master replays the WAL).
        c.putMultiple(b"t", [T2.TPut(row=b"after%02d" % i, columnValues=[cv(b"cf:a", b"a", i)]) for i in range(20)])
        rows = scan_all(c, b"t", T2.TScan())
        assert len(rows) == 40 and rows[0] == (b"after00", [(b"cf:a", 0, b"a")])
        assert rows[20] == (b"before00", [(b"cf:a", 0, b"b")])
        [moved] = c.getAllRegionLocations(b"t")
        assert moved.serverName.port != victim.serverName.port
    finally:
        c.close()


# ------------------------------------------------------------------------------------------------ replication

def shell(cluster, *statements: str) -> str:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_thrift2_writes_replicate_like_thrift1_writes(minihbase_pair):
    dc1, dc2 = minihbase_pair
    name = _name("rep")
    for cluster in (dc1, dc2):
        cluster.create_table(name, {"d": {"max_versions": 3, "replication_scope": 1}}, split_keys=[b"m"])
    peer = uuid.uuid4().hex[:6]
    shell(dc1, f"add_peer '{peer}', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'{name}' => []}}")
    src, dst = connect(dc1.thrift2_host, dc1.thrift2_port), connect(dc2.thrift2_host, dc2.thrift2_port)
    try:
        src.putMultiple(name.encode(), [
            T2.TPut(row=b"a", columnValues=[cv(b"d:v", b"a1", 100), cv(b"d:v", b"a2", 200), cv(b"d:w", b"w", 50)]),
            T2.TPut(row=b"z", timestamp=300, columnValues=[cv(b"d:v", b"z")]),
            T2.TPut(row=b"skip", durability=T2.TDurability.SKIP_WAL, columnValues=[cv(b"d:v", b"not logged", 1)]),
        ])
        src.deleteSingle(name.encode(), T2.TDelete(row=b"a", columns=[col(b"d:v", 100)], deleteType=DT.DELETE_COLUMN))
        dc1.connection().table(name).put(b"t1", {b"d:v": b"thrift1"}, timestamp=400)
        expected = {b"a": [(b"d:v", 200, b"a2"), (b"d:w", 50, b"w")], b"t1": [(b"d:v", 400, b"thrift1")],
                    b"z": [(b"d:v", 300, b"z")]}
        wait_for(lambda: dict(scan_all(dst, name.encode(), T2.TScan(maxVersions=3))) == expected,
                 what="the Thrift2 and Thrift1 edits on dc2")
        # SKIP_WAL: written on dc1, never shipped (nothing in the WAL to replicate).
        assert every_version(src, name.encode(), b"skip") == [(b"d:v", 1, b"not logged")]
        # The version deleted on dc1 (a Delete marker, key type 8) is masked on dc2 too, for later puts as well.
        dst.put(name.encode(), T2.TPut(row=b"a", columnValues=[cv(b"d:v", b"late", 100)]))
        assert every_version(dst, name.encode(), b"a") == expected[b"a"]
    finally:
        src.close()
        dst.close()
        shell(dc1, f"remove_peer '{peer}'")


# ------------------------------------------------------------------------------------------------ gateways

def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "minihbase", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env=env)


def refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_several_gateways_stop_start_and_keep_their_ports(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, thrift_gateways=2, thrift2_gateways=2)
    ep = cluster.endpoints
    t1, t2 = ep["thrift_gateways"], ep["thrift2_gateways"]
    assert [(g["index"], g["host"], g["alive"]) for g in t1 + t2] == [
        (0, "127.0.0.1", True), (1, "127.0.0.1", True), (0, "127.0.0.1", True), (1, "127.0.0.1", True)]
    ports = [g["port"] for g in t1 + t2]
    assert len(set(ports)) == 4
    assert ep["thrift"] == {"host": "127.0.0.1", "port": t1[0]["port"]}
    assert ep["thrift2"] == {"host": "127.0.0.1", "port": t2[0]["port"]}
    assert (cluster.thrift_port, cluster.thrift2_host, cluster.thrift2_port) == (
        t1[0]["port"], "127.0.0.1", t2[0]["port"])
    extra = ep["connection"]["extra"]
    assert extra["thrift_servers"] == f"127.0.0.1:{t1[0]['port']},127.0.0.1:{t1[1]['port']}"
    assert extra["thrift2_servers"] == f"127.0.0.1:{t2[0]['port']},127.0.0.1:{t2[1]['port']}"
    uri_extra = json.loads(parse_qs(urlparse(ep["connection_uri"]).query)["__extra__"][0])
    assert uri_extra == extra
    assert cluster.thrift_gateways == t1 and cluster.thrift2_gateways == t2

    # Every gateway serves the same data.
    cluster.create_table("t", {"cf": {}})
    first = cluster.connection()
    first.table("t").put(b"r", {b"cf:a": b"v"}, timestamp=5)
    for g in t1:
        assert happybase.Connection(g["host"], g["port"]).table("t").row(b"r") == {b"cf:a": b"v"}
    clients = [connect(g["host"], g["port"]) for g in t2]
    for c in clients:
        assert every_version(c, b"t", b"r") == [(b"cf:a", 5, b"v")]

    # Stopping one: its port refuses connections, its open connection drops, the others go on.
    sid = clients[1].openScanner(b"t", T2.TScan())
    assert cluster.stop_gateway("thrift2", 1) == {**t2[1], "alive": False}
    assert refused("127.0.0.1", t2[1]["port"])
    with pytest.raises(TTransportException):
        clients[1].getThriftServerType()
    assert every_version(clients[0], b"t", b"r") == [(b"cf:a", 5, b"v")]
    assert [g["alive"] for g in cluster.status()["thrift2_gateways"]] == [True, False]
    assert [g["alive"] for g in cluster.thrift2_gateways] == [True, False]
    with pytest.raises(MiniHBaseError, match="thrift2 gateway 1 is not running"):
        cluster.stop_gateway("thrift2", 1)
    # ...and back on the same port, as a restarted gateway process: a fresh scanner table.
    assert cluster.start_gateway("thrift2", 1) == t2[1]
    again = connect(t2[1]["host"], t2[1]["port"])
    with pytest.raises(T2.TIllegalArgument, match="Invalid scanner Id"):
        again.getScannerRows(sid, 1)
    assert every_version(again, b"t", b"r") == [(b"cf:a", 5, b"v")]
    again.close()
    clients[0].close()

    # The same through the CLI, for a Thrift1 gateway.
    workdir = str(cluster.workdir)
    stopped = cli("stop-gateway", "dc1", "thrift", "1", "--workdir", workdir)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"gateway": {**t1[1], "alive": False}}
    assert refused("127.0.0.1", t1[1]["port"])
    assert first.table("t").row(b"r") == {b"cf:a": b"v"}  # gateway 0 unaffected
    status = cli("status", "--workdir", workdir)
    assert f"thrift gateway [1] 127.0.0.1:{t1[1]['port']}  DOWN" in status.stdout
    assert cli("start-gateway", "dc1", "thrift", "1", "--workdir", workdir).returncode == 0
    assert happybase.Connection("127.0.0.1", t1[1]["port"]).table("t").row(b"r") == {b"cf:a": b"v"}
    bad = cli("stop-gateway", "dc1", "thrift", "7", "--workdir", workdir)
    assert bad.returncode == 1 and "thrift gateway index 7 out of range (the cluster has 2)" in bad.stderr
    with pytest.raises(MiniHBaseError, match="kind must be 'thrift' or 'thrift2', got 'thrift3'"):
        cluster._control("/control/stop-gateway", {"kind": "thrift3", "index": 0})
    first.close()

    # Ports kept across a restart (ports.json), every gateway alive again.
    saved = json.loads((cluster.workdir / "dc1" / "ports.json").read_text())
    assert (saved["thrift_ports"], saved["thrift2_ports"]) == (ports[:2], ports[2:])
    cluster.stop_gateway("thrift", 0)
    cluster.restart()
    ep = cluster.endpoints
    assert [g["port"] for g in ep["thrift_gateways"] + ep["thrift2_gateways"]] == ports
    assert all(g["alive"] for g in ep["thrift_gateways"] + ep["thrift2_gateways"])
    c = connect("127.0.0.1", ports[3])
    assert every_version(c, b"t", b"r") == [(b"cf:a", 5, b"v")]
    c.close()


def test_a_cluster_without_thrift2(minihbase_factory):
    cluster = minihbase_factory("dc1", region_servers=1, thrift2_gateways=0)
    ep = cluster.endpoints
    assert ep["thrift2"] is None and ep["thrift2_gateways"] == []
    assert (cluster.thrift2_host, cluster.thrift2_port) == (None, None)
    assert "thrift2_servers" not in ep["connection"]["extra"]
    assert "thrift_servers" not in ep["connection"]["extra"]  # one Thrift1 gateway: `host`/`port` say it all
    assert [g["index"] for g in ep["thrift_gateways"]] == [0]
    with pytest.raises(MiniHBaseError, match=r"thrift2 gateway index 0 out of range \(the cluster has 0\)"):
        cluster.stop_gateway("thrift2", 0)
