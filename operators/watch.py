"""The scheduled watch's task: one cluster's replication health, recorded, failing on a breach."""
from __future__ import annotations

import logging
import time
from typing import Any, Mapping

from airflow.sdk.exceptions import AirflowFailException

from hbase_migration.operators.hooks import HBaseClusterHook

log = logging.getLogger(__name__)


def check_cluster_health(conn_id: str, params: Mapping[str, Any], run_id: str, dag_id: str) -> dict[str, Any]:
    """Gather one cluster's peers, lag and oldWALs quota; record every queue and reading; fail on a breach.

    The ledger run (`<run_id>:<conn_id>`, plan "watch") is opened before the cluster is read and always
    ended: "failed" on a breach (the task fails without retrying) or on any error (an unreachable cluster, a
    ledger write refused), never left "running"."""
    from hbase_migration.ledger.store import ALL_TABLES, NO_PEER
    from hbase_migration.migration import health, quota
    from hbase_migration.migration.runspec import WATCH, RunSpec
    from hbase_migration.operators.ledger import open_ledger

    spec = RunSpec.validate(params, WATCH)
    cluster = HBaseClusterHook(conn_id).get_cluster()
    th = health.WatchThresholds(max_disabled_s=spec.max_disabled_s, alert_lag_ms=spec.alert_lag_ms,
                                quota_mark=spec.quota_mark, min_exhaustion_s=spec.min_exhaustion_s)
    watch_run = f"{run_id}:{conn_id}"
    with open_ledger() as ledger:
        ledger.start_run(watch_run, dag_id, "watch", cluster.cluster_key, cluster.cluster_key, NO_PEER, [ALL_TABLES],
                         {"cluster": conn_id})
        try:
            report = health.gather(cluster, th, time.time(), spec.quota_sample_gap_s)
            for p in report.peers:
                log.info("peer %s %s since %s; lag %s", p.peer_id, p.state, p.state_since, p.lag)
            if report.quota:
                log.info("%s", report.quota.log_line())
            for p in report.peers:
                if p.queues:  # one row per region server queue (PeerLagSnapshot.lag_rows)
                    ledger.lag_sample(watch_run, p.peer_id, list(p.queues), sampled_ms=int(report.taken_at * 1000))
            if report.quota:
                quota.record(ledger, watch_run, report.quota)
        except BaseException as e:
            try:
                ledger.end_run(watch_run, "failed")
            except Exception as end_error:  # the original error is the one to raise
                log.error("watch run %s could not be ended as failed: %s", watch_run, end_error)
            log.error("watch of %s failed: %s: %s", conn_id, type(e).__name__, e)
            raise
        ledger.end_run(watch_run, "success" if report.healthy else "failed")
    from hbase_migration.operators.alerts import on_watch_reading

    on_watch_reading(conn_id, cluster, report, th, run_id)  # a breach's start or end reaches a person; never raises
    for f in report.findings:
        (log.error if f.level == "breach" else log.warning)("%s: %s", f.subject, f.message)
    if not report.healthy:
        # A breach is a reading, not a transient error: alert now (no retry); the next run looks again. An error
        # reaching the cluster (above) keeps the task's retry.
        raise AirflowFailException(f"{conn_id}: " + "; ".join(f"{f.subject}: {f.message}" for f in report.findings
                                                          if f.level == "breach"))
    return report.to_dict()
