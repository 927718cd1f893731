"""Stock happybase against minihbase's Thrift1 gateway: results as HBase gives them.

One cluster for the module (`minihbase_dc1`); each test works in its own table.
"""
from __future__ import annotations

import sys
import uuid
from collections import OrderedDict

import happybase
import pytest
from thriftpy2.thrift import TApplicationException

from minihbase.region import parse_store_file

HBASE = sys.modules[happybase.connection.Hbase.__module__]  # the IDL happybase loads (HBase's own)
HBaseIOError, IllegalArgument, AlreadyExists = HBASE.IOError, HBASE.IllegalArgument, HBASE.AlreadyExists

pytestmark = pytest.mark.integration


@pytest.fixture
def conn(minihbase_dc1):
    c = happybase.Connection(minihbase_dc1.thrift_host, minihbase_dc1.thrift_port, timeout=30000)
    yield c
    c.close()


def _name(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def table(conn):
    name = _name()
    conn.create_table(name, {"cf": {"max_versions": 3}, "meta": {"max_versions": 1}})
    yield conn.table(name)
    conn.delete_table(name, disable=True)


def test_tables_and_families(conn):
    name = _name()
    conn.create_table(name, {"a": {"max_versions": 5, "time_to_live": 3600}, "b": {}})
    try:
        assert name.encode() in conn.tables()
        families = conn.table(name).families()
        assert sorted(families) == [b"a", b"b"]
        assert families[b"a"]["max_versions"] == 5
        assert families[b"a"]["time_to_live"] == 3600
        assert families[b"b"]["max_versions"] == 3  # the IDL's default
        assert families[b"b"]["time_to_live"] == 2147483647  # HConstants.FOREVER
        assert conn.is_table_enabled(name) is True
        conn.disable_table(name)
        assert conn.is_table_enabled(name) is False
        conn.enable_table(name)
        assert conn.is_table_enabled(name) is True
    finally:
        conn.delete_table(name, disable=True)
    assert name.encode() not in conn.tables()


def test_put_row_rows_and_latest_version(table):
    table.put(b"r1", {b"cf:a": b"old"}, timestamp=1000)
    table.put(b"r1", {b"cf:a": b"new", b"meta:m": b"x"}, timestamp=2000)
    assert table.row(b"r1") == {b"cf:a": b"new", b"meta:m": b"x"}
    assert table.row(b"r1", include_timestamp=True) == {b"cf:a": (b"new", 2000), b"meta:m": (b"x", 2000)}
    assert table.row(b"r1", columns=[b"cf"]) == {b"cf:a": b"new"}
    assert table.row(b"r1", columns=[b"meta:m"]) == {b"meta:m": b"x"}
    # Ts reads see [0, ts): the older version.
    assert table.row(b"r1", timestamp=2000) == {b"cf:a": b"old"}
    assert table.row(b"nope") == {}
    assert table.rows([b"r1", b"nope"]) == [(b"r1", {b"cf:a": b"new", b"meta:m": b"x"})]


def test_put_of_same_timestamp_replaces_value(table):
    table.put(b"r", {b"cf:a": b"first"}, timestamp=5000)
    table.put(b"r", {b"cf:a": b"second"}, timestamp=5000)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"second", 5000)]


def test_cells_versions_bounded_by_family(table):
    for ts in (1, 2, 3, 4, 5):
        table.put(b"r", {b"cf:a": b"v%d" % ts, b"meta:m": b"m%d" % ts}, timestamp=ts)
    # VERSIONS => 3 keeps the newest three; 1 keeps one.
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"v5", 5), (b"v4", 4), (b"v3", 3)]
    assert table.cells(b"r", b"cf:a", versions=2) == [b"v5", b"v4"]
    assert table.cells(b"r", b"cf:a", timestamp=5) == [b"v4", b"v3"]
    assert table.cells(b"r", b"meta:m") == [b"m5"]
    # A scan shows only the newest version of each column.
    assert list(table.scan(include_timestamp=True)) == [(b"r", {b"cf:a": (b"v5", 5), b"meta:m": (b"m5", 5)})]


def test_deletes_hide_older_versions_including_later_arrivals(table):
    for ts in (10, 20, 30):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    table.delete(b"r", columns=[b"cf:a"], timestamp=20)  # DeleteColumn: every version <= 20
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"v30", 30)]
    table.put(b"r", {b"cf:a": b"late"}, timestamp=15)  # arrives after the marker: still masked
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"v30", 30)]
    table.put(b"r", {b"cf:a": b"v40"}, timestamp=40)
    assert table.row(b"r") == {b"cf:a": b"v40"}
    # A whole-row delete without timestamp masks everything up to now (DeleteFamily per family).
    table.put(b"r", {b"meta:m": b"x"})
    table.delete(b"r")
    assert table.row(b"r") == {}
    assert table.cells(b"r", b"cf:a") == []


def test_delete_of_one_column_and_family(table):
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"meta:m": b"3"})
    table.delete(b"r", columns=[b"cf:a"])
    assert table.row(b"r") == {b"cf:b": b"2", b"meta:m": b"3"}
    table.delete(b"r", columns=[b"cf"])
    assert table.row(b"r") == {b"meta:m": b"3"}


def test_ten_thousand_row_batches(table):
    with table.batch(batch_size=1000) as b:
        for i in range(10000):
            b.put(b"row-%05d" % i, {b"cf:a": b"%d" % i, b"meta:m": b"x" * 20})
    rows = list(table.scan(batch_size=1000))
    assert len(rows) == 10000
    assert [k for k, _ in rows] == sorted(b"row-%05d" % i for i in range(10000))
    assert rows[1234] == (b"row-01234", {b"cf:a": b"1234", b"meta:m": b"x" * 20})
    got = table.rows([b"row-00007", b"row-09999", b"row-10000"])
    assert got == [(b"row-00007", {b"cf:a": b"7", b"meta:m": b"x" * 20}),
                   (b"row-09999", {b"cf:a": b"9999", b"meta:m": b"x" * 20})]
    with table.batch(batch_size=500) as b:
        for i in range(0, 10000, 2):
            b.delete(b"row-%05d" % i)
    assert sum(1 for _ in table.scan(batch_size=700)) == 5000


@pytest.fixture
def scan_table(table):
    for i in range(20):
        table.put(b"k%02d" % i, {b"cf:a": b"a%d" % i, b"cf:b": b"b%d" % i, b"meta:m": b"m%d" % i},
                  timestamp=1000 + i)
    return table


def test_scan_start_stop_prefix_limit(scan_table):
    keys = [k for k, _ in scan_table.scan(row_start=b"k05", row_stop=b"k08")]
    assert keys == [b"k05", b"k06", b"k07"]
    assert [k for k, _ in scan_table.scan(row_prefix=b"k1")] == [b"k%02d" % i for i in range(10, 20)]
    assert [k for k, _ in scan_table.scan(limit=3, batch_size=2)] == [b"k00", b"k01", b"k02"]
    assert [k for k, _ in scan_table.scan(row_start=b"k18")] == [b"k18", b"k19"]


def test_scan_columns_and_timestamp_upper_bound(scan_table):
    rows = dict(scan_table.scan(columns=[b"cf:a", b"meta"]))
    assert rows[b"k03"] == {b"cf:a": b"a3", b"meta:m": b"m3"}
    # timestamp is exclusive: rows written at 1000..1004 only.
    assert [k for k, _ in scan_table.scan(timestamp=1005)] == [b"k00", b"k01", b"k02", b"k03", b"k04"]
    scan_table.put(b"k00", {b"cf:a": b"newer"}, timestamp=5000)
    assert dict(scan_table.scan(row_stop=b"k01", timestamp=5000)) == {
        b"k00": {b"cf:a": b"a0", b"cf:b": b"b0", b"meta:m": b"m0"}}
    assert dict(scan_table.scan(row_stop=b"k01"))[b"k00"][b"cf:a"] == b"newer"


def test_scan_reversed_sorted_columns_and_include_timestamp(scan_table):
    keys = [k for k, _ in scan_table.scan(row_start=b"k05", row_stop=b"k02", reverse=True)]
    assert keys == [b"k05", b"k04", b"k03"]
    assert [k for k, _ in scan_table.scan(reverse=True, limit=2)] == [b"k19", b"k18"]
    row = next(iter(scan_table.scan(row_start=b"k07", sorted_columns=True, include_timestamp=True)))
    assert row == (b"k07", OrderedDict([(b"cf:a", (b"a7", 1007)), (b"cf:b", (b"b7", 1007)),
                                        (b"meta:m", (b"m7", 1007))]))


def test_scan_batching_splits_rows(scan_table):
    parts = list(scan_table.scan(row_start=b"k00", row_stop=b"k02", scan_batching=2))
    assert parts == [(b"k00", {b"cf:a": b"a0", b"cf:b": b"b0"}), (b"k00", {b"meta:m": b"m0"}),
                     (b"k01", {b"cf:a": b"a1", b"cf:b": b"b1"}), (b"k01", {b"meta:m": b"m1"})]


def test_scan_filters_for_copy_and_count(scan_table):
    first = dict(scan_table.scan(filter="FirstKeyOnlyFilter()"))
    assert len(first) == 20 and first[b"k04"] == {b"cf:a": b"a4"}
    keys_only = dict(scan_table.scan(filter="KeyOnlyFilter()", row_stop=b"k01"))
    assert keys_only == {b"k00": {b"cf:a": b"", b"cf:b": b"", b"meta:m": b""}}
    count = list(scan_table.scan(filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()"))
    assert count[:2] == [(b"k00", {b"cf:a": b""}), (b"k01", {b"cf:a": b""})] and len(count) == 20
    assert [k for k, _ in scan_table.scan(filter="PrefixFilter('k1') AND FirstKeyOnlyFilter()")] == [
        b"k%02d" % i for i in range(10, 20)]
    assert dict(scan_table.scan(filter="ValueFilter(=, 'binary:b3')")) == {b"k03": {b"cf:b": b"b3"}}
    assert [k for k, _ in scan_table.scan(filter="PrefixFilter('k0') OR PrefixFilter('k19')")] == [
        b"k%02d" % i for i in list(range(10)) + [19]]
    assert dict(scan_table.scan(filter="KeyOnlyFilter(true) AND ColumnPrefixFilter('b')", row_stop=b"k01")) == {
        b"k00": {b"cf:b": b"\x00\x00\x00\x02"}}


def test_mutate_row_ts_applies_deletes_before_put_with_one_timestamp(table, conn):
    Mutation = HBASE.Mutation

    table.put(b"r", {b"cf:a": b"old", b"cf:b": b"keep"}, timestamp=100)
    conn.client.mutateRowTs(table.name, b"r", [
        Mutation(isDelete=True, column=b"cf:b"), Mutation(column=b"cf:a", value=b"new")], 200, {})
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"new", 200)}
    # The same column deleted and put at one timestamp: the delete masks the put, as in HBase.
    conn.client.mutateRowTs(table.name, b"r2", [
        Mutation(column=b"cf:a", value=b"v"), Mutation(isDelete=True, column=b"cf:a")], 300, {})
    assert table.row(b"r2") == {}


def test_counters(table):
    assert table.counter_get(b"c", b"cf:n") == 0
    assert table.counter_inc(b"c", b"cf:n") == 1
    assert table.counter_inc(b"c", b"cf:n", 10) == 11
    assert table.counter_dec(b"c", b"cf:n", 3) == 8
    assert table.row(b"c") == {b"cf:n": (8).to_bytes(8, "big")}
    # An increment's cell is newer than the previous one even within one millisecond (max(now, ts + 1)).
    cells = table.cells(b"c", b"cf:n", include_timestamp=True)
    assert [v for v, _ in cells] == [(8).to_bytes(8, "big"), (11).to_bytes(8, "big"), (1).to_bytes(8, "big")]
    assert cells[0][1] > cells[1][1] > cells[2][1]
    table.counter_set(b"d", b"cf:n", 42)
    assert table.counter_inc(b"d", b"cf:n", -2) == 40
    table.put(b"c", {b"cf:s": b"abc"})
    with pytest.raises(HBaseIOError, match="Field is not a long, it's 3 bytes wide"):
        table.counter_inc(b"c", b"cf:s")


def test_regions_of_a_presplit_table(minihbase_dc1, conn):
    name = _name("split")
    minihbase_dc1.create_table(name, {"cf": {}}, split_keys=[b"g", b"p"])
    try:
        regions = conn.table(name).regions()
        assert [(r["start_key"], r["end_key"]) for r in regions] == [(b"", b"g"), (b"g", b"p"), (b"p", b"")]
        servers = {(rs["host"], rs["port"]) for rs in minihbase_dc1.region_servers}
        for r in regions:
            assert r["version"] == 1
            assert r["server_name"] == b"127.0.0.1"  # hostname only, as HBase's handler gives it
            assert (r["server_name"].decode(), r["port"]) in servers
            assert r["name"].startswith(f"{name},{r['start_key'].decode()},{r['id']}.".encode())
        assert len({r["port"] for r in regions}) == 3  # one region per region server
        table = conn.table(name)
        with table.batch() as b:
            for key in (b"a", b"h", b"q", b"z"):
                b.put(key, {b"cf:x": key})
        assert [k for k, _ in table.scan()] == [b"a", b"h", b"q", b"z"]
        assert [k for k, _ in table.scan(reverse=True)] == [b"z", b"q", b"h", b"a"]
        assert [k for k, _ in table.scan(row_start=b"h", row_stop=b"r")] == [b"h", b"q"]
    finally:
        conn.delete_table(name, disable=True)
    assert conn.client.getTableRegions(b"no_such_table") == []


def test_bad_input_gets_hbase_errors_and_the_connection_survives(table, conn):
    with pytest.raises(HBaseIOError) as e:
        conn.table("no_such_table").row(b"r")
    assert e.value.message.startswith(b"org.apache.hadoop.hbase.TableNotFoundException: no_such_table")
    with pytest.raises(HBaseIOError, match="NoSuchColumnFamilyException: Column family nope does not exist"):
        table.put(b"r", {b"nope:q": b"v"})
    with pytest.raises(HBaseIOError, match="NoSuchColumnFamilyException"):
        table.row(b"r", columns=[b"nope"])
    with pytest.raises(TApplicationException) as e:
        list(table.scan(filter="NoSuchFilter()"))
    assert e.value.type == TApplicationException.INTERNAL_ERROR
    assert e.value.message == b"Internal error processing scannerOpenWithScan"
    with pytest.raises(TApplicationException):
        list(table.scan(filter="FirstKeyOnlyFilter("))
    with pytest.raises(AlreadyExists, match="table name already in use"):
        conn.create_table(table.name, {"cf": {}})
    with pytest.raises(HBaseIOError, match="TableNotDisabledException"):
        conn.delete_table(table.name)
    with pytest.raises(IllegalArgument, match="scanner ID is invalid"):
        conn.client.scannerGetList(987654, 10)
    with pytest.raises(HBaseIOError, match="getRowOrBefore is not implemented"):
        conn.client.getRowOrBefore(table.name, b"r", b"cf")
    with pytest.raises(IllegalArgument, match="Illegal character"):
        conn.create_table("bad name!", {"cf": {}})
    # Nothing was written by the failed calls, and the same connection still serves.
    assert table.row(b"r") == {}
    table.put(b"r", {b"cf:a": b"ok"})
    assert table.row(b"r") == {b"cf:a": b"ok"}


def test_writes_to_a_disabled_table_fail(conn):
    name = _name()
    conn.create_table(name, {"cf": {}})
    try:
        conn.disable_table(name)
        with pytest.raises(HBaseIOError) as e:
            conn.table(name).put(b"r", {b"cf:a": b"v"})
        assert e.value.message.startswith(
            f"org.apache.hadoop.hbase.TableNotEnabledException: {name} is disabled.".encode())
        with pytest.raises(HBaseIOError, match="TableNotEnabledException"):
            list(conn.table(name).scan())
        conn.enable_table(name)
        conn.table(name).put(b"r", {b"cf:a": b"v"})
        assert conn.table(name).row(b"r") == {b"cf:a": b"v"}
    finally:
        conn.delete_table(name, disable=True)


def test_append_and_check_and_put(table, conn):
    table.put(b"r", {b"cf:a": b"ab"})
    cells = conn.client.append(HBASE.TAppend(table=table.name, row=b"r", columns=[b"cf:a", b"cf:new"],
                                             values=[b"cd", b"x"]))
    assert [c.value for c in cells] == [b"abcd", b"x"]
    assert table.row(b"r") == {b"cf:a": b"abcd", b"cf:new": b"x"}
    put_b = HBASE.Mutation(column=b"cf:b", value=b"1")
    assert conn.client.checkAndPut(table.name, b"r", b"cf:a", b"wrong", put_b, {}) is False
    assert b"cf:b" not in table.row(b"r")
    assert conn.client.checkAndPut(table.name, b"r", b"cf:a", b"abcd", put_b, {}) is True
    assert table.row(b"r")[b"cf:b"] == b"1"


def test_minor_compaction_keeps_delete_markers_and_major_drops_them(table, conn, minihbase_dc1):
    table.put(b"r", {b"cf:a": b"1"}, timestamp=10)
    table.delete(b"r", columns=[b"cf:a"], timestamp=10)
    for i in range(3):
        table.put(b"s%d" % i, {b"cf:a": b"%d" % i})
        minihbase_dc1.flush(table.name.decode())
    conn.compact_table(table.name)
    store = next(p for p in minihbase_dc1.local_rootdir.glob(f"data/default/{table.name.decode()}/*/cf"))
    assert len(list(store.iterdir())) == 1  # rewritten into one store file
    table.put(b"r", {b"cf:a": b"late"}, timestamp=5)  # a minor compaction keeps the marker: still masked
    assert table.row(b"r") == {}
    # HBase's "deletes mask puts until a major compaction": afterwards an older put is visible again.
    conn.compact_table(table.name, major=True)
    table.put(b"r", {b"cf:a": b"late"}, timestamp=5)
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"late", 5)}
    assert [k for k, _ in table.scan()] == [b"r", b"s0", b"s1", b"s2"]
    # ...and from the store files, not only from memory (PUT is type 4, as in HBase's KeyValue.Type).
    cells = [c for f in store.iterdir() for c in parse_store_file(f.read_bytes())[1]]
    assert cells and {c[4] for c in cells} == {4}
