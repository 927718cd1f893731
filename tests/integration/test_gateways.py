"""Several Thrift gateways per cluster: partitions spread over the source's gateways, writes over the target's,
and a gateway that dies mid-copy costs only retries of its partitions on another gateway (both data paths)."""
from __future__ import annotations

import threading
import uuid

import pytest

from hbase_migration.data.copy import CopyOptions
from hbase_migration.data.executors import LocalExecutor
from hbase_migration.data.runner import run_copy
from tests.hbase_data import DATA_PATHS, SPLITS, cluster_of, spread_key
from tests.polling import wait_for

pytestmark = pytest.mark.integration

KIND = {"thrift2": "thrift2", "thrift1": "thrift"}


@pytest.fixture(scope="module")
def gateway_pair(zookeeper, tmp_path_factory):
    from minihbase.testing import MiniCluster

    workdir = tmp_path_factory.mktemp("minihbase")
    started = []
    try:
        for name in ("gw1", "gw2"):
            started.append(MiniCluster.start(zookeeper.hosts, workdir, name=name,
                                             znode_parent=f"/hbase-{name}-{uuid.uuid4().hex[:8]}",
                                             thrift_gateways=2, thrift2_gateways=2))
        yield started
    finally:
        for c in reversed(started):
            c.stop()


def _rows(cluster, table):
    """Every version of every row, read with a plain Thrift2 client (not the toolkit's)."""
    from demo.workload import Thrift2

    client = Thrift2(cluster.endpoints)
    try:
        return {row: cols for row, cols in client.scan(table)}
    finally:
        client.close()


@pytest.mark.parametrize("data_path", DATA_PATHS)
def test_a_gateway_dying_mid_copy_costs_only_retries_of_its_partitions(gateway_pair, data_path):
    from demo.workload import Thrift2

    dc1, dc2 = gateway_pair
    src, dst = cluster_of(dc1, "source", data_path), cluster_of(dc2, "target", data_path)
    assert len(src.gateways) == len(dst.gateways) == 2
    table = "gw_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 2}}, SPLITS)
    loader = Thrift2(dc1.endpoints)
    loader.put(table, [(spread_key(i), {b"d:v": b"v%d" % i}, 1_000 + i) for i in range(1600)])
    loader.put(table, [(spread_key(i), {b"d:v": b"w%d" % i}, 2_000 + i) for i in range(0, 1600, 3)])
    loader.close()
    # 8 partitions of ~200 rows at 100 rows/s each: the copy lasts a few seconds, long enough to kill a gateway.
    options = CopyOptions(table, rows_per_s=100, scan_batch_rows=20, write_batch_cells=40, retry_wait_max_s=1.0,
                          timeout_s=10)
    result: dict = {}
    copy = threading.Thread(target=lambda: result.update(summary=run_copy(src, dst, options, LocalExecutor(4))))
    copy.start()
    kind = KIND[data_path]
    try:
        wait_for(lambda: _rows(dc2, table), 30, "the copy's first writes")
        dc1.stop_gateway(kind, 1)  # a source gateway dies: its partitions' scans move to the other one
        dc2.stop_gateway(kind, 0)  # and a target gateway: the writers on it move too
        copy.join(180)
    finally:
        dc1.start_gateway(kind, 1)
        dc2.start_gateway(kind, 0)
    assert not copy.is_alive()
    summary = result["summary"]
    assert summary["failed_partitions"] == 0 and summary["copied_partitions"] == 8, summary["failures"]
    assert summary["retries"] >= 1
    src_rows, dst_rows = _rows(dc1, table), _rows(dc2, table)
    assert dst_rows == src_rows and len(src_rows) == 1600
    assert sum(len(v) for cols in dst_rows.values() for v in cols.values()) == 1600 + 534  # every version
