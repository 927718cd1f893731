"""DAG builders: the migration DAG (one per plan, or the hand-triggered default) and the time-window backfill.

Structure only: each task is one operator or a small callable from `hbase_migration.operators.steps`. The trigger
form's Params come from the library's run spec (`hbase_migration.migration.runspec`); `open_run` validates them once
and every later task reads the validated spec from its XCom (`spec(...)` below), never the raw form values.
Parse-time cost is constructing operators; nothing connects to anything until a task runs.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Mapping

from airflow.sdk import DAG, Param, TriggerRule, task

from hbase_migration.migration.runspec import BACKFILL, BY_NAME, MIGRATION, form_schema
from hbase_migration.operators.alerts import dag_callbacks
from hbase_migration.operators.checks import CreateTargetTablesOperator, PreflightOperator
from hbase_migration.operators.replication import AddPeerOperator, EnablePeerOperator
from hbase_migration.operators.sensors import ReplicationDrainedSensor
from hbase_migration.operators.spark import HBaseCopyTableOperator, HBaseVerifyTableOperator

MIGRATION_DOC = """
### Migrate live HBase tables to another cluster

1. **open_run**: validates the inputs (tables, time range, peer id, distinct clusters) and records the run.
2. **preflight**: both clusters reachable and distinct; tables on both sides (an existing target table with the
   source's families, VERSIONS, MIN_VERSIONS, TTL, KEEP_DELETED_CELLS and no rows unless allowed or this
   migration's own; coprocessors installed and codecs loadable for the tables to create); `REPLICATION_SCOPE`
   exactly 1 on every migrated family (other values refused); peer id free or ours (SERIAL, BANDWIDTH
   included); no other peer pinning WALs; oldWALs quota headroom; bulk loads replicated by the source (its
   region servers' /conf) unless `bulk_loads` is `none` (your attestation); warnings for deleted cells that are
   not copied. With `sizing` (default) it sizes the run first: regions,
   bytes and rows per table, a timed sample copy into a scratch table, the projected copy time and the oldWALs
   it pins against the quota and HDFS free space (refused when it does not fit; the figures are on the
   dashboard, also for a `dry_run`). Changes nothing (scratch tables are created and dropped).
3. **create_target_tables**: absent target tables are created exactly like the source's (namespace, every
   family and table attribute, codecs mapped by `codec_map`, coprocessors, split keys).
4. **plan_batches**: the tables in batches (as `batches` lists them, else by size: `batch_max_tables`,
   `batch_max_bytes`), each with its own peer: one batch (a run of a few tables) uses `peer_id` itself, more use
   `<peer_id>_b1`, ... Kept in the ledger: a retried plan finds the first. **scan_tables** and **snapshot_tables**
   list the tables of each initial copy, as preflight decided.
5. **batch** (a mapped task group, one per batch; a batch that fails leaves the others going):
   **wait_turn** (reschedule mode: no worker slot held) until fewer than `batches_at_once` batches copy;
   **add_peer**, the batch's peer **DISABLED**, scoped by TABLE_CFS to its tables (SERIAL and BANDWIDTH as asked):
   from this instant (the batch's T0) every edit of its tables is kept in the source's WALs;
   **copy**: one Spark application copies the batch's scan tables (each table's partitions, resume, summary and
   ledger records as alone), every cell with its **source timestamp**, the source's split/merge switch and
   normalizer held off while the batch copies (restored to what was found when the last copy ends), the run's
   oldWALs watchdog beside it (one reader for the run: quota policy on a breach) and a load-aware throttle;
   **snapshot_export**: its tables past `snapshot_threshold_bytes` (`initial_copy` auto) or all (`snapshot`) by
   FLUSH snapshot, files exported over WebHDFS by a Spark job, `clone_snapshot` on the target;
   **copies_done** (whatever the copies' state): the batch's turn and switch hold given up;
   **enable_peer**: once each table of the batch's peer exists on the target (one `list` there; else the task
   fails naming them, the peer left DISABLED), the batch's backlog ships, edits replayed after the copy win by
   their timestamps;
   **wait_drained** (deferrable): every live region server's queues for the batch's peer back at their caught-up
   size with a small age, for several consecutive samples; optionally a canary row;
   **verify**: one Spark application, each table's sides merge-joined by row key, every version of every cell
   compared (without an end time, future timestamps too); differing rows re-compared after a pause.
6. **release_switches** (once every batch ended): switch holds a killed copy left are released.
7. **report**: the run's figures in the ledger and the dashboard. The peers stay until a person cuts over
   (`hbase_cutover`, with this run's id).
8. **proceed_unless_dry_run** stops a dry run after the plan (nothing added, nothing copied).

On failure, **state_left_behind** (once every batch has ended) reads each batch's peer, logs what to do, records
it in the ledger, and with quota policy `enable_peer` enables a peer left disabled once each of its tables exists
on the target (no peer is ever enabled before: **enable_peer** and the copy's quota policy check the same, in one
`list` of the target). A failed run sends one alert (mail and/or chat webhook, when configured: docs/alerts.md)
naming the run, the clusters, the state left behind and the action.
"""


def _doc(cls: type) -> str:
    return (cls.__doc__ or "").strip()


_OPEN_TASK = "open_run"
_SPEC = "{% set s = ti.xcom_pull(task_ids='" + _OPEN_TASK + "', key='spec') %}"


def spec(name: str) -> str:
    """A template reading one field of the validated run spec that `open_run` (or `open_window`) pushed.

    The DAGs render templates as native objects, and Jinja's native mode would turn a string that looks like
    a number (peer id "1") into an int: string fields are rendered as JSON literals, which it reads back as
    the same string."""
    field = BY_NAME[name]
    if field.kind != "string":
        return _SPEC + "{{ s." + name + " }}"
    if field.nullable:  # None stays None (tojson would give the string "null")
        return _SPEC + "{{ s." + name + " | tojson if s." + name + " is not none else none }}"
    return _SPEC + "{{ s." + name + " | tojson }}"


def verify_method_args() -> dict[str, str]:
    """The run spec's verification method for `HBaseVerifyTableOperator` (the migration's, the backfill's, the
    cut-over's and the rollback's verifications all use the configured one)."""
    return {"verify_method": spec("verify_method"), "hash_min_bytes": spec("hash_verify_min_bytes"),
            "hash_leaf_bytes": spec("hash_leaf_bytes"), "skew_margin_ms": spec("skew_margin_ms"),
            "spark_source_conn_id": spec("spark_source_conn_id"), "spark_target_conn_id": spec("spark_target_conn_id"),
            "source_remote_conn_id": spec("source_remote_conn_id")}


RETRY_DELAY_OPTION = "retry_delay_s"


def retry_delay(default_s: float) -> timedelta:
    """A step's wait between its retries: `[hbase_migration] retry_delay_s` when set (one figure for every step,
    e.g. shorter on a test deployment), else the step's own default (30 s for quick steps, a minute for copies and
    verifies). Read when the DAG is parsed."""
    from airflow.sdk import conf

    value = conf.get("hbase_migration", RETRY_DELAY_OPTION, fallback=None)
    if value in (None, ""):
        return timedelta(seconds=default_s)
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < 86400:
        raise ValueError(f"[hbase_migration] {RETRY_DELAY_OPTION} = {value!r}: give seconds between 0 and 86400, "
                         "or remove it for each step's default")
    return timedelta(seconds=seconds)


def _publish(context: Any, opened: dict[str, Any]) -> list[dict[str, Any]]:
    """The open task's results: the spec as XCom `spec` (read by `spec(...)` templates), the copies to map over
    as its return value (Airflow maps only over a return value)."""
    context["ti"].xcom_push(key="spec", value=opened["spec"])
    return opened["copies"]


def pools(defaults: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The DAG's Airflow pools: a plan's `[pools]` values, else the run spec's defaults. Fixed when the DAG is
    parsed (a task's pool is the scheduler's to read before the task runs)."""
    return {name: str((defaults or {}).get(name) or BY_NAME[name].default) for name in ("spark_pool", "cluster_pool")}


def check_pools(params: Mapping[str, Any], fixed: Mapping[str, str]) -> None:
    """The trigger form's pools must be the DAG's own (InvalidRunInput naming the field otherwise)."""
    from hbase_migration.migration.runspec import InvalidRunInput

    for name, pool in fixed.items():
        given = params.get(name)
        if given not in (None, "", pool):
            raise InvalidRunInput(name, f"{given!r}: this DAG's tasks use the pool {pool!r}, fixed when the DAG is "
                                        "parsed; set another in the plan's [pools] section")


def _release_switches_task(pool: str = "default_pool") -> Any:
    """Once every copy of the run has ended, in any state: the switch holds its copies left behind released (a
    copy killed without a retry cannot release its own; the last hold of the source restores the state found)."""

    @task(task_id="release_switches", trigger_rule=TriggerRule.ALL_DONE, retries=2, retry_delay=retry_delay(30),
          pool=pool)
    def release_switches(**context) -> dict[str, Any]:
        from hbase_migration.operators.steps import release_switches as _release

        return _release(context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec"), context["run_id"])

    return release_switches()


def form_params(dag_kind: str, defaults: Mapping[str, Any] | None = None) -> dict[str, Param]:
    """The trigger form of a DAG kind, from the run spec (a plan's values as defaults)."""
    return {name: Param(**kwargs) for name, kwargs in form_schema(dag_kind, defaults).items()}


def build_migration_dag(dag_id: str = "hbase_table_migration", *, schedule: Any = None, plan: str = "manual",
                        defaults: Mapping[str, Any] | None = None, spark_conn_id: str = "spark_default",
                        tags: list[str] | None = None, doc_md: str | None = None) -> DAG:
    with DAG(
        dag_id=dag_id, schedule=schedule, catchup=False, max_active_runs=1, params=form_params(MIGRATION, defaults),
        render_template_as_native_obj=True, tags=["hbase", "migration", *(tags or [])],
        doc_md=doc_md or MIGRATION_DOC,
        default_args={"retries": 0}, **dag_callbacks(),
    ) as dag:
        both = {"source_conn_id": spec("source_conn_id"), "target_conn_id": spec("target_conn_id")}
        pool = pools(defaults)
        loads = {"pool": pool["cluster_pool"]}
        peer = {"peer_id": spec("peer_id")}
        # Every step is idempotent, so a lost worker or a database restart costs a retry, not the run; bad
        # input and failed checks fail at once (AirflowFailException skips the retries).
        safe_retry = {"retries": 2, "retry_delay": retry_delay(30)}

        @task(task_id=_OPEN_TASK, **safe_retry)
        def open_run(**context) -> list[dict[str, Any]]:
            from hbase_migration.operators.steps import bad_input_fails_at_once
            from hbase_migration.operators.steps import open_run as _open

            with bad_input_fails_at_once():
                check_pools(context["params"], pool)
                return _publish(context, _open(context["params"], context["run_id"], context["dag"].dag_id, plan))

        run = open_run()
        preflight = PreflightOperator(
            task_id="preflight", doc_md=_doc(PreflightOperator), **both, **peer, tables=spec("tables"),
            create_missing=spec("create_missing_tables"), expected_copy_s=spec("expected_copy_s"),
            quota_mark=spec("quota_mark"), codec_map=spec("codec_map"), target_coprocessors=spec("target_coprocessors"),
            allow_target_data=spec("allow_target_data"), serial=spec("serial"), bandwidth=spec("bandwidth"),
            sizing=spec("sizing"), copy_tasks=spec("copy_tasks"), sample_timeout_s=spec("sample_timeout_s"),
            rows_per_s=spec("rows_per_s"), quota_policy=spec("quota_policy"), start_time_ms=spec("start_time_ms"),
            end_time_ms=spec("end_time_ms"), versions=spec("versions"), ledger_run_id="{{ run_id }}",
            initial_copy=spec("initial_copy"), snapshot_threshold_bytes=spec("snapshot_threshold_bytes"),
            same_master_key=spec("same_master_key"), bulk_loads=spec("bulk_loads"), **loads, **safe_retry)

        # The tables of each copy task, as preflight decided them (Airflow maps only over a task's return value).
        @task(task_id="scan_tables", **safe_retry)
        def scan_tables(**context) -> list[dict[str, Any]]:
            from hbase_migration.operators.steps import plan_copies

            return plan_copies(context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec"), context["run_id"])["scan"]

        @task(task_id="snapshot_tables", **safe_retry)
        def snapshot_tables(**context) -> list[dict[str, Any]]:
            from hbase_migration.operators.steps import plan_copies

            return plan_copies(context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec"),
                               context["run_id"])["snapshot"]

        scans, snapshots = scan_tables(), snapshot_tables()
        create_tables = CreateTargetTablesOperator(
            task_id="create_target_tables", doc_md=_doc(CreateTargetTablesOperator), **both,
            tables=spec("tables"), dry_run=spec("dry_run"), codec_map=spec("codec_map"),
            target_coprocessors=spec("target_coprocessors"), clone_tables=snapshots, **loads, **safe_retry)

        @task(task_id="plan_batches", **safe_retry)
        def plan_batches(**context) -> list[dict[str, Any]]:
            from hbase_migration.operators.steps import bad_input_fails_at_once
            from hbase_migration.operators.steps import plan_batches as _plan

            with bad_input_fails_at_once():
                return _plan(context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec"), context["run_id"])

        @task.short_circuit(task_id="proceed_unless_dry_run")
        def proceed(**context) -> bool:
            return not context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec")["dry_run"]

        planned, go = plan_batches(), proceed()
        batch = _batch_group(both, spec_retry=safe_retry, spark_conn_id=spark_conn_id, pools=pool).expand_kwargs(
            planned)
        release = _release_switches_task(pool["cluster_pool"])

        @task(task_id="report")
        def report(**context) -> dict[str, Any]:
            from hbase_migration.operators.steps import report as _report

            return _report(context["run_id"])

        # Once every step has ended (a failed batch leaves the others going: what they left is part of the
        # verdict), and only when one failed. Retried like the steps: reading (and with `enable_peer` enabling)
        # the peers is idempotent, and the source that failed the run may still be out of reach for a moment.
        @task(task_id="state_left_behind", trigger_rule=TriggerRule.ALL_DONE, **loads, **safe_retry)
        def on_failure(**context) -> dict[str, Any]:
            from airflow.sdk.exceptions import AirflowSkipException

            from hbase_migration.operators.steps import state_left_behind

            ti = context["ti"]
            states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[ti.run_id]).get(ti.run_id, {})
            failed = sorted(k for k, v in states.items() if str(getattr(v, "value", v)) == "failed")
            if not failed:
                raise AirflowSkipException("no step failed")
            return state_left_behind(ti.xcom_pull(task_ids=_OPEN_TASK, key="spec"), context["run_id"], failed)

        done = report()
        run >> preflight >> [scans, snapshots] >> create_tables >> planned >> go >> batch >> done
        batch >> release
        [run, preflight, scans, snapshots, create_tables, planned, batch, release] >> on_failure()
    return dag


def _batch_group(both: Mapping[str, Any], *, spec_retry: Mapping[str, Any], spark_conn_id: str,
                 pools: Mapping[str, str]) -> Any:
    """One batch of the run's tables (mapped over `plan_batches`): its turn, its own peer added DISABLED, its copies
    (one Spark application for its scan tables, one per snapshot table), its slot and switch hold given up once the
    copies ended in any state, its peer enabled as soon as its tables are on the target, its own catch-up and, beside
    it, its grants, quotas and RS groups given to the target (`metadata`), its verification (one application). A
    batch that fails leaves the others going (each instance of the group depends only on itself)."""
    from airflow.sdk import task_group

    from hbase_migration.operators.batch import (
        BatchTurnSensor,
        HBaseCopyBatchOperator,
        HBaseSnapshotExportBatchOperator,
        HBaseVerifyBatchOperator,
    )
    from hbase_migration.operators.steps import BATCH_GROUP

    @task_group(group_id=BATCH_GROUP, tooltip="one batch of tables, its own peer")
    def batch(batch: str, peer_id: str, tables: list[str], scan_tables: list[str], snapshot_tables: list[str],
              ledger_tables: list[str] | None) -> None:
        spark, loads = {"pool": pools["spark_pool"]}, {"pool": pools["cluster_pool"]}
        turn = BatchTurnSensor(task_id="wait_turn", doc_md=_doc(BatchTurnSensor), batch=batch,
                               limit=spec("batches_at_once"), ledger_run_id="{{ run_id }}", **spec_retry)
        add_peer = AddPeerOperator(
            task_id="add_peer", doc_md=_doc(AddPeerOperator), **both, peer_id=peer_id, tables=tables,
            serial=spec("serial"), bandwidth=spec("bandwidth"), ledger_run_id="{{ run_id }}", ledger_batch=batch,
            **loads, **spec_retry)
        # Re-running a copy re-writes the same cells with the same timestamps; finished partitions are skipped.
        copy = HBaseCopyBatchOperator(
            task_id="copy", doc_md=_doc(HBaseCopyBatchOperator), **both, peer_id=peer_id, tables=scan_tables,
            batch=batch, start_time_ms=spec("start_time_ms"), end_time_ms=spec("end_time_ms"),
            versions=spec("versions"), quota_policy=spec("quota_policy"), quota_mark=spec("quota_mark"),
            rows_per_s=spec("rows_per_s"), max_load=spec("max_load"), critical_load=spec("critical_load"),
            max_pause_s=spec("max_pause_s"), hold_switches=spec("hold_switches"), ledger_run_id="{{ run_id }}",
            spark_conn_id=spark_conn_id, retries=2, retry_delay=retry_delay(60), **spark)
        # A retry resumes: files finished (recorded, or on the target with their length and checksum) are skipped.
        snapshot = HBaseSnapshotExportBatchOperator(
            task_id="snapshot_export", doc_md=_doc(HBaseSnapshotExportBatchOperator), **both, peer_id=peer_id,
            tables=snapshot_tables, batch=batch, quota_policy=spec("quota_policy"), quota_mark=spec("quota_mark"),
            task_bytes_per_s=spec("snapshot_task_bytes_per_s"), bytes_per_s=spec("snapshot_bytes_per_s"),
            max_load=spec("max_load"), critical_load=spec("critical_load"), max_pause_s=spec("max_pause_s"),
            same_master_key=spec("same_master_key"), ledger_run_id="{{ run_id }}", spark_conn_id=spark_conn_id,
            retries=2, retry_delay=retry_delay(60), **spark)

        @task(task_id="copies_done", trigger_rule=TriggerRule.ALL_DONE, retries=2, retry_delay=retry_delay(30),
              **loads)
        def copies_done(batch: str, **context) -> dict[str, Any]:
            from hbase_migration.operators.steps import batch_copies_done

            return batch_copies_done(context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec"), context["run_id"],
                                     batch)

        # The batch's grants, quotas and RS groups on the target (run spec `metadata`), once its tables exist there
        # (created, or cloned by the snapshot export), beside the catch-up and before the verification.
        # The tasks below keep ALL_SUCCESS: Airflow 3.3 evaluates a task of a mapped group that has not expanded yet
        # against every batch's upstream instances when its rule can pass on a subset (NONE_FAILED_MIN_ONE_SUCCESS
        # and the like), so one batch's failed copy would fail every batch's metadata and enable_peer; ALL_SUCCESS
        # is evaluated per batch. A copy task with no table of its batch succeeds doing nothing (operators/batch.py).
        @task(task_id="metadata", **loads, **spec_retry)
        def apply_metadata(batch: str, tables: list[str], **context) -> dict[str, Any]:
            from hbase_migration.operators.steps import batch_metadata

            return batch_metadata(context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec"), context["run_id"],
                                  batch, tables)

        enable = EnablePeerOperator(task_id="enable_peer", doc_md=_doc(EnablePeerOperator), **both, peer_id=peer_id,
                                    ledger_run_id="{{ run_id }}", **loads, **spec_retry)
        drained = ReplicationDrainedSensor(
            task_id="wait_drained", doc_md=_doc(ReplicationDrainedSensor), **both, peer_id=peer_id,
            max_lag_ms=spec("max_lag_ms"), stable_samples=spec("stable_samples"),
            caught_up_queue_size=spec("caught_up_queue_size"),
            canary_table=_SPEC + "{{ s.tables[0] | tojson if s.canary else None }}",
            deferrable=True, poke_interval=5, timeout=timedelta(hours=12), ledger_run_id="{{ run_id }}",
            ledger_tables=ledger_tables, **spec_retry)  # a lost worker (chaos seed 12) costs a retry
        verify = HBaseVerifyBatchOperator(
            task_id="verify", doc_md=_doc(HBaseVerifyBatchOperator), **both, tables=tables, batch=batch,
            start_time_ms=spec("start_time_ms"), end_time_ms=spec("end_time_ms"), versions=spec("versions"),
            recompare_sleep_s=spec("recompare_sleep_s"), repair=spec("repair"), ledger_run_id="{{ run_id }}",
            spark_conn_id=spark_conn_id, retries=1, retry_delay=retry_delay(60), **verify_method_args(), **spark)
        meta = apply_metadata(batch, tables)
        turn >> add_peer >> [copy, snapshot] >> enable >> drained >> verify
        [copy, snapshot] >> meta >> verify
        [copy, snapshot] >> copies_done(batch)

    return batch


BACKFILL_DOC = """
### Copy a time window of HBase tables (backfill)

Copies the cells whose timestamps fall in a window `[start, end)`, then verifies that window. The window is
the run's data interval (so `airflow backfill create --dag-id hbase_backfill --from-date ... --to-date ...`
copies one interval per run), or `start_time_ms`/`end_time_ms` from the trigger form when given. No peer is
touched. Finished partitions are recorded per run: clearing a failed copy resumes it.
"""


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
        dag_id=dag_id, schedule=schedule, catchup=False, max_active_runs=2, params=form_params(BACKFILL),
        start_date=start_date or pendulum.datetime(1970, 1, 1, tz="UTC"), render_template_as_native_obj=True,
        tags=["hbase", "backfill"], doc_md=BACKFILL_DOC, default_args={"retries": 0}, **dag_callbacks(),
    ) as dag:
        both = {"source_conn_id": spec("source_conn_id"), "target_conn_id": spec("target_conn_id")}
        pool = pools()
        window_args = {"start_time_ms": spec("start_time_ms"), "end_time_ms": spec("end_time_ms"),
                       "versions": spec("versions")}

        @task(task_id=_OPEN_TASK, retries=2, retry_delay=retry_delay(30))
        def open_window(**context) -> list[dict[str, Any]]:
            from hbase_migration.operators.steps import bad_input_fails_at_once
            from hbase_migration.operators.steps import open_window as _open

            with bad_input_fails_at_once():
                return _publish(context, _open(context["params"], context["run_id"], context["dag"].dag_id,
                                               context.get("data_interval_start"), context.get("data_interval_end")))

        window = open_window()
        copy = HBaseCopyTableOperator.partial(
            task_id="copy", doc_md=_doc(HBaseCopyTableOperator), **both, **window_args,
            rows_per_s=spec("rows_per_s"), max_load=spec("max_load"), critical_load=spec("critical_load"),
            max_pause_s=spec("max_pause_s"), hold_switches=spec("hold_switches"), ledger_run_id="{{ run_id }}",
            spark_conn_id=spark_conn_id, map_index_template="{{ task.table }}", retries=2,
            retry_delay=retry_delay(60), pool=pool["spark_pool"],
        ).expand_kwargs(window)
        copy >> _release_switches_task(pool["cluster_pool"])

        @task.short_circuit(task_id="verify_requested", ignore_downstream_trigger_rules=False)
        def verify_requested(**context) -> bool:
            return bool(context["ti"].xcom_pull(task_ids=_OPEN_TASK, key="spec")["verify"])

        verify = HBaseVerifyTableOperator.partial(
            task_id="verify", doc_md=_doc(HBaseVerifyTableOperator), **both, **window_args,
            recompare_sleep_s=spec("recompare_sleep_s"), repair=spec("repair"), ledger_run_id="{{ run_id }}",
            spark_conn_id=spark_conn_id, map_index_template="{{ task.table }}", retries=1, pool=pool["spark_pool"],
            **verify_method_args(),
        ).expand_kwargs(window)

        @task(task_id="report", trigger_rule=TriggerRule.NONE_FAILED)
        def report(**context) -> dict[str, Any]:
            from hbase_migration.operators.steps import report as _report

            return _report(context["run_id"])

        window >> copy >> verify_requested() >> verify >> report()
    return dag


WATCH_DOC = """Every 10 minutes, the replication health of each configured source cluster: its peers and how long a
disabled one has pinned WALs, lag per peer, oldWALs usage against its quota and the projected time to exhaustion.
A task fails (so Airflow alerts) when a threshold is crossed; every sample goes to the run ledger."""


def build_watch_dag(dag_id: str = "hbase_replication_watch", *, schedule: Any = timedelta(minutes=10)) -> DAG:
    """The scheduled replication watch: one mapped task per cluster on the trigger form (or its defaults)."""
    import pendulum

    from hbase_migration.migration.runspec import WATCH

    with DAG(dag_id=dag_id, schedule=schedule, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"), catchup=False,
             max_active_runs=1, tags=["hbase", "replication", "watch"], doc_md=WATCH_DOC,
             params=form_params(WATCH)) as dag:

        @task(task_id="clusters")
        def clusters(**context) -> list[str]:
            from hbase_migration.migration.runspec import RunSpec

            return list(RunSpec.validate(context["params"], WATCH).clusters)

        @task(task_id="check_cluster", retries=1, retry_delay=retry_delay(30), map_index_template="{{ conn_id }}")
        def check_cluster(conn_id: str, **context) -> dict:
            from hbase_migration.operators.watch import check_cluster_health

            context["conn_id"] = conn_id  # labels the mapped task in the UI (map_index_template)
            return check_cluster_health(conn_id, context["params"], context["run_id"], context["dag"].dag_id)

        check_cluster.expand(conn_id=clusters())
    return dag


def build_plan_dags(plans_dir: Any) -> dict[str, DAG]:
    """One migration DAG per plan file (`*.toml`) in `plans_dir`, by dag_id, for the DAG file's globals. Parsing is
    cheap (TOML files, no connection). A bad plan does not break the others: every valid plan still gets its DAG,
    and the invalid ones surface as one import error naming each file and field."""
    from hbase_migration.migration.plans import load_plans

    plans, errors = load_plans(plans_dir)
    dags = {plan.dag_id: build_migration_dag(plan.dag_id, schedule=plan.schedule, plan=plan.name,
                                             defaults=plan.params, spark_conn_id=plan.spark_conn_id, tags=["plan"],
                                             doc_md=None)
            for plan in plans}
    if errors:
        class _InvalidPlans(DAG):
            """Stands for the invalid plans: Airflow reports its validation error as the DAG file's import
            error, while the valid plans' DAGs load as usual."""

            def validate(self):
                raise ValueError("invalid migration plan(s): " + " | ".join(str(e) for e in errors))

        dags["invalid_plans"] = _InvalidPlans(dag_id="hbase_migration__invalid_plans", schedule=None)
    return dags
