"""DAG builders: the cut-over of a finished migration (`hbase_cutover`) and its rollback (`hbase_rollback`).

Structure only, as `operators.factory`: the trigger form comes from the run spec (`CUTOVER` / `ROLLBACK`
fields), the open task validates it and makes the plan from the ledger, every later task reads the validated
spec (`spec(...)`) and the plan (`plan()`) from its XComs. The approval is Airflow's own `ApprovalOperator`
(human in the loop): approved or rejected in the UI (the task's "Required actions") or through the REST API.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, TriggerRule, task

from hbase_migration.migration.runspec import CUTOVER, ROLLBACK
from operators.alerts import dag_callbacks
from operators.cutover import (
    AddReversePeerOperator,
    CutoverCheckOperator,
    FinalDrainSensor,
    RemoveReversePeerOperator,
    RetireForwardPeerOperator,
    RollbackCheckOperator,
    SetReadOnlyOperator,
)
from operators.factory import _OPEN_TASK, _SPEC, _doc, _publish, form_params, spec
from operators.spark import HBaseVerifyTableOperator

APPROVAL_TASK = {CUTOVER: "approve_clients_switched", ROLLBACK: "approve_clients_back"}
PLAN = "{{ ti.xcom_pull(task_ids='" + _OPEN_TASK + "', key='plan') }}"

CUTOVER_DOC = """
### Cut over the tables of a finished migration to the target

1. **open_run**: the migration run (`migration_run_id`) must be in the ledger, finished, with a clean latest
   verification for every table cut over (`only_tables`: a subset; empty: all). Records this cut-over as a run.
2. **check**: connections point at the run's clusters; the forward peer is ours, ENABLED, and drained; the
   reverse peer id is free on the target; the target's families replicate (scope 1). Changes nothing.
3. **freeze_source**: `alter 't', READONLY => 'true'` on the source; writes are refused from here on, reads go on.
4. **final_drain** (deferrable): every queue of the forward peer caught up and stable with writes stopped.
5. **final_verify** (mapped): every version compared, zero differences required.
6. **reverse_peer**: target -> source, ENABLED, after a WAL roll on the target.
7. **approve_clients_switched**: a person confirms the clients write to the target (UI or REST API). Reject:
   the cut-over is undone (source writable again, reverse peer removed), the clients stay on the source.
8. **retire_forward_peer**: removed (or narrowed to the tables not cut over).
9. **finish_source**: the source is unfrozen (`unfreeze_source`, default) so the reverse peer keeps it current
   for a rollback; off: it stays READONLY and the reverse backlog waits in the target's WALs.

A failure before the approval undoes the cut-over (`state_left_behind`); after it, nothing is undone and the
state of both sides is reported.
"""

ROLLBACK_DOC = """
### Roll a cut-over back to the source

1. **open_run**: the cut-over run (`cutover_run_id`) from the ledger: its tables, clusters and peers.
2. **check**: the reverse peer exists on the target, ours and ENABLED (without it a rollback would lose the
   writes made on the target since the cut-over: refused). Changes nothing.
3. **freeze_target**: READONLY on the target.
4. **unfreeze_source**: the source must accept the reverse peer's edits (a READONLY table refuses them).
5. **final_drain** (deferrable): the reverse peer's queues caught up with writes stopped.
6. **final_verify** (mapped): zero differences.
7. **approve_clients_back**: a person confirms the clients write to the source again. Reject: the target is
   unfrozen, the clients stay there, the reverse peer stays.
8. **remove_reverse_peer**. The target stays READONLY.
"""


def _failed_tasks(context: Any) -> list[str]:
    ti = context["ti"]
    states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[ti.run_id]).get(ti.run_id, {})
    return sorted(k for k, v in states.items() if str(getattr(v, "value", v)) == "failed")


def _build(kind: str, dag_id: str, spark_conn_id: str, approval_timeout: timedelta | None) -> DAG:
    cutover = kind == CUTOVER
    with DAG(
        dag_id=dag_id, schedule=None, catchup=False, max_active_runs=1, params=form_params(kind),
        render_template_as_native_obj=True, tags=["hbase", "cutover" if cutover else "rollback"],
        doc_md=CUTOVER_DOC if cutover else ROLLBACK_DOC, default_args={"retries": 0}, **dag_callbacks(),
    ) as dag:
        both = {"source_conn_id": spec("source_conn_id"), "target_conn_id": spec("target_conn_id")}
        run = {"ledger_run_id": "{{ run_id }}"}
        safe_retry = {"retries": 2, "retry_delay": timedelta(seconds=30)}

        @task(task_id=_OPEN_TASK)
        def open_run(**context) -> list[dict[str, Any]]:
            from operators import cutover_steps

            opener = cutover_steps.open_cutover if cutover else cutover_steps.open_rollback
            opened = opener(context["params"], context["run_id"], context["dag"].dag_id)
            context["ti"].xcom_push(key="plan", value=opened["plan"])
            return _publish(context, opened)

        opened = open_run()
        if cutover:
            check = CutoverCheckOperator(
                task_id="check", doc_md=_doc(CutoverCheckOperator), **both, plan=PLAN, **run,
                max_lag_ms=spec("max_lag_ms"), stable_samples=spec("stable_samples"),
                caught_up_queue_size=spec("caught_up_queue_size"), idle_window_s=spec("idle_window_s"))
            frozen_side, frozen_conn, drained_conn = "freeze_source", spec("source_conn_id"), spec("source_conn_id")
            drained_peer = spec("peer_id")
        else:
            check = RollbackCheckOperator(task_id="check", doc_md=_doc(RollbackCheckOperator), **both, plan=PLAN,
                                          **run)
            frozen_side, frozen_conn, drained_conn = "freeze_target", spec("target_conn_id"), spec("target_conn_id")
            drained_peer = spec("reverse_peer_id")
        freeze = SetReadOnlyOperator(task_id=frozen_side, doc_md=_doc(SetReadOnlyOperator), conn_id=frozen_conn,
                                     tables=spec("tables"), readonly=True, **run, **safe_retry)
        drain = FinalDrainSensor(
            task_id="final_drain", doc_md=_doc(FinalDrainSensor), source_conn_id=drained_conn,
            target_conn_id=spec("source_conn_id") if not cutover else spec("target_conn_id"), peer_id=drained_peer,
            max_lag_ms=spec("max_lag_ms"), stable_samples=spec("stable_samples"),
            caught_up_queue_size=spec("caught_up_queue_size"), idle_window_s=spec("idle_window_s"),
            deferrable=True, poke_interval=5, timeout=timedelta(hours=6), **run)
        verify = HBaseVerifyTableOperator.partial(
            task_id="final_verify", doc_md=_doc(HBaseVerifyTableOperator), **both,
            start_time_ms=spec("start_time_ms"), end_time_ms=spec("end_time_ms"), versions=spec("versions"),
            recompare_sleep_s=spec("recompare_sleep_s"), repair=False, spark_conn_id=spark_conn_id,
            map_index_template="{{ task.table }}", retries=1, retry_delay=timedelta(minutes=1), **run,
        ).expand_kwargs(opened)
        if cutover:
            subject = "Clients switched to the target?"
            body = (_SPEC + "Tables **{{ s.tables | join(', ') }}**: the source ({{ s.source_conn_id }}) is READONLY, "
                    "the forward peer {{ s.peer_id }} has drained, the final verification is clean and the reverse "
                    "peer {{ s.reverse_peer_id }} ({{ s.target_conn_id }} -> {{ s.source_conn_id }}) is ENABLED.\n\n"
                    "**Approve** once every client writes to the target: the forward peer is then retired"
                    "{{ ' and the source unfrozen (the reverse peer keeps it current for a rollback)' if "
                    "s.unfreeze_source else ' (the source stays READONLY)' }}.\n\n**Reject** to call the cut-over "
                    "off: the source is made writable again and the reverse peer removed; clients stay on the source.")
        else:
            subject = "Clients switched back to the source?"
            body = (_SPEC + "Tables **{{ s.tables | join(', ') }}**: the target ({{ s.target_conn_id }}) is READONLY, "
                    "the reverse peer {{ s.reverse_peer_id }} has drained, the final verification is clean and the "
                    "source ({{ s.source_conn_id }}) is writable.\n\n**Approve** once every client writes to the "
                    "source again: the reverse peer is then removed (the target stays READONLY).\n\n**Reject** to "
                    "call the rollback off: the target is made writable again; clients stay on the target.")
        approval = ApprovalOperator(
            task_id=APPROVAL_TASK[kind], subject=subject, body=body, response_timeout=approval_timeout,
            doc_md=f"{subject} Airflow's human-in-the-loop approval: answer in the UI (this task's Required actions) "
                   "or through the REST API (PATCH /api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/"
                   f"{APPROVAL_TASK[kind]}/-1/hitlDetails with {{\"chosen_options\": [\"Approve\"]}}).")
        answer = "{{ ti.xcom_pull(task_ids='" + APPROVAL_TASK[kind] + "') }}"
        if cutover:
            reverse = AddReversePeerOperator(task_id="reverse_peer", doc_md=_doc(AddReversePeerOperator), **both,
                                             plan=PLAN, **run, **safe_retry)
            after = RetireForwardPeerOperator(task_id="retire_forward_peer", doc_md=_doc(RetireForwardPeerOperator),
                                              source_conn_id=spec("source_conn_id"), plan=PLAN, approval=answer,
                                              **run, **safe_retry)
            finish = SetReadOnlyOperator(task_id="finish_source", doc_md=_doc(SetReadOnlyOperator),
                                         conn_id=spec("source_conn_id"), tables=spec("tables"), readonly=False,
                                         apply=spec("unfreeze_source"), **run, **safe_retry)
        else:
            unfreeze = SetReadOnlyOperator(task_id="unfreeze_source", doc_md=_doc(SetReadOnlyOperator),
                                           conn_id=spec("source_conn_id"), tables=spec("tables"), readonly=False,
                                           **run, **safe_retry)
            after = RemoveReversePeerOperator(task_id="remove_reverse_peer", doc_md=_doc(RemoveReversePeerOperator),
                                              target_conn_id=spec("target_conn_id"), plan=PLAN, approval=answer,
                                              **run, **safe_retry)

        @task(task_id="report", trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
        def report(**context) -> dict[str, Any]:
            from operators.cutover_steps import report as _report

            ti = context["ti"]
            return _report(context["run_id"], kind, ti.xcom_pull(task_ids=_OPEN_TASK, key="plan"),
                           ti.xcom_pull(task_ids=_OPEN_TASK, key="spec"))

        # A rejection skips the step after the approval (ApprovalOperator skips its direct downstream): only then
        # does every upstream of `rejected` end skipped. (A rejecting ApprovalOperator pushes no XCom: who answered
        # and when is in the approval task's HITL detail, UI or `GET .../hitlDetails`.)
        @task(task_id="rejected", trigger_rule=TriggerRule.ALL_SKIPPED)
        def rejected(**context) -> dict[str, Any]:
            from operators.cutover_steps import abort

            ti = context["ti"]
            s = ti.xcom_pull(task_ids=_OPEN_TASK, key="spec")
            return abort(context["run_id"], kind, ti.xcom_pull(task_ids=_OPEN_TASK, key="plan"), s["source_conn_id"],
                         s["target_conn_id"], f"rejected at {APPROVAL_TASK[kind]}")

        @task(task_id="state_left_behind", trigger_rule=TriggerRule.ONE_FAILED, **safe_retry)
        def on_failure(**context) -> dict[str, Any]:
            from operators.cutover_steps import state_left_behind

            ti = context["ti"]
            s = ti.xcom_pull(task_ids=_OPEN_TASK, key="spec") or {}
            answer = ti.xcom_pull(task_ids=APPROVAL_TASK[kind]) or {}
            return state_left_behind(context["run_id"], kind, ti.xcom_pull(task_ids=_OPEN_TASK, key="plan"),
                                     s.get("source_conn_id", ""), s.get("target_conn_id", ""), _failed_tasks(context),
                                     approved="Approve" in (answer.get("chosen_options") or []))

        done = report()
        if cutover:
            chain = [opened, check, freeze, drain, verify, reverse, approval, after, finish, done]
        else:
            chain = [opened, check, freeze, unfreeze, drain, verify, approval, after, done]
        for upstream, downstream in zip(chain, chain[1:]):
            upstream >> downstream
        after >> rejected()
        chain[:-1] >> on_failure()
    return dag


def build_cutover_dag(dag_id: str = "hbase_cutover", *, spark_conn_id: str = "spark_default",
                      approval_timeout: timedelta | None = None) -> DAG:
    """The cut-over DAG. `approval_timeout`: how long the approval waits (None: until a person answers; the
    source is READONLY meanwhile, so clients still on it cannot write)."""
    return _build(CUTOVER, dag_id, spark_conn_id, approval_timeout)


def build_rollback_dag(dag_id: str = "hbase_rollback", *, spark_conn_id: str = "spark_default",
                       approval_timeout: timedelta | None = None) -> DAG:
    """The rollback DAG (see `build_cutover_dag`)."""
    return _build(ROLLBACK, dag_id, spark_conn_id, approval_timeout)
