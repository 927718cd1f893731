"""One poll of a peer's replication lag, as the drained sensor and trigger and the CLI take it.

A poll takes one snapshot (every live region server's /jmx plus ZooKeeper's queues), appends it to the
history the caller keeps (as plain dicts, so a trigger can carry it), and asks the pure drain decision.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from hbase_migration.clusters import zk
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.replication import metrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Poll:
    decision: metrics.DrainDecision
    snapshot: metrics.PeerLagSnapshot
    history: list[dict[str, Any]]  # the samples to pass to the next poll (bounded)

    def log_line(self) -> str:
        s = self.snapshot.summary()
        verdict = "drained" if self.decision.drained else "not drained: " + "; ".join(self.decision.reasons[:5])
        return (f"peer {s['peer_id']} ({s['peer_state']}): {s['live_servers']} live servers, "
                f"max age {s['max_age_ms']} ms, WALs queued {s['total_size_of_log_queue']}, "
                f"recovered queues {s['recovered_queues']}, stable {self.decision.stable_samples}/"
                f"{self.decision.required_samples}; {verdict}")

    def lag_rows(self) -> list[dict[str, Any]]:
        """This poll's queues as the ledger's lag rows (`Ledger.lag_sample`)."""
        return self.snapshot.lag_rows()


def thresholds_from(values: Mapping[str, Any] | None) -> metrics.DrainThresholds:
    values = dict(values or {})
    known = {"stable_samples", "caught_up_queue_size", "max_lag_ms", "idle_window_s"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown drain threshold(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return metrics.DrainThresholds(**values)


def trim_history(samples: Sequence[metrics.PeerLagSnapshot],
                 thresholds: metrics.DrainThresholds) -> list[metrics.PeerLagSnapshot]:
    """What the next decision needs: the last K+1 samples (counter movement compares with the one before
    the window) and every sample within the idle window (a stale age is believed only after that long)."""
    if not samples:
        return []
    horizon = samples[-1].taken_at - thresholds.idle_window_s
    keep_from = min(max(0, len(samples) - thresholds.stable_samples - 1),
                    next((i for i, s in enumerate(samples) if s.taken_at >= horizon), len(samples)))
    return list(samples[max(0, keep_from - 1):])


class CaughtUpQueueTooLarge(ValueError):
    """caught_up_queue_size is above what the source's WAL layout allows; `bound` says what it allows."""

    def __init__(self, message: str, bound: Any):
        super().__init__(message)
        self.bound = bound


def check_caught_up_queue_size(cluster: Cluster, peer_id: str, value: int) -> None:
    """Raise CaughtUpQueueTooLarge when `value` is above the WALs a caught-up queue holds on `cluster` (one per WAL
    group: `wal_groups`); a layout that cannot be read is not refused. 0 is never too large; 1 only on 1.x (the
    region servers' versions say, no /conf read)."""
    from hbase_migration.replication.wal_groups import read_bound

    if value == 0:
        return
    try:
        with zk.connect(cluster, timeout=cluster.timeout_s) as client:
            bound = read_bound(cluster, client, peer_id, conf=value > 1)
    except Exception as e:  # noqa: BLE001 - unknown: the poll that follows says what does not answer
        log.info("WAL layout of %s not read: %s", cluster.name, e)
        return
    refused = bound.refusal(value)
    if refused:
        raise CaughtUpQueueTooLarge(refused, bound)


def poll(cluster: Cluster, peer_id: str, history: Sequence[Mapping[str, Any]],
         thresholds: metrics.DrainThresholds, taken_at: float) -> Poll:
    """Take one snapshot of `peer_id` on `cluster` and decide over the history plus this snapshot."""
    with zk.connect(cluster, timeout=cluster.timeout_s) as client:
        snapshot = metrics.peer_status(cluster, peer_id, client, taken_at)
    samples = [metrics.PeerLagSnapshot.from_dict(h) for h in history] + [snapshot]
    decision = metrics.decide_drained(samples, thresholds)
    return Poll(decision, snapshot, [s.to_dict() for s in trim_history(samples, thresholds)])
