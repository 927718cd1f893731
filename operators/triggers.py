"""Triggers that run in Airflow's triggerer: they poll without holding a worker slot.

Blocking work (ZooKeeper, region servers' /jmx) runs in a thread (`asyncio.to_thread`), never on the event
loop. The trigger yields exactly one event and returns.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator

from airflow.triggers.base import BaseTrigger, TriggerEvent


class ReplicationDrainedTrigger(BaseTrigger):
    """Polls a peer until the drain decision holds (or the deadline passes).

    `cluster` is the source cluster's wire form (`Cluster.to_dict()`), rebuilt once here, so the triggerer needs
    no connection lookup. No secret is involved. With `ledger_run_id`
    every poll's queues are written to the run ledger as lag samples, as the poke-mode sensor does (the
    triggerer finds the ledger by the same settings as the tasks).
    """

    def __init__(self, cluster: dict[str, Any], peer_id: str, thresholds: dict[str, Any], poll_interval_s: float,
                 deadline: float, history: list[dict[str, Any]] | None = None,
                 ledger_run_id: str | None = None) -> None:
        from hbase_migration.clusters.cluster import Cluster

        super().__init__()
        self.cluster = cluster
        self._cluster = Cluster.from_dict(cluster)
        self.peer_id = peer_id
        self.thresholds = thresholds
        self.poll_interval_s = poll_interval_s
        self.deadline = deadline
        self.history = history or []
        self.ledger_run_id = ledger_run_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{self.__class__.__module__}.{self.__class__.__qualname__}",
            {"cluster": self.cluster, "peer_id": self.peer_id, "thresholds": self.thresholds,
             "poll_interval_s": self.poll_interval_s, "deadline": self.deadline, "history": self.history,
             "ledger_run_id": self.ledger_run_id},
        )

    def _poll(self) -> dict[str, Any]:
        from hbase_migration.replication import lag

        result = lag.poll(self._cluster, self.peer_id, self.history, lag.thresholds_from(self.thresholds), time.time())
        self.history = result.history
        self._record(result)
        return {"drained": result.decision.drained, "decision": result.decision.to_dict(),
                "summary": result.snapshot.summary(), "line": result.log_line()}

    def _record(self, result) -> None:
        """One lag sample in the ledger. A ledger that cannot be written costs a sample, never the wait."""
        if not self.ledger_run_id:
            return
        from operators.ledger import open_ledger

        try:
            with open_ledger() as ledger:
                ledger.lag_sample(self.ledger_run_id, self.peer_id, result.lag_rows())
        except Exception as e:
            self.log.warning("peer %s: lag sample not written to the ledger: %s", self.peer_id, e)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        last: dict[str, Any] = {}
        while True:
            try:
                last = await asyncio.to_thread(self._poll)
            except Exception as e:  # a failed poll is not drained; it is retried until the deadline
                last = {"drained": False, "error": f"{type(e).__name__}: {e}"}
                self.log.warning("peer %s: poll failed: %s", self.peer_id, last["error"])
            else:
                self.log.info("%s", last["line"])
            if last.get("drained"):
                yield TriggerEvent({"status": "drained", **last})
                return
            if time.time() >= self.deadline:
                yield TriggerEvent({"status": "timeout", **last})
                return
            await asyncio.sleep(self.poll_interval_s)
