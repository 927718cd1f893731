"""`data_path: auto` (a connection's default): native where the jobs reach the region servers, else Thrift.

Resolved once per task, before spark-submit (the Airflow operators) or before the job (the CLI), from where the
job's driver runs; the job then gets the concrete path in the clusters' wire form and never probes again (a job
handed `auto` unresolved takes Thrift, as before). Native needs both clusters on it, so the pair decides together:

| the other's data_path | repair asked | native jars | all region servers of both answer HBase RPC | auto becomes |
|---|---|---|---|---|
| thrift1 / thrift2 | - | - | - (not probed) | Thrift |
| native / auto, both Kerberized with different krb5.conf files | - | - | - (not probed) | Thrift |
| native / auto | yes | - | - (not probed) | Thrift |
| native / auto | no | missing | - (not probed) | Thrift |
| native / auto | no | built | no (or ZooKeeper unreadable) | Thrift |
| native / auto | no | built | yes | native |

Thrift is `thrift2` when the connection names Thrift2 gateways, else `thrift1`. A Kerberized cluster goes native
like an open one (each JVM logs in from the connection's keytab with the connection's krb5.conf: jvm/
`Connections`), unless both clusters are Kerberized and their connections name krb5.conf files of different
content: one JVM holds one krb5.conf, and native logs in to both in the same JVMs (`native` named then is refused).
The reason goes in one log line
and in the job's summary (`data_path_why`, beside `data_path`), so the ledger shows what ran and why.
"""
from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.clusters.rpc_probe import ClusterProbe

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Choice:
    """What `auto` became for the pair: each cluster's concrete data path, and why."""

    source_path: str
    target_path: str
    native: bool
    reason: str

    def line(self, source: "Cluster", target: "Cluster") -> str:
        """The one log line an operator reads: what was chosen, for which connection, and why."""
        chosen = [f"{c.name} -> {p}" for c, p in ((source, self.source_path), (target, self.target_path))
                  if c.data_path == "auto"]
        return f"data_path auto: {', '.join(chosen)}: {self.reason}"


def thrift_path(cluster: "Cluster") -> str:
    """The Thrift path a cluster runs on: Thrift2 when its connection names Thrift2 gateways."""
    if cluster.data_path in ("thrift1", "thrift2"):
        return cluster.data_path
    return "thrift2" if cluster.thrift2_servers else "thrift1"


def blocker(source: "Cluster", target: "Cluster", refusal: str | None, jars_problem: str | None) -> str | None:
    """Why native is out before any probe (None: probe). `refusal`: what the run asks that native refuses
    (`native_jobs.refused`); `jars_problem`: why the native jars are not there (`native.classpath`); two Kerberized
    clusters whose connections name different krb5.conf files (`native_jobs.krb5_conflict`)."""
    from hbase_migration.data.native_jobs import krb5_conflict

    for cluster in (source, target):
        if cluster.data_path in ("thrift1", "thrift2"):
            return f"{cluster.name}'s connection names data_path {cluster.data_path}, and native needs both clusters"
    conflict = krb5_conflict(source, target)
    if conflict:
        return conflict
    if refusal:
        return refusal
    if jars_problem:
        return jars_problem
    return None


def decide(source: "Cluster", target: "Cluster", blocked: str | None, probes: Sequence["ClusterProbe"] = (),
           where: str = "this host") -> Choice | None:
    """The pair's choice (None: neither connection says auto). `blocked`: `blocker`'s answer; `probes`: both
    clusters' region servers probed from `where` (only when not blocked)."""
    if "auto" not in (source.data_path, target.data_path):
        return None

    def on_thrift(reason: str) -> Choice:
        return Choice(thrift_path(source) if source.data_path == "auto" else source.data_path,
                      thrift_path(target) if target.data_path == "auto" else target.data_path, False, reason)

    if blocked:
        return on_thrift(blocked)
    failed = [p for p in probes if not p.ok]
    if failed or len(probes) < 2:
        why = "; ".join(p.reason() for p in failed) or "the region servers were not probed"
        return on_thrift(f"{why} (probed from {where}: only the gateways are known to be reachable)")
    counts = " and ".join(f"{p.cluster} ({len(p.servers)})" for p in probes)
    return Choice("native", "native", True,
                  f"every region server of {counts} answers as HBase RPC from {where}, and the native jars are built")


def follow(cluster: "Cluster", leader: "Cluster") -> "Cluster":
    """Another view of the same cluster (verify's `source_remote`) on its leader's resolved path, when it says
    auto: a native leader reads it natively too, a Thrift one through its own gateways."""
    if cluster.data_path != "auto" or leader.data_path == "auto":
        return cluster
    return dataclasses.replace(cluster, data_path="native" if leader.uses_native else thrift_path(cluster))


def resolve(source: "Cluster", target: "Cluster", *, repair: bool = False, where: str = "this host",
            timeout_s: float | None = None) -> tuple["Cluster", "Cluster", Choice | None]:
    """The pair with `auto` replaced by what this host can run (see the module), and the choice (None: neither
    said auto; the pair is returned as given). Probes both clusters at once, only when nothing else rules native
    out. Never raises for an unreachable cluster: that is a reason to stay on Thrift."""
    if "auto" not in (source.data_path, target.data_path):
        return source, target, None
    from hbase_migration.clusters.rpc_probe import PROBE_TIMEOUT_S, probe_cluster
    from hbase_migration.data import native_jobs
    from hbase_migration.data.datapath.native import NativeUnavailable, classpath

    jars_problem = None
    try:
        classpath()
    except NativeUnavailable as e:
        jars_problem = str(e)
    blocked = blocker(source, target, native_jobs.refused(repair), jars_problem)
    probes: list[ClusterProbe] = []
    if blocked is None:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rpc-probe-cluster") as pool:
            probes = list(pool.map(lambda c: probe_cluster(c, timeout_s or PROBE_TIMEOUT_S), (source, target)))
    choice = decide(source, target, blocked, probes, where)
    assert choice is not None
    return (dataclasses.replace(source, data_path=choice.source_path),
            dataclasses.replace(target, data_path=choice.target_path), choice)
