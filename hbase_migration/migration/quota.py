"""The oldWALs quota: sampling, and the policy a migration applies when a disabled peer fills it.

A sample reads `<rootdir>/oldWALs` and the quotas above it through WebHDFS, estimates growth from the
caller's earlier samples, and asks the pure watchdog decision. The policy (`fail` or `enable_peer`) is applied
here, for every caller: the copy's `Watchdog` thread, and `settle_after_failure` when a run fails. A peer
created DISABLED pins every WAL from T0 (HBase's `ReplicationLogCleaner` keeps any WAL still in a queue), so
oldWALs grows for the whole copy; past its HDFS quota the region servers abort on the next WAL roll.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hbase_migration.clusters import hdfs
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.hdfs import DEFAULT_QUOTA_MARK

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_QUOTA_MARK", "POLICIES", "QuotaSample", "Watchdog", "apply_policy", "measure", "record", "sample",
           "settle_after_failure"]

POLICIES = ("fail", "enable_peer")


class QuotaUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class QuotaSample:
    cluster: str
    taken_at: float
    usage: hdfs.QuotaUsage
    growth_bytes_per_s: float | None
    projected_exhaustion_s: float | None
    decision: hdfs.WatchdogDecision

    def log_line(self) -> str:
        b = self.usage.binding
        quota = (f"{b.kind} quota on {b.path} {b.used}/{b.limit} {b.unit} ({b.fraction_used:.1%})"
                 if b else "no quota")
        growth = "unknown" if self.growth_bytes_per_s is None else f"{self.growth_bytes_per_s:.0f} B/s"
        proj = "never" if self.projected_exhaustion_s is None else f"in {self.projected_exhaustion_s:.0f}s"
        return (f"{self.cluster}: oldWALs {self.usage.oldwals.length} B in {self.usage.oldwals.file_count} files; "
                f"{quota}; growth {growth}; exhaustion {proj}; watchdog {self.decision.level}"
                + (f": {'; '.join(self.decision.reasons)}" if self.decision.reasons else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "taken_at": self.taken_at, "usage": self.usage.to_dict(),
                "growth_bytes_per_s": self.growth_bytes_per_s,
                "projected_exhaustion_s": self.projected_exhaustion_s, "decision": self.decision.to_dict()}


def webhdfs(cluster: Cluster) -> hdfs.WebHdfs:
    if not cluster.webhdfs_url:
        raise QuotaUnavailable(f"cluster {cluster.name!r} has no webhdfs_url: oldWALs cannot be watched")
    from hbase_migration.clusters import channels

    return hdfs.WebHdfs(cluster.webhdfs_url, timeout_s=cluster.timeout_s, session=channels.http(cluster),
                        user=cluster.webhdfs_user)


def sample(cluster: Cluster, quota_mark: float, taken_at: float,
           previous: Sequence[tuple[float, float]] = (), remaining_s: float | None = None) -> QuotaSample:
    """One reading; `previous` are earlier (time, oldWALs spaceConsumed) pairs for the growth rate."""
    usage = hdfs.quota_usage(webhdfs(cluster), cluster.rootdir)
    points = [p for p in previous if p[0] < taken_at] + [(taken_at, float(usage.oldwals.space_consumed))]
    rate = hdfs.growth_rate(points) if len(points) > 1 else None
    decision = hdfs.watchdog_decision(usage, rate, quota_mark, remaining_s=remaining_s)
    return QuotaSample(cluster.name, taken_at, usage, rate, hdfs.projected_exhaustion(usage, rate), decision)


def measure(cluster: Cluster, quota_mark: float = DEFAULT_QUOTA_MARK, gap_s: float = 5.0,
            clock=time.time, sleep=time.sleep) -> QuotaSample:
    """Two readings `gap_s` apart, so the growth rate is measured, not assumed (the CLI's `quota`)."""
    first = sample(cluster, quota_mark, clock())
    if gap_s <= 0:
        return first
    sleep(gap_s)
    return sample(cluster, quota_mark, clock(), [(first.taken_at, float(first.usage.oldwals.space_consumed))])


def record(ledger: Any, run_id: str, s: QuotaSample) -> None:
    """Keep the sample in the run ledger (one row per constraint path, the binding one first)."""
    constraints = sorted(s.usage.constraints, key=lambda c: c != s.usage.binding)
    paths = {c.path for c in constraints} or {s.usage.oldwals_path}
    for path in paths:
        space = next((c for c in constraints if c.path == path and c.unit == "bytes"), None)
        names = next((c for c in constraints if c.path == path and c.unit == "names"), None)
        ledger.quota_sample(
            run_id, path,
            space_consumed=space.used if space else s.usage.oldwals.space_consumed,
            space_quota=space.limit if space else None,
            ns_consumed=names.used if names else s.usage.oldwals.file_count + s.usage.oldwals.directory_count,
            ns_quota=names.limit if names else None,
            growth_bytes_per_s=s.growth_bytes_per_s,
            projected_exhaustion_ms=None if s.projected_exhaustion_s is None
            else int((s.taken_at + s.projected_exhaustion_s) * 1000),
            sampled_ms=int(s.taken_at * 1000),
        )


# ---------------------------------------------------------------------------------------------------------
# The policy


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"quota_policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    return policy


@dataclass(frozen=True)
class PolicyAction:
    """What the policy did about a sample: `none` (no breach), `fail` (the caller stops its work; the peer is
    left as it is) or `peer_enabled` (the peer now ships, so the cleaner can free the WALs it shipped)."""

    action: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "message": self.message}


def _need_target(policy: str, peer_id: str | None, target: Cluster | None) -> None:
    if policy == "enable_peer" and peer_id and target is None:
        raise ValueError("quota policy enable_peer needs the target cluster: a peer is enabled only once each of its "
                         "tables exists there (migration.enable_gate)")


def apply_policy(cluster: Cluster, peer_id: str | None, s: QuotaSample, policy: str,
                 ledger: Any = None, run_id: str | None = None, *, target: Cluster | None = None,
                 tables: Sequence[str] = ()) -> PolicyAction:
    """Act on one sample: nothing below the mark; on a breach, `enable_peer` enables the peer (and notes it in
    the ledger) once each of its tables exists on `target` (else, like `fail`, the caller stops: a peer enabled
    before its tables exist stalls every table on its queues and pins WALs all the same); `fail` returns the
    message the caller fails with. `tables`: the run's, when the peer's TABLE_CFS cannot say."""
    check_policy(policy)
    if s.decision.level != "breach":
        return PolicyAction("none", s.decision.level)
    reasons = "; ".join(s.decision.reasons)
    if policy == "enable_peer" and peer_id:
        from hbase_migration.migration.enable_gate import enable_if_tables_exist

        _need_target(policy, peer_id, target)
        gate, result = enable_if_tables_exist(cluster, target, peer_id, tables)
        if result is None:
            return PolicyAction("fail", f"oldWALs quota breach on {cluster.name} ({reasons}): quota policy "
                                        f"enable_peer refused: {gate.refusal()}. Peer {peer_id} is left DISABLED and "
                                        "keeps pinning every WAL since T0: create (or clone) the missing tables on "
                                        "the target, or raise the oldWALs quota, then clear the failed task "
                                        "(finished partitions are kept)")
        message = (f"oldWALs quota breach on {cluster.name} ({reasons}): peer {peer_id} enabled early "
                   f"({result.outcome}; its tables {', '.join(gate.tables)} exist on {gate.target}) so the cleaner "
                   "can free shipped WALs; the copy goes on (edits replayed from the backlog carry their own "
                   "timestamps)")
        if ledger is not None and run_id:
            ledger.peer_note(run_id, peer_id, "ENABLED", f"quota policy enable_peer: {reasons}")
        return PolicyAction("peer_enabled", message)
    return PolicyAction("fail", f"oldWALs quota breach on {cluster.name} ({reasons}): peer {peer_id or '-'} is left "
                                "as it is (DISABLED during the copy): enable it so the cleaner can free WALs, or "
                                "raise the quota, then clear the failed task (finished partitions are kept)")


def settle_after_failure(cluster: Cluster, peer_id: str, policy: str, dry_run: bool = False, *,
                         target: Cluster | None = None, tables: Sequence[str] = ()) -> tuple[str, str | None]:
    """After a run failed: the peer's real state, and with `enable_peer` a disabled peer enabled (a failed run
    would otherwise leave it pinning WALs until a person acts) once each of its tables exists on `target`.
    Returns (state, what was done: the enable's outcome, or why it was not enabled; None when nothing was to do)."""
    from hbase_migration.migration.enable_gate import enable_if_tables_exist
    from hbase_migration.replication import peer_admin

    with peer_admin(cluster) as admin:
        peer = admin.get_peer(peer_id)
    if peer is None:
        return "ABSENT", None
    if peer.enabled is False and check_policy(policy) == "enable_peer" and not dry_run:
        _need_target(policy, peer_id, target)
        gate, result = enable_if_tables_exist(cluster, target, peer_id, tables)
        if result is None:
            return "DISABLED", gate.refusal()
        return "ENABLED", result.outcome
    return peer.state, None


class Watchdog:
    """Samples oldWALs every `interval_s` in a thread beside a copy, records every reading in the run ledger,
    and applies the policy on a breach: `on_fail(message)` is called once for `fail` (the caller stops the
    copy). A sampling error costs a sample, never the copy. After the first breach the quota is no longer
    sampled (the policy has acted).

    With a ledger and a peer it also records the peer's replication queues at each interval (`lag_sample`,
    from every live region server's /jmx): during the copy the peer is DISABLED and its queues grow, which is
    what the dashboard's lag chart shows before enable_peer. `stop()` takes one last reading of both, so even
    a copy shorter than the interval leaves a first and a last point."""

    def __init__(self, cluster: Cluster, peer_id: str | None, policy: str, quota_mark: float,
                 interval_s: float = 30.0, ledger_url: str | None = None, run_id: str | None = None,
                 on_fail: Callable[[str], None] | None = None, logger: logging.Logger | None = None, *,
                 target: Cluster | None = None, tables: Sequence[str] = ()):
        _need_target(policy, peer_id, target)
        self.cluster = cluster
        self.target = target  # enable_peer enables the peer only once its tables exist there
        self.tables = tuple(tables)
        self.peer_id = peer_id
        self.policy = check_policy(policy)
        self.quota_mark = quota_mark
        self.interval_s = interval_s
        self.ledger_url = ledger_url
        self.run_id = run_id
        self.on_fail = on_fail
        self.log = logger or log
        self.samples = 0  # quota readings taken
        self.lag_samples = 0  # lag readings recorded
        self.action: PolicyAction | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="oldwals-watchdog", daemon=True)

    @property
    def _watch_quota(self) -> bool:
        return bool(self.cluster.webhdfs_url) and self.action is None

    @property
    def _watch_lag(self) -> bool:
        return bool(self.peer_id and self.ledger_url and self.run_id)

    def start(self) -> "Watchdog":
        if not self.cluster.webhdfs_url:
            self.log.warning("no webhdfs_url on %s: oldWALs is not watched during the copy", self.cluster.name)
        if self._watch_quota or self._watch_lag:
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after one last reading (waits up to `timeout_s` for it)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        previous: list[tuple[float, float]] = []
        stopping, first = False, True
        while not stopping:
            stopping = self._stop.wait(0 if first else self.interval_s)
            first = False
            if not (self._watch_quota or self._watch_lag):
                return
            ledger = self._ledger()
            try:
                if self._watch_quota:
                    self._quota_reading(ledger, previous)
                if self._watch_lag and ledger is not None:
                    self._lag_reading(ledger)
            finally:
                if ledger is not None:
                    ledger.close()

    def _quota_reading(self, ledger: Any, previous: list[tuple[float, float]]) -> None:
        try:
            s = sample(self.cluster, self.quota_mark, time.time(), previous[-5:])
        except Exception as e:
            self.log.warning("oldWALs sample failed: %s", e)
            return
        previous.append((s.taken_at, float(s.usage.oldwals.space_consumed)))
        self.samples += 1
        self.log.info("watchdog: %s", s.log_line())
        if ledger is not None:
            record(ledger, self.run_id, s)
        action = apply_policy(self.cluster, self.peer_id, s, self.policy, ledger, self.run_id, target=self.target,
                              tables=self.tables)
        if action.action == "none":
            return
        self.action = action
        if action.action == "fail":
            self.log.error("%s", action.message)
            if self.on_fail is not None:
                self.on_fail(action.message)
        else:
            self.log.warning("%s", action.message)

    def _lag_reading(self, ledger: Any) -> None:
        """One lag sample of the peer: every live region server's queues for it, as the drained sensor
        records them. An unreadable cluster costs the sample."""
        from hbase_migration.clusters import zk
        from hbase_migration.replication import metrics

        try:
            with zk.connect(self.cluster, timeout=self.cluster.timeout_s) as client:
                snapshot = metrics.peer_status(self.cluster, self.peer_id, client, time.time())
            rows = snapshot.lag_rows()
            if rows:
                ledger.lag_sample(self.run_id, self.peer_id, rows, sampled_ms=int(snapshot.taken_at * 1000))
                self.lag_samples += 1
            summary = snapshot.summary()
            self.log.info("watchdog: peer %s %s, WALs queued %s, max age %s ms", self.peer_id,
                          summary["peer_state"], summary["total_size_of_log_queue"], summary["max_age_ms"])
        except Exception as e:
            self.log.warning("lag sample of peer %s failed: %s", self.peer_id, e)

    def _ledger(self) -> Any:
        if not (self.ledger_url and self.run_id):
            return None
        from hbase_migration.ledger.store import Ledger

        try:
            return Ledger.open(self.ledger_url)
        except Exception as e:  # the ledger is bookkeeping: a reading it cannot take is logged, not fatal
            self.log.warning("ledger not available for oldWALs readings: %s", e)
            return None
