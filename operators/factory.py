"""DAG builders: the migration DAG (one per plan, or the hand-triggered default) and the time-window backfill.

Structure only: each task is one operator or a small callable from `operators.steps`. Parse-time cost is
constructing operators; nothing connects to anything until a task runs.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Mapping

from airflow.sdk import DAG, Param, TriggerRule, task

from operators.checks import CreateTargetTablesOperator, PreflightOperator
from operators.replication import AddPeerOperator, EnablePeerOperator
from operators.sensors import ReplicationDrainedSensor
from operators.spark import HBaseCopyTableOperator, HBaseVerifyTableOperator

PEER_ID_PATTERN = "^[A-Za-z0-9_]{1,64}$"

MIGRATION_DOC = """
### Migrate live HBase tables to another cluster

1. **open_run**: validates the inputs (tables, time range, peer id, distinct clusters) and records the run.
2. **preflight**: both clusters reachable and distinct; tables/families on both sides; `REPLICATION_SCOPE`
   exactly 1 on every migrated family (other values refused); peer id free or ours; no other peer pinning
   WALs; oldWALs quota headroom for the copy. Changes nothing.
3. **create_target_tables**: absent target tables are created with the source's families and split keys.
4. **add_peer**: the peer is added **DISABLED**, scoped by TABLE_CFS to the tables. From this instant (T0)
   every edit is kept in the source's WALs.
5. **copy** (one mapped task per table): the PySpark CopyTable writes every cell with its **source
   timestamp**, resumable per partition, with an oldWALs watchdog beside it (quota policy on a breach).
6. **enable_peer**: the backlog since T0 ships; edits replayed after the copy win by their timestamps.
7. **wait_drained** (deferrable): every live region server's queues for the peer (recovered ones included)
   back at their caught-up size with a small age, for several consecutive samples.
8. **verify** (mapped): content hashes per key range, bisected to differing rows; fails on any difference.
9. **report**: the run's figures in the ledger and the dashboard. The peer stays until a person cuts over.

On failure, **state_left_behind** reads the peer's state, logs what to do, records it in the ledger, and with
quota policy `enable_peer` enables a peer left disabled.
"""


def _doc(cls: type) -> str:
    return (cls.__doc__ or "").strip()


def migration_params(defaults: Mapping[str, Any] | None = None) -> dict[str, Param]:
    d = {"source_conn_id": "hbase_source", "target_conn_id": "hbase_target", "tables": ["users"],
         "peer_id": "migration1", "start_time_ms": None, "end_time_ms": None, "rows_per_s": 0,
         "max_lag_ms": 30_000, "stable_samples": 3, "caught_up_queue_size": 1, "quota_policy": "fail",
         "quota_mark": 0.8, "expected_copy_s": 3600, "create_missing_tables": True, "recompare_sleep_s": 5,
         "dry_run": False, **(defaults or {})}
    return {
        "source_conn_id": Param(d["source_conn_id"], type="string", title="Source cluster (connection id)"),
        "target_conn_id": Param(d["target_conn_id"], type="string", title="Target cluster (connection id)"),
        "tables": Param(d["tables"], type="array", items={"type": "string", "minLength": 1}, minItems=1,
                        title="Tables to migrate"),
        "peer_id": Param(d["peer_id"], type="string", pattern=PEER_ID_PATTERN, title="Replication peer id",
                         description="letters, digits and _ (no '-': HBase parses queue ids on it)"),
        "start_time_ms": Param(d["start_time_ms"], type=["null", "integer"], minimum=0,
                               title="Copy cells with timestamp >= (ms)", description="empty: from the start"),
        "end_time_ms": Param(d["end_time_ms"], type=["null", "integer"], minimum=0,
                             title="Copy cells with timestamp < (ms)", description="empty: everything"),
        "rows_per_s": Param(d["rows_per_s"], type="integer", minimum=0,
                            title="Throttle per copy task (rows/s, 0 = none)"),
        "max_lag_ms": Param(d["max_lag_ms"], type="integer", minimum=0, title="Drained: max ageOfLastShippedOp"),
        "stable_samples": Param(d["stable_samples"], type="integer", minimum=2,
                                title="Drained: consecutive samples"),
        "caught_up_queue_size": Param(d["caught_up_queue_size"], type="integer", enum=[0, 1],
                                      title="Drained: sizeOfLogQueue when caught up (1 on HBase 2.x, 0 on 1.x)"),
        "quota_policy": Param(d["quota_policy"], type="string", enum=["fail", "enable_peer"],
                              title="On oldWALs quota pressure"),
        "quota_mark": Param(d["quota_mark"], type="number", exclusiveMinimum=0, maximum=1,
                            title="oldWALs quota fraction that counts as pressure"),
        "expected_copy_s": Param(d["expected_copy_s"], type="integer", minimum=1,
                                 title="Expected copy duration (s), for the quota headroom check"),
        "create_missing_tables": Param(d["create_missing_tables"], type="boolean",
                                       title="Create absent target tables"),
        "recompare_sleep_s": Param(d["recompare_sleep_s"], type="number", minimum=0,
                                   title="Verify: pause before re-comparing differing rows (s)"),
        "dry_run": Param(d["dry_run"], type="boolean", title="Dry run: check and print, change nothing"),
    }


def build_migration_dag(dag_id: str = "hbase_table_migration", *, schedule: Any = None, plan: str = "manual",
                        defaults: Mapping[str, Any] | None = None, spark_conn_id: str = "spark_default",
                        tags: list[str] | None = None, doc_md: str | None = None) -> DAG:
    with DAG(
        dag_id=dag_id, schedule=schedule, catchup=False, max_active_runs=1, params=migration_params(defaults),
        render_template_as_native_obj=True, tags=["hbase", "migration", *(tags or [])],
        doc_md=doc_md or MIGRATION_DOC,
        default_args={"retries": 0},
    ) as dag:
        src = {"source_conn_id": "{{ params.source_conn_id }}"}
        both = {**src, "target_conn_id": "{{ params.target_conn_id }}"}
        peer = {"peer_id": "{{ params.peer_id }}"}
        safe_retry = {"retries": 2, "retry_delay": timedelta(seconds=30)}

        @task(task_id="open_run")
        def open_run(**context) -> list[dict[str, Any]]:
            from operators.steps import open_run as _open

            return _open(context["params"], context["run_id"], context["dag"].dag_id, plan)

        run = open_run()
        preflight = PreflightOperator(
            task_id="preflight", doc_md=_doc(PreflightOperator), **both, **peer, tables="{{ params.tables }}",
            create_missing="{{ params.create_missing_tables }}", expected_copy_s="{{ params.expected_copy_s }}")
        create_tables = CreateTargetTablesOperator(
            task_id="create_target_tables", doc_md=_doc(CreateTargetTablesOperator), **both,
            tables="{{ params.tables }}", dry_run="{{ params.dry_run }}", **safe_retry)
        add_peer = AddPeerOperator(
            task_id="add_peer", doc_md=_doc(AddPeerOperator), **both, **peer, tables="{{ params.tables }}",
            dry_run="{{ params.dry_run }}", ledger_run_id="{{ run_id }}", **safe_retry)

        @task.short_circuit(task_id="proceed_unless_dry_run")
        def proceed(**context) -> bool:
            return not context["params"]["dry_run"]

        go = proceed()
        # Re-running a copy re-writes the same cells with the same timestamps; finished partitions are skipped.
        copy = HBaseCopyTableOperator.partial(
            task_id="copy", doc_md=_doc(HBaseCopyTableOperator), **both, **peer,
            quota_policy="{{ params.quota_policy }}", quota_mark="{{ params.quota_mark }}",
            rows_per_s="{{ params.rows_per_s }}", ledger_run_id="{{ run_id }}", spark_conn_id=spark_conn_id,
            retries=2, retry_delay=timedelta(minutes=1),
        ).expand_kwargs(run)
        enable = EnablePeerOperator(task_id="enable_peer", doc_md=_doc(EnablePeerOperator), **src, **peer,
                                    ledger_run_id="{{ run_id }}", **safe_retry)
        drained = ReplicationDrainedSensor(
            task_id="wait_drained", doc_md=_doc(ReplicationDrainedSensor), **src, **peer,
            thresholds={"max_age_ms": "{{ params.max_lag_ms }}", "stable_samples": "{{ params.stable_samples }}",
                        "caught_up_queue_size": "{{ params.caught_up_queue_size }}"},
            deferrable=True, poke_interval=5, timeout=timedelta(hours=12), ledger_run_id="{{ run_id }}")
        verify = HBaseVerifyTableOperator.partial(
            task_id="verify", doc_md=_doc(HBaseVerifyTableOperator), **both,
            recompare_sleep_s="{{ params.recompare_sleep_s }}", ledger_run_id="{{ run_id }}",
            spark_conn_id=spark_conn_id, retries=1, retry_delay=timedelta(minutes=1),
        ).expand_kwargs(run)

        @task(task_id="report")
        def report(**context) -> dict[str, Any]:
            from operators.steps import report as _report

            return _report(context["run_id"])

        @task(task_id="state_left_behind", trigger_rule=TriggerRule.ONE_FAILED)
        def on_failure(**context) -> dict[str, Any]:
            from operators.steps import state_left_behind

            ti = context["ti"]
            states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[ti.run_id]).get(ti.run_id, {})
            failed = sorted(k for k, v in states.items() if str(getattr(v, "value", v)) == "failed")
            return state_left_behind(context["params"], context["run_id"], failed)

        done = report()
        run >> preflight >> create_tables >> add_peer >> go >> copy >> enable >> drained >> verify >> done
        [run, preflight, create_tables, add_peer, copy, enable, drained, verify] >> on_failure()
    return dag


BACKFILL_DOC = """
### Copy a time window of HBase tables (backfill)

Copies the cells whose timestamps fall in a window `[start, end)`, then verifies that window. The window is
the run's data interval (so `airflow backfill create --dag-id hbase_backfill --from-date ... --to-date ...`
copies one interval per run), or `start_time_ms`/`end_time_ms` from the trigger form when given. No peer is
touched. Finished partitions are recorded per run: clearing a failed copy resumes it.
"""


def backfill_params() -> dict[str, Param]:
    return {
        "source_conn_id": Param("hbase_source", type="string", title="Source cluster (connection id)"),
        "target_conn_id": Param("hbase_target", type="string", title="Target cluster (connection id)"),
        "tables": Param(["users"], type="array", items={"type": "string", "minLength": 1}, minItems=1),
        "start_time_ms": Param(None, type=["null", "integer"], minimum=0,
                               title="Window start (ms, inclusive)", description="empty: the data interval's start"),
        "end_time_ms": Param(None, type=["null", "integer"], minimum=0,
                             title="Window end (ms, exclusive)", description="empty: the data interval's end"),
        "rows_per_s": Param(0, type="integer", minimum=0, title="Throttle per copy task (rows/s, 0 = none)"),
        "verify": Param(True, type="boolean", title="Verify the window after the copy"),
        "recompare_sleep_s": Param(5, type="number", minimum=0),
    }


def build_backfill_dag(dag_id: str = "hbase_backfill", *, schedule: Any = "@daily", start_date: Any = None,
                       spark_conn_id: str = "spark_default") -> DAG:
    """A cron `schedule` becomes a data-interval timetable: each run's window is the period between two fires
    (Airflow 3's default cron timetable gives a run an empty interval, which would leave nothing to copy), so
    `airflow backfill create --from-date D1 --to-date D2` copies day by day, each run its own day. The default
    start date is the epoch, because a task never runs for a logical date before its DAG's start date: a later
    one would turn a backfill of older cells into runs that succeed having copied nothing."""
    import pendulum
    from airflow.sdk import CronDataIntervalTimetable

    if isinstance(schedule, str) and schedule not in ("@once", "@continuous"):
        schedule = CronDataIntervalTimetable(schedule, timezone="UTC")
    with DAG(
        dag_id=dag_id, schedule=schedule, catchup=False, max_active_runs=2, params=backfill_params(),
        start_date=start_date or pendulum.datetime(1970, 1, 1, tz="UTC"), render_template_as_native_obj=True,
        tags=["hbase", "backfill"], doc_md=BACKFILL_DOC, default_args={"retries": 0},
    ) as dag:
        both = {"source_conn_id": "{{ params.source_conn_id }}", "target_conn_id": "{{ params.target_conn_id }}"}

        @task(task_id="open_window")
        def open_window(**context) -> list[dict[str, Any]]:
            from operators.steps import open_window as _open

            return _open(context["params"], context["run_id"], context["dag"].dag_id,
                         context.get("data_interval_start"), context.get("data_interval_end"))

        window = open_window()
        copy = HBaseCopyTableOperator.partial(
            task_id="copy", doc_md=_doc(HBaseCopyTableOperator), **both, rows_per_s="{{ params.rows_per_s }}",
            ledger_run_id="{{ run_id }}", spark_conn_id=spark_conn_id, retries=2, retry_delay=timedelta(minutes=1),
        ).expand_kwargs(window)

        @task.short_circuit(task_id="verify_requested", ignore_downstream_trigger_rules=False)
        def verify_requested(**context) -> bool:
            return bool(context["params"]["verify"])

        verify = HBaseVerifyTableOperator.partial(
            task_id="verify", doc_md=_doc(HBaseVerifyTableOperator), **both,
            recompare_sleep_s="{{ params.recompare_sleep_s }}", ledger_run_id="{{ run_id }}",
            spark_conn_id=spark_conn_id, retries=1,
        ).expand_kwargs(window)

        @task(task_id="report", trigger_rule=TriggerRule.NONE_FAILED)
        def report(**context) -> dict[str, Any]:
            from operators.steps import report as _report

            return _report(context["run_id"])

        window >> copy >> verify_requested() >> verify >> report()
    return dag
