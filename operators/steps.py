"""Python callables of the migration DAGs' small tasks: validate the run's inputs and open it in the ledger,
report it, and make the state left behind by a failed run explicit.

Validation is the library's run spec (`RunSpec.validate`): these callables add only what needs Airflow (the
connections, the data interval) and return the validated spec, which every later task reads.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator, Mapping

from hbase_migration.migration.runspec import BACKFILL, MIGRATION, InvalidRunInput, RunSpec
from hbase_migration.operators.hooks import HBaseClusterHook

log = logging.getLogger(__name__)
BATCH_GROUP = "batch"  # the migration DAG's task group of a batch (operators/factory.py)


@contextlib.contextmanager
def bad_input_fails_at_once() -> Iterator[None]:
    """A run's bad input (a parameter, a connection that does not describe a cluster, the same cluster twice)
    fails the task without a retry: retrying cannot fix it. Anything else (a worker lost, the ledger's
    database restarting) is left to the task's retries."""
    from airflow.sdk.exceptions import AirflowFailException

    from hbase_migration.clusters.cluster import ClusterConfigError

    try:
        yield
    except (InvalidRunInput, ClusterConfigError) as e:
        raise AirflowFailException(str(e)) from e


def _clusters(spec: RunSpec) -> tuple[Any, Any]:
    """Both clusters from their connections (validated there), refused when they are the same cluster."""
    from hbase_migration.migration.preflight import ensure_distinct

    source = HBaseClusterHook(spec.source_conn_id).get_cluster()
    target = HBaseClusterHook(spec.target_conn_id).get_cluster()
    ensure_distinct(source, target)
    return source, target


def _opened(spec: RunSpec) -> dict[str, Any]:
    """What the open task returns: the spec (read by every task) and what the mapped copy/verify expand over."""
    return {"spec": spec.to_dict(), "copies": spec.copies()}


def open_run(params: Mapping[str, Any], run_id: str, dag_id: str, plan: str) -> dict[str, Any]:
    """Validate the inputs, record the run in the ledger, return the spec."""
    from hbase_migration.operators.ledger import open_ledger

    spec = RunSpec.validate(params, MIGRATION)
    source, target = _clusters(spec)
    with open_ledger() as ledger:
        ledger.start_run(run_id, dag_id, plan, source.cluster_key, target.cluster_key, spec.peer_id,
                         list(spec.tables), spec.to_dict())
    log.info("run %s: %s -> %s, tables %s, peer %s, window [%s, %s)", run_id, source.cluster_key,
             target.cluster_key, ", ".join(spec.tables), spec.peer_id, spec.start_time_ms, spec.end_time_ms)
    return _opened(spec)


def plan_copies(spec_dict: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """The tables each copy task maps over, as preflight decided them (`initial_copies` in the ledger; a table
    without a decision takes the scan): `scan` and `snapshot` ([{table}], the mapped tasks' kwargs) and their
    names (`scan_tables`, `snapshot_tables`)."""
    from hbase_migration.migration.initial_copy import Decision, lists
    from hbase_migration.operators.ledger import open_ledger

    spec = RunSpec.from_dict(spec_dict)
    with open_ledger() as ledger:
        recorded = ledger.initial_copies(run_id)
    decisions = {t: Decision(t, recorded[t]["method"], recorded[t]["reason"]) if t in recorded
                 else Decision(t, "scan", "no decision recorded: the scan copy") for t in spec.tables}
    for table, d in decisions.items():
        log.info("initial copy of %s: %s (%s)", table, d.method, d.reason)
    return lists(decisions, spec.tables)


def plan_batches(spec_dict: Mapping[str, Any], run_id: str) -> list[dict[str, Any]]:
    """The run's batches (`hbase_migration.migration.batches`), planned once and kept in the ledger: what the
    batch task group maps over, one dict of its arguments per batch (its peer, its tables, which of them go by
    scan and by snapshot, and the tables its catch-up is recorded under: None for a run of one batch, whose
    catch-up is the run's)."""
    from hbase_migration.migration import batches
    from hbase_migration.operators.ledger import open_ledger

    spec = RunSpec.from_dict(spec_dict)
    snapshot = set(plan_copies(spec_dict, run_id)["snapshot_tables"])
    with open_ledger() as ledger:
        kept = ledger.run_batches(run_id)
        if not kept:
            sizes = batches.sizes_from_sizing(ledger.run_sizings(run_id))
            try:
                planned = batches.plan(spec.tables, spec.peer_id, sizes=sizes, listed=spec.batches,
                                       max_tables=spec.batch_max_tables, max_bytes=spec.batch_max_bytes)
            except ValueError as e:  # a batch's peer id past HBase's 64 characters
                raise InvalidRunInput("peer_id", f"{e}: give a shorter peer id for a run of several batches") from e
            kept = ledger.record_batches(run_id, [b.to_dict() for b in planned])
    several = len(kept) > 1
    log.info("run %s: %d batch(es), %d copying side by side at most", run_id, len(kept), spec.batches_at_once)
    out = []
    for b in kept:
        log.info("batch %s: peer %s, %d table(s), %s: %s", b["batch"], b["peer_id"], len(b["tables"]),
                 f"{b['bytes']} bytes of store files" if b["bytes"] else "not sized", ", ".join(b["tables"]))
        out.append({"batch": b["batch"], "peer_id": b["peer_id"], "tables": b["tables"],
                    "scan_tables": [t for t in b["tables"] if t not in snapshot],
                    "snapshot_tables": [t for t in b["tables"] if t in snapshot],
                    "ledger_tables": b["tables"] if several else None})
    return out


def batch_copies_done(spec_dict: Mapping[str, Any] | None, run_id: str, batch: str) -> dict[str, Any]:
    """Once a batch's copies have ended, in any state: its slot is given to the next batch, and the switch hold
    its copy left (a copy killed without a retry cannot release its own) is released."""
    from hbase_migration.data.switches import holder_name, release, source_key
    from hbase_migration.operators.ledger import open_ledger

    if not spec_dict:
        return {"batch": batch, "released": []}
    spec = RunSpec.from_dict(spec_dict)
    released = []
    with open_ledger() as ledger:
        ledger.release_batch_slot(run_id, batch)
        if spec.hold_switches:
            source = HBaseClusterHook(spec.source_conn_id).get_cluster()
            holder = holder_name(run_id, f"batch {batch}")
            if any(h["holder"] == holder for h in ledger.switch_holds(source_key(source))):
                released.append(release(source, ledger, holder, logger=log))
                log.warning("released the switch hold %r batch %s's copy left", holder, batch)
    log.info("batch %s: copies ended, its turn is given to the next batch", batch)
    return {"batch": batch, "released": released}


def snapshots_left(ledger: Any, run_id: str) -> list[dict[str, Any]]:
    """The run's snapshot exports that did not finish their clean-up: where their snapshots are (a failed run
    keeps them, and says so)."""
    run = ledger.find_run(run_id)
    if run is None:
        return []
    out = []
    for table, e in ledger.snapshot_exports(run["copy_id"]).items():
        if e["state"] == "cleaned":
            continue
        detail = e.get("detail") or {}
        out.append({"table": table, "snapshot": e["snapshot_name"], "state": e["state"],
                    "files_done": (e.get("files") or {}).get("files", 0), "files_total": e.get("files_total"),
                    "left": detail.get("left") or f"snapshot {e['snapshot_name']!r} on the source (state "
                                                   f"{e['state']}); re-run the snapshot_export task to resume"})
    return out


def _instant_ms(value: Any) -> int | None:
    if value is None:
        return None
    return int(value.timestamp() * 1000)


def open_window(params: Mapping[str, Any], run_id: str, dag_id: str, interval_start: Any,
                interval_end: Any) -> dict[str, Any]:
    """The backfill's window: the trigger form's bounds when given, else the run's data interval."""
    from hbase_migration.ledger.store import NO_PEER
    from hbase_migration.operators.ledger import open_ledger

    spec = RunSpec.validate(params, BACKFILL)
    start = _instant_ms(interval_start) if spec.start_time_ms is None else spec.start_time_ms
    end = _instant_ms(interval_end) if spec.end_time_ms is None else spec.end_time_ms
    if start is None or end is None:
        raise InvalidRunInput("start_time_ms", "no window: this run has no data interval; give start_time_ms "
                                               "and end_time_ms")
    spec = spec.with_window(start, end)
    source, target = _clusters(spec)
    with open_ledger() as ledger:
        ledger.start_run(run_id, dag_id, "backfill", source.cluster_key, target.cluster_key, NO_PEER,
                         list(spec.tables), spec.to_dict())
    log.info("backfill %s: tables %s, window [%s, %s) ms", run_id, ", ".join(spec.tables), start, end)
    return _opened(spec)


def report(run_id: str) -> dict[str, Any]:
    """Close the run as a success and log its figures (they are also on the dashboard)."""
    from hbase_migration.ledger.store import ALL_TABLES
    from hbase_migration.operators.ledger import open_ledger

    with open_ledger() as ledger:
        ledger.set_phase(run_id, ALL_TABLES, "report", "success")  # replaces an earlier failure's verdict
        ledger.end_run(run_id, "success")
        summary = ledger.run_summary(run_id)
    copy = summary.get("copy", {})
    log.info("run %s succeeded; copy totals %s", run_id, copy.get("total", copy))
    for table, results in (summary.get("verification") or {}).items():
        for v in results:
            log.info("verify %s [%s, %s): source %s rows, target %s rows, %s matching, clean=%s", table,
                     v.get("window_start_ms"), v.get("window_end_ms"), v.get("source_rows"), v.get("target_rows"),
                     v.get("matching"), v.get("clean"))
    peer = summary.get("peer") or {}
    log.info("peer %s is %s: it stays until a person cuts over (remove_peer is a separate step)",
             summary.get("run", {}).get("peer_id"), peer.get("state"))
    return summary


def peer_left(state: str, source_conn_id: str, peer_id: str | None) -> tuple[int, str]:
    """How loudly to report the peer a failed run left (log level) and what to do about it. Only a DISABLED
    peer is an error: it pins WALs until someone acts. An ENABLED one ships (a warning), none is news."""
    if state == "DISABLED":
        return logging.ERROR, (
            "it pins every WAL since T0 in oldWALs: clear the failed task(s) to resume (finished copy partitions "
            "are skipped), or enable it to stop oldWALs growth, or remove it to roll back "
            f"(python -m hbase_migration peer remove --source {source_conn_id} --peer-id {peer_id})")
    if state == "ENABLED":
        return logging.WARNING, "it ships edits to the target; clear the failed task(s) to resume"
    return logging.INFO, "no peer is left behind"


def state_left_behind(spec_dict: Mapping[str, Any] | None, run_id: str, failed_tasks: list[str]) -> dict[str, Any]:
    """After a failure: read the peer's real state, say it plainly, record it, apply the quota policy.

    Without a spec, `open_run` itself failed (bad input): nothing was changed on either cluster."""
    from hbase_migration.migration.quota import settle_after_failure
    from hbase_migration.operators.ledger import open_ledger

    where = ", ".join(failed_tasks) or "unknown task"
    if not spec_dict:
        log.error("run %s failed at %s before it started: nothing was changed on either cluster", run_id, where)
        return {"peer_id": None, "state": "NOT_STARTED", "advice": "fix the inputs and trigger again",
                "failed_tasks": failed_tasks}
    spec = RunSpec.from_dict(spec_dict)
    source = HBaseClusterHook(spec.source_conn_id).get_cluster()
    batches = _run_batches(run_id)
    failed_batches = set(batch_indexes_failed(failed_tasks))
    peers = [(b, b["peer_id"]) for b in batches] or [(None, spec.peer_id)]
    target = HBaseClusterHook(spec.target_conn_id).get_cluster()
    left = []
    for batch, peer_id in peers:  # each batch's peer: the quota policy applies to each one left disabled
        tables = batch["tables"] if batch else list(spec.tables)
        # enable_peer only once each table of the peer exists on the target (migration.enable_gate)
        state, action = settle_after_failure(source, peer_id, spec.quota_policy, spec.dry_run, target=target,
                                             tables=tables)
        level, advice = peer_left(state, spec.source_conn_id, peer_id)
        if state == "DISABLED" and action:  # the gate's refusal: a table of the peer is absent on the target
            advice = f"{action}; create (or clone) them on the target before enabling it. {advice}"
        log.log(level, "peer %s%s left %s: %s", peer_id, f" (batch {batch['batch']})" if batch else "", state, advice)
        left.append({"batch": batch["batch"] if batch else None, "peer_id": peer_id, "state": state,
                     "action": action, "advice": advice, "tables": tables,
                     "failed": batch is None or batch["index"] in failed_batches})
    worst = next((s for s in ("DISABLED", "ENABLED") if any(p["state"] == s for p in left)), left[0]["state"])
    peer_ids = ", ".join(p["peer_id"] for p in left if p["state"] == worst) or spec.peer_id
    level, advice = peer_left(worst, spec.source_conn_id, peer_ids if len(left) == 1 else "<peer>")
    verdict = {"peer_id": peer_ids, "state": worst, "advice": advice, "failed_tasks": failed_tasks}
    if batches:
        verdict["batches"] = left
        failed_names = [p["batch"] for p in left if p["failed"]]
        log.error("run %s: batch(es) %s failed; the other batches went on (their state above)", run_id,
                  ", ".join(failed_names) or "none")
    try:
        with open_ledger() as ledger:
            snapshots = snapshots_left(ledger, run_id)
            if snapshots:
                verdict["snapshots"] = snapshots
                for s in snapshots:
                    log.error("snapshot export of %s left behind (%s): %s", s["table"], s["state"], s["left"])
            for p in left:
                if p["state"] in ("ENABLED", "DISABLED"):
                    reason = f"run failed at {where}; peer {p['state']}" + (
                        "" if not p["action"] else f" (enabled by quota policy: {p['action']})"
                        if p["state"] == "ENABLED" else f" (quota policy enable_peer: {p['action']})")
                    ledger.peer_note(run_id, p["peer_id"], p["state"], reason)
            record_verdict(ledger, run_id, verdict)
            ledger.end_run(run_id, "failed")
    except Exception as e:  # the ledger is bookkeeping: the peer's state is already logged above
        log.warning("ledger not updated for run %s: %s", run_id, e)
    return verdict


def _run_batches(run_id: str) -> list[dict[str, Any]]:
    """The run's batches as the ledger keeps them ([] before they were planned, or when it cannot be read)."""
    from hbase_migration.operators.ledger import open_ledger

    try:
        with open_ledger() as ledger:
            return ledger.run_batches(run_id)
    except Exception as e:  # the peers are still read and reported (the run's own peer id)
        log.warning("the run's batches could not be read from the ledger: %s", e)
        return []


def batch_indexes_failed(failed_tasks: list[str]) -> list[int]:
    from hbase_migration.migration.batches import failed_batches

    return failed_batches(failed_tasks, BATCH_GROUP)


def record_verdict(ledger: Any, run_id: str, verdict: Mapping[str, Any]) -> None:
    """What a failed run left behind, as its run-wide `report` phase (failed, the verdict as JSON): the failure
    alert (`hbase_migration.operators.alerts`) and the dashboard's failed phases read it there."""
    import json

    from hbase_migration.ledger.store import ALL_TABLES

    ledger.set_phase(run_id, ALL_TABLES, "report", "failed", json.dumps(verdict, sort_keys=True, default=str))


def release_switches(spec_dict: Mapping[str, Any] | None, run_id: str) -> dict[str, Any]:
    """After every copy of the run ended: release the switch holds its copies still have (each copy releases its
    own when it ends; a copy killed and not retried cannot). The last hold on the source restores the state
    found before the copies."""
    from hbase_migration.data.switches import release_run
    from hbase_migration.operators.ledger import open_ledger

    if not spec_dict or not RunSpec.from_dict(spec_dict).hold_switches:
        return {"released": []}
    spec = RunSpec.from_dict(spec_dict)
    source = HBaseClusterHook(spec.source_conn_id).get_cluster()
    with open_ledger() as ledger:
        released = release_run(source, ledger, run_id, logger=log)
    for r in released:
        outcome = f"restored {r['restored']}" if r["restored"] else f"still held by {', '.join(r['held_by'])}"
        log.warning("released the switch hold %r this run's copy left: %s", r["holder"], outcome)
    if not released:
        log.info("no switch hold of this run is left: every copy released its own")
    return {"released": released}


def batch_metadata(spec_dict: Mapping[str, Any] | None, run_id: str, batch: str, tables: list[str]
                   ) -> dict[str, Any]:
    """A batch's grants, quotas and RS group membership given to the target (run spec `metadata`: apply), or only
    listed (check), once its tables exist there, before its verification: one shell session per cluster (the
    target's reads and changes in one). Recorded as each table's `metadata` phase. Fails (without retry) naming
    each change refused or difference left that `--apply` makes; what it cannot make is logged with its fix."""
    import json

    from airflow.sdk.exceptions import AirflowFailException

    from hbase_migration.clusters import channels
    from hbase_migration.ledger.store import ALL_TABLES
    from hbase_migration.migration import metadata
    from hbase_migration.operators.ledger import open_ledger

    spec = RunSpec.from_dict(spec_dict or {})
    mode = spec.metadata
    if mode == "skip":
        log.info("batch %s: metadata skip (run spec): grants, quotas and RS groups left as they are", batch)
        return {"batch": batch, "mode": mode}
    source, target = _clusters(spec)
    mapping = metadata.parse_principal_map(spec.principal_map)
    with channels.one_shell_per_cluster():
        before = metadata.compare(source, target, tables, mapping)
        after, changed, failed = None, 0, []
        if mode == "apply" and before.changes:
            changed, failed = metadata.apply(target, before)
            after = metadata.compare(source, target, tables, mapping, source_metadata=before.source_metadata)
        elif mode == "apply":
            after = before
    status, said = metadata.step_outcome(mode, before, after, failed)
    said = [*before.notes, *said]
    for line in said:
        (log.warning if line.startswith(("left:", "refused:")) else log.info)("batch %s metadata: %s", batch, line)
    left = (after or before).differences
    result = {"batch": batch, "mode": mode, "changed": changed, "failed": failed,
              "differences": [d.to_dict() for d in before.differences], "left": [d.to_dict() for d in left]}
    detail = json.dumps({"mode": mode, "differences": len(before.differences), "changed": changed,
                         "failed": failed[:5], "left": [d.line() for d in left][:20]}, sort_keys=True)
    with open_ledger() as ledger:
        for table in tables or [ALL_TABLES]:
            ledger.set_phase(run_id, table, "metadata", status, detail)
    if status == "failed":
        raise AirflowFailException(f"batch {batch}: the target's metadata is not the source's after --apply: "
                                   + "; ".join(s for s in said if s.startswith(("left:", "refused:"))))
    return result
