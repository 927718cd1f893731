"""minihbase's pure parts, exactly: storage semantics, the filter language, HDFS quota arithmetic and messages,
WAL records and names, JMX ObjectName patterns. No services are started (these run in milliseconds)."""
from __future__ import annotations

import re

import pytest

from minihbase.cells import DELETE, DELETE_COLUMN, DELETE_FAMILY, PUT, Cell
from minihbase.config import ConfigError, build, cluster_from_defaults
from minihbase.errors import JavaIllegalArgument
from minihbase.filters import parse_filter
from minihbase.hdfs import DSQuotaExceeded, MiniHDFS, NSQuotaExceeded, long2string
from minihbase.jmx import MalformedObjectName, object_name_matches
from minihbase.region import ALL_COLUMNS, ColumnSelector, Region, parse_store_file, store_file_bytes
from minihbase.schema import FamilyDescriptor, RegionInfo, TableDescriptor
from minihbase.wal import WAL_MAGIC, WALEntry, parse_wal_name, read_entries, wal_file_name

NOW = 10_000_000


def region(versions: int = 3, ttl: int = 2147483647) -> Region:
    desc = TableDescriptor(b"t", {b"cf": FamilyDescriptor(b"cf", versions, ttl), b"m": FamilyDescriptor(b"m", 1)})
    return Region(RegionInfo(b"t", b"", b"", 1), desc)


def put(r: Region, row: bytes, col: bytes, ts: int, value: bytes) -> None:
    fam, _, qual = col.partition(b":")
    r.apply([Cell(row, fam, qual, ts, PUT, value)], r.max_seq + 1)


def delete(r: Region, row: bytes, col: bytes, ts: int, typ: int) -> None:
    fam, _, qual = col.partition(b":")
    r.apply([Cell(row, fam, qual, ts, typ)], r.max_seq + 1)


def read(r: Region, row: bytes, versions: int = 1, time_max=None, selector=ALL_COLUMNS):
    return r.read_row(row, selector, time_max, versions, NOW)


# ------------------------------------------------------------------------------------------------ storage

def test_same_timestamp_replaces_and_versions_are_bounded():
    r = region(versions=2)
    for ts, v in ((1, b"a"), (3, b"c"), (2, b"b"), (3, b"C")):
        put(r, b"r", b"cf:q", ts, v)
    assert read(r, b"r", versions=5) == [(b"cf:q", 3, b"C"), (b"cf:q", 2, b"b")]


def test_delete_column_masks_older_and_later_arriving_puts():
    r = region()
    put(r, b"r", b"cf:q", 10, b"ten")
    put(r, b"r", b"cf:q", 30, b"thirty")
    delete(r, b"r", b"cf:q", 20, DELETE_COLUMN)
    assert read(r, b"r", versions=3) == [(b"cf:q", 30, b"thirty")]
    put(r, b"r", b"cf:q", 20, b"late-equal")
    put(r, b"r", b"cf:q", 5, b"late-older")
    assert read(r, b"r", versions=3) == [(b"cf:q", 30, b"thirty")]
    put(r, b"r", b"cf:q", 21, b"newer")
    assert read(r, b"r", versions=3) == [(b"cf:q", 30, b"thirty"), (b"cf:q", 21, b"newer")]


def test_delete_family_and_exact_version():
    r = region()
    put(r, b"r", b"cf:a", 10, b"a")
    put(r, b"r", b"cf:b", 20, b"b")
    put(r, b"r", b"m:x", 10, b"x")
    delete(r, b"r", b"cf:", 15, DELETE_FAMILY)
    assert read(r, b"r") == [(b"cf:b", 20, b"b"), (b"m:x", 10, b"x")]
    put(r, b"r", b"cf:b", 25, b"b2")
    delete(r, b"r", b"cf:b", 25, DELETE)
    assert read(r, b"r", versions=3) == [(b"cf:b", 20, b"b"), (b"m:x", 10, b"x")]
    put(r, b"r", b"cf:b", 25, b"again")  # an exact-version marker masks that version for good
    assert read(r, b"r") == [(b"cf:b", 20, b"b"), (b"m:x", 10, b"x")]


def test_major_compaction_drops_one_familys_markers_and_older_puts_show_again():
    r = region()
    put(r, b"r", b"cf:a", 10, b"a")
    put(r, b"r", b"m:x", 10, b"x")
    delete(r, b"r", b"cf:", 15, DELETE_FAMILY)
    delete(r, b"r", b"cf:b", 12, DELETE_COLUMN)
    delete(r, b"r", b"cf:c", 7, DELETE)
    delete(r, b"r", b"m:x", 20, DELETE_COLUMN)
    assert r.drop_delete_markers(b"cf") == 3
    for col, ts in ((b"cf:a", 9), (b"cf:b", 11), (b"cf:c", 7), (b"m:x", 19)):
        put(r, b"r", col, ts, b"late")
    # cf's markers are gone, so its late puts show; m's marker stays and still masks.
    assert read(r, b"r") == [(b"cf:a", 9, b"late"), (b"cf:b", 11, b"late"), (b"cf:c", 7, b"late")]
    assert r.drop_delete_markers(b"m") == 1 and r.markers == {}


def test_time_range_is_exclusive_and_ttl_hides_expired_cells():
    r = region(ttl=60)
    put(r, b"r", b"cf:q", NOW - 120_000, b"expired")
    put(r, b"r", b"cf:q", NOW - 1_000, b"fresh")
    assert read(r, b"r", versions=3) == [(b"cf:q", NOW - 1_000, b"fresh")]
    assert read(r, b"r", time_max=NOW - 1_000) == []
    assert read(r, b"r", time_max=NOW - 999) == [(b"cf:q", NOW - 1_000, b"fresh")]


def test_time_range_lower_bound_is_inclusive_and_versions_are_counted_inside_it():
    r = region(versions=5, ttl=60)
    for ts in (NOW - 120_000, NOW - 4_000, NOW - 3_000, NOW - 2_000, NOW - 1_000):
        put(r, b"r", b"cf:q", ts, b"%d" % (NOW - ts))
    every = r.read_row(b"r", ALL_COLUMNS, None, 10, NOW, None, NOW - 3_000)
    assert every == [(b"cf:q", NOW - 1_000, b"1000"), (b"cf:q", NOW - 2_000, b"2000"),
                     (b"cf:q", NOW - 3_000, b"3000")]
    # [min, max): both bounds on versions, versions counted inside the range, TTL still hides the expired one.
    assert r.read_row(b"r", ALL_COLUMNS, NOW - 1_000, 2, NOW, None, NOW - 4_000) == [
        (b"cf:q", NOW - 2_000, b"2000"), (b"cf:q", NOW - 3_000, b"3000")]
    assert r.read_row(b"r", ALL_COLUMNS, NOW - 2_999, 9, NOW, None, NOW - 3_000) == [(b"cf:q", NOW - 3_000, b"3000")]
    assert r.read_row(b"r", ALL_COLUMNS, None, 9, NOW, None, 0)[-1] == (b"cf:q", NOW - 4_000, b"4000")


def test_scan_chunk_returns_versions_in_the_time_range():
    r = region(versions=3)
    for row in (b"a", b"b", b"c"):
        for ts in (1, 2, 3, 4):
            put(r, row, b"cf:q", ts, b"%s%d" % (row, ts))
    put(r, b"b", b"m:x", 2, b"mx")
    rows, last, exhausted, done = r.scan_chunk(None, True, b"", False, 10, ALL_COLUMNS, 4, NOW, None,
                                               versions=5, time_min=2)
    assert rows == [(b"a", [(b"cf:q", 3, b"a3"), (b"cf:q", 2, b"a2")]),
                    (b"b", [(b"cf:q", 3, b"b3"), (b"cf:q", 2, b"b2"), (b"m:x", 2, b"mx")]),
                    (b"c", [(b"cf:q", 3, b"c3"), (b"cf:q", 2, b"c2")])]
    assert (last, exhausted, done) == (b"c", True, False)
    # The defaults are Thrift1's scans: the newest version of each column.
    rows, _, _, _ = r.scan_chunk(None, True, b"", False, 10, ALL_COLUMNS, None, NOW, None)
    assert [cells for _, cells in rows] == [[(b"cf:q", 4, b"a4")], [(b"cf:q", 4, b"b4"), (b"m:x", 2, b"mx")],
                                            [(b"cf:q", 4, b"c4")]]
    flt = parse_filter(b"ColumnPrefixFilter('q')")
    rows, _, _, _ = r.scan_chunk(None, True, b"", True, 10, ALL_COLUMNS, None, NOW, flt, versions=2)
    assert rows == [(b"c", [(b"cf:q", 4, b"c4"), (b"cf:q", 3, b"c3")]),
                    (b"b", [(b"cf:q", 4, b"b4"), (b"cf:q", 3, b"b3")]),
                    (b"a", [(b"cf:q", 4, b"a4"), (b"cf:q", 3, b"a3")])]


def test_gateway_settings_default_to_one_of_each_kind():
    config = cluster_from_defaults("dc1", {})
    assert (config.thrift_gateways, config.thrift2_gateways, config.thrift_port, config.thrift2_port) == (1, 1, 0, 0)
    assert build("dc9", {"thrift_gateways": 3, "thrift2_gateways": 0, "thrift2_port": 9095}).thrift2_gateways == 0


@pytest.mark.parametrize("overrides, message", [
    ({"thrift_gateways": 0}, "dc1: thrift_gateways must be an integer from 1 to 16, got 0"),
    ({"thrift2_gateways": -1}, "dc1: thrift2_gateways must be an integer from 0 to 16, got -1"),
    ({"thrift2_gateways": 17}, "dc1: thrift2_gateways must be an integer from 0 to 16, got 17"),
    ({"thrift2_gateways": True}, "dc1: thrift2_gateways must be an integer from 0 to 16, got True"),
    ({"thrift_gateways": "2"}, "dc1: thrift_gateways must be an integer from 1 to 16, got '2'"),
    ({"thrift2_port": 70000}, "dc1: thrift2_port must be a port in 0..65535 (0 = any free port), got 70000"),
    ({"thrift_port": 9090, "thrift2_port": 9090}, "dc1: thrift2_port and thrift_port are both 9090"),
    ({"thrift2_gateway": 2}, "dc1: unknown setting(s) thrift2_gateway"),
])
def test_gateway_settings_are_validated(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        build("dc1", overrides)


def test_column_selector_and_order():
    r = region()
    put(r, b"r", b"m:z", 1, b"1")
    put(r, b"r", b"cf:b", 1, b"2")
    put(r, b"r", b"cf:a", 1, b"3")
    assert [c for c, _, _ in read(r, b"r")] == [b"cf:a", b"cf:b", b"m:z"]
    assert read(r, b"r", selector=ColumnSelector(families=[b"m"], columns=[b"cf:a"])) == [
        (b"cf:a", 1, b"3"), (b"m:z", 1, b"1")]


def test_store_file_round_trip_keeps_markers_and_versions():
    r = region()
    put(r, b"a", b"cf:q", 1, b"one")
    put(r, b"a", b"cf:q", 2, b"two")
    delete(r, b"b", b"cf:q", 9, DELETE_COLUMN)
    snapshot = r.snapshot_by_family()
    again = region()
    for fam, cells in snapshot.items():
        seq, loaded = parse_store_file(store_file_bytes(cells, 7))
        assert seq == 7
        again.apply(loaded, seq, log=False)
    assert read(again, b"a", versions=3) == [(b"cf:q", 2, b"two"), (b"cf:q", 1, b"one")]
    put(again, b"b", b"cf:q", 5, b"masked")
    assert read(again, b"b") == []


def test_scan_chunks_resume_after_position_and_split():
    r = region()
    for k in (b"a", b"c", b"e", b"g"):
        put(r, k, b"cf:q", 1, k)
    rows, last, exhausted, done = r.scan_chunk(None, True, b"", False, 2, ALL_COLUMNS, None, NOW, None)
    assert [k for k, _ in rows] == [b"a", b"c"] and last == b"c" and not exhausted
    rows, last, exhausted, _ = r.scan_chunk(last, False, b"g", False, 10, ALL_COLUMNS, None, NOW, None)
    assert [k for k, _ in rows] == [b"e"] and exhausted
    rows, *_ = r.scan_chunk(b"e", True, b"a", True, 10, ALL_COLUMNS, None, NOW, None)
    assert [k for k, _ in rows] == [b"e", b"c"]
    left = Region(RegionInfo(b"t", b"", b"e", 2), r.table)
    right = Region(RegionInfo(b"t", b"e", b"", 2), r.table)
    r.split_into(left, right, b"e")
    assert left.sorted_keys() == [b"a", b"c"] and right.sorted_keys() == [b"e", b"g"]


# ------------------------------------------------------------------------------------------------ filters

def run_filter(text: str, rows: dict, reversed_: bool = False) -> dict:
    r = region()
    for row, cols in rows.items():
        for col, value in cols.items():
            put(r, row, col, 1, value)
    flt = parse_filter(text)
    flt.set_reversed(reversed_)
    out, *_ = r.scan_chunk(None, True, b"", reversed_, 100, ALL_COLUMNS, None, NOW, flt)
    return {k: {c: v for c, _, v in cells} for k, cells in out}


ROWS = {b"a1": {b"cf:x": b"1", b"cf:y": b"22"}, b"b1": {b"cf:x": b"3"}, b"b2": {b"m:z": b"444"}}


@pytest.mark.parametrize("text, expected", [
    ("FirstKeyOnlyFilter()", {b"a1": {b"cf:x": b"1"}, b"b1": {b"cf:x": b"3"}, b"b2": {b"m:z": b"444"}}),
    ("KeyOnlyFilter(true) AND PrefixFilter('b')", {b"b1": {b"cf:x": b"\0\0\0\1"}, b"b2": {b"m:z": b"\0\0\0\3"}}),
    ("PrefixFilter('a') OR PrefixFilter('b2')", {b"a1": ROWS[b"a1"], b"b2": ROWS[b"b2"]}),
    ("FirstKeyOnlyFilter() AND KeyOnlyFilter()", {b"a1": {b"cf:x": b""}, b"b1": {b"cf:x": b""}, b"b2": {b"m:z": b""}}),
    ("QualifierFilter(=, 'binary:y')", {b"a1": {b"cf:y": b"22"}}),
    ("ValueFilter(>=, 'binary:3')", {b"b1": {b"cf:x": b"3"}, b"b2": {b"m:z": b"444"}}),
    ("SKIP ValueFilter(!=, 'binary:22')", {b"b1": ROWS[b"b1"], b"b2": ROWS[b"b2"]}),
    ("WHILE RowFilter(<, 'binary:b2')", {b"a1": ROWS[b"a1"], b"b1": ROWS[b"b1"]}),
    ("RowFilter(=, 'regexstring:^b')", {b"b1": ROWS[b"b1"], b"b2": ROWS[b"b2"]}),
    ("(PrefixFilter('a') OR PrefixFilter('b1')) AND FirstKeyOnlyFilter()", {b"a1": {b"cf:x": b"1"},
                                                                           b"b1": {b"cf:x": b"3"}}),
    ("PageFilter(2)", {b"a1": ROWS[b"a1"], b"b1": ROWS[b"b1"]}),
    ("ColumnPrefixFilter('y')", {b"a1": {b"cf:y": b"22"}}),
    ("InclusiveStopFilter('b1')", {b"a1": ROWS[b"a1"], b"b1": ROWS[b"b1"]}),
])
def test_filters(text, expected):
    assert run_filter(text, ROWS) == expected


def test_prefix_filter_ends_a_reversed_scan_too():
    assert list(run_filter("PrefixFilter('b')", ROWS, reversed_=True)) == [b"b2", b"b1"]


@pytest.mark.parametrize("text, message", [
    ("NoSuchFilter()", "Filter Name NoSuchFilter not supported"),
    ("FirstKeyOnlyFilter(", "Incorrect Filter String"),
    ("FirstKeyOnlyFilter('x')", "Expected 0 but got 1"),
    ("PrefixFilter('a') AND", "Incorrect Filter String"),
    ("ValueFilter(<, 'substring:x')", "can only be used with EQUAL and NOT_EQUAL"),
    ("ValueFilter(=, 'nocolon')", "Incorrect comparator"),
    ("", "Incorrect Filter String"),
])
def test_malformed_filters_say_why(text, message):
    with pytest.raises(JavaIllegalArgument, match=message):
        parse_filter(text)


# ------------------------------------------------------------------------------------------------ HDFS

@pytest.mark.parametrize("n, text", [(512, "512 B"), (1024, "1 kB"), (1536, "1.50 kB"), (1 << 40, "1 TB"),
                                     (1099646435328, "1.00 TB"), ((1 << 20) - 1, "1.00 MB")])
def test_long2string_as_hadoop(n, text):
    assert long2string(n) == text


def test_quota_accounting_and_hdfs_messages(tmp_path):
    fs = MiniHDFS(tmp_path, replication=3, block_size=0)
    fs.mkdirs("/hbase/WALs")
    fs.set_quota("/hbase", namespace=5, space=3000)
    assert fs.content_summary("/hbase") == {"directoryCount": 2, "fileCount": 0, "length": 0, "quota": 5,
                                            "spaceConsumed": 0, "spaceQuota": 3000, "typeQuota": {},
                                            "ecPolicy": "", "snapshotDirectoryCount": 0, "snapshotFileCount": 0,
                                            "snapshotLength": 0, "snapshotSpaceConsumed": 0}
    stream = fs.create("/hbase/WALs/w1")
    stream.write(b"x" * 900)  # 2700 of 3000 with replication 3
    with pytest.raises(DSQuotaExceeded) as e:
        stream.write(b"y" * 101)
    assert str(e.value) == ("The DiskSpace quota of /hbase is exceeded: quota = 3000 B = 2.93 kB "
                            "but diskspace consumed = 3003 B = 2.93 kB")
    assert e.value.remote_exception()["RemoteException"]["javaClassName"] == \
        "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException"
    stream.close()
    assert fs.content_summary("/hbase")["spaceConsumed"] == 2700
    fs.mkdirs("/hbase/oldWALs")
    fs.rename("/hbase/WALs/w1", "/hbase/oldWALs/w1")  # inside the quota directory: no change
    assert fs.content_summary("/hbase")["spaceConsumed"] == 2700
    fs.write_file("/hbase/f", b"")
    with pytest.raises(NSQuotaExceeded) as e:
        fs.write_file("/hbase/g", b"")
    assert str(e.value) == ("The NameSpace quota (directories and files) of directory /hbase is exceeded: "
                            "quota=5 file count=6")
    fs.delete("/hbase/oldWALs", recursive=True)
    assert fs.content_summary("/hbase")["directoryCount"] + fs.content_summary("/hbase")["fileCount"] == 3
    fs.write_file("/hbase/g", b"")


def test_new_block_reserves_a_whole_block(tmp_path):
    fs = MiniHDFS(tmp_path, replication=3, block_size=1000)
    fs.mkdirs("/q")
    fs.set_quota("/q", space=2999)
    with pytest.raises(DSQuotaExceeded, match="diskspace consumed = 3000 B"):
        fs.write_file("/q/f", b"x")  # a 1-byte file still needs a 1000-byte block x 3
    assert not fs.exists("/q/f")


# ------------------------------------------------------------------------------------------------ WAL, JMX

def test_wal_entries_round_trip_and_a_torn_tail_is_ignored():
    entries = [WALEntry(7, 123, b"t", "abc", ["11111111-2222-3333-4444-555555555555"],
                        [Cell(b"r", b"cf", b"q", 5, PUT, b"v"), Cell(b"r", b"cf", b"", 6, DELETE_FAMILY)]),
               WALEntry(8, 124, b"t", "abc", [], [Cell(b"s", b"cf", b"q", 9, DELETE_COLUMN)])]
    data = WAL_MAGIC + b"".join(e.encode() for e in entries)
    got = list(read_entries(data))
    assert [e for e, _ in got] == entries
    assert got[-1][1] == len(data)
    assert [e for e, _ in read_entries(data, got[0][1])] == entries[1:]  # resume from a position
    assert [e for e, _ in read_entries(data[:-3])] == entries[:1]


def test_wal_names_as_hbase():
    name = wal_file_name("rs1.example.com,16020,1700000000000", 1700000123456)
    assert name == "rs1.example.com%2C16020%2C1700000000000.1700000123456"
    assert parse_wal_name(name) == ("rs1.example.com,16020,1700000000000", 1700000123456)


@pytest.mark.parametrize("pattern, matches", [
    ("Hadoop:service=HBase,name=RegionServer,sub=Replication", True),
    ("Hadoop:service=HBase,name=RegionServer,*", True),
    ("Hadoop:*", True),
    ("*:*", True),
    ("Hadoop:service=HBase,name=RegionServer", False),
    ("Hadoop:service=HBase,name=Region*,sub=Repl*", True),
    ("Other:*", False),
])
def test_object_name_patterns(pattern, matches):
    assert object_name_matches(pattern, "Hadoop:service=HBase,name=RegionServer,sub=Replication") is matches


def test_malformed_object_name():
    with pytest.raises(MalformedObjectName):
        object_name_matches("no-colon", "Hadoop:service=HBase")
