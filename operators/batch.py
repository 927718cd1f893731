"""A batch's copy and verification: one Spark application for every table of a batch (issue 42).

The operators are the per-table ones (`hbase_migration.operators.spark`) submitting the batch jobs (jobs/copy_tables.py,
jobs/verify_tables.py: `hbase_migration.data.batch`): the same clusters, code, credentials and ledger shipped once,
the summary read back the same way. What they keep per table is what the per-table operators keep: each table's
`copy` / `verify` phase in the ledger with its own summary (the dashboard, the report and the cut-over read them
as before), and for the verification each table's result. A table that fails fails the task (so its batch), after
every other table of the batch was done and recorded; a retry resumes each table from the ledger.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Sequence

from airflow.sdk import BaseSensorOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from hbase_migration.operators.snapshot import HBaseSnapshotExportOperator
from hbase_migration.operators.spark import JOBS, HBaseCopyTableOperator, HBaseVerifyTableOperator

COPY_TABLES_JOB = str(JOBS / "copy_tables.py")
VERIFY_TABLES_JOB = str(JOBS / "verify_tables.py")

log = logging.getLogger(__name__)

_BATCH_PARAMS = """
    :param tables: the batch's tables (each keeps its name on the target).
    :param batch: the batch's name (the task's label, the Spark application's name, the switch holder's).
    :param tables_at_once: tables in flight at once in the application (None: two per task slot)."""


def nothing_to_do(batch: str, path: str) -> dict[str, Any]:
    """A batch with no table for this copy path: the task succeeds doing nothing rather than skip. Inside the mapped
    batch group its downstream tasks keep the default ALL_SUCCESS rule, the one Airflow 3.3 evaluates per batch
    before the group expands; a rule that tolerates a skip (NONE_FAILED_MIN_ONE_SUCCESS) waits there for every
    batch's copies and fails every batch's enable_peer on one batch's failure (operators/factory.py)."""
    log.info("batch %s has no table copied by %s: nothing to do", batch, path)
    return {"batch": batch, "path": path, "tables": [], "nothing_to_do": True}


class _Batch:
    """What both batch operators share: the tables, the per-table ledger phases, the batch job's argv."""

    tables: Sequence[str]
    batch: str
    _current: str | None = None  # the one table a per-table step is about (None: every table of the batch)

    def _init_batch(self, tables: Sequence[str], batch: str, tables_at_once: int | None) -> dict[str, Any]:
        self.tables = tables
        self.batch = batch
        self.tables_at_once = tables_at_once
        return {"table": batch}

    def _batch_argv(self, table_argv: list[str]) -> list[str]:
        from hbase_migration.data.batch import batch_args

        return batch_args(table_argv, list(self.tables), self.batch, self.tables_at_once)

    def _ledger_phase(self, phase: str, status: str, detail: Any = None) -> None:
        """The phase of each table (or of the one in hand): a batch's summary gives each its own detail."""
        if not self.ledger_run_id:  # type: ignore[attr-defined]
            return
        from hbase_migration.operators.ledger import open_ledger

        tables = [self._current] if self._current else list(self.tables)
        per_table = detail.get("tables") if isinstance(detail, dict) else None
        with open_ledger() as ledger:
            for t in tables:
                d = per_table.get(t, {"error": "no result for this table"}) if isinstance(per_table, dict) \
                    else detail
                if isinstance(d, dict):
                    d = {k: v for k, v in d.items() if k not in ("partition_results", "differing_rows_sample")}
                ledger.set_phase(self.ledger_run_id, t, phase, status,  # type: ignore[attr-defined]
                                 None if d is None else json.dumps(d, sort_keys=True, default=str))


class HBaseCopyBatchOperator(_Batch, HBaseCopyTableOperator):
    __doc__ = """Copies a batch's tables in one Spark application (jobs/copy_tables.py), each as the per-table copy
    would: every cell with its timestamp, finished partitions recorded per table (a retry skips them), the
    source's switches held while it runs (by the batch, released when this task ends: a batch's copy holds them
    for its own copy only), the run's oldWALs watchdog and the batch's peer beside it, one load throttle for the
    application. Fails when any table failed, after the others finished.""" + _BATCH_PARAMS

    application_path = COPY_TABLES_JOB
    template_fields: Sequence[str] = (*HBaseCopyTableOperator.template_fields, "tables", "batch")

    def __init__(self, *, tables: Sequence[str], batch: str = "batch", tables_at_once: int | None = None,
                 **kwargs) -> None:
        kwargs.update(self._init_batch(tables, batch, tables_at_once))
        super().__init__(**kwargs)

    def _prepare(self, summary: dict[str, str]) -> list[str]:
        return self._batch_argv(super()._prepare(summary))

    def execute(self, context: Context) -> dict[str, Any]:
        if not self.tables:
            return nothing_to_do(self.batch, "scan")
        return super().execute(context)

    def _switch_holder(self, copy_id: str) -> str:
        from hbase_migration.data.switches import holder_name

        return holder_name(copy_id, f"batch {self.batch}")

    @property
    def _releases_own_hold(self) -> bool:
        return True

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        named = ", ".join(self.tables) if len(self.tables) <= 5 else f"{len(self.tables)} tables"
        what = f"copy of batch {self.batch} ({named})"
        if self._breach:
            self._ledger_phase("copy", "failed", {"quota_breach": self._breach})
            # Not retried: a retry would meet the same quota. The peer stays as it is (see state_left_behind).
            raise AirflowFailException(f"{what} stopped: {self._breach}")
        load = (summary or {}).get("load_control") or {}
        if load.get("aborted"):
            self._ledger_phase("copy", "failed", summary)
            raise AirflowException(f"{what} gave up, the source stayed overloaded: {load.get('reason')}. Finished "
                                   "partitions are recorded; a retry resumes with the others")
        if summary and "tables" in summary:
            self.log.info("copy batch %s: %s", self.batch, json.dumps(
                {k: v for k, v in summary.items() if k != "tables"}, sort_keys=True, default=str))
            failed = set(summary.get("failed_tables") or ())
            for t in self.tables:
                self._current = t
                try:
                    s = with_application(summary, summary["tables"].get(t) or {"error": "no result for this table"})
                    self._ledger_phase("copy", "failed" if t in failed else "success", s)
                    if t in failed:
                        self.log.error("copy of %s failed: %s", t, json.dumps(s, sort_keys=True, default=str))
                finally:
                    self._current = None
            if failed:
                raise AirflowException(
                    f"copy of batch {self.batch}: {len(failed)} of {len(self.tables)} tables failed "
                    f"({', '.join(sorted(failed))}); the other tables are copied. Finished partitions are kept: a "
                    "retry resumes each table")
            if error is not None:  # every table copied, yet the job failed (its summary not delivered...)
                raise AirflowException(f"copy of batch {self.batch}: the job failed after copying every table: "
                                       f"{error}") from error
            return summary
        self._ledger_phase("copy", "failed", summary or {"error": str(error)})
        raise AirflowException(f"{what} failed (finished partitions are kept; a retry resumes): {error}") from error


def with_application(summary: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """A table's result with the batch's Spark application beside it (`spark`: where the job ran, as a table's own
    job reports it), so each table's phase in the ledger names the application that copied or verified it."""
    return {**table, "spark": summary["spark"]} if summary.get("spark") and "spark" not in table else table


class HBaseVerifyBatchOperator(_Batch, HBaseVerifyTableOperator):
    __doc__ = """Verifies a batch's tables in one Spark application (jobs/verify_tables.py), each as the per-table
    verification would (every version of every cell, a re-compare, optionally a repair), each table's result and
    phase in the ledger. Fails when any table differs or failed, after the others were verified.""" + _BATCH_PARAMS

    application_path = VERIFY_TABLES_JOB
    template_fields: Sequence[str] = (*HBaseVerifyTableOperator.template_fields, "tables", "batch")

    def __init__(self, *, tables: Sequence[str], batch: str = "batch", tables_at_once: int | None = None,
                 **kwargs) -> None:
        kwargs.update(self._init_batch(tables, batch, tables_at_once))
        super().__init__(**kwargs)

    def _prepare(self, summary: dict[str, str]) -> list[str]:
        return self._batch_argv(super()._prepare(summary))

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        if not summary or "tables" not in summary:
            self._ledger_phase(self.ledger_phase, "failed", summary or {"error": str(error)})
            raise AirflowException(f"verify of batch {self.batch} failed: {error}") from error
        failures = []
        for t in self.tables:  # each table's result and phase, exactly as its own verification keeps them
            self._current, self.table = t, t
            s = with_application(summary, summary["tables"].get(t) or {"error": "no result for this table"})
            try:
                if "error" in s and "level" not in s:
                    self._ledger_phase(self.ledger_phase, "failed", s)
                    raise AirflowException(f"verify of {t} failed: {s['error']}")
                super()._finish(s, None)
            except AirflowException as e:
                failures.append(str(e))
                self.log.error("%s", e)
            finally:
                self._current, self.table = None, self.batch
        if failures:
            raise AirflowException(f"verify of batch {self.batch}: {len(failures)} of {len(self.tables)} tables "
                                   f"failed: " + " | ".join(failures))
        if error is not None:
            # the job exits 1 when a table differed, repaired or not (a single table's verdict, as jobs/verify_table.py
            # says it): when every such table was repaired and read back equal, that status is the verdict
            from hbase_migration.data.verify import repaired_clean

            flagged = summary.get("failed_tables") or []
            if not (flagged and self.repair and all(repaired_clean(summary["tables"].get(t) or {}) for t in flagged)):
                raise AirflowException(f"verify of batch {self.batch}: the job failed after every table was verified "
                                       f"clean: {error}") from error
            self.log.info("verify of batch %s: the job's exit status is its verdict: %s differed and were repaired",
                          self.batch, ", ".join(flagged))
        return summary

    def _resolve_method(self) -> str:
        """The job picks each table's method (`auto`: by that table's size, read in the driver), so the run spec's
        method goes to it as given."""
        if self.verify_method not in ("auto", "cells", "hash"):
            raise AirflowFailException(f"verify_method must be auto, cells or hash, got {self.verify_method!r}")
        return self.verify_method

    def execute(self, context: Context) -> dict[str, Any]:
        if not self.tables:
            raise AirflowFailException(f"batch {self.batch} has no table to verify")
        if self.verify_method != "cells" and (self.spark_source_conn_id or self.spark_target_conn_id):
            return self._per_table(context)
        return super().execute(context)

    def _per_table(self, context: Context) -> dict[str, Any]:
        """A job beside each cluster (`spark_source_conn_id` / `spark_target_conn_id`) is a pair of applications
        per table meeting in the ledger: each table is verified by the per-table operator, one after the other,
        the batch failing after the others when one does."""
        from hbase_migration.operators.spark import HBaseVerifyTableOperator as PerTable

        names = ("source_conn_id", "target_conn_id", "start_time_ms", "end_time_ms", "versions", "families",
                 "recompare_sleep_s", "level", "repair", "ledger_phase", "verify_method", "hash_leaf_bytes",
                 "hash_min_bytes", "skew_margin_ms", "spark_source_conn_id", "spark_target_conn_id",
                 "source_remote_conn_id", "ledger_run_id")
        done: dict[str, Any] = {}
        failures: list[str] = []
        pair = self._clusters()  # `data_path: auto` resolved once for the batch, not once per table
        for table in self.tables:
            # not deferrable: a nested operator cannot hand its wait to the triggerer (this task's slot is held)
            op = PerTable(task_id=f"{self.task_id}.{table}", table=table, spark_conn_id=self._conn_id,
                          deferrable=False, **{n: getattr(self, n) for n in names})
            op._pair, op._data_path_why = pair, self._data_path_why
            try:
                done[table] = op.execute(context)
            except AirflowException as e:
                failures.append(str(e))
                self.log.error("%s", e)
        if failures:
            raise AirflowException(f"verify of batch {self.batch}: {len(failures)} of {len(self.tables)} tables "
                                   "failed: " + " | ".join(failures))
        return {"job": "verify", "batch": self.batch, "tables": done, "failed_tables": [], "identical": True}


class HBaseSnapshotExportBatchOperator(HBaseSnapshotExportOperator):
    __doc__ = """Copies a batch's tables that go by snapshot, one after the other, each exactly as the per-table
    export (its FLUSH snapshot, its files by a Spark job, the clone, the clean-up; resumable), its own Spark
    application each, waited for in the worker (not deferred): they are the tables past
    `snapshot_threshold_bytes`, few and big, so an application's start is small beside their copy. A quota breach
    stops the batch at once; another failure of one table leaves the others to be exported, then fails the task (a
    retry resumes each).

    :param tables: the batch's tables copied by snapshot (none: the task is skipped).
    :param batch: the batch's name."""

    template_fields: Sequence[str] = (*HBaseSnapshotExportOperator.template_fields, "tables", "batch")

    def __init__(self, *, tables: Sequence[str], batch: str = "batch", **kwargs: Any) -> None:
        kwargs["table"] = batch
        super().__init__(**kwargs)
        self.tables = tables
        self.batch = batch
        # Each table's wait in the worker, also in YARN cluster mode: a deferral ends `execute`, and the batch's
        # place (the table in flight, those done) would have to come back through the trigger's kwargs, which
        # `airflow dags test` drops. A batch's snapshot tables are few and big: a slot per export is the price.
        self.deferrable = False

    def execute(self, context: Context) -> dict[str, Any]:
        if not self.tables:
            return nothing_to_do(self.batch, "snapshot")
        done: dict[str, Any] = {}
        failed: list[str] = []
        given = (self.files, self.py_files)  # each submission adds its own shipped files to these
        try:
            for table in self.tables:
                # each table its own spark-submit: the provider keeps the hook (and its argv) it built for the last,
                # and in cluster mode the application's id under `external_id_key` (a retry reconnects to it, or
                # skips a succeeded one): one key per table, or the second table would find the first's
                self.table, self._breach, self._export, self._hook = table, None, None, None
                self.name, (self.files, self.py_files) = f"{self.job_kind}-{table}", given
                self.external_id_key = f"{type(self).external_id_key}:{table}"
                try:
                    done[table] = super().execute(context)
                except AirflowFailException:
                    raise  # a quota breach, or a refusal: nothing more is started
                except Exception as e:  # the others are exported; this one is retried with the task
                    self.log.error("snapshot export of %s failed: %s", table, e)
                    failed.append(f"{table}: {e}")
        finally:
            self.table = self.batch
        if failed:
            raise AirflowException(f"batch {self.batch}: {len(failed)} of {len(self.tables)} snapshot exports "
                                   "failed: " + " | ".join(failed))
        return done


class BatchTurnSensor(BaseSensorOperator):
    """Waits for the batch's turn: one of the run's `batches_at_once` slots in the ledger (taken here, released by
    the batch's `copies_done` once its copies have ended, in any state). In reschedule mode: no worker slot is
    held while the batch waits. The batch's peer is added only after this, so a waiting batch pins no WAL.

    :param batch: the batch's name.
    :param limit: the run's `batches_at_once`.
    :param ledger_run_id: the run (its slots); None: no wait."""

    template_fields: Sequence[str] = ("batch", "limit", "ledger_run_id")
    ui_color = "#eeeeee"

    def __init__(self, *, batch: str, limit: int, ledger_run_id: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("mode", "reschedule")
        kwargs.setdefault("poke_interval", 15)
        kwargs.setdefault("timeout", 7 * 24 * 3600)  # the batches before it copy; a week bounds a forgotten run
        super().__init__(**kwargs)
        self.batch = batch
        self.limit = limit
        self.ledger_run_id = ledger_run_id

    def poke(self, context: Context) -> bool:
        if not self.ledger_run_id:
            return True
        from hbase_migration.operators.ledger import open_ledger

        with open_ledger() as ledger:
            slot = ledger.take_batch_slot(self.ledger_run_id, self.batch, int(self.limit))
            holders = [] if slot is not None else ledger.batch_slots(self.ledger_run_id)
        if slot is not None:
            self.log.info("batch %s: its turn (slot %d of %s)", self.batch, slot + 1, self.limit)
            return True
        self.log.info("batch %s waits: %s batch(es) copying side by side already (%s)", self.batch, self.limit,
                      ", ".join(h["batch"] for h in holders))
        return False
