"""The checks before a peer is added outside a migration run (`python -m hbase_migration peer add`).

A DISABLED peer keeps every WAL since its creation in oldWALs until it ships or is removed: a peer towards a
cluster that does not answer, or scoped to tables that do not exist, pins WALs for nothing, which is the quota
exhaustion the toolkit exists to prevent. So `peer add` runs the migration DAG's own preflight checks for what a
peer depends on (the facts gathered by `preflight.gather_facts`, judged by `preflight.evaluate`): both clusters
answer (the target's cluster key reaches a ZooKeeper and an HBase under its znode parent), they are distinct,
the tables exist on the source, and every family that must replicate has REPLICATION_SCOPE 1 (0/1 only). The
peer id and an existing peer are the peer admin's own checks. Read-only.
"""
from __future__ import annotations

import contextlib
from typing import Sequence

from hbase_migration.clusters.cluster import Cluster
from hbase_migration.migration.checks import PreflightReport
from hbase_migration.migration.preflight import Facts, evaluate, gather_facts, migration_peer_config

PEER_ADD_CHECKS = ("source_reachable", "target_reachable", "distinct_clusters", "source_tables",
                   "replication_scope")


def peer_add_report(source: Cluster, target: Cluster, tables: Sequence[str], peer_id: str) -> PreflightReport:
    """Preflight's checks of PEER_ADD_CHECKS for a peer from `source` to `target` scoped to `tables`."""
    tables = tuple(tables)
    with contextlib.ExitStack() as stack:
        src, _ = gather_facts(source, tables, stack)
        dst, _ = gather_facts(target, (), stack)  # its tables may be created later: only that it answers
    facts = Facts(src, dst, tables, peer_id, migration_peer_config(target, tables))
    same_key = source.cluster_key.normalized() == target.cluster_key.normalized()
    return select(evaluate(facts, same_key), PEER_ADD_CHECKS)


def select(report: PreflightReport, names: Sequence[str]) -> PreflightReport:
    """The results of `report` named in `names`, in their order."""
    return PreflightReport(tuple(r for r in report.results if r.name in names))
