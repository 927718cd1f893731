"""Python callables of the cut-over and rollback DAGs' small tasks: open the run (validate the form, read the
migration or cut-over run from the ledger, make the plan), report it, undo a rejected switch, and say what a
failed one left behind.

Validation is the library's (`RunSpec.validate`, `hbase_migration.migration.cutover.plan_cutover` / `plan_rollback`):
these callables add what needs Airflow (connections, the ledger's location) and return the validated spec and
the plan, which every later task reads.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from hbase_migration.migration.runspec import CUTOVER, ROLLBACK, RunSpec
from operators.steps import _clusters

log = logging.getLogger(__name__)


def _summary(ledger: Any, run_id: str, what: str) -> dict[str, Any]:
    from hbase_migration.ledger.store import LedgerError
    from hbase_migration.migration.cutover import SwitchRefused

    try:
        return ledger.run_summary(run_id)
    except LedgerError:
        raise SwitchRefused(what, [f"run {run_id!r} is not in the run ledger: give the run id of an existing run "
                                   "(the dashboard or `airflow dags list-runs` shows them)"]) from None


def _open(kind: str, params: Mapping[str, Any], run_id: str, dag_id: str) -> dict[str, Any]:
    from hbase_migration.migration.cutover import plan_cutover, plan_rollback
    from operators.ledger import open_ledger

    spec = RunSpec.validate(params, kind)
    source, target = _clusters(spec)
    with open_ledger() as ledger:
        if kind == CUTOVER:
            summary = _summary(ledger, spec.migration_run_id, f"cut-over of run {spec.migration_run_id!r}")
            plan = plan_cutover(summary, spec.only_tables, spec.reverse_peer_id)
        else:
            summary = _summary(ledger, spec.cutover_run_id, f"rollback of run {spec.cutover_run_id!r}")
            plan = plan_rollback(summary)
        spec = RunSpec.from_dict({**spec.to_dict(), "tables": list(plan.tables), "peer_id": plan.peer_id,
                                  "reverse_peer_id": plan.reverse_peer_id, "versions": plan.versions,
                                  "start_time_ms": plan.start_time_ms, "end_time_ms": plan.end_time_ms})
        # The peer the run is about: the forward one for a cut-over, the reverse one (on the target) for a rollback.
        peer = plan.peer_id if kind == CUTOVER else plan.reverse_peer_id
        ledger.start_run(run_id, dag_id, kind, source.cluster_key, target.cluster_key, peer, list(plan.tables),
                         {**spec.to_dict(), "switch_plan": plan.to_dict()})
    log.info("%s %s of run %s: tables %s, %s -> %s, forward peer %s, reverse peer %s", kind, run_id,
             plan.from_run_id, ", ".join(plan.tables), source.cluster_key, target.cluster_key, plan.peer_id,
             plan.reverse_peer_id)
    return {"spec": spec.to_dict(), "copies": spec.copies(), "plan": plan.to_dict()}


def open_cutover(params: Mapping[str, Any], run_id: str, dag_id: str) -> dict[str, Any]:
    """Validate the form, read the migration run, plan the cut-over, record it as a run of its own."""
    return _open(CUTOVER, params, run_id, dag_id)


def open_rollback(params: Mapping[str, Any], run_id: str, dag_id: str) -> dict[str, Any]:
    """Validate the form, read the cut-over run, plan the rollback, record it as a run of its own."""
    return _open(ROLLBACK, params, run_id, dag_id)


def report(run_id: str, kind: str, plan: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """Close the run as a success and say where things stand."""
    from hbase_migration.ledger.store import ALL_TABLES
    from operators.ledger import open_ledger

    with open_ledger() as ledger:
        ledger.set_phase(run_id, ALL_TABLES, "report", "success")  # replaces an earlier failure's verdict
        ledger.end_run(run_id, "success")
        summary = ledger.run_summary(run_id)
    tables = ", ".join(plan["tables"])
    if kind == CUTOVER:
        log.info("cut-over %s done: clients write %s on the target; reverse peer %s keeps the source current%s. "
                 "Roll back with hbase_rollback (cutover_run_id=%s)", run_id, tables, plan["reverse_peer_id"],
                 "" if spec.get("unfreeze_source") else
                 " once the source is unfrozen (it was left READONLY: its backlog waits in the target's WALs)",
                 run_id)
    else:
        log.info("rollback %s done: clients write %s on the source again; the target stays READONLY and the "
                 "reverse peer %s is removed", run_id, tables, plan["reverse_peer_id"])
    return summary


def abort(run_id: str, kind: str, plan_dict: Mapping[str, Any], source_conn_id: str, target_conn_id: str,
          reason: str) -> dict[str, Any]:
    """Undo a switch that was not approved (rejected), or failed before the approval: the clients stay where they
    are, so the side they write to is made writable again.

    Cut-over: the source is unfrozen and the reverse peer (if this cut-over made it) removed; the forward peer is
    untouched, the migration goes on as before. Rollback: the target is unfrozen; the reverse peer stays (the
    cut-over's state)."""
    from hbase_migration.migration.cutover import SwitchPlan, remove_reverse_peer
    from hbase_migration.migration.freeze import set_readonly
    from operators.cutover import note_peer, record_phase
    from operators.hooks import HBaseClusterHook

    plan = SwitchPlan.from_dict(plan_dict)
    source = HBaseClusterHook(source_conn_id).get_cluster()
    target = HBaseClusterHook(target_conn_id).get_cluster()
    done: dict[str, Any] = {"reason": reason}
    if kind == CUTOVER:
        done["source"] = set_readonly(source, plan.tables, False)
        removed = remove_reverse_peer(target, plan)
        done["reverse_peer"] = removed
        if removed.get("changed"):
            note_peer(run_id, plan.reverse_peer_id, "REMOVED", f"cut-over undone: {reason}")
        log.warning("cut-over %s undone (%s): source tables %s writable again, reverse peer %s %s; the forward peer "
                    "%s is as it was: clients stay on the source", run_id, reason, ", ".join(plan.tables),
                    plan.reverse_peer_id, removed["outcome"], plan.peer_id)
    else:
        done["target"] = set_readonly(target, plan.tables, False)
        log.warning("rollback %s undone (%s): target tables %s writable again; the reverse peer %s stays: clients "
                    "stay on the target", run_id, reason, ", ".join(plan.tables), plan.reverse_peer_id)
    record_phase(run_id, "approval", "failed", done)
    from operators.ledger import open_ledger

    with open_ledger() as ledger:
        ledger.end_run(run_id, "failed")
    return done


def state_left_behind(run_id: str, kind: str, plan_dict: Mapping[str, Any] | None, source_conn_id: str,
                      target_conn_id: str, failed_tasks: list[str], approved: bool) -> dict[str, Any]:
    """After a failure. Before the approval the clients are still on the side they started from, which may be
    frozen: the switch is undone (`abort`), so they can write again. After it (clients moved), nothing is undone:
    the state of both sides and both peers is read and said, with what to do."""
    from hbase_migration.migration.cutover import SwitchPlan
    from hbase_migration.migration.freeze import readonly_states
    from hbase_migration.replication import peer_admin
    from operators.hooks import HBaseClusterHook
    from operators.ledger import open_ledger

    where = ", ".join(failed_tasks) or "unknown task"
    if not plan_dict:
        log.error("%s %s failed at %s before it was planned: nothing was changed on either cluster", kind, run_id,
                  where)
        return {"state": "NOT_STARTED", "failed_tasks": failed_tasks}
    plan = SwitchPlan.from_dict(plan_dict)
    again = (f"trigger hbase_cutover again (migration_run_id={plan.from_run_id})" if kind == CUTOVER
             else f"trigger hbase_rollback again (cutover_run_id={plan.from_run_id})")
    if not approved:
        verdict = {**abort(run_id, kind, plan_dict, source_conn_id, target_conn_id, f"failed at {where}"),
                   "failed_tasks": failed_tasks,
                   "advice": (f"the {kind} was undone before the approval: the clients stay on the "
                              f"{'source' if kind == CUTOVER else 'target'}, which is writable again; fix the cause "
                              f"(the failed task's log) and {again}")}
        _record_verdict(run_id, verdict)
        return verdict
    source = HBaseClusterHook(source_conn_id).get_cluster()
    target = HBaseClusterHook(target_conn_id).get_cluster()
    with peer_admin(source) as admin:
        forward = admin.get_peer(plan.peer_id)
    with peer_admin(target) as admin:
        reverse = admin.get_peer(plan.reverse_peer_id)
    state = {
        "failed_tasks": failed_tasks,
        "source_readonly": readonly_states(source, plan.tables),
        "target_readonly": readonly_states(target, plan.tables),
        "forward_peer": forward.state if forward else "ABSENT",
        "reverse_peer": reverse.state if reverse else "ABSENT",
    }
    log.error("%s %s failed at %s after the approval (clients have switched): nothing is undone. State: %s. Clear "
              "the failed task to finish the %s", kind, run_id, where, state, kind)
    state["advice"] = (f"the clients have switched (approved): nothing was undone; clear the failed task(s) "
                       f"({where}) of this run to finish the {kind}")
    _record_verdict(run_id, state)
    with open_ledger() as ledger:
        ledger.end_run(run_id, "failed")
    return state


def _record_verdict(run_id: str, verdict: Mapping[str, Any]) -> None:
    from operators.ledger import open_ledger
    from operators.steps import record_verdict

    with open_ledger() as ledger:
        record_verdict(ledger, run_id, verdict)
