"""What the Spark benchmarks share: a ZooKeeper, two clusters dc1 and dc2 (minihbase, or with `backend="realhbase"`
real Apache HBase and HDFS from realhbase/), and a warmed-up Spark local[2] session (the jobs find it already
started, so a measured job does not pay for the JVM), all stopped on exit."""
from __future__ import annotations

import json
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from bedkit.zookeeper import ZooKeeperServer
from minihbase.testing import MiniCluster


class RealCluster:
    """One realhbase cluster with the few verbs of minihbase's MiniCluster the benchmarks use."""

    def __init__(self, bed, name: str) -> None:
        self.bed, self.name = bed, name
        self.endpoints = bed.endpoints()[name]

    @property
    def connection_json(self) -> str:
        return json.dumps(self.endpoints["connection"])

    def connection(self, **kwargs):
        import happybase

        return happybase.Connection(self.endpoints["thrift"]["host"], self.endpoints["thrift"]["port"], **kwargs)

    def create_table(self, name: str, families: dict[str, dict], split_keys: list[bytes] | None = None) -> None:
        """Through the real shell (REPLICATION_SCOPE 1, each family's max_versions as VERSIONS)."""
        fams = ", ".join(f"{{NAME => '{f}', VERSIONS => {o.get('max_versions', 1)}, REPLICATION_SCOPE => 1}}"
                         for f, o in families.items())
        splits = ", ".join("'" + k.decode() + "'" for k in split_keys or [])
        proc = self.bed.shell(self.name, f"create '{name}', {fams}" + (f", SPLITS => [{splits}]" if splits else "")
                              + "\n")
        if proc.returncode != 0:
            raise RuntimeError(f"create {name} on {self.name}: {proc.stdout[-1000:]} {proc.stderr[-1000:]}")

    def set_latency(self, ms: float) -> None:
        if ms:
            raise ValueError("realhbase injects no latency: measure 0 ms only (--backend realhbase)")

    def set_handler_latency(self, ms: float) -> None:
        self.set_latency(ms)


def exit_on_sigterm() -> None:
    """SIGTERM (`kill`, a CI timeout) ends the benchmark through SystemExit, so its `finally` blocks stop what it
    started: Python's default handler exits at once, and a killed run left its real test bed running."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


@contextmanager
def clusters_and_spark(name: str, backend: str = "minihbase",
                       testbed: str | None = None) -> Iterator[tuple[Path, Any, Any]]:
    """Yields (workdir, dc1, dc2): MiniClusters, or RealClusters of a realhbase test bed started for the run (or,
    with `testbed`, the one already running in that workdir, left running)."""
    from hbase_migration.data import executors

    exit_on_sigterm()
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    zk = ZooKeeperServer(workdir / "zk")
    zk.start()
    bed = None
    try:
        if backend == "realhbase" and testbed:
            from realhbase.testbed import RealHBase

            running = RealHBase(Path(testbed))
            dc1, dc2 = RealCluster(running, "dc1"), RealCluster(running, "dc2")
        elif backend == "realhbase":
            from realhbase.testbed import RealHBase

            bed = RealHBase(workdir / "realhbase", zookeeper_hosts=zk.hosts)
            bed.up()
            dc1, dc2 = RealCluster(bed, "dc1"), RealCluster(bed, "dc2")
        else:
            dc1 = MiniCluster.start(zk.hosts, workdir, name="dc1", znode_parent=f"/hbase-{name}-dc1")
            dc2 = MiniCluster.start(zk.hosts, workdir, name="dc2", znode_parent=f"/hbase-{name}-dc2")
        spark, _ = executors.spark_session(name, "local[2]")
        # Warm-up, not measured: start the Python workers so the first measured job does not pay for them.
        spark.sparkContext.parallelize(range(4), 2).map(lambda x: x).count()
        try:
            yield workdir, dc1, dc2
        finally:
            executors.stop_session(spark)
            if backend != "realhbase":
                dc1.stop()
                dc2.stop()
    finally:
        if bed is not None:
            bed.down()
        zk.stop()


def set_latency(ms: float, *clusters: Any) -> None:
    """Injected latency per RPC on every cluster given: the link only (a cross-datacenter link), not slow storage
    (minihbase's handler latency stays 0)."""
    for cluster in clusters:
        cluster.set_latency(ms)
        cluster.set_handler_latency(0)


def thrift2(cluster: Any):
    """A plain Thrift2 client of the cluster (HBase's IDL as minihbase ships it; no toolkit code)."""
    from demo.workload import Thrift2

    return Thrift2(cluster.endpoints)
