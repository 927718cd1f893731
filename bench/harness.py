"""What the Spark benchmarks share: a ZooKeeper, minihbase dc1 and dc2, and a warmed-up Spark local[2] session
(the jobs find it already started, so a measured job does not pay for the JVM), all stopped on exit."""
from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from minihbase.testing import MiniCluster
from minihbase.zookeeper import ZooKeeperServer


@contextmanager
def clusters_and_spark(name: str) -> Iterator[tuple[Path, MiniCluster, MiniCluster]]:
    """Yields (workdir, dc1, dc2)."""
    from hbase_migration.data import executors

    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    zk = ZooKeeperServer(workdir / "zk")
    zk.start()
    dc1 = MiniCluster.start(zk.hosts, workdir, name="dc1", znode_parent=f"/hbase-{name}-dc1")
    dc2 = MiniCluster.start(zk.hosts, workdir, name="dc2", znode_parent=f"/hbase-{name}-dc2")
    spark, _ = executors.spark_session(name, "local[2]")
    # Warm-up, not measured: start the Python workers so the first measured job does not pay for them.
    spark.sparkContext.parallelize(range(4), 2).map(lambda x: x).count()
    try:
        yield workdir, dc1, dc2
    finally:
        executors.stop_session(spark)
        dc1.stop()
        dc2.stop()
        zk.stop()


def set_latency(ms: float, *clusters: MiniCluster) -> None:
    """Injected latency per RPC on every cluster given: the link only (a cross-datacenter link), not slow storage
    (minihbase's handler latency stays 0)."""
    for cluster in clusters:
        cluster.set_latency(ms)
        cluster.set_handler_latency(0)


def thrift2(cluster: MiniCluster):
    """A plain Thrift2 client of the cluster (HBase's IDL as minihbase ships it; no toolkit code)."""
    from demo.workload import Thrift2

    return Thrift2(cluster.endpoints)
