"""oldWALs quota sampling for the watchdog, the quota check and the CLI.

A sample reads `<rootdir>/oldWALs` and the quotas above it through WebHDFS, estimates growth from the
caller's earlier samples, and asks the pure watchdog decision.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from hbase_migration import hdfs
from hbase_migration.cluster import Cluster


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
    return hdfs.WebHdfs(cluster.webhdfs_url, timeout_s=cluster.timeout_s)


def sample(cluster: Cluster, mark_fraction: float, taken_at: float,
           previous: Sequence[tuple[float, float]] = (), remaining_s: float | None = None) -> QuotaSample:
    """One reading; `previous` are earlier (time, oldWALs spaceConsumed) pairs for the growth rate."""
    usage = hdfs.quota_usage(webhdfs(cluster), cluster.rootdir)
    points = [p for p in previous if p[0] < taken_at] + [(taken_at, float(usage.oldwals.space_consumed))]
    rate = hdfs.growth_rate(points) if len(points) > 1 else None
    decision = hdfs.watchdog_decision(usage, rate, mark_fraction, remaining_s=remaining_s)
    return QuotaSample(cluster.name, taken_at, usage, rate, hdfs.projected_exhaustion(usage, rate), decision)


def measure(cluster: Cluster, mark_fraction: float = 0.8, gap_s: float = 5.0,
            clock=time.time, sleep=time.sleep) -> QuotaSample:
    """Two readings `gap_s` apart, so the growth rate is measured, not assumed (the CLI's `quota`)."""
    first = sample(cluster, mark_fraction, clock())
    if gap_s <= 0:
        return first
    sleep(gap_s)
    return sample(cluster, mark_fraction, clock(), [(first.taken_at, float(first.usage.oldwals.space_consumed))])


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
