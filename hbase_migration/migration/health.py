"""Replication health of one cluster, for the scheduled watch: peers and how long each has been disabled,
lag per peer, oldWALs usage against its quota and the projected time to exhaustion.

`gather` reads the cluster; `evaluate` (pure) turns what was read into findings against thresholds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.hdfs import DEFAULT_QUOTA_MARK
from hbase_migration.replication.model import is_internal


@dataclass(frozen=True)
class WatchThresholds:
    max_disabled_s: float = 3600.0  # a peer disabled longer pins WALs for too long
    alert_lag_ms: int = 300_000  # worst ageOfLastShippedOp of an enabled peer
    quota_mark: float = DEFAULT_QUOTA_MARK  # fraction of an oldWALs quota
    min_exhaustion_s: float = 24 * 3600.0  # projected time to quota exhaustion

    def __post_init__(self) -> None:
        if not 0 < self.quota_mark <= 1:
            raise ValueError(f"quota_mark must be within (0, 1], got {self.quota_mark!r}")
        for name in ("max_disabled_s", "alert_lag_ms", "min_exhaustion_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class PeerHealth:
    peer_id: str
    state: str
    state_since: float | None  # epoch seconds of the last state change (peer-state znode mtime)
    owner: str | None
    lag: dict[str, Any] = field(default_factory=dict)  # PeerLagSnapshot.summary()
    queues: tuple[dict[str, Any], ...] = ()  # PeerLagSnapshot.lag_rows(): one per region server queue


# The breaches a person is alerted about (`hbase_migration.migration.alerts`); other breaches fail the watch only.
PEER_DISABLED, LAG_BREACH, OLDWALS_QUOTA = "peer_disabled", "lag_breach", "oldwals_quota"


@dataclass(frozen=True)
class Finding:
    level: str  # "breach" | "warn"
    subject: str
    message: str
    kind: str = ""  # PEER_DISABLED, LAG_BREACH, OLDWALS_QUOTA for an alerted breach
    facts: dict[str, Any] = field(default_factory=dict, compare=False)  # its figures, for the alert's text

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "subject": self.subject, "message": self.message, "kind": self.kind,
                "facts": self.facts}


@dataclass(frozen=True)
class HealthReport:
    cluster: str
    taken_at: float
    peers: tuple[PeerHealth, ...]
    quota: Any  # quota.QuotaSample or None
    quota_error: str | None
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        return not any(f.level == "breach" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "taken_at": self.taken_at, "healthy": self.healthy,
                "peers": [p.__dict__ for p in self.peers], "quota": self.quota.to_dict() if self.quota else None,
                "quota_error": self.quota_error, "findings": [f.to_dict() for f in self.findings]}


def quota_facts(quota_sample: Any, th: WatchThresholds) -> dict[str, Any]:
    """The oldWALs figures an alert names: usage of the binding quota, growth, projection, thresholds."""
    binding = quota_sample.usage.binding
    return {"path": getattr(quota_sample.usage, "oldwals_path", None), "quota_mark": th.quota_mark,
            "min_exhaustion_s": th.min_exhaustion_s, "growth_bytes_per_s": quota_sample.growth_bytes_per_s,
            "projected_exhaustion_s": quota_sample.projected_exhaustion_s,
            "binding": None if binding is None else {
                "path": binding.path, "kind": binding.kind, "fraction_used": binding.fraction_used,
                "used": getattr(binding, "used", None), "limit": getattr(binding, "limit", None),
                "unit": getattr(binding, "unit", None)}}


def evaluate(peers: tuple[PeerHealth, ...], quota_sample: Any, quota_error: str | None, th: WatchThresholds,
             now: float) -> tuple[Finding, ...]:
    out = []
    for p in peers:
        subject = f"peer {p.peer_id}"
        if p.state == "DISABLED" and p.state_since is not None:
            disabled_for = now - p.state_since
            if disabled_for > th.max_disabled_s:
                out.append(Finding("breach", subject,
                                   f"DISABLED for {disabled_for:.0f}s (> {th.max_disabled_s:.0f}s): it pins every "
                                   "WAL in oldWALs; enable it or remove it", PEER_DISABLED,
                                   {"peer_id": p.peer_id, "disabled_for_s": round(disabled_for),
                                    "since_ms": int(p.state_since * 1000), "max_disabled_s": th.max_disabled_s}))
        elif p.state == "ENABLED":
            age = p.lag.get("max_age_ms")
            if age is not None and age > th.alert_lag_ms:
                worst = max((q for q in p.queues if not q.get("recovered")),
                            key=lambda q: q.get("age_of_last_shipped_op_ms") or 0, default=None)
                out.append(Finding("breach", subject, f"ageOfLastShippedOp {age} ms > {th.alert_lag_ms} ms",
                                   LAG_BREACH, {"peer_id": p.peer_id, "max_age_ms": age,
                                                "alert_lag_ms": th.alert_lag_ms,
                                                "total_size_of_log_queue": p.lag.get("total_size_of_log_queue"),
                                                "live_servers": p.lag.get("live_servers"),
                                                "worst_server": worst["server"] if worst else None}))
            if p.lag.get("unreadable_servers"):
                out.append(Finding("warn", subject, f"{p.lag['unreadable_servers']} region server(s) unreadable"))
            if p.lag.get("recovered_queues"):
                out.append(Finding("warn", subject, f"{p.lag['recovered_queues']} recovered queue(s) still shipping"))
        elif p.state not in ("ENABLED", "DISABLED"):
            out.append(Finding("breach", subject, f"peer state is {p.state}"))
    if quota_error:
        out.append(Finding("breach", "oldWALs", quota_error))
    elif quota_sample is not None:
        binding = quota_sample.usage.binding
        proj = quota_sample.projected_exhaustion_s
        facts = quota_facts(quota_sample, th)  # both oldWALs breaches are one alert: the quota runs out, or nearly
        if binding is not None and binding.fraction_used >= th.quota_mark:
            out.append(Finding("breach", "oldWALs",
                               f"{binding.kind} quota on {binding.path} {binding.fraction_used:.1%} used "
                               f"(mark {th.quota_mark:.0%})", OLDWALS_QUOTA, facts))
        if proj is not None and proj < th.min_exhaustion_s:
            out.append(Finding("breach", "oldWALs",
                               f"at {quota_sample.growth_bytes_per_s:.0f} B/s the quota is exhausted in {proj:.0f}s "
                               f"(< {th.min_exhaustion_s:.0f}s)", OLDWALS_QUOTA, facts))
    return tuple(out)


def gather(cluster: Cluster, th: WatchThresholds, now: float, quota_gap_s: float = 5.0) -> HealthReport:
    from hbase_migration.clusters import zk
    from hbase_migration.migration import quota
    from hbase_migration.replication import metrics, peer_admin

    peers = []
    with zk.connect(cluster, timeout=cluster.timeout_s) as client:
        with peer_admin(cluster, zk_client=client) as admin:
            listed = admin.list_peers()
        for p in listed:
            if is_internal(p):  # HBase's region replica peer: not a migration's, and never touched
                continue
            stat = client.exists(zk.peer_state_path(cluster.znode_parent, p.id))
            since = stat.mtime / 1000.0 if stat else None
            snapshot = metrics.peer_status(cluster, p.id, client, now) if p.enabled else None
            peers.append(PeerHealth(p.id, p.state, since, p.owner, snapshot.summary() if snapshot else {},
                                    tuple(snapshot.lag_rows()) if snapshot else ()))
    sample, error = None, None
    if cluster.webhdfs_url:
        try:
            sample = quota.measure(cluster, th.quota_mark, quota_gap_s)
        except Exception as e:
            error = f"cannot read oldWALs through {cluster.webhdfs_url}: {type(e).__name__}: {e}"
    findings = evaluate(tuple(peers), sample, error, th, now)
    return HealthReport(cluster.name, now, tuple(peers), sample, error, findings)
