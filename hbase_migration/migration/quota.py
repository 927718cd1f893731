"""The oldWALs quota: sampling, and the policy a migration applies when a disabled peer fills it.

A sample reads `<rootdir>/oldWALs` and the quotas above it through WebHDFS, estimates growth from the
caller's earlier samples, and asks the pure watchdog decision. A one-off sample (preflight, the CLI, the watch DAG)
walks every ancestor up to `/`; the watchdog beside a migration's copies finds the quota-bearing ancestors once
(`discover`) and then reads only oldWALs' own content summary and those ancestors' GETQUOTAUSAGE (`read_planned`:
no walk of the NameNode's namespace above oldWALs), and one watchdog per run and cluster reads at all (a lease in
the ledger): the others act on its readings. The policy (`fail` or `enable_peer`) is applied
here, for every caller: the copy's `Watchdog` thread, and `settle_after_failure` when a run fails. A peer
created DISABLED pins every WAL from T0 (HBase's `ReplicationLogCleaner` keeps any WAL still in a queue), so
oldWALs grows for the whole copy; past its HDFS quota the region servers abort on the next WAL roll.
"""
from __future__ import annotations

import dataclasses
import logging
import posixpath
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from hbase_migration.clusters import hdfs
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.hdfs import DEFAULT_QUOTA_MARK

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_QUOTA_MARK", "POLICIES", "QuotaSample", "WatchPlan", "Watchdog", "apply_policy", "discover",
           "measure", "read_planned", "record", "sample", "settle_after_failure"]

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


def apply_policy(cluster: Cluster, peer_id: str | None, decision: hdfs.WatchdogDecision, policy: str,
                 ledger: Any = None, run_id: str | None = None, *, target: Cluster | None = None,
                 tables: Sequence[str] = ()) -> PolicyAction:
    """Act on one reading's decision: nothing below the mark; on a breach, `enable_peer` enables the peer (and
    notes it in the ledger) once each of its tables exists on `target` (else, like `fail`, the caller stops: a peer
    enabled before its tables exist stalls every table on its queues and pins WALs all the same); `fail` returns
    the message the caller fails with. `tables`: the run's, when the peer's TABLE_CFS cannot say."""
    check_policy(policy)
    if decision.level != "breach":
        return PolicyAction("none", decision.level)
    reasons = "; ".join(decision.reasons)
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


# ---------------------------------------------------------------------------------------------------------
# The watchdog's reading: the quota-bearing ancestors found once, then only cheap calls

REDISCOVER_READINGS = 20  # NameNode without GETQUOTAUSAGE: the ancestors' estimate is re-read this often


@dataclass(frozen=True)
class WatchPlan:
    """What a watchdog's reading asks the NameNode, found once per run and cluster (`discover`).

    A content summary of `/` makes the NameNode walk its whole namespace (under its read lock, in slices), and of
    `<rootdir>` all of HBase's files: quotas are set by an administrator and do not come and go during a copy, so
    the ancestors of oldWALs that bear one are found once, and each reading asks only oldWALs' own content summary
    (its files: the WALs pinned; its answer carries oldWALs' own quotas) and GETQUOTAUSAGE of those ancestors,
    which the NameNode answers from the counts it keeps on a directory with a quota (no walk). A NameNode without
    GETQUOTAUSAGE (before Hadoop 3.0) gets the oldWALs summary alone: the ancestors' use is estimated as found at
    discovery plus oldWALs' growth since, and found again every `REDISCOVER_READINGS` readings.
    """

    rootdir: str
    bearing: tuple[str, ...]  # ancestors of oldWALs with a quota, nearest first
    quota_usage_op: bool | None = None  # the NameNode answers GETQUOTAUSAGE (None: not asked yet)
    # at discovery: oldWALs' [names, space] and each bearing ancestor's quota counts, for the estimate
    baseline: Mapping[str, Any] = field(default_factory=dict)
    readings: int = 0  # since discovery

    @property
    def oldwals_path(self) -> str:
        return posixpath.join(self.rootdir, "oldWALs")

    def calls(self) -> list[tuple[str, str]]:
        """(operation, path) of each WebHDFS call one reading makes."""
        own = [("GETCONTENTSUMMARY", self.oldwals_path)]
        return own + ([] if self.quota_usage_op is False else [("GETQUOTAUSAGE", p) for p in self.bearing])

    def due_for_discovery(self) -> bool:
        return self.quota_usage_op is False and bool(self.bearing) and self.readings >= REDISCOVER_READINGS

    def to_dict(self) -> dict[str, Any]:
        return {"rootdir": self.rootdir, "bearing": list(self.bearing), "quota_usage_op": self.quota_usage_op,
                "baseline": dict(self.baseline), "readings": self.readings}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "WatchPlan":
        return cls(data["rootdir"], tuple(data["bearing"]), data.get("quota_usage_op"), dict(data.get("baseline")
                                                                                              or {}),
                   int(data.get("readings", 0)))


def _counts_dict(c: hdfs.ContentSummary | hdfs.QuotaCounts) -> dict[str, Any]:
    return {"names": c.names, "space_consumed": c.space_consumed, "quota": c.quota, "space_quota": c.space_quota,
            "type_quota": {k: [v.consumed, v.quota] for k, v in c.type_quota.items()}}


def plan_of(rootdir: str, summaries: Mapping[str, hdfs.ContentSummary]) -> WatchPlan:
    """The plan from the content summaries of oldWALs and every ancestor (pure)."""
    root = hdfs._absolute(rootdir)
    bearing = hdfs.quota_bearing(root, summaries)
    oldwals = summaries[posixpath.join(root, "oldWALs")]
    baseline = {"oldWALs": [oldwals.names, oldwals.space_consumed], **{p: _counts_dict(summaries[p]) for p in bearing}}
    return WatchPlan(root, bearing, None, baseline, 0)


def estimated_counts(plan: WatchPlan, oldwals: hdfs.ContentSummary) -> dict[str, hdfs.QuotaCounts]:
    """Each bearing ancestor's use as found at discovery plus oldWALs' growth since (pure): what a NameNode
    without GETQUOTAUSAGE leaves to estimate. oldWALs lies under each of them, so its growth is theirs too."""
    names0, space0 = plan.baseline["oldWALs"]
    d_names, d_space = oldwals.names - names0, oldwals.space_consumed - space0
    out = {}
    for path in plan.bearing:
        b = plan.baseline[path]
        types = {k: hdfs.TypeQuota(max(0, used + d_space), quota) for k, (used, quota) in b["type_quota"].items()}
        out[path] = hdfs.QuotaCounts(max(0, b["names"] + d_names), max(0, b["space_consumed"] + d_space), b["quota"],
                                     b["space_quota"], types)
    return out


def _oldwals_summary(client: hdfs.WebHdfs, path: str, rootdir: str) -> hdfs.ContentSummary:
    try:
        return client.content_summary(path)
    except hdfs.HdfsPathNotFound as exc:
        raise hdfs.HdfsPathNotFound(
            f"{path} does not exist on {client.url}: is rootdir {rootdir!r} this cluster's hbase.rootdir? ({exc})",
            exception=exc.exception, java_class=exc.java_class, status=exc.status, path=exc.path,
            op=exc.op) from None


def discover(cluster: Cluster) -> tuple[WatchPlan, hdfs.QuotaUsage, int]:
    """Find the quota-bearing ancestors (the content summary of oldWALs and of each ancestor, once): the plan,
    the usage those summaries give (a reading of its own), and the number of WebHDFS calls made."""
    client = webhdfs(cluster)
    root = hdfs._absolute(cluster.rootdir)
    oldwals_path = posixpath.join(root, "oldWALs")
    summaries = {oldwals_path: _oldwals_summary(client, oldwals_path, root)}
    for path in hdfs.ancestors(oldwals_path)[1:]:
        summaries[path] = client.content_summary(path)
    plan = plan_of(root, summaries)
    return plan, discovered_usage(plan, summaries), len(summaries)


def discovered_usage(plan: WatchPlan, summaries: Mapping[str, hdfs.ContentSummary]) -> hdfs.QuotaUsage:
    """The discovery's own reading, of the same paths as every later reading by the plan (pure): oldWALs and the
    quota-bearing ancestors, not the root's default namespace quota. Each reading is then one point on each
    path's chart (the dashboard charts the run's quota samples path by path; a path only the discovery recorded
    was a chart of one point)."""
    return hdfs.usage_of(plan.rootdir, summaries[plan.oldwals_path], {p: summaries[p] for p in plan.bearing})


def read_planned(cluster: Cluster, plan: WatchPlan) -> tuple[hdfs.QuotaUsage, WatchPlan, int]:
    """One reading by the plan: (usage, the plan as it now stands, WebHDFS calls made)."""
    client = webhdfs(cluster)
    oldwals = _oldwals_summary(client, plan.oldwals_path, plan.rootdir)
    calls = 1
    counts: dict[str, Any] = {}
    if plan.bearing and plan.quota_usage_op is not False:
        try:
            for path in plan.bearing:
                calls += 1
                counts[path] = client.quota_counts(path)
            plan = dataclasses.replace(plan, quota_usage_op=True)
        except hdfs.WebHdfsRemoteError as e:
            if not hdfs.op_unsupported(e, "GETQUOTAUSAGE"):
                raise
            log.warning("%s: the NameNode has no GETQUOTAUSAGE (Hadoop before 3.0): the quotas on %s are estimated "
                        "from oldWALs' growth, and read again every %d readings", cluster.name,
                        ", ".join(plan.bearing), REDISCOVER_READINGS)
            plan = dataclasses.replace(plan, quota_usage_op=False)
    if plan.quota_usage_op is False:
        counts = estimated_counts(plan, oldwals)
    plan = dataclasses.replace(plan, readings=plan.readings + 1)
    return hdfs.usage_of(plan.rootdir, oldwals, counts), plan, calls


def _shared(s: QuotaSample, points: Sequence[tuple[float, float]], plan: WatchPlan) -> dict[str, Any]:
    """A reading as the other watchdogs of the run read it from the ledger."""
    return {"taken_at": s.taken_at, "decision": s.decision.to_dict(), "line": s.log_line(),
            "points": [list(p) for p in points], "estimated": plan.quota_usage_op is False and bool(plan.bearing)}


def _decision(data: Mapping[str, Any]) -> hdfs.WatchdogDecision:
    return hdfs.WatchdogDecision(data["level"], tuple(data.get("reasons") or ()), data.get("fraction_used"),
                                 data.get("seconds_to_mark"), tuple(data.get("notes") or ()))


class Watchdog:
    """Watches oldWALs beside a copy or an export: a reading every `interval_s`, each recorded in the run ledger,
    and the policy applied on a breach: `on_fail(message)` is called once for `fail` (the caller stops its job),
    `enable_peer` enables `peer_id`. A reading that fails costs that reading, never the copy. After the first
    breach this watchdog no longer watches the quota (its policy has acted).

    One watchdog per run and cluster asks the NameNode: with a ledger and a run, the watchdogs of every task of
    the run share a lease in the ledger (`oldwals_watch`); the holder takes a reading when the last one is at
    least `interval_s` old, whatever the number of tasks, and the others act on its newest reading for their own
    job and peer. A reading asks only what `WatchPlan` says (oldWALs' own summary, GETQUOTAUSAGE of the
    quota-bearing ancestors, found once for the run). A holder that stops gives the lease up; one that dies loses
    it when it expires (`lease_s`). Alone (no ledger) a watchdog reads for itself, by the same plan.

    With a ledger and a peer it also records the peer's replication queues at each interval (`lag_sample`, from
    every live region server's /jmx: the peer's own figure, which the region servers answer, not the NameNode):
    during the copy the peer is DISABLED and its queues grow, which is what the dashboard's lag chart shows before
    enable_peer. `stop()` takes one last lag reading, so even a copy shorter than the interval leaves a first and a
    last point; the last oldWALs reading is taken at stop only when one is due."""

    # A holder renews its lease at each reading; one that died (or stalls, e.g. WebHDFS retrying a slow NameNode)
    # loses it this long after: three intervals, and a minute more for a reading slow to answer on a loaded host.
    LEASE_INTERVALS, LEASE_SLACK_S = 3, 60.0

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
        self.samples = 0  # quota readings this watchdog took
        self.lag_samples = 0  # lag readings recorded
        self.calls = 0  # WebHDFS calls this watchdog made
        self.seen = 0  # readings acted on (its own and the holder's)
        self.action: PolicyAction | None = None
        self.owner = f"{uuid.uuid4().hex[:12]}"
        self._plan: WatchPlan | None = None  # alone: this watchdog's own
        self._points: list[tuple[float, float]] = []  # alone: its readings' (time, oldWALs space)
        self._seen_at = 0.0  # the newest reading acted on
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="oldwals-watchdog", daemon=True)

    @property
    def _watch_quota(self) -> bool:
        return bool(self.cluster.webhdfs_url) and self.action is None

    @property
    def _watch_lag(self) -> bool:
        return bool(self.peer_id and self.ledger_url and self.run_id)

    @property
    def lease_s(self) -> float:
        return self.LEASE_INTERVALS * self.interval_s + self.LEASE_SLACK_S

    @property
    def _key(self) -> str:
        return str(self.cluster.cluster_key.normalized())

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
        stopping, first = False, True
        while not stopping:
            stopping = self._stop.wait(0 if first else self.interval_s)
            first = False
            if not (self._watch_quota or self._watch_lag):
                return
            ledger = self._ledger()
            try:
                if self._watch_quota:
                    self._quota_turn(ledger, stopping)
                if self._watch_lag and ledger is not None:
                    self._lag_reading(ledger)
            finally:
                if ledger is not None:
                    ledger.close()

    def _due(self, last_at: float | None) -> bool:
        # 5% slack: a holder that woke a little early is not a second call in the interval
        return last_at is None or time.time() - last_at >= self.interval_s * 0.95

    def _quota_turn(self, ledger: Any, stopping: bool) -> None:
        """Take a reading when this watchdog holds the watch and one is due, else act on the holder's newest."""
        if ledger is None or not self.run_id:
            if self._due(self._points[-1][0] if self._points else None):
                self._read_and_act(None, self._plan, self._points)
            return
        try:
            held, row = ledger.watch_take(self.run_id, self._key, self.owner, self.lease_s)
        except Exception as e:  # the ledger is bookkeeping: this turn is skipped, the copy goes on
            self.log.warning("oldWALs watch lease not read: %s", e)
            return
        reading = row.get("reading") or {}
        try:
            if held and self._due(reading.get("taken_at")):
                plan = WatchPlan.from_dict(row["plan"]) if row.get("plan") else None
                points = [tuple(p) for p in reading.get("points") or ()]
                self._read_and_act(ledger, plan, points)
            elif reading and reading["taken_at"] > self._seen_at:
                self._seen_at = reading["taken_at"]
                self.seen += 1
                self._act(_decision(reading["decision"]), ledger, reading.get("line", ""))
        finally:
            if held and (stopping or not self._watch_quota):
                try:
                    ledger.watch_release(self.run_id, self._key, self.owner)
                except Exception as e:
                    self.log.warning("oldWALs watch lease not given up (it expires by itself): %s", e)

    def _read_and_act(self, ledger: Any, plan: WatchPlan | None, points: list[tuple[float, float]]) -> None:
        taken_at = time.time()
        try:
            if plan is None or plan.due_for_discovery():
                plan, usage, calls = discover(self.cluster)
            else:
                usage, plan, calls = read_planned(self.cluster, plan)
        except Exception as e:
            self.log.warning("oldWALs reading failed: %s", e)
            return
        self.calls += calls
        previous = [p for p in points if p[0] < taken_at][-5:]
        points = previous + [(taken_at, float(usage.oldwals.space_consumed))]
        rate = hdfs.growth_rate(points) if len(points) > 1 else None
        decision = hdfs.watchdog_decision(usage, rate, self.quota_mark)
        s = QuotaSample(self.cluster.name, taken_at, usage, rate, hdfs.projected_exhaustion(usage, rate), decision)
        self.samples += 1
        self.seen += 1
        self._seen_at = taken_at
        estimated = " (ancestors' use estimated: no GETQUOTAUSAGE)" if plan.quota_usage_op is False \
            and plan.bearing else ""
        self.log.info("watchdog: %s%s [%d WebHDFS call(s)]", s.log_line(), estimated, calls)
        if ledger is None:
            self._plan, self._points[:] = plan, points
        else:
            try:
                record(ledger, self.run_id, s)
                if not ledger.watch_reading(self.run_id, self._key, self.owner, plan.to_dict(),
                                            _shared(s, points, plan), int(taken_at * 1000), calls):
                    self.log.warning("oldWALs watch lease lost while reading (this watchdog stalled): the reading "
                                     "is used here only")
            except Exception as e:  # bookkeeping: the decision below still applies
                self.log.warning("oldWALs reading not recorded in the ledger: %s", e)
        self._act(decision, ledger, s.log_line())

    def _act(self, decision: hdfs.WatchdogDecision, ledger: Any, line: str) -> None:
        if decision.level != "breach" or self.action is not None:
            return
        try:
            action = apply_policy(self.cluster, self.peer_id, decision, self.policy, ledger, self.run_id,
                                  target=self.target, tables=self.tables)
        except Exception as e:  # enabling the peer failed: tried again on the next reading
            self.log.error("quota policy %s on %s failed (tried again at the next reading): %s", self.policy, line, e)
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
