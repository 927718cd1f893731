"""Sensors: the replication-drained sensor (poke or deferrable) and the oldWALs watchdog.

Both are thin: each poke builds the cluster from its connection, asks the library once, logs the figures an
operator needs and returns a verdict. The drain decision itself is the library's pure `decide_drained`.
"""
from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, Sequence

from airflow.sdk import BaseSensorOperator, Context
from airflow.sdk.exceptions import AirflowException

from operators.hooks import HBaseClusterHook


class ReplicationDrainedSensor(BaseSensorOperator):
    """Waits until the peer's backlog has shipped: on every live source region server and in every queue of
    the peer (recovered queues included), sizeOfLogQueue is back at its caught-up value and ageOfLastShippedOp
    under `max_age_ms`, for `stable_samples` consecutive polls, with ZooKeeper's queues agreeing. It never
    succeeds while edits are still queued. With `deferrable=True` the waiting happens in the triggerer.
    """

    template_fields: Sequence[str] = ("source_conn_id", "peer_id", "thresholds", "canary_table", "canary_family",
                                      "ledger_run_id")
    ui_color = "#fff4e5"

    def __init__(self, *, peer_id: str, source_conn_id: str = "hbase_source",
                 thresholds: dict[str, Any] | None = None, deferrable: bool = False,
                 canary_table: str | None = None, canary_family: str | None = None,
                 target_conn_id: str = "hbase_target", canary_timeout_s: float = 300.0,
                 ledger_run_id: str | None = None, **kwargs) -> None:
        kwargs.setdefault("poke_interval", 10)
        kwargs.setdefault("timeout", 6 * 3600)
        kwargs.setdefault("mode", "poke")  # the history of samples lives in the sensor between pokes
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.peer_id = peer_id
        self.thresholds = thresholds or {}
        self.deferrable = deferrable
        self.canary_table = canary_table
        self.canary_family = canary_family
        self.canary_timeout_s = canary_timeout_s
        self.ledger_run_id = ledger_run_id
        self._history: list[dict[str, Any]] = []

    def _ledger(self, status: str, detail: Any = None, lag: Any = None) -> None:
        """The catch-up phase and its lag samples, in the run ledger (when the sensor belongs to a run)."""
        if not self.ledger_run_id:
            return
        import json

        from hbase_migration.ledger import ALL_TABLES
        from operators.ledger import open_ledger

        with open_ledger() as ledger:
            ledger.set_phase(self.ledger_run_id, ALL_TABLES, "catch_up", status,
                             None if detail is None else json.dumps(detail, default=str))
            if lag is not None:
                ledger.lag_sample(self.ledger_run_id, self.peer_id, lag)

    def _cluster(self):
        return HBaseClusterHook(self.source_conn_id).get_cluster()

    def poke(self, context: Context) -> bool:
        from hbase_migration import lag

        result = lag.poll(self._cluster(), self.peer_id, self._history, lag.thresholds_from(self.thresholds),
                          time.time())
        self._history = result.history
        self.log.info("%s", result.log_line())
        self._ledger("running", lag=result.lag_rows())
        if result.decision.drained:
            self._run_canary()
            self._ledger("success", result.decision.to_dict())
        return result.decision.drained

    def execute(self, context: Context) -> Any:
        self._ledger("running")
        if not self.deferrable:
            return super().execute(context)
        from operators.triggers import ReplicationDrainedTrigger

        hook = HBaseClusterHook(self.source_conn_id)
        conn = hook.get_connection(self.source_conn_id)
        hook.get_cluster()  # validate the connection here, where an error reaches the task log
        timeout = self.timeout.total_seconds() if isinstance(self.timeout, timedelta) else float(self.timeout)
        self.defer(
            trigger=ReplicationDrainedTrigger(
                cluster={"name": self.source_conn_id, "host": conn.host, "port": conn.port,
                         "extra": conn.extra_dejson},
                peer_id=self.peer_id, thresholds=dict(self.thresholds),
                poll_interval_s=float(self.poke_interval), deadline=time.time() + timeout,
                ledger_run_id=self.ledger_run_id,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("status") != "drained":
            reasons = event.get("decision", {}).get("reasons") or [event.get("error", "no sample")]
            self._ledger("failed", {"reasons": reasons})
            raise AirflowException(f"peer {self.peer_id} did not drain before the timeout: {'; '.join(reasons)}")
        self.log.info("%s", event.get("line"))
        self._run_canary()
        self._ledger("success", event.get("decision"))
        return event

    def _run_canary(self) -> None:
        if not self.canary_table:
            return
        from hbase_migration.metrics import canary

        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        delay = canary(self._cluster(), target, self.canary_table, self.canary_family or "", self.canary_timeout_s)
        self.log.info("canary written on the source was read on the target after %.2fs", delay)


class OldWalsWatchdogSensor(BaseSensorOperator):
    """Watches oldWALs' HDFS quota beside a running copy, while a disabled peer pins every WAL.

    Each poke samples the usage of `<rootdir>/oldWALs` and the quotas above it. On a breach of `mark_fraction`
    the `policy` acts: `fail` fails this task loudly (the peer stays disabled: the operator decides), or
    `enable_peer` enables the peer early so the cleaner can free shipped WALs (the copy goes on; replaying
    edits the copy also writes is harmless, they carry their own timestamps). The sensor succeeds once the
    tasks in `watch_task_ids` of this run have finished.
    """

    template_fields: Sequence[str] = ("source_conn_id", "peer_id", "policy", "mark_fraction", "watch_task_ids")
    ui_color = "#fde8e8"
    POLICIES = ("fail", "enable_peer")

    def __init__(self, *, peer_id: str, watch_task_ids: Sequence[str], source_conn_id: str = "hbase_source",
                 policy: str = "fail", mark_fraction: float = 0.8, ledger_run_id: str | None = None,
                 **kwargs) -> None:
        kwargs.setdefault("poke_interval", 30)
        kwargs.setdefault("mode", "reschedule")
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.peer_id = peer_id
        self.watch_task_ids = list(watch_task_ids)
        self.policy = policy
        self.mark_fraction = mark_fraction
        self.ledger_run_id = ledger_run_id

    def poke(self, context: Context) -> bool:
        from hbase_migration import quota

        if self.policy not in self.POLICIES:
            raise AirflowException(f"policy must be one of {', '.join(self.POLICIES)}, got {self.policy!r}")
        cluster = HBaseClusterHook(self.source_conn_id).get_cluster()
        sample = quota.sample(cluster, float(self.mark_fraction), time.time())
        self.log.info("%s", sample.log_line())
        if self.ledger_run_id:
            from operators.ledger import open_ledger

            with open_ledger() as ledger:
                quota.record(ledger, self.ledger_run_id, sample)
        if sample.decision.level == "breach":
            self._act(cluster, sample)
        return self._watched_tasks_finished(context)

    def _act(self, cluster, sample) -> None:
        if self.policy == "fail":
            raise AirflowException(
                f"oldWALs quota breach on {cluster.name}: {'; '.join(sample.decision.reasons)}. Peer "
                f"{self.peer_id} is left as it is (DISABLED during the copy): enable it to let the cleaner free "
                f"WALs, or raise the quota")
        from hbase_migration.replication import peer_admin

        with peer_admin(cluster) as admin:
            result = admin.enable_peer(self.peer_id)
        self.log.warning("oldWALs quota breach: peer %s enabled early (%s) so shipped WALs can be cleaned",
                         self.peer_id, result.outcome)

    def _watched_tasks_finished(self, context: Context) -> bool:
        """Whether every instance of the watched tasks in this run is finished (mapped ones included)."""
        ti = context["ti"]
        states = ti.get_task_states(dag_id=ti.dag_id, task_ids=self.watch_task_ids, run_ids=[ti.run_id])
        by_task = states.get(ti.run_id, {})  # {task_id or task_id_<map_index>: state}
        finished = {"success", "failed", "skipped", "upstream_failed", "removed"}
        self.log.info("watched tasks: %s", ", ".join(f"{k}={v}" for k, v in sorted(by_task.items())) or "none")
        return bool(by_task) and all(str(getattr(v, "value", v)) in finished for v in by_task.values())
