"""Python callables of the migration DAGs' small tasks: validate the run's inputs and open it in the ledger,
report it, and make the state left behind by a failed run explicit.

Each reads the run's params and context, builds clusters through the hook, and calls the library.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from operators.hooks import HBaseClusterHook

log = logging.getLogger(__name__)


class InvalidRunInput(ValueError):
    pass


def _ms(value: Any, name: str) -> int | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool):
        raise InvalidRunInput(f"{name} must be milliseconds since the epoch, got {value!r}")
    try:
        ms = int(value)
    except (TypeError, ValueError):
        raise InvalidRunInput(f"{name} must be milliseconds since the epoch, got {value!r}") from None
    if ms < 0:
        raise InvalidRunInput(f"{name} must be >= 0, got {ms}")
    return ms


def time_window(start: Any, end: Any) -> tuple[int | None, int | None]:
    """The copy window [start, end) in ms; a reversed or empty window is refused before anything runs."""
    s, e = _ms(start, "start_time_ms"), _ms(end, "end_time_ms")
    if s is not None and e is not None and s >= e:
        raise InvalidRunInput(f"time range is reversed or empty: start_time_ms {s} must be < end_time_ms {e} "
                              "(the window is [start, end))")
    return s, e


def table_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    tables = list(dict.fromkeys(t.strip() for t in (value or []) if isinstance(t, str) and t.strip()))
    if not tables:
        raise InvalidRunInput("tables: at least one table is required")
    return tables


def open_run(params: Mapping[str, Any], run_id: str, dag_id: str, plan: str) -> list[dict[str, Any]]:
    """Validate the inputs, record the run in the ledger, and return what the mapped copy and verify tasks
    expand over: one {table, start_time, end_time} per table."""
    from hbase_migration.preflight import ensure_distinct
    from hbase_migration.replication.model import validate_peer_id
    from operators.ledger import open_ledger

    tables = table_list(params["tables"])
    start, end = time_window(params.get("start_time_ms"), params.get("end_time_ms"))
    peer_id = validate_peer_id(params["peer_id"]) if params.get("peer_id") else ""
    source = HBaseClusterHook(params["source_conn_id"]).get_cluster()
    target = HBaseClusterHook(params["target_conn_id"]).get_cluster()
    ensure_distinct(source, target)
    with open_ledger() as ledger:
        ledger.start_run(run_id, dag_id, plan, source.cluster_key, target.cluster_key, peer_id, tables,
                         {k: v for k, v in params.items()})
    log.info("run %s: %s -> %s, tables %s, peer %s, window [%s, %s)", run_id, source.cluster_key,
             target.cluster_key, ", ".join(tables), peer_id or "-", start, end)
    return [{"table": t, "start_time": start, "end_time": end} for t in tables]


def report(run_id: str) -> dict[str, Any]:
    """Close the run as a success and log its figures (they are also on the dashboard)."""
    from operators.ledger import open_ledger

    with open_ledger() as ledger:
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


def state_left_behind(params: Mapping[str, Any], run_id: str, failed_tasks: list[str]) -> dict[str, Any]:
    """After a failure: read the peer's real state, say it plainly, record it, apply the quota policy."""
    from hbase_migration.replication import peer_admin
    from operators.ledger import open_ledger

    peer_id = params.get("peer_id")
    source = HBaseClusterHook(params["source_conn_id"]).get_cluster()
    state = "UNKNOWN"
    action = None
    with peer_admin(source) as admin:
        peer = admin.get_peer(peer_id) if peer_id else None
        state = peer.state if peer else "ABSENT"
        if peer is not None and peer.enabled is False and params.get("quota_policy") == "enable_peer" \
                and not params.get("dry_run"):
            action = admin.enable_peer(peer_id).outcome
            state = "ENABLED"
    if state == "DISABLED":
        advice = ("it pins every WAL since T0 in oldWALs: clear the failed task(s) to resume (finished copy "
                  "partitions are skipped), or enable it to stop oldWALs growth, or remove it to roll back "
                  f"(python -m hbase_migration peer remove --source {params['source_conn_id']} --peer-id {peer_id})")
    elif state == "ENABLED":
        advice = "it ships edits to the target; clear the failed task(s) to resume"
    else:
        advice = "no peer is left behind"
    reason = f"run failed at {', '.join(failed_tasks) or 'unknown task'}; peer {state}" + \
        (f" (enabled by quota policy: {action})" if action else "")
    log.error("peer %s left %s: %s", peer_id, state, advice)
    try:
        with open_ledger() as ledger:
            if peer_id and state in ("ENABLED", "DISABLED"):
                ledger.peer_note(run_id, peer_id, state, reason)
            ledger.end_run(run_id, "failed")
    except Exception as e:  # a run that failed before it was recorded (bad input) has no ledger entry
        log.warning("ledger not updated for run %s: %s", run_id, e)
    return {"peer_id": peer_id, "state": state, "advice": advice, "failed_tasks": failed_tasks}


def _instant_ms(value: Any) -> int | None:
    if value is None:
        return None
    return int(value.timestamp() * 1000)


def open_window(params: Mapping[str, Any], run_id: str, dag_id: str, interval_start: Any,
                interval_end: Any) -> list[dict[str, Any]]:
    """The backfill's window: the trigger form's bounds when given, else the run's data interval."""
    from hbase_migration.ledger import NO_PEER
    from hbase_migration.preflight import ensure_distinct
    from operators.ledger import open_ledger

    tables = table_list(params["tables"])
    start = params.get("start_time_ms")
    end = params.get("end_time_ms")
    start = _instant_ms(interval_start) if start in (None, "") else start
    end = _instant_ms(interval_end) if end in (None, "") else end
    start, end = time_window(start, end)
    if start is None or end is None:
        raise InvalidRunInput("no window: this run has no data interval; give start_time_ms and end_time_ms")
    source = HBaseClusterHook(params["source_conn_id"]).get_cluster()
    target = HBaseClusterHook(params["target_conn_id"]).get_cluster()
    ensure_distinct(source, target)
    with open_ledger() as ledger:
        ledger.start_run(run_id, dag_id, "backfill", source.cluster_key, target.cluster_key, NO_PEER, tables,
                         {**params, "start_time_ms": start, "end_time_ms": end})
    log.info("backfill %s: tables %s, window [%s, %s) ms", run_id, ", ".join(tables), start, end)
    return [{"table": t, "start_time": start, "end_time": end} for t in tables]
