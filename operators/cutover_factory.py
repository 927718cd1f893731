"""DAG builders: the cut-over of a finished migration (`hbase_cutover`) and its rollback (`hbase_rollback`).

Structure only, as `hbase_migration.operators.factory`: the trigger form comes from the run spec (`CUTOVER` / `ROLLBACK`
fields), the open task validates it and makes the plan from the ledger, every later task reads the validated
spec (`spec(...)`) and the plan (`plan()`) from its XComs. The approval is Airflow's own `ApprovalOperator`
(human in the loop): approved or rejected in the UI (the task's "Required actions") or through the REST API.
"""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, TriggerRule, task

from hbase_migration.migration.runspec import CUTOVER, ROLLBACK
from hbase_migration.operators.alerts import dag_callbacks
from hbase_migration.operators.cutover import (
    AddReversePeerOperator,
    CutoverCheckOperator,
    CutoverWindowOperator,
    RecreateForwardPeerOperator,
    RemoveReversePeerOperator,
    RetireForwardPeerOperator,
    RollbackCheckOperator,
    SetReadOnlyOperator,
)
from hbase_migration.operators.factory import (
    _OPEN_TASK,
    _SPEC,
    _doc,
    _publish,
    form_params,
    retry_delay,
    spec,
    verify_method_args,
)
from hbase_migration.operators.spark import HBaseVerifyTableOperator

log = logging.getLogger(__name__)

APPROVAL_TASK = {CUTOVER: "approve_cutover", ROLLBACK: "approve_rollback"}
PLAN = "{{ ti.xcom_pull(task_ids='" + _OPEN_TASK + "', key='plan') }}"
_ACL_NOTE = ("{% if s.freeze_method == 'acl' %}ACL fence: hbase.superuser as you attest it (/conf masks it): "
             "**{{ s.superusers | join(', ') if s.superusers is not none else 'not given (the fence is refused where "
             "/conf hides it)' }}**; left writing: **{{ s.freeze_exempt | join(', ') or 'nobody' }}**.\n\n"
             "{% endif %}")

CUTOVER_DOC = """
### Cut over the tables of a finished migration to the target, with a write freeze of seconds

Every slow step happens before writes stop (docs/cutover.md has the timeline and the measured figures):

1. **open_run**: the migration run (`migration_run_id`) must be in the ledger, finished, with a clean latest
   verification for every table cut over (`only_tables`: a subset; empty: all). Records this cut-over as a run.
2. **check**: connections point at the run's clusters; the forward peer is ours, ENABLED, and drained; the
   reverse peer id is free on the target; the target's families replicate (scope 1); synchronous replication only
   where the clusters have it (HBase 3.0+). Changes nothing.
3. **approve_cutover**: a person approves the plan: the tables, the freeze method, the switch command and the
   abort conditions (**approved** records who and when). Reject: nothing was changed. From here on no person is
   needed.
4. **pre_verify** (mapped): every version of every table, the clients still writing to the source.
5. **reverse_peer**: target -> source, **DISABLED**, after a WAL roll on the target: every target write from now on
   is kept (the forward peer's edits carry the source's cluster id and never loop back). A target write from
   before it is found by the verification or the bounded check and stops the cut-over, named.
6. **window** (one task): shell sessions opened, the lag gate, a live pass of the bounded check, then the write
   freeze: the fence (READONLY, or WRITE revoked by ACL), a WAL roll and the forward peer's drain, the bounded check
   of what changed since the verification, `switch_command`. After it: the source writable again (READONLY), the
   reverse peer ENABLED and its lag gate (caught up, or a warning). An abort condition lifts the fence and leaves
   the clients on the source.
7. **post_verify** (mapped): every version again, both sides live, the reverse peer keeping the source current:
   a difference fails here, with rollback (`hbase_rollback`) one step away.
8. **retire_forward_peer**: removed (or narrowed to the tables not cut over).

A failure before the switch is undone (`state_left_behind`: fence lifted, the reverse peer removed unless it holds
early target writes); after the switch nothing is undone and the state of both sides is reported.
"""

ROLLBACK_DOC = """
### Roll a cut-over back to the source, with a write freeze of seconds

The cut-over's window with the roles swapped (docs/cutover.md, "The rollback"):

1. **open_run**: the cut-over run (`cutover_run_id`) from the ledger: its tables, clusters, peers and freeze
   method (an ACL cut-over's record of the permissions it took away).
2. **check**: the reverse peer exists on the target, ours and ENABLED (without it a rollback would lose the
   writes made on the target since the cut-over: refused); the forward peer is gone from the source (or already
   the one this rollback re-creates). Changes nothing.
3. **approve_rollback**: a person approves the plan: the tables, the freeze method, the switch command back, the
   abort conditions. Reject: nothing was changed. From here on no person is needed.
4. **unfreeze_source**: a source left READONLY by its cut-over is made writable (it must accept the reverse peer's
   edits before they can drain); an ACL-fenced source keeps its fence until the switch.
5. **forward_peer**: source -> target, **DISABLED**, after a WAL roll on the source: every source write from now
   on is kept for the target.
6. **window** (one task): the lag gate on the reverse peer, a live pass of the bounded check, then the write
   freeze: the target fenced (READONLY, or WRITE revoked by ACL), a WAL roll and the reverse peer's drain, the
   bounded check of what changed since the cut-over's last verification, `switch_command` back. After it: an
   ACL-fenced source gets its WRITE back, a READONLY target is made writable (`unfreeze_source`; ACL: it stays
   fenced), the forward peer ENABLED and its lag gate: the target is current. An abort before the switch lifts
   the target's fence and leaves the clients on the target.
7. **final_verify** (mapped): every version, outside the freeze, both sides live.
8. **remove_reverse_peer**: the reverse peer removed (a later cut-over creates a fresh one after a WAL roll).

A later `hbase_cutover` of the same `migration_run_id` finds the forward peer again: no new migration.
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
        safe_retry = {"retries": 2, "retry_delay": retry_delay(30)}

        @task(task_id=_OPEN_TASK)
        def open_run(**context) -> list[dict[str, Any]]:
            from hbase_migration.operators import cutover_steps

            opener = cutover_steps.open_cutover if cutover else cutover_steps.open_rollback
            opened = opener(context["params"], context["run_id"], context["dag"].dag_id)
            context["ti"].xcom_push(key="plan", value=opened["plan"])
            return _publish(context, opened)

        opened = open_run()

        def verify_task(task_id: str, phase: str) -> Any:
            return HBaseVerifyTableOperator.partial(
                task_id=task_id, doc_md=_doc(HBaseVerifyTableOperator), **both,
                start_time_ms=spec("start_time_ms"), end_time_ms=spec("end_time_ms"), versions=spec("versions"),
                recompare_sleep_s=spec("recompare_sleep_s"), repair=False, spark_conn_id=spark_conn_id,
                map_index_template="{{ task.table }}", retries=1, retry_delay=retry_delay(60),
                ledger_phase=phase, **run, **verify_method_args(),
            ).expand_kwargs(opened)

        if cutover:
            check = CutoverCheckOperator(
                task_id="check", doc_md=_doc(CutoverCheckOperator), **both, plan=PLAN, **run,
                max_lag_ms=spec("max_lag_ms"), stable_samples=spec("stable_samples"),
                caught_up_queue_size=spec("caught_up_queue_size"), idle_window_s=spec("idle_window_s"),
                sync_replication=spec("sync_replication"), freeze_exempt=spec("freeze_exempt"),
                principal_map=spec("principal_map"))
            subject = "Cut over now?"
            body = (_SPEC + "Tables **{{ s.tables | join(', ') }}** from {{ s.source_conn_id }} to "
                    "{{ s.target_conn_id }} (forward peer {{ s.peer_id }}, reverse peer {{ s.reverse_peer_id }}).\n\n"
                    "**Approve** and the cut-over runs to its end without anyone: the reverse peer is created "
                    "DISABLED, every table is verified, then writes are frozen by **{{ s.freeze_method }}** "
                    "({{ ti.xcom_pull(task_ids='" + _OPEN_TASK + "', key='plan').freeze_reason }}) "
                    "just long enough to drain the forward peer and check what changed since the verification, "
                    "and the clients are switched by `{{ s.switch_command }}`.\n\n" + _ACL_NOTE +
                    "{% set bulk = ti.xcom_pull(task_ids='" + _OPEN_TASK + "', key='plan').bulk_loads %}"
                    "Bulk loads: {% if bulk == 'none' %}**none, as the migration run's operator attested**: the "
                    "source does not replicate bulk-loaded HFiles, so any made into these tables since the "
                    "migration's T0 would be missing on the target"
                    "{% elif bulk == 'replicated' %}replicated (the source's /conf showed it at preflight)"
                    "{% else %}**not recorded** (the migration run predates the check): make sure none was made "
                    "unless the source replicates them{% endif %}.\n\n"
                    "{% set m = (ti.xcom_pull(task_ids='check') or {}).get('metadata') %}"
                    "Grants, quotas and RS groups of these tables, the target against the source (every principal "
                    "the fence stops can write on the target: checked): {{ m.text if m else 'not compared' }}.\n\n"
                    "It stops by itself, the clients staying on the source, when: the forward peer's lag stays "
                    "above {{ s.max_lag_ms }} ms for {{ s.lag_wait_s }} s; a verification finds a difference; the "
                    "frozen steps take more than {{ s.max_freeze_s }} s; the switch command fails.\n\n"
                    "**Reject**: nothing is changed.")
        else:
            check = RollbackCheckOperator(task_id="check", doc_md=_doc(RollbackCheckOperator), **both, plan=PLAN,
                                          **run)
            subject = "Roll back now?"
            body = (_SPEC + "Tables **{{ s.tables | join(', ') }}** back from {{ s.target_conn_id }} to "
                    "{{ s.source_conn_id }} (reverse peer {{ s.reverse_peer_id }}; forward peer {{ s.peer_id }} "
                    "re-created).\n\n**Approve** and the rollback runs to its end without anyone: the forward peer "
                    "is re-created DISABLED (the source's writes from then on kept for the target), then writes to "
                    "the target are frozen by **{{ s.freeze_method }}** (the cut-over's method) just long enough to "
                    "drain the reverse peer and check what changed since the cut-over's verification, and the "
                    "clients are switched back by `{{ s.switch_command }}`; then the forward peer is enabled (the "
                    "target stays current{% if s.freeze_method == 'acl' %} and fenced by ACL{% elif "
                    "s.unfreeze_source %} and writable{% else %} and READONLY: its backlog waits{% endif %}) "
                    "and every table is verified.\n\n" + _ACL_NOTE +
                    "It stops by itself, the clients staying on the target, when: the reverse peer's lag stays "
                    "above {{ s.max_lag_ms }} ms for {{ s.lag_wait_s }} s; the bounded check finds a difference; the "
                    "frozen steps take more than {{ s.max_freeze_s }} s; the switch command fails.\n\n"
                    "**Reject**: nothing is changed.")
        approval = ApprovalOperator(
            task_id=APPROVAL_TASK[kind], subject=subject, body=body, response_timeout=approval_timeout,
            doc_md=f"{subject} Airflow's human-in-the-loop approval of the plan, before anything changes: answer "
                   "in the UI (this task's Required actions) or through the REST API (PATCH /api/v2/dags/{dag_id}/"
                   f"dagRuns/{{run_id}}/taskInstances/{APPROVAL_TASK[kind]}/-1/hitlDetails with "
                   "{\"chosen_options\": [\"Approve\"]}).")

        @task(task_id="approved")
        def approved(**context) -> dict[str, Any]:
            from hbase_migration.operators.cutover import record_approval

            answer = context["ti"].xcom_pull(task_ids=APPROVAL_TASK[kind])
            record_approval(context["run_id"], answer, log)
            return answer

        plan_approved = approved()
        window = CutoverWindowOperator(
            task_id="window", doc_md=_doc(CutoverWindowOperator), **both, plan=PLAN, **run, kind=kind,
            switch_command=spec("switch_command"), freeze_method=spec("freeze_method"),
            freeze_exempt=spec("freeze_exempt"), superusers=spec("superusers"),
            fence_canary=spec("fence_canary"), fence_canary_keytab=spec("fence_canary_keytab"),
            unfreeze_source=spec("unfreeze_source"),
            max_lag_ms=spec("max_lag_ms"), lag_wait_s=spec("lag_wait_s"), max_freeze_s=spec("max_freeze_s"),
            skew_margin_ms=spec("skew_margin_ms"), recompare_sleep_s=spec("recompare_sleep_s"),
            caught_up_queue_size=spec("caught_up_queue_size"), check_parallel=spec("check_parallel"))
        if cutover:
            pre_verify = verify_task("pre_verify", "verify")
            reverse = AddReversePeerOperator(task_id="reverse_peer", doc_md=_doc(AddReversePeerOperator), **both,
                                             plan=PLAN, enabled=False, **run, **safe_retry)
            post_verify = verify_task("post_verify", "post_verify")
            after = RetireForwardPeerOperator(task_id="retire_forward_peer", doc_md=_doc(RetireForwardPeerOperator),
                                              source_conn_id=spec("source_conn_id"), plan=PLAN, **run, **safe_retry)
            steps = [pre_verify, reverse, window, post_verify, after]
        else:
            # A source its cut-over left READONLY must take the reverse peer's edits before they can drain; an
            # ACL-fenced one keeps its fence until the switch back (the window gives WRITE back then).
            unfreeze = SetReadOnlyOperator(
                task_id="unfreeze_source", doc_md=_doc(SetReadOnlyOperator), conn_id=spec("source_conn_id"),
                tables=spec("tables"), readonly=False, ledger_phase="unfreeze_source", **run, **safe_retry,
                apply="{{ ti.xcom_pull(task_ids='" + _OPEN_TASK + "', key='plan').freeze_method == 'readonly' }}")
            forward = RecreateForwardPeerOperator(task_id="forward_peer", doc_md=_doc(RecreateForwardPeerOperator),
                                                  **both, plan=PLAN, **run, **safe_retry)
            final_verify = verify_task("final_verify", "verify")
            after = RemoveReversePeerOperator(task_id="remove_reverse_peer", doc_md=_doc(RemoveReversePeerOperator),
                                              target_conn_id=spec("target_conn_id"), plan=PLAN, **run, **safe_retry)
            steps = [unfreeze, forward, window, final_verify, after]

        @task(task_id="report", trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
        def report(**context) -> dict[str, Any]:
            from hbase_migration.operators.cutover_steps import report as _report

            ti = context["ti"]
            return _report(context["run_id"], kind, ti.xcom_pull(task_ids=_OPEN_TASK, key="plan"),
                           ti.xcom_pull(task_ids=_OPEN_TASK, key="spec"))

        # A rejection skips the step after the approval (ApprovalOperator skips its direct downstream): only then
        # does every upstream of `rejected` end skipped. (A rejecting ApprovalOperator pushes no XCom: who answered
        # and when is in the approval task's HITL detail, UI or `GET .../hitlDetails`.)
        @task(task_id="rejected", trigger_rule=TriggerRule.ALL_SKIPPED)
        def rejected(**context) -> dict[str, Any]:
            from hbase_migration.operators.cutover_steps import abort

            ti = context["ti"]
            s = ti.xcom_pull(task_ids=_OPEN_TASK, key="spec")
            return abort(context["run_id"], kind, ti.xcom_pull(task_ids=_OPEN_TASK, key="plan"), s["source_conn_id"],
                         s["target_conn_id"], f"rejected at {APPROVAL_TASK[kind]}", changed=False)

        @task(task_id="state_left_behind", trigger_rule=TriggerRule.ONE_FAILED, **safe_retry)
        def on_failure(**context) -> dict[str, Any]:
            from hbase_migration.operators.cutover_steps import state_left_behind

            ti = context["ti"]
            s = ti.xcom_pull(task_ids=_OPEN_TASK, key="spec") or {}
            answer = ti.xcom_pull(task_ids=APPROVAL_TASK[kind]) or {}
            return state_left_behind(context["run_id"], kind, ti.xcom_pull(task_ids=_OPEN_TASK, key="plan"),
                                     s.get("source_conn_id", ""), s.get("target_conn_id", ""), _failed_tasks(context),
                                     approved="Approve" in (answer.get("chosen_options") or []))

        done = report()
        chain = [opened, check, approval, plan_approved, *steps, done]
        for upstream, downstream in zip(chain, chain[1:]):
            upstream >> downstream
        plan_approved >> rejected()
        chain[:-1] >> on_failure()
    return dag


def build_cutover_dag(dag_id: str = "hbase_cutover", *, spark_conn_id: str = "spark_default",
                      approval_timeout: timedelta | None = None) -> DAG:
    """The cut-over DAG. `approval_timeout`: how long the approval of the plan waits (None: until a person answers;
    nothing has changed meanwhile)."""
    return _build(CUTOVER, dag_id, spark_conn_id, approval_timeout)


def build_rollback_dag(dag_id: str = "hbase_rollback", *, spark_conn_id: str = "spark_default",
                       approval_timeout: timedelta | None = None) -> DAG:
    """The rollback DAG (see `build_cutover_dag`)."""
    return _build(ROLLBACK, dag_id, spark_conn_id, approval_timeout)
