"""Issue 31: a repair's `masked_by_delete` is a fact, not a guess. A repaired row that is still different is
examined: its cells read back by a Get at their timestamps on both sides, its delete markers read with raw scans in
the target's shell; `masked_by_delete` only when markers shown there hide every cell, else `not_read_back` with the
row and the region server holding it. On minihbase (its shell has HBase's `scan ..., {RAW => true}`), without Spark.
"""
from __future__ import annotations

import dataclasses
import time
import uuid
from contextlib import closing

import pytest

from hbase_migration.data.partitions import Partition
from hbase_migration.data.verify import VerifyOptions, summarize_verify, verify_partition
from tests.hbase_data import DATA_PATHS, cluster_of

pytestmark = pytest.mark.integration

WHOLE = Partition("t", 0, b"", b"", "whole table", "p0")


@pytest.fixture(scope="module", params=DATA_PATHS)
def clusters(request, minihbase_pair):
    dc1, dc2 = minihbase_pair
    return dc1, dc2, cluster_of(dc1, "source", request.param), cluster_of(dc2, "target", request.param)


def _table(dc1, dc2, target_families=None) -> str:
    name = "rd_" + uuid.uuid4().hex[:8]
    families = {"d": {"max_versions": 3}, "h": {"max_versions": 2}}
    dc1.create_table(name, families, [b"m"])
    dc2.create_table(name, target_families or families, [b"m"])
    return name


def _put_both(dc1, dc2, name, rows, ts):
    for cluster in (dc1, dc2):
        with closing(cluster.connection(timeout=60000)) as c:
            for row, cells in rows.items():
                c.table(name).put(row, cells, timestamp=ts)


def _servernames(cluster) -> set[str]:
    return {rs["servername"] for rs in cluster.region_servers}


def _repair(src, dst, name):
    verdict = verify_partition(src, dst, WHOLE, VerifyOptions(name, repair=True))
    return verdict, summarize_verify([verdict], VerifyOptions(name, repair=True), 1.0)["repair"]


def test_cells_hidden_by_a_newer_delete_on_the_target_are_masked_by_delete_with_the_markers_shown(clusters):
    dc1, dc2, src, dst = clusters
    name = _table(dc1, dc2)
    old = int(time.time() * 1000) - 3_600_000
    _put_both(dc1, dc2, name, {b"a1": {b"d:a": b"1", b"h:a": b"1"}, b"z9": {b"d:a": b"9"}}, old)
    with closing(dc2.connection(timeout=60000)) as c:
        c.table(name).delete(b"a1")  # on the target only, at the server's now: newer than the source's cells
    verdict, repair = _repair(src, dst, name)
    assert verdict.differing == [(b"a1", "only_in_source")]
    assert (repair["cells_put"], repair["still_different"], repair["masked_by_delete"],
            repair["not_read_back"], repair["read_back_by_get"]) == (2, 1, 1, 0, 0)
    assert "major compaction" in repair["hint"]
    [item] = repair["unseen_sample"]
    assert (item["row"], item["reason"], item["markers"]) == ("a1", "masked_by_delete", "read with raw scans")
    # `host,port,startcode` (Thrift2's getRegionLocation), `host,port` (Thrift1's getRegionInfo)
    assert any(item["region_server"] in (s, s.rpartition(",")[0]) for s in _servernames(dc2)), item
    assert item["cells"] == [
        {"column": "d:a", "timestamp": old, "read_back_by_get": False, "hidden_by": ["DeleteFamily d:"]},
        {"column": "h:a", "timestamp": old, "read_back_by_get": False, "hidden_by": ["DeleteFamily h:"]}]


def test_markers_that_cannot_be_read_are_never_claimed(clusters):
    """The same row, but the target's shell does not run: the cells were written and are not read back, and the
    report says the markers were not read; it does not call them masked."""
    dc1, dc2, src, dst = clusters
    name = _table(dc1, dc2)
    old = int(time.time() * 1000) - 3_600_000
    _put_both(dc1, dc2, name, {b"a1": {b"d:a": b"1"}}, old)
    with closing(dc2.connection(timeout=60000)) as c:
        c.table(name).delete(b"a1")
    no_shell = dataclasses.replace(dst, shell_command=("false",))
    _verdict, repair = _repair(src, no_shell, name)
    assert (repair["still_different"], repair["masked_by_delete"], repair["not_read_back"]) == (1, 0, 1)
    [item] = repair["unseen_sample"]
    assert item["reason"] == "not_read_back" and item["markers"].startswith("not read: ShellCommandError")
    assert item["cells"][0]["hidden_by"] is None
    assert "not read back" in repair["hint"] and "major compaction" not in repair["hint"]


def test_cells_hidden_by_no_marker_are_not_read_back_with_the_row_and_the_region_server(clusters):
    """The target's family expires cells after an hour (a TTL the source has not): the repair's puts, an hour old,
    are written and never read back, and no marker hides them."""
    dc1, dc2, src, dst = clusters
    name = _table(dc1, dc2, {"d": {"max_versions": 3, "ttl_s": 3600}, "h": {"max_versions": 2}})
    old = int(time.time() * 1000) - 7_200_000
    with closing(dc1.connection(timeout=60000)) as c:
        c.table(name).put(b"q5", {b"d:a": b"5"}, timestamp=old)
    _verdict, repair = _repair(src, dst, name)
    assert (repair["cells_put"], repair["still_different"], repair["masked_by_delete"],
            repair["not_read_back"]) == (1, 1, 0, 1)
    [item] = repair["unseen_sample"]
    assert (item["row"], item["reason"], item["markers"]) == ("q5", "not_read_back", "read with raw scans")
    assert item["cells"] == [{"column": "d:a", "timestamp": old, "read_back_by_get": False, "hidden_by": []}]
    assert item["region_server"].split(",")[0] == dc2.endpoints["region_servers"][0]["host"]
    assert "not read back" in repair["hint"] and "TTL" in repair["hint"]
