"""Preflight: every check a migration needs before it changes anything, each a named result with a reason.

Checks read only. `run_preflight` gathers facts from both clusters (Thrift, ZooKeeper, the shell's
`describe`, WebHDFS) into a `Facts` value, and `evaluate` turns facts into results: a pure function, unit-tested
as a table. Nothing here adds a peer or alters a table; the fix for a scope-0 family is printed, and applied
only by `fix_replication_scope` when asked.
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from hbase_migration import hdfs
from hbase_migration.cluster import Cluster
from hbase_migration.replication.model import InvalidPeerConfig, Peer, PeerConfig, is_ours, validate_peer_id
from hbase_migration.schema import TableSchema, alter_scope_statement

log = logging.getLogger(__name__)

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    reason: str
    severity: str = ERROR  # an ERROR that is not ok fails preflight; a WARNING only informs
    fix: str | None = None  # what an operator can run to make it pass

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "severity": self.severity, "reason": self.reason,
                "fix": self.fix}


@dataclass(frozen=True)
class PreflightReport:
    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok or r.severity != ERROR for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.ok and r.severity == ERROR]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [r.to_dict() for r in self.results]}

    def text(self) -> str:
        lines = []
        for r in self.results:
            mark = "ok  " if r.ok else ("FAIL" if r.severity == ERROR else "warn")
            lines.append(f"[{mark}] {r.name}: {r.reason}")
            if r.fix and not r.ok:
                lines.append(f"       fix: {r.fix}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ClusterFacts:
    """What one cluster showed; `error` set when it could not be reached."""

    name: str
    cluster_key: str
    cluster_id: str | None = None
    tables: Mapping[str, TableSchema | None] = field(default_factory=dict)  # None: table absent
    error: str | None = None


@dataclass(frozen=True)
class Facts:
    source: ClusterFacts
    target: ClusterFacts
    tables: tuple[str, ...]
    peer_id: str
    wanted_peer: PeerConfig | None
    peers: tuple[Peer, ...] = ()
    peers_error: str | None = None
    queued_wals: Mapping[str, int] = field(default_factory=dict)  # peer id -> most WALs in one of its queues
    recovered_queues: Mapping[str, int] = field(default_factory=dict)
    headroom: Any = None  # hdfs.HeadroomDecision, or None when not checked
    headroom_error: str | None = None
    create_missing: bool = True
    owner: str | None = None
    lag_wal_threshold: int = 2  # more WALs than this in one queue of another peer: it lags


# ------------------------------------------------------------------------------------------------
# Pure evaluation


def _reachable(which: str, facts: ClusterFacts) -> CheckResult:
    if facts.error:
        return CheckResult(f"{which}_reachable", False, f"{facts.name} ({facts.cluster_key}): {facts.error}")
    return CheckResult(f"{which}_reachable", True,
                       f"{facts.name} ({facts.cluster_key}) answers; cluster id {facts.cluster_id}")


def _distinct(source: ClusterFacts, target: ClusterFacts, same_key: bool) -> CheckResult:
    if same_key:
        return CheckResult("distinct_clusters", False,
                           f"source and target are the same cluster ({source.cluster_key})")
    if source.cluster_id and source.cluster_id == target.cluster_id:
        return CheckResult("distinct_clusters", False,
                           f"source and target report the same cluster id {source.cluster_id}: "
                           "two keys reach one cluster")
    return CheckResult("distinct_clusters", True, f"{source.cluster_key} -> {target.cluster_key}")


def _source_tables(facts: Facts) -> CheckResult:
    missing = [t for t in facts.tables if facts.source.tables.get(t) is None]
    if missing:
        return CheckResult("source_tables", False, f"not found on the source: {', '.join(missing)}")
    fams = "; ".join(f"{t}: {','.join(f.name for f in facts.source.tables[t].families)}" for t in facts.tables)
    return CheckResult("source_tables", True, f"all {len(facts.tables)} exist ({fams})")


def _target_tables(facts: Facts) -> CheckResult:
    problems, to_create = [], []
    for t in facts.tables:
        src, dst = facts.source.tables.get(t), facts.target.tables.get(t)
        if src is None:
            continue
        if dst is None:
            to_create.append(t)
            continue
        missing = sorted({f.name for f in src.families} - {f.name for f in dst.families})
        if missing:
            problems.append(f"{t} on the target lacks families {', '.join(missing)}")
        if not dst.enabled:
            problems.append(f"{t} on the target is disabled")
    if to_create and not facts.create_missing:
        problems.append(f"absent on the target: {', '.join(to_create)} (allow creating them, or create them "
                        "with the source's families and split keys)")
    if problems:
        return CheckResult("target_tables", False, "; ".join(problems))
    if to_create:
        return CheckResult("target_tables", True,
                           f"will be created with the source's families and split keys: {', '.join(to_create)}")
    return CheckResult("target_tables", True, "all exist with the source's families")


def _replication_scope(facts: Facts) -> CheckResult:
    bad, zero, fixes = [], [], []
    for t in facts.tables:
        schema = facts.source.tables.get(t)
        if schema is None:
            continue
        for fam in schema.families:
            scope = fam.replication_scope
            if scope not in (0, 1):
                bad.append(f"{t}:{fam.name}={fam.attributes.get('REPLICATION_SCOPE')}")
            elif scope == 0:
                zero.append(f"{t}:{fam.name}")
                fixes.append(alter_scope_statement(t, fam.name, 1))
    if bad:
        return CheckResult(
            "replication_scope", False,
            f"REPLICATION_SCOPE must be 0 or 1; refusing {', '.join(bad)} (other values crashed region "
            "servers in HBase 1.0): set them to 1 before migrating",
            fix="; ".join(alter_scope_statement(*b.split("=")[0].split(":", 1), 1) for b in bad))
    if zero:
        return CheckResult(
            "replication_scope", False,
            f"REPLICATION_SCOPE is 0 on {', '.join(zero)}: edits after the peer is added would not replicate",
            fix="; ".join(fixes))
    return CheckResult("replication_scope", True, "every family of the migrated tables has REPLICATION_SCOPE 1")


def _peer_id(facts: Facts) -> CheckResult:
    try:
        validate_peer_id(facts.peer_id)
    except InvalidPeerConfig as e:
        return CheckResult("peer_id", False, str(e))
    if facts.peers_error:
        return CheckResult("peer_id", False, f"cannot list peers on the source: {facts.peers_error}")
    existing = next((p for p in facts.peers if p.id == facts.peer_id), None)
    if existing is None:
        return CheckResult("peer_id", True, f"peer {facts.peer_id!r} is free")
    if not is_ours(existing, facts.owner):
        return CheckResult("peer_id", False,
                           f"peer {facts.peer_id!r} exists and was not created by this toolkit "
                           f"({existing.describe()}): choose another id")
    if facts.wanted_peer is not None and existing.config != facts.wanted_peer:
        diff = "; ".join(existing.config.differences(facts.wanted_peer))
        return CheckResult("peer_id", False,
                           f"peer {facts.peer_id!r} is ours but replicates something else ({diff}): "
                           "finish or remove that migration first")
    return CheckResult("peer_id", True,
                       f"peer {facts.peer_id!r} already exists with this config ({existing.state}): "
                       "add_peer will leave it as it is")


def _pinning_peers(facts: Facts) -> CheckResult:
    if facts.peers_error:
        return CheckResult("pinning_peers", False, f"cannot list peers on the source: {facts.peers_error}")
    others = [p for p in facts.peers if p.id != facts.peer_id]
    disabled = [p.id for p in others if p.enabled is False]
    recovered = {k: v for k, v in facts.recovered_queues.items() if k != facts.peer_id and v}
    if disabled:
        return CheckResult("pinning_peers", False,
                           f"disabled peer(s) {', '.join(disabled)} already pin WALs in oldWALs: a second "
                           "pinned backlog doubles the quota risk; enable or remove them first",
                           fix="; ".join(f"enable_peer '{p}'  (or remove_peer '{p}')" for p in disabled))
    # A caught-up 2.x queue holds the WAL being written, maybe one just rolled; more means backlog.
    lagging = {k: v for k, v in facts.queued_wals.items() if k != facts.peer_id and v > facts.lag_wal_threshold}
    notes = []
    if lagging:
        worst = ", ".join(f"{k}={v}" for k, v in sorted(lagging.items()))
        notes.append(f"most WALs in one queue, per other peer: {worst}")
    if recovered:
        notes.append("recovered queues of other peers: " + ", ".join(f"{k}={v}" for k, v in recovered.items()))
    if notes:
        return CheckResult("pinning_peers", False, "other peers are lagging and pin WALs: " + "; ".join(notes),
                           severity=WARNING)
    return CheckResult("pinning_peers", True,
                       f"no other peer pins WALs ({len(others)} other peer(s), all enabled and caught up)")


def _headroom(facts: Facts) -> CheckResult:
    if facts.headroom_error:
        return CheckResult("oldwals_headroom", False, facts.headroom_error)
    if facts.headroom is None:
        return CheckResult("oldwals_headroom", False, "not checked: the source has no webhdfs_url",
                           severity=WARNING)
    d = facts.headroom
    if not d.ok:
        return CheckResult("oldwals_headroom", False, "; ".join(d.reasons))
    extra = f"; {'; '.join(d.notes)}" if d.notes else ""
    proj = "no exhaustion projected" if d.projected_exhaustion_s is None \
        else f"exhaustion projected in {d.projected_exhaustion_s:.0f}s"
    return CheckResult("oldwals_headroom", True, f"{proj}, need {d.needed_s:.0f}s{extra}")


def evaluate(facts: Facts, same_key: bool) -> PreflightReport:
    results = [_reachable("source", facts.source), _reachable("target", facts.target),
               _distinct(facts.source, facts.target, same_key)]
    if not facts.source.error:
        results += [_source_tables(facts), _replication_scope(facts), _peer_id(facts), _pinning_peers(facts),
                    _headroom(facts)]
    if not facts.source.error and not facts.target.error:
        results.insert(4, _target_tables(facts))
    return PreflightReport(tuple(results))


# ------------------------------------------------------------------------------------------------
# Gathering facts (I/O)


def describe_tables(cluster: Cluster, tables: Sequence[str], present: set[str]) -> dict[str, TableSchema | None]:
    """Schemas through the shell for the tables that exist; None for the others."""
    from hbase_migration import channels
    from hbase_migration.schema import describe_statement, parse_describe

    out: dict[str, TableSchema | None] = {}
    for t in tables:
        if t not in present:
            out[t] = None
            continue
        output = channels.shell(cluster, [describe_statement(t)], timeout_s=max(60.0, cluster.timeout_s))
        out[t] = parse_describe(output.stdout, t)
    return out


def existing_tables(cluster: Cluster, tables: Sequence[str]) -> set[str]:
    """Which of `tables` exist on the cluster (through its data path, Thrift2 or Thrift1)."""
    from hbase_migration.datapath import open_data_path

    with open_data_path(cluster) as path:
        return {t for t in tables if path.families(t)}


def _cluster_facts(cluster: Cluster, tables: Sequence[str], zk_client: Any) -> ClusterFacts:
    from hbase_migration import zk

    key = str(cluster.cluster_key)
    try:
        cluster_id = zk.read_cluster_id(zk_client, cluster.znode_parent)
        present = existing_tables(cluster, tables)
        schemas = describe_tables(cluster, tables, present)
    except Exception as e:  # any failure to reach is reported as the check's reason
        return ClusterFacts(cluster.name, key, error=f"{type(e).__name__}: {e}")
    return ClusterFacts(cluster.name, key, cluster_id, schemas)


def ensure_distinct(source: Cluster, target: Cluster) -> None:
    """Refuse a peer from a cluster to itself (HBase refuses it too, after the fact)."""
    from hbase_migration.cluster import ClusterConfigError

    if source.cluster_key.normalized() == target.cluster_key.normalized():
        raise ClusterConfigError(f"source and target are the same cluster ({source.cluster_key}): "
                                 "a peer to itself would replicate every edit back into its own tables")


def migration_peer_config(target: Cluster, tables: Sequence[str], *, source: Cluster | None = None) -> PeerConfig:
    """The peer a migration adds: to the target's cluster key, scoped by TABLE_CFS to the tables (all CFs); towards
    a Kerberized target in another realm, with the target's region server principal in its CONFIG."""
    from hbase_migration.security import peer_principal_config

    configuration = peer_principal_config(source.security if source is not None else None, target.security)
    return PeerConfig(cluster_key=target.cluster_key, table_cfs={t: [] for t in tables}, configuration=configuration)


def _headroom_facts(cluster: Cluster, expected_copy_s: float, safety_factor: float, quota_mark: float,
                    sample_gap_s: float, clock: Callable[[], float]) -> tuple[Any, str | None]:
    if not cluster.webhdfs_url:
        return None, None
    try:
        from hbase_migration.quota import webhdfs

        client = webhdfs(cluster)
        first = hdfs.quota_usage(client, cluster.rootdir)
        t0 = clock()
        rate = None
        if sample_gap_s > 0:
            time.sleep(sample_gap_s)
            second = hdfs.quota_usage(client, cluster.rootdir)
            rate = hdfs.growth_rate([(t0, first.oldwals.space_consumed),
                                     (clock(), second.oldwals.space_consumed)])
            first = second
        return hdfs.headroom_decision(first, rate, expected_copy_s, safety_factor, quota_mark), None
    except Exception as e:
        return None, f"cannot read oldWALs usage through {cluster.webhdfs_url}: {type(e).__name__}: {e}"


def run_preflight(source: Cluster, target: Cluster, tables: Sequence[str], peer_id: str, *,
                  create_missing: bool = True, expected_copy_s: float = 3600.0, safety_factor: float = 2.0,
                  quota_mark: float = hdfs.DEFAULT_QUOTA_MARK, sample_gap_s: float = 2.0, owner: str | None = None,
                  clock: Callable[[], float] = time.time) -> PreflightReport:
    """Every check, against both clusters; changes nothing."""
    from hbase_migration import zk
    from hbase_migration.replication import peer_admin

    tables = tuple(dict.fromkeys(t.strip() for t in tables if t and t.strip()))
    if not tables:
        raise ValueError("tables: at least one table is required")
    same_key = source.cluster_key.normalized() == target.cluster_key.normalized()
    from hbase_migration import preflight_security  # Kerberos, QOP, clock skew: first, they explain the rest

    security = preflight_security.check(source, target)

    with contextlib.ExitStack() as stack:

        def gather(cluster: Cluster) -> tuple[ClusterFacts, Any]:
            try:
                client = stack.enter_context(zk.connect(cluster, timeout=cluster.timeout_s))
            except Exception as e:
                return ClusterFacts(cluster.name, str(cluster.cluster_key), error=f"{type(e).__name__}: {e}"), None
            return _cluster_facts(cluster, tables, client), client

        src_facts, src_zk = gather(source)
        tgt_facts, _ = gather(target)
        peers, peers_error, queued, recovered = (), None, {}, {}
        if src_zk is not None and not src_facts.error:
            try:
                with peer_admin(source, zk_client=src_zk) as admin:
                    peers = tuple(admin.list_peers())
                for q in zk.replication_queues(src_zk, source.znode_parent):
                    queued[q.peer_id] = max(queued.get(q.peer_id, 0), len(q.wals))
                    if q.recovered:
                        recovered[q.peer_id] = recovered.get(q.peer_id, 0) + 1
            except Exception as e:
                peers_error = f"{type(e).__name__}: {e}"
    headroom, headroom_error = (None, None)
    if not src_facts.error:
        headroom, headroom_error = _headroom_facts(source, expected_copy_s, safety_factor, quota_mark,
                                                   sample_gap_s, clock)
    wanted = migration_peer_config(target, tables, source=source)
    facts = Facts(src_facts, tgt_facts, tables, peer_id, wanted, peers, peers_error, queued, recovered, headroom,
                  headroom_error, create_missing, owner)
    report = PreflightReport(tuple(security) + evaluate(facts, same_key).results)
    for r in report.results:
        (log.info if r.ok or r.severity != ERROR else log.error)("preflight %s: %s", r.name, r.reason)
    return report
