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
        from hbase_migration.operators.ledger import open_ledger

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


class SparkYarnApplicationTrigger(BaseTrigger):
    """Waits in the triggerer for a Spark application YARN runs in cluster mode (no worker slot held meanwhile):
    the ResourceManager's REST API every `poll_interval_s`, through the provider's own hook (the Spark
    connection's `yarn_resourcemanager_webapp_address`; SPNEGO as the submitting try's principal, from its keytab's
    path). With `watchdog` (the copy's), the run's oldWALs watchdog runs here meanwhile (`quota.Watchdog`, one reader
    per run and cluster by its lease): on a breach with policy `fail` the application is killed. One event:
    `SUCCEEDED`, `FAILED` (KILLED or a failed final status), `quota_breach`, or `lost` (the ResourceManager did not
    answer ten times in a row)."""

    MAX_FAILURES = 10

    def __init__(self, spark_conn_id: str, application_id: str, poll_interval_s: float = 10.0,
                 spnego: dict[str, Any] | None = None, watchdog: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.spark_conn_id = spark_conn_id
        self.application_id = application_id
        self.poll_interval_s = poll_interval_s
        self.spnego = spnego
        self.watchdog = watchdog

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{self.__class__.__module__}.{self.__class__.__qualname__}",
                {"spark_conn_id": self.spark_conn_id, "application_id": self.application_id,
                 "poll_interval_s": self.poll_interval_s, "spnego": self.spnego, "watchdog": self.watchdog})

    def _hook(self) -> Any:
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        auth = None
        if self.spnego:
            from hbase_migration.clusters import kerberos
            from hbase_migration.clusters.security import Security
            from hbase_migration.clusters.spnego import SpnegoAuth

            s = self.spnego
            login = kerberos.login(Security(principal=s["principal"], keytab=s["keytab"], krb5_conf=s.get("krb5_conf")),
                                   "spark")
            auth = SpnegoAuth(login, s["principal_pattern"])
        return SparkSubmitHook(conn_id=self.spark_conn_id, yarn_track_via_rm_api=True, yarn_rm_auth=auth)

    def _watchdog(self, breach: dict[str, str]) -> Any:
        from hbase_migration.clusters.cluster import Cluster
        from hbase_migration.migration.quota import Watchdog
        from hbase_migration.operators.ledger import ledger_url

        w = self.watchdog
        run_id = w.get("ledger_run_id")
        return Watchdog(Cluster.from_dict(w["cluster"]), w["peer_id"], w["policy"], w["mark"], w["interval_s"],
                        ledger_url() if run_id else None, run_id, on_fail=lambda m: breach.setdefault("message", m),
                        logger=self.log, target=Cluster.from_dict(w["target"]) if w.get("target") else None).start()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        app = self.application_id
        hook = await asyncio.to_thread(self._hook)
        breach: dict[str, str] = {}
        dog = await asyncio.to_thread(self._watchdog, breach) if self.watchdog else None
        failures = 0
        try:
            while True:
                if breach:  # the provider's internals: its own kill, as its on_kill sends it
                    await asyncio.to_thread(hook._kill_yarn_application, app)
                    yield TriggerEvent({"status": "quota_breach", "message": breach["message"], "application_id": app})
                    return
                try:
                    state, final, diagnostics = await asyncio.to_thread(hook._query_yarn_application_status, app)
                except RuntimeError as e:  # the ResourceManager did not answer: tried again, then given up
                    failures += 1
                    self.log.warning("YARN application %s: the ResourceManager did not answer (%d/%d): %s", app,
                                     failures, self.MAX_FAILURES, e)
                    if failures >= self.MAX_FAILURES:
                        yield TriggerEvent({"status": "lost", "application_id": app, "diagnostics": str(e)})
                        return
                else:
                    failures = 0
                    if state in ("FINISHED", "FAILED", "KILLED"):
                        ok = state == "FINISHED" and final == "SUCCEEDED"
                        yield TriggerEvent({"status": "SUCCEEDED" if ok else "FAILED", "application_id": app,
                                            "state": state, "final_status": final, "diagnostics": diagnostics})
                        return
                await asyncio.sleep(self.poll_interval_s)
        finally:
            if dog is not None:
                await asyncio.to_thread(dog.stop)
