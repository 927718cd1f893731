"""The cut-over's and rollback's operators: check, freeze/unfreeze, the final drain, the reverse peer, the
forward peer's retirement. Thin: each builds its clusters from their connections in `execute()`, calls one
library function (`hbase_migration.migration.cutover`, `hbase_migration.migration.freeze`), logs what it did and
records it in the run ledger, and returns a small dict. Every step can be re-run (it finds its own work done and does
nothing).

`plan` arguments are the wire form of `hbase_migration.migration.cutover.SwitchPlan` (what `open_cutover` /
`open_rollback` push as XCom `plan`): the migration's clusters, peers and tables, as the ledger records them.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from hbase_migration.operators.hooks import HBaseClusterHook, table_names
from hbase_migration.operators.sensors import ReplicationDrainedSensor


def record_phase(run_id: str | None, phase: str, status: str, detail: Any = None) -> None:
    """One run-wide phase of a cut-over/rollback run in the ledger (no ledger run: nothing)."""
    if not run_id:
        return
    from hbase_migration.ledger.store import ALL_TABLES
    from hbase_migration.operators.ledger import open_ledger

    with open_ledger() as ledger:
        ledger.set_phase(run_id, ALL_TABLES, phase, status,
                         None if detail is None else json.dumps(detail, sort_keys=True, default=str))


def note_peer(run_id: str | None, peer_id: str, state: str, reason: str) -> None:
    if not run_id:
        return
    from hbase_migration.operators.ledger import open_ledger

    with open_ledger() as ledger:
        ledger.peer_note(run_id, peer_id, state, reason)


def record_approval(run_id: str | None, approval: Any, logger: Any) -> None:
    """The approval's answer (chosen option, who, when) as the run's `approval` phase."""
    if not isinstance(approval, Mapping):
        return
    who = (approval.get("responded_by_user") or {}).get("name")
    logger.info("approved (%s) by %s at %s", ", ".join(approval.get("chosen_options") or []), who,
                approval.get("responded_at"))
    record_phase(run_id, "approval", "success", {"chosen_options": approval.get("chosen_options"),
                                                  "responded_by": who, "responded_at": approval.get("responded_at")})


class _SwitchCheckOperator(BaseOperator):
    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "plan", "ledger_run_id")
    ui_color = "#e6f4ea"
    what = ""

    def __init__(self, *, plan: Mapping[str, Any] | str, source_conn_id: str = "hbase_source",
                 target_conn_id: str = "hbase_target", ledger_run_id: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.plan = plan
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.ledger_run_id = ledger_run_id

    def _evaluate(self, source: Any, target: Any, plan: Any) -> tuple[list[str], Any]:
        raise NotImplementedError

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.cutover import SwitchPlan
        from hbase_migration.migration.preflight import ensure_distinct

        plan = SwitchPlan.from_dict(self.plan)
        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        ensure_distinct(source, target)
        record_phase(self.ledger_run_id, "check", "running")
        reasons, facts = self._evaluate(source, target, plan)
        for note in getattr(facts, "drain_notes", ()):
            self.log.info("drain note: %s", note)
        if reasons:
            for reason in reasons:
                self.log.error("refused: %s", reason)
            record_phase(self.ledger_run_id, "check", "failed", {"reasons": reasons})
            raise AirflowFailException(f"{self.what} refused, nothing was changed: " + "; ".join(reasons))
        self.log.info("%s of %s: every check passed (forward peer %s, reverse peer %s)", self.what,
                      ", ".join(plan.tables), plan.peer_id, plan.reverse_peer_id)
        result = {"tables": list(plan.tables), "forward_peer": facts.forward_peer.describe()
                  if facts.forward_peer else None,
                  "reverse_peer": facts.reverse_peer.describe() if facts.reverse_peer else None,
                  "drained": facts.drained, "drain_notes": list(facts.drain_notes),
                  "metadata": facts.metadata.to_dict() if getattr(facts, "metadata", None) is not None else None}
        record_phase(self.ledger_run_id, "check", "success", result)
        return result


class CutoverCheckOperator(_SwitchCheckOperator):
    """Checks a cut-over before anything changes, and fails (without retry) with every reason to fix.

    The connections point at the migration's clusters; the forward peer exists on the source, is ours, ENABLED,
    ships to the target and replicates the tables; it has drained (polled up to `drain_timeout_s`); the reverse
    peer id is free on the target (or already this cut-over's); every family of the tables replicates on the
    target (REPLICATION_SCOPE 1), so the reverse peer will ship the target's edits back; every principal the fence
    will stop on the source can write the tables on the target (WRITE globally, on the namespace or the table,
    after `principal_map`). The metadata's differences (grants, quotas, RS groups) are returned for the approval.
    The run itself (finished, verification clean, tables part of it) was checked when the plan was made
    (`open_cutover`).

    :param plan: the cut-over's plan (`SwitchPlan.to_dict()`, XCom `plan` of `open_cutover`).
    :param source_conn_id: the migration's source cluster (the forward peer lives there).
    :param target_conn_id: the migration's target cluster (the reverse peer will live there).
    :param max_lag_ms: drain: the largest ageOfLastShippedOp of a caught-up queue.
    :param stable_samples: drain: consecutive drained polls.
    :param caught_up_queue_size: drain: sizeOfLogQueue of a caught-up queue, one per WAL group (1 on HBase 2.x,
        0 on 1.x).
    :param idle_window_s: drain: how long frozen counters make a stale age believed idle.
    :param drain_timeout_s: how long the forward peer may take to show drained before the check fails.
    :param sync_replication: the cut-over asks for synchronous replication: refused, with the evidence, unless
        both clusters' region servers run HBase 3.0+ (and then refused as not driven by this cut-over yet).
    :param freeze_exempt: ACL fence: principals left writing (not checked on the target).
    :param principal_map: SOURCE=TARGET principals (run spec): how a fenced writer is named on the target.
    :param ledger_run_id: the cut-over run whose ledger records the check (None: none).
    """

    template_fields: Sequence[str] = (*_SwitchCheckOperator.template_fields, "max_lag_ms", "stable_samples",
                                      "caught_up_queue_size", "idle_window_s", "sync_replication", "freeze_exempt",
                                      "principal_map")
    what = "cut-over"

    def __init__(self, *, max_lag_ms: int = 30_000, stable_samples: int = 3, caught_up_queue_size: int = 1,
                 idle_window_s: float = 30.0, drain_timeout_s: float = 120.0, sync_replication: bool = False,
                 freeze_exempt: Sequence[str] | None = (), principal_map: str | None = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.freeze_exempt = freeze_exempt
        self.principal_map = principal_map
        self.max_lag_ms = max_lag_ms
        self.stable_samples = stable_samples
        self.caught_up_queue_size = caught_up_queue_size
        self.idle_window_s = idle_window_s
        self.drain_timeout_s = drain_timeout_s
        self.sync_replication = sync_replication

    def _evaluate(self, source: Any, target: Any, plan: Any) -> tuple[list[str], Any]:
        from hbase_migration.migration.cutover import evaluate_cutover, gather
        from hbase_migration.replication import lag

        thresholds = lag.thresholds_from({"max_lag_ms": self.max_lag_ms, "stable_samples": self.stable_samples,
                                          "caught_up_queue_size": self.caught_up_queue_size,
                                          "idle_window_s": self.idle_window_s})
        from dataclasses import replace

        from hbase_migration.migration import metadata

        facts = gather(source, target, plan, thresholds=thresholds, drain_timeout_s=self.drain_timeout_s,
                       sync_replication=self.sync_replication is True)
        # Grants, quotas, RS groups on both sides: shown at the approval; a writer the fence stops who could not
        # write on the target refuses the cut-over (with the ACL fence, the source stays fenced after the switch)
        try:
            found = metadata.read_for_cutover(source, target, plan.tables, plan.freeze_method,
                                              tuple(self.freeze_exempt or ()),
                                              metadata.parse_principal_map(self.principal_map or ""))
        except Exception as e:  # /conf or a shell not read: who can write on the target is unknown
            found = metadata.CutoverMetadata((), (
                f"the grants, quotas and RS groups of {', '.join(plan.tables)} could not be compared "
                f"({type(e).__name__}: {' '.join(str(e).split())[:300]}), so whether every writer the fence stops "
                "can write on the target is unknown; check `python -m hbase_migration metadata`, then retry",))
        for line in found.to_dict()["text"].split("; "):
            self.log.info("metadata: %s", line)
        facts = replace(facts, metadata=found)
        return evaluate_cutover(plan, facts), facts


class RollbackCheckOperator(_SwitchCheckOperator):
    """Checks a rollback before anything changes, and fails (without retry) with every reason to fix: the
    connections point at the cut-over's clusters; the reverse peer exists on the target, is ours, ENABLED, ships
    to the source with the cut-over's tables (without it a rollback would lose every write made on the target
    since the cut-over: refused); the forward peer is gone from the source or is already the one the rollback
    re-creates (one narrowed to other tables by a cut-over of `only_tables` is refused).

    :param plan: the rollback's plan (`SwitchPlan.to_dict()`, XCom `plan` of `open_rollback`).
    :param source_conn_id: the migration's source cluster (the clients go back there).
    :param target_conn_id: the migration's target cluster (the reverse peer lives there).
    :param ledger_run_id: the rollback run whose ledger records the check (None: none).
    """

    what = "rollback"

    def _evaluate(self, source: Any, target: Any, plan: Any) -> tuple[list[str], Any]:
        from hbase_migration.migration.cutover import evaluate_rollback, gather

        facts = gather(source, target, plan)
        return evaluate_rollback(plan, facts), facts


class SetReadOnlyOperator(BaseOperator):
    """Freezes (READONLY) or unfreezes tables through the cluster's HBase shell (`alter 't', READONLY =>
    'true'`, the same statement on HBase 1.x and 2.x), then reads every table back with `describe`. Writes to a
    READONLY table are refused by the region servers (`DoNotRetryIOException: region is read only`), replicated
    edits included; reads go on. Tables already in the wanted state are left alone: a re-run changes nothing.

    :param conn_id: the cluster whose tables change.
    :param tables: the tables.
    :param readonly: True to freeze, False to unfreeze.
    :param apply: False leaves the tables as they are and says so (a run parameter such as `unfreeze_source`).
    :param ledger_run_id: the run whose ledger records the step (None: none).
    :param ledger_phase: the ledger phase it is recorded as (`freeze` or `unfreeze`).
    """

    template_fields: Sequence[str] = ("conn_id", "tables", "readonly", "apply", "ledger_run_id")
    ui_color = "#dbe9ff"

    def __init__(self, *, conn_id: str, tables: Sequence[str] | str, readonly: bool, apply: bool = True,
                 ledger_run_id: str | None = None, ledger_phase: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self.tables = tables
        self.readonly = readonly
        self.apply = apply
        self.ledger_run_id = ledger_run_id
        self.ledger_phase = ledger_phase or ("freeze" if readonly is True else "unfreeze")

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from hbase_migration.migration.freeze import readonly_states, set_readonly

        cluster = HBaseClusterHook(self.conn_id).get_cluster()
        tables = table_names(self.tables)
        if self.apply is not True:
            states = readonly_states(cluster, tables)
            self.log.warning("left as they are (not applied): %s", ", ".join(
                f"{t} {'READONLY' if ro else 'writable'}" for t, ro in states.items()))
            record_phase(self.ledger_run_id, self.ledger_phase, "skipped", {"readonly": states})
            return [{"table": t, "readonly": ro, "outcome": "left", "statement": None} for t, ro in states.items()]
        record_phase(self.ledger_run_id, self.ledger_phase, "running")
        try:
            done = set_readonly(cluster, tables, self.readonly is True)
        except Exception as e:
            record_phase(self.ledger_run_id, self.ledger_phase, "failed", {"error": str(e)})
            raise
        for item in done:
            self.log.info("%s on %s: %s%s (describe reads READONLY=%s)", item["table"], cluster.name, item["outcome"],
                          f" by `{item['statement']}`" if item["statement"] else "", str(item["readonly"]).lower())
        record_phase(self.ledger_run_id, self.ledger_phase, "success", done)
        return done


class FinalDrainSensor(ReplicationDrainedSensor):
    __doc__ = (ReplicationDrainedSensor.__doc__ or "") + """
    The cut-over's (and rollback's) final drain, with writes frozen: HBase 2.x then keeps the age of the last
    shipped edit in its gauge, so `idle_window_s` of frozen counters at the caught-up queue size make that
    stale age count as caught up. Recorded as the ledger phase `final_drain`.
    """
    ledger_phase = "final_drain"


class AddReversePeerOperator(BaseOperator):
    """Adds the reverse peer (target -> source), scoped to the cut-over's tables, after rolling the target's WALs
    (a new peer reads each server's current WAL from its start: without the roll, the copy's writes still in it,
    which carry the target's own cluster id, would ship back to the source). The cut-over creates it DISABLED
    (`enabled=False`) before the write freeze: from then on every write a client makes on the target is kept in the
    target's WALs, and the window enables the peer at the switch; the forward peer's edits carry the source's
    cluster id and never loop back. Safe only after the copy: neither Thrift API can stamp the copy's writes with
    the source's cluster id (CopyTable can), so a reverse peer during the copy would ship the copy back. A re-run
    finds the peer and does nothing (enables it when `enabled` and it was disabled).

    :param plan: the cut-over's plan (`SwitchPlan.to_dict()`).
    :param source_conn_id: the migration's source cluster (the reverse peer ships there).
    :param target_conn_id: the migration's target cluster (the reverse peer lives there).
    :param enabled: create it ENABLED (True) or DISABLED (False, the cut-over's way).
    :param ledger_run_id: the cut-over run whose ledger records the peer (None: none).
    """

    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "plan", "ledger_run_id")
    ui_color = "#e8f0fe"

    def __init__(self, *, plan: Mapping[str, Any] | str, source_conn_id: str = "hbase_source",
                 target_conn_id: str = "hbase_target", enabled: bool = True, ledger_run_id: str | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.plan = plan
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.enabled = enabled
        self.ledger_run_id = ledger_run_id

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer

        plan = SwitchPlan.from_dict(self.plan)
        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        record_phase(self.ledger_run_id, "reverse_peer", "running")
        result = add_reverse_peer(target, source, plan, enabled=self.enabled)
        for command in result["commands"]:
            self.log.info("ran on the target: %s", command)
        self.log.info("reverse peer %s on %s: %s (%s); WALs rolled on %s", plan.reverse_peer_id, target.name,
                      result["outcome"], result["message"], ", ".join(result["rolled_wals_on"]) or "no server")
        if result["changed"]:
            note_peer(self.ledger_run_id, plan.reverse_peer_id, "ENABLED" if self.enabled else "DISABLED",
                      f"reverse peer {target.name} -> {source.name} for {', '.join(plan.tables)}: {result['outcome']}")
        record_phase(self.ledger_run_id, "reverse_peer", "success", result)
        return result


class RecreateForwardPeerOperator(AddReversePeerOperator):
    """The rollback's first change, once approved: the forward peer (source -> target) re-created DISABLED, scoped
    to the tables rolled back, after a WAL roll on the source: from then on every write a client makes on the source
    is kept in the source's WALs, and the window ENABLES the peer after the switch back (the target stays current,
    a later cut-over needs no new migration). The reverse peer's edits carry the target's cluster id and never loop
    back. It is `AddReversePeerOperator` with the roles swapped (`cutover.rollback_window_plan`). A re-run finds
    the peer and does nothing. Ledger phase `forward_peer`.

    :param plan: the rollback's plan (`SwitchPlan.to_dict()`).
    :param source_conn_id: the migration's source cluster (the forward peer lives there).
    :param target_conn_id: the migration's target cluster (it ships there).
    :param ledger_run_id: the rollback run whose ledger records the peer (None: none).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**{**kwargs, "enabled": False})  # always DISABLED: the window enables it after the switch

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.cutover import SwitchPlan, add_reverse_peer, rollback_window_plan

        plan = rollback_window_plan(SwitchPlan.from_dict(self.plan))
        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        record_phase(self.ledger_run_id, "forward_peer", "running")
        result = add_reverse_peer(source, target, plan, enabled=False)
        for command in result["commands"]:
            self.log.info("ran on the source: %s", command)
        self.log.info("forward peer %s on %s: %s (%s); WALs rolled on %s", plan.reverse_peer_id, source.name,
                      result["outcome"], result["message"], ", ".join(result["rolled_wals_on"]) or "no server")
        if result["changed"]:
            note_peer(self.ledger_run_id, plan.reverse_peer_id, "DISABLED",
                      f"forward peer {source.name} -> {target.name} re-created for {', '.join(plan.tables)}: "
                      f"{result['outcome']}")
        record_phase(self.ledger_run_id, "forward_peer", "success", result)
        return result


# The window's steps as ledger phases (the others are in the `window` phase's detail).
WINDOW_PHASES = {"lag_gate": "lag_gate", "live_pass": "live_pass", "fence": "freeze", "drain": "final_drain",
                 "bounded_check": "bounded_check", "switch": "switch", "enable_reverse_peer": "enable_peer",
                 "enable_forward_peer": "enable_peer", "unfreeze_source": "unfreeze", "unfreeze_target": "unfreeze",
                 "lift_joined_fence": "lift_fence"}


def window_bounds(summary: Mapping[str, Any], tables: Sequence[str], kept_phase: str = "reverse_peer"
                  ) -> tuple[dict[str, int | None], int | None]:
    """From a cut-over run's ledger summary: when each table's full verification (ledger phase `verify`, success)
    started, and when the kept peer was created (phase `kept_phase`: the cut-over's `reverse_peer`, the rollback's
    `forward_peer`)."""
    phases = summary.get("phases") or {}
    started = {}
    for table in tables:
        verify = (phases.get(table) or {}).get("verify") or {}
        started[table] = verify.get("started_ms") if verify.get("status") == "success" else None
    kept = (phases.get("*") or {}).get(kept_phase) or {}
    return started, kept.get("started_ms") if kept.get("status") == "success" else None


class CutoverWindowOperator(BaseOperator):
    """The cut-over's window, in one task (no scheduling gap between its steps): shell sessions opened before
    the freeze, the lag gate, a live pass of the bounded check, then the write FREEZE: the fence (READONLY on every
    table at once, or WRITE taken away by ACL), a WAL roll and the forward peer's drain, the bounded check of what
    changed since the last verification, and `switch_command` (the clients move to the target). After the freeze:
    with READONLY, the source writable again; then the reverse peer ENABLED and its lag gate.

    Fails without retry. An abort condition (lag, a difference, the freeze's deadline, the switch command) lifts
    the fence and leaves the clients on the source; the reverse peer stays DISABLED (it holds any early target
    write). A failure after the switch undoes nothing (the clients are on the target) and says the state. Every
    step is a ledger phase (`lag_gate`, `live_pass`, `freeze`, `final_drain`, `bounded_check`, `switch`,
    `enable_peer`, `unfreeze`), the whole as `window` with its timeline.

    :param plan: the cut-over's plan (`SwitchPlan.to_dict()`).
    :param switch_command: the command that moves the clients (the run spec's `switch_command`).
    :param freeze_method: `readonly` or `acl`.
    :param freeze_exempt: ACL: principals whose WRITE is left alone.
    :param superusers: ACL: the source's hbase.superuser as the operator attests it (None: read from /conf).
    :param fence_canary, fence_canary_keytab: ACL: the principal whose refused write proves the fence, and on
        Kerberos its keytab on this host.
    :param unfreeze_source: READONLY: make the source writable again after the switch.
    :param max_lag_ms, lag_wait_s, max_freeze_s, skew_margin_ms, recompare_sleep_s: the abort conditions
        (`cutover_plan.AbortConditions`).
    :param caught_up_queue_size: the lag gate's WALs of a caught-up queue, one per WAL group (the run spec's).
    :param check_parallel: the bounded checks' key ranges (one per region) compared at once.
    :param ledger_run_id: the cut-over run (its ledger holds the verification's start and the reverse peer's).
    :param kind: `cutover`, or `rollback`: the same window with the roles swapped (`cutover_window`): the target
        fenced (the cut-over's freeze method), the reverse peer drained, `switch_command` moving the clients back,
        then (an ACL cut-over) the source's WRITE given back, with READONLY the target writable again unless
        `unfreeze_source` is off, the re-created forward peer ENABLED and its lag gate. The bounded checks start
        from the cut-over run's last clean verification (`cutover.rollback_verified_ms`); early source writes are
        those made after the forward peer's re-creation (this run's phase `forward_peer`).
    """

    template_fields: Sequence[str] = ("source_conn_id", "target_conn_id", "plan", "ledger_run_id", "switch_command",
                                      "freeze_method", "freeze_exempt", "superusers", "fence_canary",
                                      "fence_canary_keytab", "unfreeze_source", "max_lag_ms",
                                      "lag_wait_s", "max_freeze_s", "skew_margin_ms", "recompare_sleep_s",
                                      "caught_up_queue_size", "check_parallel")
    ui_color = "#fde2e1"

    def __init__(self, *, plan: Mapping[str, Any] | str, switch_command: str, source_conn_id: str = "hbase_source",
                 target_conn_id: str = "hbase_target", freeze_method: str = "readonly",
                 freeze_exempt: Sequence[str] = (), superusers: Sequence[str] | None = None,
                 fence_canary: str = "hbase_migration_canary", fence_canary_keytab: str | None = None,
                 unfreeze_source: bool = True, max_lag_ms: int = 30_000,
                 lag_wait_s: float = 300.0, max_freeze_s: float = 120.0, skew_margin_ms: int = 5_000,
                 recompare_sleep_s: float = 2.0, caught_up_queue_size: int = 1, ledger_run_id: str | None = None,
                 kind: str = "cutover", check_parallel: int = 16, **kwargs) -> None:
        super().__init__(**kwargs)
        if kind not in ("cutover", "rollback"):
            raise ValueError(f"kind must be 'cutover' or 'rollback', got {kind!r}")
        self.kind = kind
        self.plan = plan
        self.caught_up_queue_size = caught_up_queue_size
        self.check_parallel = check_parallel
        self.switch_command = switch_command
        self.source_conn_id = source_conn_id
        self.target_conn_id = target_conn_id
        self.freeze_method = freeze_method
        self.freeze_exempt = freeze_exempt
        self.superusers = superusers
        self.fence_canary, self.fence_canary_keytab = fence_canary, fence_canary_keytab
        self.unfreeze_source = unfreeze_source
        self.max_lag_ms = max_lag_ms
        self.lag_wait_s = lag_wait_s
        self.max_freeze_s = max_freeze_s
        self.skew_margin_ms = skew_margin_ms
        self.recompare_sleep_s = recompare_sleep_s
        self.ledger_run_id = ledger_run_id

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.cutover import SwitchPlan, rollback_verified_ms, rollback_window_plan
        from hbase_migration.migration.cutover_plan import (
            CUTOVER_ROLES,
            ROLLBACK_ROLES,
            AbortConditions,
            CutoverAborted,
            WindowOptions,
            switch_environment,
        )
        from hbase_migration.migration.cutover_window import PostSwitchError, command_switch, run_window
        from hbase_migration.operators.ledger import open_ledger

        rollback = self.kind == "rollback"
        plan = SwitchPlan.from_dict(self.plan)
        source = HBaseClusterHook(self.source_conn_id).get_cluster()
        target = HBaseClusterHook(self.target_conn_id).get_cluster()
        # The side the clients move to gets its WRITE back just before the switch when it is fenced by ACL (and
        # its fence put back if the window then aborts): a rollback's source (its cut-over's fence), a cut-over's
        # target (an earlier rollback's fence).
        unfence_joined, refence_joined = plan.unfence_statements, plan.refence_statements
        if rollback:  # the same window, the roles swapped: the target fenced, the clients back to the source
            plan = rollback_window_plan(plan)
            source, target = target, source
        options = WindowOptions(self.freeze_method, tuple(self.freeze_exempt or ()), AbortConditions(
            int(self.max_lag_ms), float(self.lag_wait_s), float(self.max_freeze_s), int(self.skew_margin_ms),
            float(self.recompare_sleep_s)), unfreeze_after_switch=self.unfreeze_source is True,
            caught_up_queue_size=int(self.caught_up_queue_size), parallel_checks=int(self.check_parallel),
            superusers=None if self.superusers is None else tuple(self.superusers), canary=str(self.fence_canary),
            canary_keytab=self.fence_canary_keytab or None)
        run_id = self.ledger_run_id or context["run_id"]
        with open_ledger() as ledger:
            verify_started, kept_since = window_bounds(ledger.run_summary(run_id), plan.tables,
                                                       "forward_peer" if rollback else "reverse_peer")
            if rollback:
                verify_started = rollback_verified_ms(ledger.run_summary(plan.from_run_id), plan.tables)
        switch = command_switch(self.switch_command, switch_environment(run_id, "switch", plan.tables,
                                                                        str(source.cluster_key),
                                                                        str(target.cluster_key), self.kind))

        def on_step(name: str, status: str, detail: Any) -> None:
            self.log.info("window step %s: %s%s", name, status, "" if detail is None else
                          f" {json.dumps(detail, sort_keys=True, default=str)[:2000]}")
            if name in WINDOW_PHASES:
                record_phase(self.ledger_run_id, WINDOW_PHASES[name], status, detail)
            if name in ("enable_reverse_peer", "enable_forward_peer") and status == "success":
                note_peer(self.ledger_run_id, plan.reverse_peer_id, "ENABLED", f"the switch: the {target.name}'s "
                          f"writes ship to the {source.name}")

        record_phase(self.ledger_run_id, "window", "running")
        try:
            result = run_window(source, target, plan, options, verify_started_ms=verify_started,
                                kept_since_ms=kept_since, switch=switch, on_step=on_step,
                                roles=ROLLBACK_ROLES if rollback else CUTOVER_ROLES, unfence_joined=unfence_joined,
                                refence_joined=refence_joined)
        except CutoverAborted as e:
            record_phase(self.ledger_run_id, "window", "failed", {"aborted": e.condition, "message": str(e),
                                                                  "state": e.state})
            raise AirflowFailException(f"{e}; state left: {json.dumps(e.state, default=str)}") from e
        except PostSwitchError as e:
            record_phase(self.ledger_run_id, "window", "failed", {"after_switch": True, "message": str(e)})
            raise AirflowFailException(str(e)) from e
        record_phase(self.ledger_run_id, "window", "success", result)
        self.log.info("write freeze (fence -> switch done): %ss; shares %s", result.get("freeze_s"),
                      result.get("freeze_shares"))
        return {"freeze_s": result.get("freeze_s"), "freeze_shares": result.get("freeze_shares"),
                "steps": result.get("steps"), "bounded_check": {k: (result.get("bounded_check") or {}).get(k)
                                                                for k in ("counts", "source_cells", "seconds")},
                "freeze_method": self.freeze_method, "kind": self.kind}


class LiftFenceOperator(BaseOperator):
    """Gives the source its writes back after a cut-over, the way it was fenced (the plan's `freeze_method`):
    READONLY off (`alter`, read back), or every principal's WRITE as the cut-over found it (the statements the
    window recorded, `Admin.grant` without merge: exactly the actions found). A re-run changes nothing more.

    :param conn_id: the cluster (the source).
    :param plan: the rollback's plan (`SwitchPlan.to_dict()`, with the cut-over's `unfence_statements`).
    :param ledger_run_id: the run whose ledger records the step (`unfreeze`).
    """

    template_fields: Sequence[str] = ("conn_id", "plan", "ledger_run_id")
    ui_color = "#dbe9ff"

    def __init__(self, *, conn_id: str, plan: Mapping[str, Any] | str, ledger_run_id: str | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self.plan = plan
        self.ledger_run_id = ledger_run_id

    def execute(self, context: Context) -> Any:
        from hbase_migration.migration.cutover import SwitchPlan, lift_fence

        plan = SwitchPlan.from_dict(self.plan)
        record_phase(self.ledger_run_id, "unfreeze", "running")
        try:
            done = lift_fence(HBaseClusterHook(self.conn_id).get_cluster(), plan)
        except Exception as e:
            record_phase(self.ledger_run_id, "unfreeze", "failed", {"error": str(e)})
            raise
        self.log.info("source fence (%s) lifted: %s", plan.freeze_method, json.dumps(done, default=str))
        record_phase(self.ledger_run_id, "unfreeze", "success", done)
        return done


class _PeerChangeAfterApproval(BaseOperator):
    """The last peer change of a cut-over or rollback, made once the clients have switched: records the
    approval's answer, makes the change (`change(cluster, plan)`), notes the peer's new state, records the
    ledger phase `remove_peer`."""

    ui_color = "#e8f0fe"
    conn_attr = ""  # which connection the peer lives on

    def __init__(self, *, plan: Mapping[str, Any] | str, approval: Mapping[str, Any] | str | None = None,
                 ledger_run_id: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.plan = plan
        self.approval = approval
        self.ledger_run_id = ledger_run_id

    def change(self, cluster: Any, plan: Any) -> tuple[dict[str, Any], str, str, str]:
        """Make the change: (result, peer id, its state afterwards, the note's reason)."""
        raise NotImplementedError

    def execute(self, context: Context) -> dict[str, Any]:
        from hbase_migration.migration.cutover import SwitchPlan

        plan = SwitchPlan.from_dict(self.plan)
        record_approval(self.ledger_run_id, self.approval, self.log)
        record_phase(self.ledger_run_id, "remove_peer", "running")
        result, peer_id, state, reason = self.change(HBaseClusterHook(getattr(self, self.conn_attr)).get_cluster(),
                                                     plan)
        self.log.info("peer %s: %s (%s)", peer_id, result["outcome"], result["message"])
        if result["changed"]:
            note_peer(self.ledger_run_id, peer_id, state, reason)
        record_phase(self.ledger_run_id, "remove_peer", "success", result)
        return result


class RetireForwardPeerOperator(_PeerChangeAfterApproval):
    """Once the clients write to the target: removes the forward peer, or narrows its TABLE_CFS to the tables not
    cut over (their migration goes on). A re-run finds it done.

    :param plan: the cut-over's plan (`SwitchPlan.to_dict()`).
    :param source_conn_id: the migration's source cluster (the forward peer lives there).
    :param approval: the approval's answer (the ApprovalOperator's XCom), recorded as the ledger phase `approval`.
    :param ledger_run_id: the cut-over run whose ledger records the change (None: none).
    """

    template_fields: Sequence[str] = ("source_conn_id", "plan", "approval", "ledger_run_id")
    conn_attr = "source_conn_id"

    def __init__(self, *, source_conn_id: str = "hbase_source", **kwargs) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id

    def change(self, cluster: Any, plan: Any) -> tuple[dict[str, Any], str, str, str]:
        from hbase_migration.migration.cutover import retire_forward_peer

        result = retire_forward_peer(cluster, plan)
        state = "REMOVED" if result.get("action") == "remove" else "ENABLED"
        return result, plan.peer_id, state, f"cut-over of {', '.join(plan.tables)}: forward peer {result['outcome']}"


class RemoveReversePeerOperator(_PeerChangeAfterApproval):
    """The rollback's last step, after the verification: removes the reverse peer from the target (only the one the
    cut-over made; absent is fine). The clients are back on the source; the re-created forward peer keeps the
    target current. Removed rather than kept: a later cut-over creates a fresh one DISABLED after a WAL roll, and
    a kept ENABLED one would ship stray writes on the target into the source unchecked.

    :param plan: the rollback's plan (`SwitchPlan.to_dict()`).
    :param target_conn_id: the migration's target cluster (the reverse peer lives there).
    :param approval: the approval's answer (the ApprovalOperator's XCom), recorded as the ledger phase `approval`.
    :param ledger_run_id: the rollback run whose ledger records the change (None: none).
    """

    template_fields: Sequence[str] = ("target_conn_id", "plan", "approval", "ledger_run_id")
    conn_attr = "target_conn_id"

    def __init__(self, *, target_conn_id: str = "hbase_target", **kwargs) -> None:
        super().__init__(**kwargs)
        self.target_conn_id = target_conn_id

    def change(self, cluster: Any, plan: Any) -> tuple[dict[str, Any], str, str, str]:
        from hbase_migration.migration.cutover import remove_reverse_peer

        result = remove_reverse_peer(cluster, plan)
        return result, plan.reverse_peer_id, "REMOVED", "rollback done: reverse peer removed"
