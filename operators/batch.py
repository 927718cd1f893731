"""A batch's copy and verification: one Spark application for every table of a batch (issue 42).

The operators are the per-table ones (`operators.spark`) submitting the batch jobs (jobs/copy_tables.py,
jobs/verify_tables.py: `hbase_migration.data.batch`): the same clusters, code, credentials and ledger shipped once,
the summary read back the same way. What they keep per table is what the per-table operators keep: each table's
`copy` / `verify` phase in the ledger with its own summary (the dashboard, the report and the cut-over read them
as before), and for the verification each table's result. A table that fails fails the task (so its batch), after
every other table of the batch was done and recorded; a retry resumes each table from the ledger.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from operators.spark import REPO, HBaseCopyTableOperator, HBaseVerifyTableOperator

COPY_TABLES_JOB = str(REPO / "jobs" / "copy_tables.py")
VERIFY_TABLES_JOB = str(REPO / "jobs" / "verify_tables.py")

_BATCH_PARAMS = """
    :param tables: the batch's tables (each keeps its name on the target).
    :param batch: the batch's name (the task's label, the Spark application's name, the switch holder's).
    :param tables_at_once: tables in flight at once in the application (None: two per task slot)."""


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
        from operators.ledger import open_ledger

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

    def _switch_holder(self, copy_id: str) -> str:
        from hbase_migration.data.switches import holder_name

        return holder_name(copy_id, f"batch {self.batch}")

    @property
    def _releases_own_hold(self) -> bool:
        return True

    def _finish(self, summary: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        if summary and "tables" in summary and not self._breach and not (summary.get("load_control") or {}).get(
                "aborted"):
            self.log.info("copy batch %s: %s", self.batch, json.dumps(
                {k: v for k, v in summary.items() if k != "tables"}, sort_keys=True, default=str))
            failed = set(summary.get("failed_tables") or ())
            for t in self.tables:
                self._current = t
                try:
                    s = summary["tables"].get(t) or {"error": "no result for this table"}
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
        return super()._finish(summary, error)  # a quota breach, the load throttle giving up, or no summary


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
            s = summary["tables"].get(t) or {"error": "no result for this table"}
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
            raise AirflowException(f"verify of batch {self.batch}: the job failed after every table was verified "
                                   f"clean: {error}") from error
        return summary

    def execute(self, context: Context) -> dict[str, Any]:
        if not self.tables:
            raise AirflowFailException(f"batch {self.batch} has no table to verify")
        return super().execute(context)
