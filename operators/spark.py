"""The copy and verify Spark jobs, submitted with SparkSubmitOperator.

The operators add what the migration needs around a plain spark-submit: the clusters' connection fields
passed to the job (addresses only; no secret lives in an HBase connection), the ledger for resume and
results, the job's JSON summary returned as XCom, and, for the copy, an oldWALs watchdog thread that
samples the source's quota while the job runs and applies the quota policy on a breach.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from operators.hooks import HBaseClusterHook

REPO = Path(__file__).resolve().parents[1]
COPY_JOB = str(REPO / "jobs" / "copy_table.py")
VERIFY_JOB = str(REPO / "jobs" / "verify_table.py")


def connection_json(conn_id: str) -> str:
    """The connection's fields as the jobs take them (`--source '{"host":..., "extra": {...}}'`)."""
    hook = HBaseClusterHook(conn_id)
    conn = hook.get_connection(conn_id)
    hook.get_cluster()  # validated here, so a bad connection fails before spark-submit starts
    return json.dumps({"conn_id": conn_id, "conn_type": conn.conn_type, "host": conn.host, "port": conn.port,
                       "extra": conn.extra_dejson}, sort_keys=True)


class _HBaseJobOperator(SparkSubmitOperator):
    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "source_conn_id", "target_conn_id",
                                      "table", "target_table", "start_time", "end_time", "families",
                                      "ledger_run_id")

    def __init__(self, *, table: str, source_conn_id: str = "hbase_source", target_conn_id: str = "hbase_target",
                 target_table: str | None = None, start_time: Any = None, end_time: Any = None,
                 families: Sequence[str] | str | None = None, ledger_run_id: str | None = None,
                 spark_conn_id: str = "spark_default", **kwargs) -> None:
        kwargs.setdefault("name", f"{self.job_kind}-{table}")
        super().__init__(application=self.application_path, conn_id=spark_conn_id, **kwargs)
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.table = table
        self.target_table = target_table
        self.start_time = start_time
        self.end_time = end_time
        self.families = families
        self.ledger_run_id = ledger_run_id

    job_kind = ""
    application_path = ""

    def _prepare(self, summary_file: str) -> list[str]:
        raise NotImplementedError

    def _python_env(self) -> None:
        # The driver and local executors must run the Python that has happybase; on a cluster the Spark
        # connection (spark.pyspark.python) or the environment says which.
        env = dict(self.env_vars or {})
        if "PYSPARK_PYTHON" not in env and "PYSPARK_PYTHON" not in os.environ:
            env["PYSPARK_PYTHON"] = sys.executable
        env.setdefault("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        self.env_vars = env

    def _run(self, context: Context) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix=f"hbase-{self.job_kind}-") as tmp:
            summary_file = os.path.join(tmp, "summary.json")
            self.application_args = self._prepare(summary_file)
            self._python_env()
            error: Exception | None = None
            try:
                super().execute(context)
            except Exception as e:  # the summary (if written) says why; re-raised below
                error = e
            summary = json.loads(Path(summary_file).read_text()) if os.path.exists(summary_file) else None
        return self._finish(summary, error)

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        raise NotImplementedError

    def _ledger_phase(self, phase: str, status: str, detail: Any = None) -> None:
        if not self.ledger_run_id:
            return
        from operators.ledger import open_ledger

        if isinstance(detail, dict):  # the headline figures; per-partition results stay in the task log
            detail = {k: v for k, v in detail.items() if k not in ("partition_results", "differing_rows_sample")}
        with open_ledger() as ledger:
            ledger.set_phase(self.ledger_run_id, self.table, phase, status,
                             None if detail is None else json.dumps(detail, sort_keys=True, default=str))


class HBaseCopyTableOperator(_HBaseJobOperator):
    """Copies one table with the PySpark CopyTable (jobs/copy_table.py), keeping every cell's timestamp.

    One Spark task per source region (big regions split further). Finished partitions are recorded in the
    ledger under this run, so a retry skips them. Deletes are not copied: the replication backlog since T0
    carries them. Beside the job, a watchdog thread samples oldWALs' quota every `watchdog_interval_s`: on a
    breach of `quota_mark` the `quota_policy` acts (`fail`: kill the job and fail; `enable_peer`: enable the
    peer early so the cleaner can free shipped WALs, and go on).
    """

    job_kind = "copy"
    application_path = COPY_JOB
    template_fields: Sequence[str] = (*_HBaseJobOperator.template_fields, "peer_id", "quota_policy",
                                      "quota_mark", "rows_per_s", "copy_id")
    ui_color = "#fce8b2"

    def __init__(self, *, peer_id: str | None = None, quota_policy: str = "fail", quota_mark: float = 0.8,
                 watchdog_interval_s: float = 30.0, rows_per_s: Any = None, copy_id: str | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.peer_id = peer_id
        self.quota_policy = quota_policy
        self.quota_mark = quota_mark
        self.watchdog_interval_s = watchdog_interval_s
        self.rows_per_s = rows_per_s
        self.copy_id = copy_id
        self._breach: str | None = None

    def _prepare(self, summary_file: str) -> list[str]:
        from jobs.job_args import copy_job_args
        from operators.ledger import ledger_url

        argv = copy_job_args(
            connection_json(self.source_conn_id), connection_json(self.target_conn_id), self.table,
            target_table=self.target_table or None, start_time=self.start_time, end_time=self.end_time,
            families=self.families or None, copy_id=self.copy_id or self.ledger_run_id,
            ledger_url=ledger_url() if (self.copy_id or self.ledger_run_id) else None, summary_file=summary_file)
        if self.rows_per_s not in (None, "", "None", 0, "0"):
            argv += ["--rows-per-s", str(self.rows_per_s)]
        return argv

    def execute(self, context: Context) -> dict[str, Any]:
        if self.quota_policy not in ("fail", "enable_peer"):
            raise AirflowException(f"quota_policy must be 'fail' or 'enable_peer', got {self.quota_policy!r}")
        self._ledger_phase("copy", "running")
        stop = threading.Event()
        watchdog = threading.Thread(target=self._watch, args=(stop,), name="oldwals-watchdog", daemon=True)
        watchdog.start()
        try:
            return self._run(context)
        finally:
            stop.set()
            watchdog.join(10)

    def _watch(self, stop: threading.Event) -> None:
        """Samples oldWALs while the job runs; never lets a sampling error stop the copy."""
        from hbase_migration import quota

        try:
            cluster = HBaseClusterHook(self.source_conn_id).get_cluster()
            if not cluster.webhdfs_url:
                self.log.warning("no webhdfs_url on %s: oldWALs is not watched during the copy", cluster.name)
                return
        except Exception as e:
            self.log.warning("oldWALs watchdog not started: %s", e)
            return
        previous: list[tuple[float, float]] = []
        while not stop.wait(self.watchdog_interval_s if previous else 0):
            try:
                s = quota.sample(cluster, float(self.quota_mark), time.time(), previous[-5:])
            except Exception as e:
                self.log.warning("oldWALs sample failed: %s", e)
                continue
            previous.append((s.taken_at, float(s.usage.oldwals.space_consumed)))
            self.log.info("watchdog: %s", s.log_line())
            if s.decision.level == "breach":
                self._on_breach(cluster, s)
                return

    def _on_breach(self, cluster, s) -> None:
        reasons = "; ".join(s.decision.reasons)
        if self.quota_policy == "enable_peer" and self.peer_id:
            from hbase_migration.replication import peer_admin

            with peer_admin(cluster) as admin:
                result = admin.enable_peer(self.peer_id)
            self.log.warning("oldWALs breach (%s): peer %s enabled early (%s); the copy goes on", reasons,
                             self.peer_id, result.outcome)
            return
        self._breach = reasons
        self.log.error("oldWALs breach (%s): killing the copy; peer %s is left DISABLED", reasons, self.peer_id)
        self.on_kill()

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        if summary:
            self.log.info("copy summary: %s", json.dumps(summary, sort_keys=True))
        if self._breach:
            self._ledger_phase("copy", "failed", {"quota_breach": self._breach})
            # Not retried: a retry would meet the same quota. The peer stays as it is (see state_left_behind).
            raise AirflowFailException(f"copy of {self.table} stopped: oldWALs quota breach: {self._breach}")
        if error is not None:
            self._ledger_phase("copy", "failed", summary or {"error": str(error)})
            raise AirflowException(f"copy of {self.table} failed (finished partitions are kept; a retry "
                                   f"resumes): {error}") from error
        self._ledger_phase("copy", "success", summary)
        return summary or {}


class HBaseVerifyTableOperator(_HBaseJobOperator):
    """Verifies one table (jobs/verify_table.py): per-range content hashes over (row, family, qualifier,
    timestamp, value) on both sides, bisected down to the differing rows, bounded to cells older than
    `end_time` (default: the job's start), re-compared after `recompare_sleep_s` for edits in flight.
    Fails when any row differs; the result (counts and a sample of differing keys) goes to the ledger."""

    job_kind = "verify"
    application_path = VERIFY_JOB
    template_fields: Sequence[str] = (*_HBaseJobOperator.template_fields, "recompare_sleep_s", "level")
    ui_color = "#d2e3fc"

    def __init__(self, *, recompare_sleep_s: Any = 5.0, level: str = "content", repair: bool = False,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.recompare_sleep_s = recompare_sleep_s
        self.level = level
        self.repair = repair

    def _prepare(self, summary_file: str) -> list[str]:
        from jobs.job_args import verify_job_args

        return verify_job_args(
            connection_json(self.source_conn_id), connection_json(self.target_conn_id), self.table,
            target_table=self.target_table or None, start_time=self.start_time, end_time=self.end_time,
            families=self.families or None, level=self.level, recompare_sleep_s=float(self.recompare_sleep_s or 0),
            repair=bool(self.repair), summary_file=summary_file)

    def execute(self, context: Context) -> dict[str, Any]:
        self._ledger_phase("verify", "running")
        return self._run(context)

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        if summary and self.ledger_run_id and summary.get("level") == "content":
            from operators.ledger import open_ledger

            samples = [k.encode("latin-1") for keys in (summary.get("differing_rows_sample") or {}).values()
                       for k in keys]
            with open_ledger() as ledger:
                ledger.verification(
                    self.ledger_run_id, self.table, window_start_ms=summary.get("start_time") or 0,
                    window_end_ms=summary.get("end_time"), source_rows=summary["source_rows"],
                    target_rows=summary["target_rows"], matching=summary["matching"],
                    content_different=summary["content_different"], only_in_source=summary["only_in_source"],
                    only_in_target=summary["only_in_target"], sample_keys=samples)
        if summary:
            self.log.info("verify summary: %s", json.dumps(summary, sort_keys=True))
        if summary and summary.get("identical"):
            self._ledger_phase("verify", "success", summary)
            return summary
        self._ledger_phase("verify", "failed", summary or {"error": str(error)})
        if summary:
            raise AirflowException(
                f"verify of {self.table}: {summary.get('content_different')} rows differ in content, "
                f"{summary.get('only_in_source')} only in the source, {summary.get('only_in_target')} only in "
                f"the target; sample: {json.dumps(summary.get('differing_rows_sample'))}")
        raise AirflowException(f"verify of {self.table} failed: {error}") from error
