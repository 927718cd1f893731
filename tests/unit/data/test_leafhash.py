"""Hash verification's pure core (hbase_migration/data/leafhash.py): exact digests, leaves, bound, ranges."""
from __future__ import annotations

import hashlib
import struct

import pytest

from hbase_migration.data import leafhash as lh
from hbase_migration.data.partitions import Partition, RegionSample
from hbase_migration.data.scope import CopyConfigError


def _part(start=b"", stop=b"", bounds=(), first=0, index=0):
    return lh.HashPartition(index, start, stop, tuple(bounds), first)


def _expected(*rows):
    """The digest the module docstring defines, spelled out byte by byte."""
    stream = b""
    for row, cells in rows:
        stream += b"\x01" + struct.pack(">I", len(row)) + row
        for cell in cells:
            column, ts, value = cell[:3]
            kind = cell[3] if len(cell) > 3 else 4
            stream += struct.pack(">H", len(column)) + column + struct.pack(">q", ts) + bytes([kind])
            stream += struct.pack(">I", len(value)) + value
    return hashlib.sha256(stream).digest()[:16]


def test_digest_is_the_documented_byte_stream():
    rows = [(b"r1", [(b"cf:a", 20, b"new"), (b"cf:a", 10, b"old"), (b"cf:b", 5, b"")]),
            (b"r2", [(b"d:x", 1, b"v", lh.DELETE_COLUMN)])]
    out = lh.hash_rows(_part(), rows)
    assert out.digests == [_expected(*rows)]
    assert out.rows == [2] and out.cells == [4]
    # bytes of cells: row + column + value + 9 (timestamp and type) per cell
    assert out.nbytes == [(2 + 4 + 3 + 9) + (2 + 4 + 3 + 9) + (2 + 4 + 0 + 9) + (2 + 3 + 1 + 9)]


def test_a_row_in_pieces_hashes_as_the_whole_row():
    whole = [(b"r", [(b"cf:a", 3, b"x"), (b"cf:b", 2, b"y"), (b"cf:c", 1, b"z")])]
    pieces = [(b"r", [(b"cf:a", 3, b"x")]), (b"r", [(b"cf:b", 2, b"y"), (b"cf:c", 1, b"z")])]
    assert lh.hash_rows(_part(), whole).digests == lh.hash_rows(_part(), pieces).digests
    assert lh.hash_rows(_part(), pieces).rows == [1]


@pytest.mark.parametrize("change", [
    lambda c: (c[0], c[1], b"other"),          # the value
    lambda c: (c[0], c[1] + 1, c[2]),          # the timestamp
    lambda c: (b"cf:z", c[1], c[2]),           # the qualifier
    lambda c: (b"cg:a", c[1], c[2]),           # the family
    lambda c: (c[0], c[1], c[2], lh.DELETE),   # the type
])
def test_every_part_of_a_cell_changes_the_digest(change):
    cell = (b"cf:a", 7, b"v")
    assert lh.hash_rows(_part(), [(b"r", [cell])]).digests != lh.hash_rows(_part(), [(b"r", [change(cell)])]).digests


def test_framing_keeps_row_and_column_apart():
    # the same bytes shifted between the row key and the column must not collide
    a = lh.hash_rows(_part(), [(b"ab", [(b"c:d", 1, b"")])])
    b = lh.hash_rows(_part(), [(b"a", [(b"bc:d", 1, b"")])])
    assert a.digests != b.digests


def test_rows_go_to_their_leaves_and_empty_leaves_are_hashed():
    part = _part(b"", b"", [b"c", b"e", b"g"], first=10)
    out = lh.hash_rows(part, [(b"a", [(b"f:q", 1, b"1")]), (b"b", [(b"f:q", 1, b"2")]),
                              (b"e", [(b"f:q", 1, b"3")])])
    assert out.first_leaf == 10 and len(out.digests) == 4
    assert out.rows == [2, 0, 1, 0]
    assert out.digests[1] == out.digests[3] == lh.EMPTY_DIGEST
    assert out.digests[2] == _expected((b"e", [(b"f:q", 1, b"3")]))
    assert sorted(out.by_leaf()) == [10, 11, 12, 13]


def test_rows_out_of_order_are_refused():
    hasher = lh.LeafHasher(_part())
    hasher.add(b"b", [(b"f:q", 1, b"")])
    with pytest.raises(ValueError, match="out of key order"):
        hasher.add(b"a", [(b"f:q", 1, b"")])


def test_leaf_digests_round_trip_through_json():
    out = lh.hash_rows(_part(bounds=[b"m"], first=3), [(b"a", [(b"f:q", 1, b"x")]), (b"z", [(b"f:q", 2, b"y")])])
    back = lh.LeafDigests.from_dict(out.to_dict())
    assert back == out


def test_time_bound():
    assert lh.time_bound(100_000, 5000) == 95_000
    assert lh.time_bound(100_000, 5000, end_time_ms=90_000) == 90_000
    assert lh.time_bound(100_000, 5000, end_time_ms=99_000) == 95_000
    with pytest.raises(CopyConfigError, match="skew_margin_ms"):
        lh.time_bound(100_000, -1)


@pytest.mark.parametrize("size,rows,wanted", [
    (0, 10, 1), (1, 10, 1), (1 << 20, 10, 1), ((1 << 20) + 1, 10, 2), (10 << 20, 10, 10), (10 << 20, 3, 3),
    (None, 2500, 3), (None, 10, 1), (5 << 20, 0, 1),
])
def test_leaves_wanted(size, rows, wanted):
    assert lh.leaves_wanted(size, 1 << 20, rows) == wanted


def test_plan_leaves_spreads_the_table_over_its_rows_and_numbers_leaves_across_the_table():
    parts = [Partition("t", 0, b"", b"m", "r1", "id0"), Partition("t", 1, b"m", b"", "r2", "id1")]
    keys1 = tuple(bytes([c]) for c in b"abcdefghijkl")  # 12 rows
    samples = {"r1": RegionSample(12, keys1), "r2": RegionSample(2, (b"m", b"n"))}
    # 14 rows, 7 MiB: 0.5 MiB a row; the first region 6 MiB (6 leaves), the second 1 MiB (1 leaf)
    plan = lh.plan_leaves(parts, samples, 1 << 20, 7 << 20)
    assert [p.bounds for p in plan] == [(b"c", b"e", b"g", b"i", b"k"), ()]
    assert [p.first_leaf for p in plan] == [0, 6]
    assert lh.leaf_count(plan) == 7
    assert plan[0].leaf_range(0) == (b"", b"c") and plan[0].leaf_range(5) == (b"k", b"m")
    assert plan[0].leaf_of(b"b") == 0 and plan[0].leaf_of(b"c") == 1 and plan[0].leaf_of(b"l") == 5
    assert [lh.HashPartition.from_dict(p.to_dict()) for p in plan] == plan


def test_plan_leaves_without_a_size_cuts_by_rows():
    parts = [Partition("t", 0, b"", b"", "r", "id")]
    keys = tuple(b"%05d" % i for i in range(0, 3000, 3))  # every 3rd of 3000 rows
    plan = lh.plan_leaves(parts, {"r": RegionSample(3000, keys)}, 1 << 20)
    assert plan[0].leaves == 3
    with pytest.raises(CopyConfigError, match="hash_leaf_bytes"):
        lh.plan_leaves(parts, {}, 0)


def test_plan_leaves_shares_a_split_region_by_its_sampled_keys():
    parts = [Partition("t", 0, b"", b"f", "r", "a"), Partition("t", 1, b"f", b"", "r", "b")]
    keys = tuple(bytes([c]) for c in b"abcdefghij")
    plan = lh.plan_leaves(parts, {"r": RegionSample(10, keys)}, 1 << 20, 10 << 20)
    assert [p.leaves for p in plan] == [5, 5]
    assert plan[1].first_leaf == 5


def test_sample_keys_wanted():
    assert lh.sample_keys_wanted(None, 4, 1 << 20) == 1024
    assert lh.sample_keys_wanted(1 << 20, 1, 1 << 20) == 1024
    assert lh.sample_keys_wanted(10 << 30, 4, 1 << 20) == 20480


def test_differing_leaves_and_their_ranges():
    plan = [_part(b"", b"m", [b"d", b"g"], first=0, index=0), _part(b"m", b"", [b"t"], first=3, index=1)]
    src = {0: b"a", 1: b"b", 2: b"c", 3: b"d", 4: b"e"}
    tgt = {0: b"a", 1: b"X", 2: b"X", 3: b"d"}  # leaf 4 not hashed on the target (a failed partition)
    differing = lh.differing_leaves(src, tgt, range(5))
    assert differing == [1, 2, 4]
    ranges = lh.leaf_ranges(plan, differing)
    assert ranges == [(1, b"d", b"g"), (2, b"g", b"m"), (4, b"t", b"")]
    assert lh.merge_ranges(ranges) == [(b"d", b"m", (1, 2)), (b"t", b"", (4,))]
    # leaves 2 and 3 touch across two partitions: one range
    assert lh.merge_ranges(lh.leaf_ranges(plan, [2, 3])) == [(b"g", b"t", (2, 3))]
    with pytest.raises(ValueError, match="leaf 9"):
        lh.leaf_ranges(plan, [9])


def test_side_totals_and_failed_partitions():
    ok = lh.hash_rows(_part(bounds=[b"m"]), [(b"a", [(b"f:q", 1, b"xy")])])
    failed = lh.LeafDigests(1, 2, status="failed", error="boom")
    totals = lh.side_totals([ok, failed])
    assert totals == {"leaves": 2, "rows": 1, "cells": 1, "bytes": 1 + 3 + 2 + 9, "failed_partitions": 1}
    assert lh.digests_by_leaf([ok, failed]) == {0: ok.digests[0], 1: ok.digests[1]}


def test_difference_dict_names_family_qualifier_and_type():
    assert lh.difference_dict(b"r\x00", b"cf:q", 5, "value_differs") == {
        "row": "r\\x00", "family": "cf", "qualifier": "q", "timestamp": 5, "type": "Put", "kind": "value_differs"}
    assert lh.difference_dict(b"r", b"cf:", 5, "marker_only_on_target", "DeleteFamily")["type"] == "DeleteFamily"


@pytest.mark.parametrize("method,size,chosen,why", [
    ("cells", 10 << 30, "cells", "method cells"),
    ("hash", 1, "hash", "method hash"),
    ("auto", None, "cells", "size is unknown"),
    ("auto", 1 << 30, "hash", ">= hash_verify_min_bytes"),
    ("auto", (1 << 30) - 1, "cells", "< hash_verify_min_bytes"),
])
def test_choose_method(method, size, chosen, why):
    got, reason = lh.choose_method(method, size, 1 << 30)
    assert got == chosen and why in reason


def test_choose_method_refuses_an_unknown_method():
    with pytest.raises(CopyConfigError, match="cells, hash or auto"):
        lh.choose_method("fast", 1, 1)
