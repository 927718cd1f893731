"""The replication-drained sensor (poke or deferrable): the gate between the catch-up and the verification.

Thin: each poke builds the cluster from its connection, asks the library once (`lag.poll`, whose decision is
the pure `metrics.decide_drained`), logs the figures an operator needs and returns the verdict.
"""
from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, Sequence

from airflow.sdk import BaseSensorOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from hbase_migration.operators.hooks import HBaseClusterHook


class ReplicationDrainedSensor(BaseSensorOperator):
    """Waits until the peer's backlog has shipped: on every live source region server and in every queue of
    the peer (recovered queues included), sizeOfLogQueue is back at its caught-up value and ageOfLastShippedOp
    at most `max_lag_ms`, for `stable_samples` consecutive polls, with ZooKeeper's queues agreeing. It never
    succeeds while edits are still queued. With `deferrable=True` the waiting happens in the triggerer. With a
    `canary_table`, a marker row written on the source must then be read on the target.

    :param peer_id: the replication peer to watch.
    :param source_conn_id: the source cluster (its region servers' /jmx and ZooKeeper queues are read).
    :param target_conn_id: the target cluster (only read by the canary).
    :param max_lag_ms: the largest ageOfLastShippedOp of a caught-up queue.
    :param stable_samples: consecutive drained polls before the sensor succeeds (>= 2).
    :param caught_up_queue_size: sizeOfLogQueue of a caught-up queue, one WAL per WAL group of a region server: 1
        on HBase 2.x with the default provider, 0 on 1.x, N with multiwal, one more per ACTIVE sync peer on 3.x.
    :param idle_window_s: how long a queue's counters must stay frozen before a stale age is believed idle.
    :param canary_table: a migrated table to write the canary row to (its first family); None: no canary.
    :param canary_timeout_s: how long the canary row may take to reach the target.
    :param ledger_run_id: the run whose ledger receives every poll's queues as lag samples (None: none).
    :param ledger_tables: the tables whose catch-up phase this wait is (a batch's, in a run of several batches);
        None: the run's, recorded once for every table.
    :param deferrable: wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "peer_id", "max_lag_ms", "stable_samples",
                                      "caught_up_queue_size", "idle_window_s", "canary_table", "ledger_run_id",
                                      "ledger_tables")
    ui_color = "#fff4e5"
    ledger_phase = "catch_up"  # the ledger phase this wait is recorded as

    def __init__(self, *, peer_id: str, source_conn_id: str = "hbase_source", target_conn_id: str = "hbase_target",
                 max_lag_ms: int = 30_000, stable_samples: int = 3, caught_up_queue_size: int = 1,
                 idle_window_s: float = 30.0, canary_table: str | None = None, canary_timeout_s: float = 300.0,
                 ledger_run_id: str | None = None, ledger_tables: Sequence[str] | None = None,
                 deferrable: bool = False, **kwargs) -> None:
        kwargs.setdefault("poke_interval", 10)
        kwargs.setdefault("timeout", 6 * 3600)
        kwargs.setdefault("mode", "poke")  # the history of samples lives in the sensor between pokes
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.peer_id = peer_id
        self.max_lag_ms = max_lag_ms
        self.stable_samples = stable_samples
        self.caught_up_queue_size = caught_up_queue_size
        self.idle_window_s = idle_window_s
        self.canary_table = canary_table
        self.canary_timeout_s = canary_timeout_s
        self.ledger_run_id = ledger_run_id
        self.ledger_tables = ledger_tables
        self.deferrable = deferrable
        self._history: list[dict[str, Any]] = []

    def _thresholds(self) -> dict[str, Any]:
        return {"max_lag_ms": self.max_lag_ms, "stable_samples": self.stable_samples,
                "caught_up_queue_size": self.caught_up_queue_size, "idle_window_s": self.idle_window_s}

    def _ledger(self, status: str, detail: Any = None, lag: Any = None) -> None:
        """The catch-up phase and its lag samples, in the run ledger (when the sensor belongs to a run)."""
        if not self.ledger_run_id:
            return
        import json

        from hbase_migration.ledger.store import ALL_TABLES
        from hbase_migration.operators.ledger import open_ledger

        with open_ledger() as ledger:
            for table in self.ledger_tables or [ALL_TABLES]:
                ledger.set_phase(self.ledger_run_id, table, self.ledger_phase, status,
                                 None if detail is None else json.dumps(detail, default=str))
            if lag is not None:
                ledger.lag_sample(self.ledger_run_id, self.peer_id, lag)

    def _cluster(self):
        return HBaseClusterHook(self.source_conn_id).get_cluster()

    def poke(self, context: Context) -> bool:
        from hbase_migration.replication import lag

        result = lag.poll(self._cluster(), self.peer_id, self._history, lag.thresholds_from(self._thresholds()),
                          time.time())
        self._history = result.history
        self.log.info("%s", result.log_line())
        self._ledger("running", lag=result.lag_rows())
        if result.decision.drained:
            self._run_canary()
            self._ledger("success", result.decision.to_dict())
        return result.decision.drained

    def execute(self, context: Context) -> Any:
        from hbase_migration.replication import lag

        try:  # a caught_up_queue_size the source's WAL layout does not allow would call a backlog drained
            lag.check_caught_up_queue_size(self._cluster(), self.peer_id, int(self.caught_up_queue_size))
        except lag.CaughtUpQueueTooLarge as e:
            raise AirflowFailException(f"{e}: set caught_up_queue_size to {e.bound.largest}") from None
        self._ledger("running")
        if not self.deferrable:
            return super().execute(context)
        from hbase_migration.operators.triggers import ReplicationDrainedTrigger

        timeout = self.timeout.total_seconds() if isinstance(self.timeout, timedelta) else float(self.timeout)
        self.defer(
            trigger=ReplicationDrainedTrigger(
                cluster=self._cluster().to_dict(), peer_id=self.peer_id, thresholds=self._thresholds(),
                poll_interval_s=float(self.poke_interval), deadline=time.time() + timeout,
                ledger_run_id=self.ledger_run_id,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("status") != "drained":
            reasons = event.get("decision", {}).get("reasons") or [event.get("error", "no sample")]
            self._ledger("failed", {"reasons": reasons})
            # The deadline is the answer, not a failure to get one: a retry would wait the whole timeout again.
            raise AirflowFailException(f"peer {self.peer_id} did not drain before the timeout: {'; '.join(reasons)}")
        self.log.info("%s", event.get("line"))
        self._run_canary()
        self._ledger("success", event.get("decision"))
        return event

    def _run_canary(self) -> None:
        if not self.canary_table:
            return
        from hbase_migration.replication.metrics import canary

        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        delay = canary(self._cluster(), target, self.canary_table, None, self.canary_timeout_s)
        self.log.info("canary row written on the source was read on the target after %.2fs", delay)
