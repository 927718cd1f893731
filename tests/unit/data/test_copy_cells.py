"""The pure cell handling of the copy: time window, renames, Thrift1's grouping by timestamp, summaries."""
from __future__ import annotations

import socket

from hbase_migration.clusters.idl import hbase_thrift
from hbase_migration.clusters.thrift import is_transient
from hbase_migration.data.copy import PartitionResult, summarize
from hbase_migration.data.datapath.thrift1 import group_by_timestamp, merge_versions
from hbase_migration.data.scope import rename_column, window_cells

CELLS = [(b"a:q", 100, b"v100"), (b"a:r", 200, b"v200"), (b"b:q", 300, b"v300")]


def test_window_is_start_inclusive_end_exclusive():
    assert window_cells(CELLS, 200) == CELLS[1:]
    assert window_cells(CELLS, 201) == CELLS[2:]
    assert window_cells(CELLS, None, 300) == CELLS[:2]
    assert window_cells(CELLS, 100, 200) == CELLS[:1]
    assert window_cells(CELLS, None, None) == CELLS


def test_rename_only_touches_the_family_before_the_first_colon():
    renames = {b"a": b"x"}
    assert rename_column(b"a:q", renames) == b"x:q"
    assert rename_column(b"a:q:with:colons", renames) == b"x:q:with:colons"
    assert rename_column(b"ab:q", renames) == b"ab:q"
    assert rename_column(b"a:", renames) == b"x:"
    assert rename_column(b"b:q", {}) == b"b:q"


def test_group_by_timestamp_one_call_per_timestamp_rows_in_order():
    rows = [
        (b"r1", [(b"a:q", 5, b"1"), (b"a:r", 7, b"2")]),
        (b"r2", [(b"a:q", 5, b"3")]),
        (b"r3", [(b"a:q", 9, b"4"), (b"b:q", 5, b"5")]),
    ]
    assert group_by_timestamp(rows) == [
        (5, [(b"r1", [(b"a:q", b"1")]), (b"r2", [(b"a:q", b"3")]), (b"r3", [(b"b:q", b"5")])]),
        (7, [(b"r1", [(b"a:r", b"2")])]),
        (9, [(b"r3", [(b"a:q", b"4")])]),
    ]


def test_group_by_timestamp_splits_big_groups_on_row_boundaries():
    rows = [(b"r%d" % i, [(b"a:q", 1, b"x"), (b"a:r", 1, b"y")]) for i in range(5)]
    groups = group_by_timestamp(rows, max_cells=4)
    assert [(ts, [r for r, _ in batch]) for ts, batch in groups] == [
        (1, [b"r0", b"r1"]), (1, [b"r2", b"r3"]), (1, [b"r4"]),
    ]
    # one row bigger than the cap is kept whole
    wide = [(b"w", [(b"a:%d" % i, 1, b"v") for i in range(6)])]
    assert [len(batch[0][1]) for _, batch in group_by_timestamp(wide, max_cells=4)] == [6]
    assert group_by_timestamp([]) == []


def test_group_by_timestamp_keeps_versions_of_one_column_apart():
    rows = [(b"r", [(b"a:q", 3, b"new"), (b"a:q", 1, b"old")])]
    assert group_by_timestamp(rows) == [(1, [(b"r", [(b"a:q", b"old")])]), (3, [(b"r", [(b"a:q", b"new")])])]


def test_merge_versions_replaces_scanned_cells_with_their_history():
    scanned = [(b"a:q", 9, b"n"), (b"b:q", 4, b"m")]
    history = {b"a:q": [(b"a:q", 9, b"n"), (b"a:q", 2, b"o")]}
    assert merge_versions(scanned, history) == [(b"a:q", 9, b"n"), (b"a:q", 2, b"o"), (b"b:q", 4, b"m")]
    assert merge_versions(scanned, {}) == scanned


def test_is_transient_classifies_errors():
    from thriftpy2.transport import TTransportException

    T = hbase_thrift()
    assert is_transient(TTransportException(message="closed"))
    assert is_transient(ConnectionResetError())
    assert is_transient(socket.timeout())
    # happybase's Hbase.thrift has no IOError.canRetry: the Java exception named in the message decides
    assert is_transient(T.IOError(message="org.apache.hadoop.hbase.NotServingRegionException: t,,1.abc."))
    assert is_transient(T.IOError(message="org.apache.hadoop.hbase.UnknownScannerException: 7"))
    assert not is_transient(T.IOError(message="org.apache.hadoop.hbase.TableNotFoundException: t"))
    assert not is_transient(T.IOError(message="something else"))
    retry_flag = T.IOError(message="x")
    retry_flag.canRetry = True  # a client generated from HBase 2.x's IDL sees the flag: believe it
    assert is_transient(retry_flag)
    retry_flag.canRetry = False
    assert not is_transient(retry_flag)
    assert not is_transient(T.IllegalArgument(message="bad"))
    assert not is_transient(ValueError("bug"))
    assert not is_transient(FileNotFoundError())


def test_summarize_totals_rates_and_failures():
    ok = PartitionResult("p0", 0, "t", b"", b"g", rows=10, cells=30, bytes=1000, scanned_rows=12,
                         write_calls=4)
    ok2 = PartitionResult("p1", 1, "t", b"g", b"", rows=5, cells=5, bytes=500, scanned_rows=5, write_calls=2,
                          retries=1)
    bad = PartitionResult("p2", 2, "t", b"x", b"y", status="failed", error="ConnectionError: refused")
    s = summarize([ok, ok2, bad], skipped=3, elapsed_s=2.0)
    assert s == {
        "partitions": 6, "copied_partitions": 2, "skipped_partitions": 3, "failed_partitions": 1,
        "rows": 15, "cells": 35, "delete_markers": 0, "bytes": 1500, "scanned_rows": 17, "write_calls": 6, "retries": 1,
        "throttled_s": 0.0, "elapsed_s": 2.0, "rows_per_s": 7.5, "bytes_per_s": 750.0,
        "failures": [{"partition_id": "p2", "index": 2, "start_row": "x", "stop_row": "y",
                      "error": "ConnectionError: refused"}],
    }
    assert ok.to_dict()["stop_row"] == "67"


def test_thrift2_cells_keep_hbase_order_which_is_the_toolkits_order():
    from types import SimpleNamespace

    from hbase_migration.data.datapath.thrift2 import _cells
    from hbase_migration.data.scope import cell_order

    def cv(family, qualifier, ts):
        return SimpleNamespace(family=family, qualifier=qualifier, timestamp=ts, value=b"v")

    # HBase's order: family, qualifier, newest first; `a` before `a0` although b"a0:" < b"a:" as bytes
    result = SimpleNamespace(columnValues=[cv(b"a", b"q", 9), cv(b"a", b"q", 3), cv(b"a0", b"q", 5)])
    cells = _cells(result)
    assert cells == [(b"a:q", 9, b"v"), (b"a:q", 3, b"v"), (b"a0:q", 5, b"v")]
    assert sorted(cells, key=cell_order) == cells
    assert sorted([(b"a0:q", 5, b""), (b"a:q", 3, b""), (b"a:q", 9, b"")], key=cell_order) == [
        (b"a:q", 9, b""), (b"a:q", 3, b""), (b"a0:q", 5, b"")]
    # a qualifier may hold ':' itself; the family never does
    assert cell_order((b"f:x:y", 1, b"")) == (b"f", b"x:y", -1)


def test_a_reopened_scan_resumes_inside_a_wide_row_without_repeating_or_skipping():
    from hbase_migration.data.datapath.base import ScanPosition

    pos = ScanPosition(b"a")
    assert pos.trim([(b"a", [(b"f:1", 5, b"")])]) == [(b"a", [(b"f:1", 5, b"")])]  # nothing yielded yet
    pos.yielded([(b"a", [(b"f:1", 5, b"")]), (b"r", [(b"f:1", 9, b""), (b"f:1", 7, b""), (b"f:2", 9, b"")])])
    assert pos.start == b"r"  # the last row may go on: re-open at it, not after it
    pos.reopen()
    again = [(b"r", [(b"f:1", 9, b""), (b"f:1", 7, b"")]), (b"r", [(b"f:2", 9, b""), (b"f:3", 1, b"")]),
             (b"s", [(b"f:1", 1, b"")])]
    assert pos.trim(again) == [(b"r", [(b"f:3", 1, b"")]), (b"s", [(b"f:1", 1, b"")])]
    assert pos.trim([(b"r", [(b"f:4", 1, b"")])]) == [(b"r", [(b"f:4", 1, b"")])]  # trimming ends there
    pos.yielded([(b"s", [(b"f:1", 1, b"")])])
    pos.reopen()
    assert pos.trim([(b"s", [(b"f:1", 1, b"")])]) == []  # the row was complete: all of it already given
    assert pos.trim([(b"t", [(b"f:1", 1, b"")])]) == [(b"t", [(b"f:1", 1, b"")])]


def test_a_scan_asks_for_fewer_results_once_rows_turn_out_wide():
    from hbase_migration.data.datapath.base import CallSize, rows_in

    size = CallSize(1000, None, None)
    size.observe(1000, 10 ** 6)
    assert size.next == 1000  # no cell budget: always batch_rows
    size = CallSize(1000, 100, 10_000)
    assert size.next == 100  # slicing rows: the first call takes no more than the budget's worth of full slices
    size.observe(100, 300)  # narrow rows, 3 cells each
    assert size.next == 1000
    size.observe(1000, 100_000)  # a wide row in slices of 100
    assert size.next == 100
    size.observe(3, 30_000)
    assert size.next == 1
    size.observe(0, 0)
    assert size.next == 1  # an empty answer changes nothing
    assert CallSize(10, 100, 10_000).next == 10
    assert rows_in([(b"a", []), (b"a", []), (b"b", [])]) == (2, b"b")
    assert rows_in([(b"b", []), (b"c", [])], last=b"b") == (1, b"c")  # b went on from the previous call


def test_a_scan_refuses_rows_outside_what_is_left_of_its_range():
    import pytest

    from hbase_migration.data.datapath.base import PartitionFailed, check_in_range

    check_in_range(b"b", b"c", b"b", b"d", "t")  # in order, inside [b, d)
    check_in_range(b"x", b"z", b"b", b"", "t")  # open end
    for first, last in ((b"a", b"c"), (b"c", b"b"), (b"b", b"d")):
        with pytest.raises(PartitionFailed, match="outside"):
            check_in_range(first, last, b"b", b"d", "t")
