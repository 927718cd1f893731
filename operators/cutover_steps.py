"""Python callables of the cut-over and rollback DAGs' small tasks: open the run (validate the form, read the
migration or cut-over run from the ledger, make the plan), report it, undo a rejected switch, and say what a
failed one left behind.

Validation is the library's (`RunSpec.validate`, `hbase_migration.migration.cutover.plan_cutover` / `plan_rollback`):
these callables add what needs Airflow (connections, the ledger's location) and return the validated spec and
the plan, which every later task reads.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Mapping

from hbase_migration.migration.runspec import CUTOVER, ROLLBACK, RunSpec
from hbase_migration.operators.steps import _clusters

log = logging.getLogger(__name__)


def _summary(ledger: Any, run_id: str, what: str) -> dict[str, Any]:
    from hbase_migration.ledger.store import LedgerError
    from hbase_migration.migration.cutover import SwitchRefused

    try:
        return ledger.run_summary(run_id)
    except LedgerError:
        raise SwitchRefused(what, [f"run {run_id!r} is not in the run ledger: give the run id of an existing run "
                                   "(the dashboard or `airflow dags list-runs` shows them)"]) from None


def choose_freeze(spec: RunSpec, source: Any) -> tuple[str, str]:
    """The cut-over's freeze method and why: the run spec's, or for `auto` what the source's /conf shows
    (`freeze.default_freeze`)."""
    from hbase_migration.clusters.hbase_conf import ConfUnreadable, read_server_confs
    from hbase_migration.migration.freeze import default_freeze

    if spec.freeze_method != "auto":
        return spec.freeze_method, f"the run spec's freeze_method {spec.freeze_method}"
    try:
        return default_freeze(read_server_confs(source), spec.superusers)
    except ConfUnreadable as e:
        return default_freeze(None, spec.superusers, str(e))


def _open(kind: str, params: Mapping[str, Any], run_id: str, dag_id: str) -> dict[str, Any]:
    from hbase_migration.migration.cutover import plan_cutover, plan_rollback, target_fence_left
    from hbase_migration.operators.ledger import open_ledger

    spec = RunSpec.validate(params, kind)
    source, target = _clusters(spec)
    with open_ledger() as ledger:
        if kind == CUTOVER:
            summary = _summary(ledger, spec.migration_run_id, f"cut-over of run {spec.migration_run_id!r}")
            method, why = choose_freeze(spec, source)
            plan = plan_cutover(summary, spec.only_tables, spec.reverse_peer_id, method)
            # A rollback before this cut-over (the newest run of the forward peer) may have left the target fenced
            # by ACL: the window gives its WRITE back just before the switch.
            prior = ledger.latest_run_of_peer(str(source.cluster_key), plan.peer_id)
            lift, refence = target_fence_left(ledger.run_summary(prior["run_id"]) if prior else None)
            plan = dataclasses.replace(plan, freeze_reason=why, unfence_statements=lift, refence_statements=refence)
            if lift:
                log.info("the target is fenced by ACL since rollback %s: its WRITE is given back just before the "
                         "switch (%d statement(s))", prior["run_id"], len(lift))
        else:
            summary = _summary(ledger, spec.cutover_run_id, f"rollback of run {spec.cutover_run_id!r}")
            plan = plan_rollback(summary)
        spec = RunSpec.from_dict({**spec.to_dict(), "tables": list(plan.tables), "peer_id": plan.peer_id,
                                  "freeze_method": plan.freeze_method,
                                  "reverse_peer_id": plan.reverse_peer_id, "versions": plan.versions,
                                  "start_time_ms": plan.start_time_ms, "end_time_ms": plan.end_time_ms})
        # The peer the run is about, on the source: the forward one (a cut-over drains it, a rollback re-creates
        # it): the newest run of it says whether a rollback left the target fenced.
        peer = plan.peer_id
        ledger.start_run(run_id, dag_id, kind, source.cluster_key, target.cluster_key, peer, list(plan.tables),
                         {**spec.to_dict(), "switch_plan": plan.to_dict()})
    log.info("%s %s of run %s: tables %s, %s -> %s, forward peer %s, reverse peer %s; freeze %s: %s", kind, run_id,
             plan.from_run_id, ", ".join(plan.tables), source.cluster_key, target.cluster_key, plan.peer_id,
             plan.reverse_peer_id, plan.freeze_method,
             plan.freeze_reason if kind == CUTOVER else "the cut-over's, now on the target")
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
    from hbase_migration.operators.ledger import open_ledger

    with open_ledger() as ledger:
        ledger.set_phase(run_id, ALL_TABLES, "report", "success")  # replaces an earlier failure's verdict
        ledger.end_run(run_id, "success")
        summary = ledger.run_summary(run_id)
    tables = ", ".join(plan["tables"])
    if kind == CUTOVER:
        left = ("" if plan.get("freeze_method") == "acl" or spec.get("unfreeze_source") else
                " once the source is unfrozen (it was left READONLY: its backlog waits in the target's WALs)")
        log.info("cut-over %s done: clients write %s on the target; reverse peer %s keeps the source current%s%s. "
                 "Roll back with hbase_rollback (cutover_run_id=%s)", run_id, tables, plan["reverse_peer_id"], left,
                 "; the source stays fenced by ACL until a rollback gives WRITE back"
                 if plan.get("freeze_method") == "acl" else "", run_id)
    else:
        target = ("fenced by ACL" if plan.get("freeze_method") == "acl" else
                  "writable (unfrozen after the switch back)" if spec.get("unfreeze_source") else "READONLY")
        log.info("rollback %s done: clients write %s on the source again; the forward peer %s keeps the target "
                 "current (it stays %s); the reverse peer %s is removed. Cut over again with hbase_cutover "
                 "(migration_run_id=%s): no new migration", run_id, tables, plan["peer_id"], target,
                 plan["reverse_peer_id"], plan["migration_run_id"])
    return summary


def abort(run_id: str, kind: str, plan_dict: Mapping[str, Any], source_conn_id: str, target_conn_id: str,
          reason: str, changed: bool = True, keep_reverse_peer: bool = False) -> dict[str, Any]:
    """Undo a switch that was not approved (rejected), or failed before the switch: the clients stay where they
    are, so the side they write to is made writable again.

    Cut-over: nothing to undo when nothing was changed (`changed=False`: rejected at the plan's approval).
    Otherwise the source's fence is lifted (READONLY off; with an ACL freeze the window lifts its own fence) and
    the reverse peer (if this cut-over made it) removed, unless it holds writes clients made on the target early
    (`keep_reverse_peer`: left DISABLED, said so); the forward peer is untouched, the migration goes on as before.
    Rollback (the same with the roles swapped): nothing to undo when nothing was changed; otherwise the target is
    made writable again (READONLY; the window lifts its own ACL fence) and the forward peer the rollback
    re-created is removed unless it holds writes clients made on the source early (kept DISABLED, said so); the
    reverse peer stays: the cut-over's state, clients on the target."""
    from hbase_migration.migration.cutover import SwitchPlan, remove_reverse_peer, rollback_window_plan
    from hbase_migration.migration.cutover_plan import CUTOVER_ROLES, ROLLBACK_ROLES
    from hbase_migration.migration.freeze import set_readonly
    from hbase_migration.operators.cutover import note_peer, record_phase
    from hbase_migration.operators.hooks import HBaseClusterHook

    plan = SwitchPlan.from_dict(plan_dict)
    done: dict[str, Any] = {"reason": reason}
    roles = CUTOVER_ROLES if kind == CUTOVER else ROLLBACK_ROLES
    if not changed:
        log.warning("%s %s called off (%s) before anything changed: clients stay on the %s", roles.kind, run_id,
                    reason, roles.fenced)
    else:  # the window's sides: the cut-over's as they are, the rollback's swapped
        window_plan = plan if kind == CUTOVER else rollback_window_plan(plan)
        fenced_conn, joined_conn = ((source_conn_id, target_conn_id) if kind == CUTOVER
                                    else (target_conn_id, source_conn_id))
        joined = HBaseClusterHook(joined_conn).get_cluster()
        if plan.freeze_method == "readonly":
            done[roles.fenced] = set_readonly(HBaseClusterHook(fenced_conn).get_cluster(), plan.tables, False)
        kept = window_plan.reverse_peer_id
        if keep_reverse_peer:
            removed = {"outcome": "kept", "changed": False,
                       "message": f"{roles.kept} {kept} left DISABLED on the {roles.joined}: it holds writes clients "
                                  f"made on the {roles.joined} before the switch; enable it to ship them to the "
                                  f"{roles.fenced}, or remove it once they are dealt with"}
        else:
            removed = remove_reverse_peer(joined, window_plan)
        done[roles.kept.replace(" ", "_")] = removed
        if removed.get("changed"):
            note_peer(run_id, kept, "REMOVED", f"{roles.kind} undone: {reason}")
        log.warning("%s %s undone (%s): %s tables %s writable again, %s %s %s; the %s %s is as it was: clients stay "
                    "on the %s", roles.kind, run_id, reason, roles.fenced, ", ".join(plan.tables), roles.kept, kept,
                    removed["outcome"], roles.drained, window_plan.peer_id, roles.fenced)
    record_phase(run_id, "approval", "failed", done)
    from hbase_migration.operators.ledger import open_ledger

    with open_ledger() as ledger:
        ledger.end_run(run_id, "failed")
    return done


def cutover_progress(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Where a cut-over run got to, from its ledger phases (pure): whether anything was changed (the reverse peer
    or the window started), whether the clients were switched (phase `switch` succeeded), and how many early
    target writes the window saw (the reverse peer then holds them)."""
    import json

    phases = (summary.get("phases") or {}).get("*") or {}
    window = phases.get("window") or {}
    detail = window.get("detail")
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            detail = {}
    state = (detail or {}).get("state") or {}
    return {"changed": bool(phases.get("reverse_peer") or phases.get("forward_peer") or phases.get("unfreeze_source")
                            or window),
            "switched": (phases.get("switch") or {}).get("status") == "success",
            "early_target_writes": int(state.get("early_target_writes") or 0)}


def state_left_behind(run_id: str, kind: str, plan_dict: Mapping[str, Any] | None, source_conn_id: str,
                      target_conn_id: str, failed_tasks: list[str], approved: bool) -> dict[str, Any]:
    """After a failure. A cut-over whose clients were not switched yet (the ledger's `switch` phase) is undone
    (`abort`: the fence lifted, the reverse peer removed unless it holds early target writes); a rollback likewise
    with the roles swapped (the target writable again, the re-created forward peer removed unless it holds early
    source writes). After the switch nothing is undone: the state of both sides and both peers is read and said,
    with what to do. (`approved`: whether the plan was approved; kept for the log.)"""
    from hbase_migration.migration.cutover import SwitchPlan
    from hbase_migration.migration.freeze import readonly_states
    from hbase_migration.operators.hooks import HBaseClusterHook
    from hbase_migration.operators.ledger import open_ledger
    from hbase_migration.replication import peer_admin

    where = ", ".join(failed_tasks) or "unknown task"
    if not plan_dict:
        log.error("%s %s failed at %s before it was planned: nothing was changed on either cluster", kind, run_id,
                  where)
        return {"state": "NOT_STARTED", "failed_tasks": failed_tasks}
    plan = SwitchPlan.from_dict(plan_dict)
    again = (f"trigger hbase_cutover again (migration_run_id={plan.from_run_id})" if kind == CUTOVER
             else f"trigger hbase_rollback again (cutover_run_id={plan.from_run_id})")
    with open_ledger() as ledger:
        progress = cutover_progress(ledger.run_summary(run_id))
    moved = progress["switched"]
    if not moved:
        verdict = {**abort(run_id, kind, plan_dict, source_conn_id, target_conn_id, f"failed at {where}",
                           changed=progress.get("changed", True),
                           keep_reverse_peer=progress.get("early_target_writes", 0) > 0),
                   "failed_tasks": failed_tasks,
                   "advice": (f"the {kind} was undone before the clients moved: they stay on the "
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
    log.error("%s %s failed at %s after the clients moved: nothing is undone. State: %s. Clear the failed task to "
              "finish the %s%s", kind, run_id, where, state, kind,
              "; a difference after the switch: roll back with hbase_rollback (cutover_run_id=" + run_id + ")"
              if kind == CUTOVER else "; a difference after the switch back: the reverse peer is kept (it is "
              "removed only after a clean verification); cut over again once it is understood")
    state["advice"] = (f"the clients have moved: nothing was undone; clear the failed task(s) ({where}) of this run "
                       f"to finish the {kind}" + (f", or roll back (hbase_rollback, cutover_run_id={run_id}): the "
                                                  "reverse peer keeps the source current" if kind == CUTOVER else ""))
    _record_verdict(run_id, state)
    with open_ledger() as ledger:
        ledger.end_run(run_id, "failed")
    return state


def _record_verdict(run_id: str, verdict: Mapping[str, Any]) -> None:
    from hbase_migration.operators.ledger import open_ledger
    from hbase_migration.operators.steps import record_verdict

    with open_ledger() as ledger:
        record_verdict(ledger, run_id, verdict)
