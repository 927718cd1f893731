"""The copy's pure planning: options, families, regions, partitions and their ids."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from hbase_migration.data.copy import CopyOptions
from hbase_migration.data.datapath.base import Region
from hbase_migration.data.datapath.thrift1 import regions_from_thrift
from hbase_migration.data.partitions import Partition, RegionSample, partition_id, plan_partitions, split_points
from hbase_migration.data.scope import CopyConfigError, TableScope, parse_families, to_string_binary

# A table pre-split at b"g" and b"p": three regions, the last one open-ended.
REGIONS = [
    Region(b"", b"g", b"t,,1.aaa."),
    Region(b"g", b"p", b"t,g,1.bbb."),
    Region(b"p", b"", b"t,p,1.ccc."),
]


# ---------------------------------------------------------------- families

def test_parse_families_copytable_syntax():
    assert parse_families("cf1,src:dst") == ((b"cf1", b"cf1"), (b"src", b"dst"))
    assert parse_families(["a", "b:c"]) == ((b"a", b"a"), (b"b", b"c"))
    assert parse_families([("x", "y")]) == ((b"x", b"y"),)
    assert parse_families(None) == ()
    assert parse_families("") == ()


@pytest.mark.parametrize("spec, message", [
    ("a,,b", "empty family name"),
    ("a:", "empty target family after ':'"),
    ("a,a:b", "source family 'a' is listed twice"),
    ("a:c,b:c", "target family 'c' is listed twice"),
    (".meta", "not a valid column family name"),
    ("a/b", "not a valid column family name"),
    ([("a", "b", "c")], "must be a \\(source, target\\) pair"),
])
def test_parse_families_rejects_bad_specs_naming_the_field(spec, message):
    with pytest.raises(CopyConfigError, match=f"families: .*{message}|{message}"):
        parse_families(spec)


# ---------------------------------------------------------------- options

def test_scope_defaults_and_derived_views():
    scope = TableScope("t", families="a,b:c")
    assert scope.target_table == "t"
    assert scope.renames == {b"b": b"c"}
    assert scope.source_columns == [b"a", b"b"]
    assert scope.target_columns == [b"a", b"c"]
    assert TableScope("t").source_columns is None


@pytest.mark.parametrize("kwargs, message", [
    (dict(table=""), "table must be a non-empty table name"),
    (dict(table="t", start_row=b"b", stop_row=b"a"), "start_row b'b' must sort before stop_row b'a'"),
    (dict(table="t", start_row=b"a", stop_row=b"a"), "must sort before stop_row"),
    (dict(table="t", start_time_ms=10, end_time_ms=10),
     r"start_time_ms 10 must be < end_time_ms 10 \(the range is \[start, end\)\)"),
    (dict(table="t", start_time_ms="yesterday"),
     "start_time_ms must be epoch milliseconds or an ISO 8601 date-time, got 'yesterday'"),
    (dict(table="t", end_time_ms=-1), "end_time_ms must be within 0.."),
    (dict(table="t", versions=0), "versions must be a positive integer, got 0"),
    (dict(table="t", versions=1.5), "versions must be a positive integer, got 1.5"),
    (dict(table="t", rows_per_partition=-5), "rows_per_partition must be a positive integer"),
    (dict(table="t", start_row=5), "start_row must be bytes or a string, got int"),
])
def test_scope_validation_names_the_field(kwargs, message):
    with pytest.raises(CopyConfigError, match=message):
        TableScope(**kwargs)


def test_copy_options_validate_tuning_and_accept_text_numbers():
    opts = CopyOptions("t", writers="3", rows_per_s="250.5", start_time_ms="100", end_time_ms="200")
    assert (opts.writers, opts.rows_per_s, opts.start_time_ms, opts.end_time_ms) == (3, 250.5, 100, 200)
    with pytest.raises(CopyConfigError, match="writers must be a positive integer, got 0"):
        CopyOptions("t", writers=0)
    with pytest.raises(CopyConfigError, match="bytes_per_s must be a positive number, got 'fast'"):
        CopyOptions("t", bytes_per_s="fast")
    with pytest.raises(CopyConfigError, match="pipeline must be a positive integer, got True"):
        CopyOptions("t", pipeline=True)


def test_copy_options_from_dict_refuses_unknown_keys():
    assert CopyOptions.from_dict({"table": "t", "versions": 3}).versions == 3
    with pytest.raises(CopyConfigError, match="unknown option\\(s\\) colour, speed; known: "):
        CopyOptions.from_dict({"table": "t", "speed": 1, "colour": 2})


def test_fingerprint_changes_with_content_options_only():
    base = CopyOptions("t")
    assert base.fingerprint() == CopyOptions("t", writers=9, rows_per_s=10).fingerprint()
    different = [
        CopyOptions("t", target_table="u"), CopyOptions("t", start_time_ms=1), CopyOptions("t", end_time_ms=5),
        CopyOptions("t", families="a"), CopyOptions("t", families="a:b"), CopyOptions("t", versions=2),
    ]
    prints = {o.fingerprint() for o in different}
    assert len(prints) == len(different) and base.fingerprint() not in prints


# ---------------------------------------------------------------- regions

def test_regions_from_thrift_accepts_tregioninfo_and_happybase_dicts_sorted():
    thrift = [SimpleNamespace(startKey=b"m", endKey=b"", name=b"r2", serverName=b"rs2.dc1"),
              SimpleNamespace(startKey=b"", endKey=b"m", name=b"r1", serverName=b"rs1.dc1")]
    assert regions_from_thrift(thrift) == [Region(b"", b"m", b"r1", "rs1.dc1"), Region(b"m", b"", b"r2", "rs2.dc1")]
    dicts = [{"start_key": b"", "end_key": b"", "name": b"only"}]
    assert regions_from_thrift(dicts) == [Region(b"", b"", b"only")]


# ---------------------------------------------------------------- plan

def test_one_partition_per_region_with_stable_ids():
    scope = TableScope("t")
    parts = plan_partitions(REGIONS, scope)
    assert [(p.index, p.start_row, p.stop_row, p.region) for p in parts] == [
        (0, b"", b"g", "t,,1.aaa."), (1, b"g", b"p", "t,g,1.bbb."), (2, b"p", b"", "t,p,1.ccc."),
    ]
    fp = scope.fingerprint()
    assert [p.partition_id for p in parts] == [partition_id("t", p.start_row, p.stop_row, fp) for p in parts]
    assert len({p.partition_id for p in parts}) == 3
    # Same options, regions given in another order: same plan, same ids.
    assert plan_partitions(list(reversed(REGIONS)), scope) == parts
    # Another window: other ids for the same ranges.
    other = plan_partitions(REGIONS, TableScope("t", end_time_ms=5))
    assert {p.partition_id for p in other}.isdisjoint({p.partition_id for p in parts})


def test_partition_id_is_unambiguous_about_where_the_key_parts_end():
    assert partition_id("t", b"ab", b"c", "f") != partition_id("t", b"a", b"bc", "f")
    assert len(partition_id("t", b"", b"", "f")) == 20


def test_plan_clips_to_the_row_range_and_drops_regions_outside_it():
    parts = plan_partitions(REGIONS, TableScope("t", start_row=b"h", stop_row=b"q"))
    assert [(p.start_row, p.stop_row) for p in parts] == [(b"h", b"p"), (b"p", b"q")]
    parts = plan_partitions(REGIONS, TableScope("t", start_row=b"a", stop_row=b"b"))
    assert [(p.start_row, p.stop_row) for p in parts] == [(b"a", b"b")]
    parts = plan_partitions(REGIONS, TableScope("t", start_row=b"p"))
    assert [(p.start_row, p.stop_row) for p in parts] == [(b"p", b"")]
    # a stop row exactly on a region boundary does not create an empty partition
    parts = plan_partitions(REGIONS, TableScope("t", stop_row=b"g"))
    assert [(p.start_row, p.stop_row) for p in parts] == [(b"", b"g")]


def test_plan_splits_large_regions_at_sampled_keys():
    keys = tuple(b"g%02d" % i for i in range(40))  # every 25th row of a 1000-row region
    samples = {b"t,g,1.bbb.": RegionSample(1000, keys), b"t,,1.aaa.": RegionSample(100, (b"a",))}
    parts = plan_partitions(REGIONS, TableScope("t", rows_per_partition=300), samples)
    assert [(p.start_row, p.stop_row, p.est_rows) for p in parts] == [
        (b"", b"g", 100),
        (b"g", b"g10", 250), (b"g10", b"g20", 250), (b"g20", b"g30", 250), (b"g30", b"p", 250),
        (b"p", b"", None),
    ]
    assert [p.index for p in parts] == list(range(6))
    # Without rows_per_partition the samples only give estimates.
    parts = plan_partitions(REGIONS, TableScope("t"), samples)
    assert [(p.start_row, p.est_rows) for p in parts] == [(b"", 100), (b"g", 1000), (b"p", None)]


def test_split_points_stay_inside_the_range_and_never_repeat():
    keys = [b"a", b"b", b"c", b"d"]
    assert split_points(keys, 2, b"", b"") == [b"c"]
    assert split_points(keys, 4, b"a", b"d") == [b"b", b"c"]  # b"a" and b"d" are bounds, not inside
    assert split_points(keys, 10, b"", b"") == [b"a", b"b", b"c", b"d"]
    assert split_points(keys, 1, b"", b"") == []
    assert split_points([], 5, b"", b"") == []


def test_plan_refuses_no_regions_and_overlapping_regions():
    with pytest.raises(CopyConfigError, match="table 't' has no regions on the source"):
        plan_partitions([], TableScope("t"))
    with pytest.raises(CopyConfigError, match="regions of 't' overlap"):
        plan_partitions([Region(b"", b"m", b"r1"), Region(b"k", b"", b"r2")], TableScope("t"))
    with pytest.raises(CopyConfigError, match="regions of 't' overlap"):
        plan_partitions([Region(b"", b"", b"r1"), Region(b"k", b"", b"r2")], TableScope("t"))


def test_partition_json_and_description():
    p = Partition("t", 3, b"a\x00", b"", "r", "id")
    assert p.to_dict() == {"table": "t", "index": 3, "start_row": "6100", "stop_row": "", "region": "r",
                           "partition_id": "id", "est_rows": None, "host": "", "gateway": ""}
    assert p.describe() == "#3 [a\\x00, <end>)"


def test_to_string_binary_matches_hbase_bytes_tostringbinary():
    assert to_string_binary(b"row-1") == "row-1"
    assert to_string_binary(b"\x00\xff~\\") == "\\x00\\xFF~\\x5C"
    assert to_string_binary(b"abcdef", limit=3) == "abc..."


def test_to_bytes_binary_is_the_inverse_of_to_string_binary():
    from hbase_migration.data.scope import to_bytes_binary

    assert to_bytes_binary("row\\x00\\xFF-1") == b"row\x00\xff-1"
    assert to_bytes_binary("\\x5C") == b"\\"
    assert to_bytes_binary("a\\xZZ\\x4") == b"a\\xZZ\\x4"  # not an escape: kept as typed
    assert to_bytes_binary("é") == "é".encode()
    for key in (b"\x00\x01abc\xff", b"plain", b"back\\slash"):
        assert to_bytes_binary(to_string_binary(key)) == key


def test_partitions_read_through_the_gateway_on_their_region_servers_host_else_in_turn():
    from hbase_migration.data.partitions import assign_gateways

    # one gateway per region server host: each partition reads on its own host; two on one host: in turn
    assert assign_gateways(["rs1", "rs2", "rs1", "rs1"], ["rs1:9090", "rs2:9090", "rs1:9091"]) == [
        "rs1:9090", "rs2:9090", "rs1:9091", "rs1:9090"]
    # gateways on other hosts (a separate Thrift tier): spread in turn
    assert assign_gateways(["rs1", "rs2", "rs3", ""], ["gw1:9090", "gw2:9090"]) == [
        "gw1:9090", "gw2:9090", "gw1:9090", "gw2:9090"]
    regions = [Region(b"", b"g", b"r1", "gw2"), Region(b"g", b"", b"r2", "elsewhere")]
    parts = plan_partitions(regions, TableScope("t"), gateways=["gw1:1", "gw2:1"])
    assert [(p.host, p.gateway) for p in parts] == [("gw2", "gw2:1"), ("elsewhere", "gw2:1")]
    assert parts[0].partition_id == plan_partitions(regions, TableScope("t"))[0].partition_id  # ids unchanged


def test_secondary_region_replicas_are_left_out_of_the_regions():
    """A table with REGION_REPLICATION 2 lists each region twice on Thrift1 (the replica's name carries `_0001`):
    only the primaries are planned (and give the split keys of a create)."""
    from hbase_migration.data.datapath.thrift1 import regions_from_thrift, replica_id

    assert replica_id(b"t,,1700000000000.0123456789abcdef0123456789abcdef.") == 0
    assert replica_id(b"t,a,b,1700000000000_0001.fedcba9876543210fedcba9876543210.") == 1
    assert replica_id(b"ns:t,k,1700000000000_000a.0123.") == 10
    listed = [{"start_key": b"", "end_key": b"m", "name": b"t,,1.aa.", "server_name": b"rs1"},
              {"start_key": b"", "end_key": b"m", "name": b"t,,1_0001.bb.", "server_name": b"rs2"},
              {"start_key": b"m", "end_key": b"", "name": b"t,m,2.cc.", "server_name": b"rs2"},
              {"start_key": b"m", "end_key": b"", "name": b"t,m,2_0001.dd.", "server_name": b"rs1"}]
    assert [(r.start_key, r.end_key, r.host) for r in regions_from_thrift(listed)] == [(b"", b"m", "rs1"),
                                                                                       (b"m", b"", "rs2")]
