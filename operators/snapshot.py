"""The initial copy by snapshot: one table's export, its files copied by a Spark job (docs/snapshot-export.md).

The operator holds the sequence around the job, because a Spark driver may run where no HBase shell is: it takes
the FLUSH snapshot on the source (the shell), submits `jobs/snapshot_export.py` (the manifest, then every file over
WebHDFS, resumable file by file), then publishes the snapshot, creates the table's namespace if the target lacks
it and runs `clone_snapshot` on the target, and deletes both snapshots. Every step is idempotent and recorded in
the ledger, so a retry resumes; a failure says what it left where (the ledger and the task log). Beside the job,
the oldWALs watchdog watches the disabled peer's backlog, as beside the scan copy.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from hbase_migration.clusters.hdfs import DEFAULT_QUOTA_MARK
from hbase_migration.operators.hooks import HBaseClusterHook
from hbase_migration.operators.spark import JOBS, _HBaseJobOperator, cluster_json

SNAPSHOT_JOB = str(JOBS / "snapshot_export.py")


class HBaseSnapshotExportOperator(_HBaseJobOperator):
    __doc__ = """Copies one table by snapshot: a FLUSH snapshot of the source table (named after the run), its
    manifest then its files exported to the target's HDFS over WebHDFS by a Spark job (files balanced over its
    tasks by size, each streamed in bounded chunks, verified by HDFS checksums, recorded in the ledger as it
    finishes: a retry re-copies no finished file), ownership as the target's HBase expects, `clone_snapshot` on the
    target (which creates the table: it must be absent), both snapshots deleted. The snapshot carries every version,
    timestamp and delete marker not yet compacted away. On failure both snapshots are kept and the log and the
    ledger say what is left where; clearing the task resumes.

    :param table: the source table (the clone gets its name).
    :param source_conn_id: :param target_conn_id: the clusters (both need webhdfs_url).
    :param peer_id: the run's peer (the oldWALs watchdog's; None: not watched).
    :param quota_policy: :param quota_mark: what the watchdog does at oldWALs pressure, as beside the scan copy.
    :param task_bytes_per_s: bandwidth per Spark task (0/None: no limit).
    :param bytes_per_s: bandwidth of the whole export (0/None: no limit).
    :param tasks: how many Spark tasks the files are balanced over (None: the job's task slots).
    :param max_load: :param critical_load: :param max_pause_s: the load throttle, as the scan copy's.
    :param same_master_key: the operator attests the target holds the source's master key (encrypted families
        are refused without it, before any file is copied).
    :param copy_id: the ledger's copy id (default: `ledger_run_id`, the run's).
    :param ledger_run_id: the run (its ledger rows; the export resumes from them).
    :param spark_conn_id: the Spark connection the job is submitted to."""

    job_kind = "snapshot-export"
    application_path = SNAPSHOT_JOB
    resolves_data_path = False  # files over WebHDFS: no cell goes through a data path
    template_fields: Sequence[str] = (*_HBaseJobOperator.template_fields, "peer_id", "quota_policy", "quota_mark",
                                      "task_bytes_per_s", "bytes_per_s", "tasks", "max_load", "critical_load",
                                      "max_pause_s", "copy_id", "same_master_key")
    ui_color = "#fde0c5"

    def __init__(self, *, peer_id: str | None = None, quota_policy: str = "fail",
                 quota_mark: float = DEFAULT_QUOTA_MARK, watchdog_interval_s: float | None = None,
                 task_bytes_per_s: float | None = None, bytes_per_s: float | None = None, tasks: int | None = None,
                 max_load: str | None = None, critical_load: str | None = None, max_pause_s: float | None = None,
                 copy_id: str | None = None, same_master_key: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.same_master_key = same_master_key
        self.peer_id = peer_id
        self.quota_policy = quota_policy
        self.quota_mark = quota_mark
        self.watchdog_interval_s = watchdog_interval_s
        self.task_bytes_per_s = task_bytes_per_s
        self.bytes_per_s = bytes_per_s
        self.tasks = tasks
        self.max_load = max_load
        self.critical_load = critical_load
        self.max_pause_s = max_pause_s
        self.copy_id = copy_id
        self._breach: str | None = None
        self._export: Any = None

    def _options(self) -> Any:
        from hbase_migration.data.snapshot_export import ExportOptions

        return ExportOptions(self.table, self.copy_id or self.ledger_run_id or "snapshot-" + self.table,
                             tasks=int(self.tasks) if self.tasks else None,
                             task_bytes_per_s=float(self.task_bytes_per_s) if self.task_bytes_per_s else None,
                             bytes_per_s=float(self.bytes_per_s) if self.bytes_per_s else None,
                             same_master_key=self.same_master_key is True)

    def _prepare(self, summary: dict[str, str]) -> list[str]:
        from hbase_migration.data.snapshot_export import job_args

        options = self._options()
        return job_args(cluster_json(self.source_conn_id), cluster_json(self.target_conn_id), self.table,
                        copy_id=options.copy_id, ledger_url_file=summary["summary_ledger_url_file"],
                        snapshot=options.name, tasks=options.tasks,
                        task_bytes_per_s=options.task_bytes_per_s, bytes_per_s=options.bytes_per_s,
                        max_load=self.max_load, critical_load=self.critical_load, max_pause_s=self.max_pause_s,
                        same_master_key=options.same_master_key, **summary)

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        if summary:
            self.log.info("snapshot export summary: %s", json.dumps(summary, sort_keys=True))
        if self._breach:
            raise AirflowFailException(f"snapshot export of {self.table} stopped: {self._breach}. "
                                       f"{self._export.left()}")
        if error is not None or (summary or {}).get("error"):
            left = (summary or {}).get("left") or self._export.left()
            raise AirflowException(f"snapshot export of {self.table}: the file copy failed: "
                                   f"{(summary or {}).get('error') or error}. {left}")
        return summary or {}

    def _on_quota_fail(self, message: str) -> None:
        self._breach = message
        self.on_kill()

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.quota import check_policy

        try:
            check_policy(self.quota_policy)
        except ValueError as e:
            raise AirflowFailException(str(e)) from None
        self._ledger_phase("copy", "running", {"method": "snapshot"})
        return self._recorded(lambda export, source, target: self._export_and_clone(context, export, source, target))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Cluster mode: the file copy ended in YARN (the trigger's event); the rest of `execute`, the clone and the
        clean-up, here, on the operator Airflow made anew for this half of the try."""
        parent = super()

        def finish(export: Any, source: Any, target: Any) -> dict[str, Any]:
            return self._clone(export, source, target, parent.execute_complete(context, event))

        return self._recorded(finish)

    def _recorded(self, step: Any) -> dict[str, Any]:
        """`step(export, source, target)` with the export's ledger open; a failure recorded in the ledger's copy
        phase with what it left where."""
        from hbase_migration.data.snapshot_export import ExportFailed, ExportRefused, SnapshotExport
        from hbase_migration.operators.ledger import open_ledger

        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        ledger = open_ledger()
        try:
            self._export = SnapshotExport(source, target, self._options(), ledger)
            return step(self._export, source, target)
        except ExportRefused as e:  # the constructor's or the check's: nothing was started
            self._ledger_phase("copy", "failed", {"method": "snapshot", "error": str(e)})
            raise AirflowFailException(f"snapshot export of {self.table} refused, nothing changed: {e}") from e
        except ExportFailed as e:
            self._ledger_phase("copy", "failed", {"method": "snapshot", "error": e.reason, "left": e.left})
            raise AirflowException(str(e)) from e
        except (AirflowException, AirflowFailException) as e:
            self._ledger_phase("copy", "failed", {"method": "snapshot", "error": str(e)})
            raise
        except Exception as e:  # a shell or WebHDFS error: said with what is left where, and retried
            left = self._export.left() if self._export is not None else "nothing was started"
            self.log.error("snapshot export of %s failed: %s: %s. %s", self.table, type(e).__name__, e, left)
            self._ledger_phase("copy", "failed", {"method": "snapshot", "error": f"{type(e).__name__}: {e}",
                                                  "left": left})
            raise
        finally:
            ledger.close()

    def _export_and_clone(self, context: Context, export: Any, source: Any, target: Any) -> dict[str, Any]:
        from hbase_migration.data.snapshot_export import cloned
        from hbase_migration.migration.quota import Watchdog
        from hbase_migration.operators.ledger import ledger_url

        existing = export.check()  # ExportRefused goes to `_recorded`
        if cloned(existing):
            self.log.info("%s was cloned by an earlier attempt; cleaning up", self.table)
            export.clean()
            return self._done({"table": self.table, "snapshot": export.name, "already_cloned": True})
        summary: dict[str, Any] = {"table": self.table, "snapshot": export.name}
        if existing is None or existing["state"] != "published":
            watchdog = None
            if self.peer_id:
                from airflow.sdk import conf

                interval = self.watchdog_interval_s or conf.getfloat("hbase_migration", "watchdog_interval_s",
                                                                     fallback=30.0)
                watchdog = Watchdog(source, self.peer_id, self.quota_policy, self.quota_mark, interval,
                                    ledger_url() if self.ledger_run_id else None, self.ledger_run_id,
                                    on_fail=self._on_quota_fail, logger=self.log, target=target).start()
            try:
                export.take()
                summary = self._run(context)  # in YARN cluster mode this defers: execute_complete goes on
            finally:
                if watchdog is not None:
                    watchdog.stop()
        return self._clone(export, source, target, summary)

    def _clone(self, export: Any, source: Any, target: Any, summary: dict[str, Any]) -> dict[str, Any]:
        """The files are on the target: its namespace, `clone_snapshot`, both snapshots deleted."""
        from hbase_migration.migration.tables import create_namespaces

        create_namespaces(source, target, [self.table])
        export.finish()
        summary = {"table": self.table, "snapshot": export.name, **summary, "cloned": True}
        if export.summary.get("target_snapshot_kept"):  # a MOB table's: what the operator must know
            summary["target_snapshot_kept"] = export.summary["target_snapshot_kept"]
        return self._done(summary)

    def _done(self, summary: dict[str, Any]) -> dict[str, Any]:
        self._ledger_phase("copy", "success", {"method": "snapshot", **summary})
        self.log.info("snapshot export of %s done: %s", self.table, json.dumps(summary, sort_keys=True, default=str))
        return summary
