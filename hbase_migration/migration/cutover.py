"""Cut-over and rollback of a finished migration: the logic behind `hbase_cutover` and `hbase_rollback`.

A cut-over moves the clients of a migrated table set from the source to the target:

1. check: the migration run is in the ledger, finished, every table's verification clean; the forward peer is
   ENABLED, ours, ships to the target and has drained; the reverse peer id is free (or already ours with the
   same config); the target's families replicate (REPLICATION_SCOPE 1), or the reverse peer would ship nothing;
2. freeze the source tables (READONLY, `hbase_migration.migration.freeze`);
3. final drain of the forward peer with writes stopped (the drained gate; HBase 2.x's frozen age gauge is
   believed only once every counter stayed frozen for `idle_window_s`);
4. final verification, zero differences;
5. reverse peer target -> source, ENABLED, after a WAL roll on the target (so nothing written there before,
   the copy's writes included, ships back);
6. a person approves that the clients write to the target;
7. the forward peer is retired (removed, or narrowed to the tables not cut over) and the source unfrozen (or
   left READONLY on request).

A rollback is the same window with the roles swapped (`rollback_window_plan`): approved before anything changes;
the forward peer re-created DISABLED on the source after a WAL roll (every source write from then on is kept for
the target); then the window fences the target, drains the reverse peer, runs the bounded check and
`switch_command` back; after the switch the source's fence lifted, the forward peer ENABLED (the target stays
fenced, but current), the full verification, the reverse peer removed. A later cut-over of the same migration run
finds its forward peer again: no new migration.

Pure parts (unit-tested exactly): `plan_cutover`/`plan_rollback` over a run's ledger summary,
`rollback_window_plan`, `rollback_verified_ms`, `evaluate_cutover`/`evaluate_rollback` over gathered cluster facts,
`retire_action`. The I/O gathers facts and acts through the
peer admin, the freeze module and the drain poll; every action is idempotent.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.replication.model import DEFAULT_OWNER, PeerConfig, is_ours, normalize_table, validate_peer_id

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.replication.model import Peer

log = logging.getLogger(__name__)

CUTOVER_DAG, ROLLBACK_DAG = "hbase_cutover", "hbase_rollback"
REVERSE_SUFFIX = "_rev"


class SwitchRefused(ValueError):
    """A cut-over or rollback is refused before anything changed; `reasons` says each thing to fix."""

    def __init__(self, what: str, reasons: Sequence[str]):
        self.reasons = list(reasons)
        super().__init__(f"{what} refused, nothing was changed: " + "; ".join(self.reasons))


# --------------------------------------------------------------------------------------------------
# Plans from the ledger (pure)


@dataclass(frozen=True)
class SwitchPlan:
    """What a cut-over (or rollback) works on, from the ledger: ids, tables and the migration's scope."""

    kind: str  # "cutover" | "rollback"
    from_run_id: str  # the migration run (cut-over) or the cut-over run (rollback)
    migration_run_id: str
    source_key: str  # the migration's source cluster key
    target_key: str
    peer_id: str  # the forward peer (on the source)
    reverse_peer_id: str  # the reverse peer (on the target)
    tables: tuple[str, ...]
    run_tables: tuple[str, ...]  # every table of the migration run (the forward peer's TABLE_CFS)
    versions: int | None = None
    start_time_ms: int | None = None
    end_time_ms: int | None = None
    freeze_method: str = "readonly"  # how the cut-over fences the source (cutover_plan.FREEZE_METHODS)
    # what gives the side the clients move to its WRITE back after the switch: a rollback of an ACL cut-over, the
    # source's; a cut-over after a rollback fenced by ACL, the target's (`target_fence_left`)
    unfence_statements: tuple[str, ...] = ()
    # and what fences that side again (the same principals' WRITE taken away), should the window abort after
    # giving it back: it gives it back just before the switch when these are known (plans from before: after it)
    refence_statements: tuple[str, ...] = ()
    freeze_reason: str = ""  # why that method (the run spec's choice, or freeze.default_freeze's from /conf)
    # The migration run's bulk_loads: "replicated" (its preflight saw the source replicate them), "none" (its
    # operator attested none are made until the cut-over: shown at approval), "unrecorded" (a run from before)
    bulk_loads: str = "unrecorded"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tables"], d["run_tables"] = list(self.tables), list(self.run_tables)
        d["unfence_statements"] = list(self.unfence_statements)
        d["refence_statements"] = list(self.refence_statements)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SwitchPlan":
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        values["tables"], values["run_tables"] = tuple(values["tables"]), tuple(values["run_tables"])
        values["unfence_statements"] = tuple(values.get("unfence_statements") or ())
        values["refence_statements"] = tuple(values.get("refence_statements") or ())
        return cls(**values)


def default_reverse_peer_id(peer_id: str) -> str:
    """`<peer>_rev`, shortened to HBase's 64 characters."""
    return validate_peer_id(peer_id[:64 - len(REVERSE_SUFFIX)] + REVERSE_SUFFIX)


def _latest_verifications(verification: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Mapping[str, Any]]:
    return {table: max(rows, key=lambda r: (r.get("verified_ms") or 0, r.get("window_end_ms") or 0))
            for table, rows in verification.items() if rows}


def plan_cutover(summary: Mapping[str, Any], only_tables: Sequence[str] | None = None,
                 reverse_peer_id: str | None = None, freeze_method: str = "readonly") -> SwitchPlan:
    """The cut-over of a migration run, from its `Ledger.run_summary()`; SwitchRefused saying every reason.

    The run must be a migration (it has a peer), have ended `success`, and each table cut over must have a
    verification whose latest result is clean. `only_tables` must be tables of the run (None: all of them)."""
    run = summary["run"]
    reasons = []
    peer_id = run.get("peer_id")
    if run.get("dag_id") in (CUTOVER_DAG, ROLLBACK_DAG) or not peer_id or peer_id == "-":
        reasons.append(f"run {run['run_id']!r} is not a migration run (dag {run.get('dag_id')!r}, peer "
                       f"{peer_id!r}): give the run id of an hbase_table_migration (or plan) run")
    elif run.get("status") != "success":
        reasons.append(f"migration run {run['run_id']!r} is {run.get('status')!r}: only a run that finished "
                       "(report succeeded) can be cut over; resume it first")
    run_tables = tuple(run.get("tables") or ())
    tables = run_tables
    if only_tables:
        wanted = tuple(dict.fromkeys(normalize_table(t) for t in only_tables))
        foreign = [t for t in wanted if t not in run_tables]
        if foreign:
            reasons.append(f"table(s) {', '.join(foreign)} are not part of migration run {run['run_id']!r} "
                           f"(its tables: {', '.join(run_tables)})")
        tables = tuple(t for t in wanted if t in run_tables)
    latest = _latest_verifications(summary.get("verification") or {})
    for table in tables:
        v = latest.get(table)
        if v is None:
            reasons.append(f"table {table}: no verification recorded for run {run['run_id']!r}")
        elif not v.get("clean"):
            reasons.append(f"table {table}: the latest verification of run {run['run_id']!r} is not clean "
                           f"({v.get('content_different')} rows differ in content, {v.get('only_in_source')} only "
                           f"in the source, {v.get('only_in_target')} only in the target): verify (and repair) "
                           "until clean first")
    reverse = None
    if peer_id and peer_id != "-":
        try:
            reverse = validate_peer_id(reverse_peer_id) if reverse_peer_id else default_reverse_peer_id(peer_id)
        except ValueError as e:
            reasons.append(f"reverse_peer_id: {e}")
        if reverse == peer_id:
            reasons.append(f"reverse_peer_id {reverse!r} is the forward peer's id")
    if reasons:
        raise SwitchRefused(f"cut-over of run {run['run_id']!r}", reasons)
    params = run.get("params") or {}
    return SwitchPlan("cutover", run["run_id"], run["run_id"], run["source_key"], run["target_key"], peer_id,
                      reverse, tables, run_tables, params.get("versions"), params.get("start_time_ms"),
                      params.get("end_time_ms"), freeze_method, bulk_loads=params.get("bulk_loads") or "unrecorded")


def recorded_unfence(summary: Mapping[str, Any], key: str = "unfence_statements") -> tuple[str, ...]:
    """The statements that give the source its WRITE back, as a cut-over run's window recorded them (ACL freeze;
    empty otherwise); `key="refence_statements"`: those that take it away again."""
    import json

    window = ((summary.get("phases") or {}).get("*") or {}).get("window") or {}
    detail = window.get("detail")
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            detail = None
    if not isinstance(detail, Mapping):
        return ()
    found = detail.get(key) or (detail.get("state") or {}).get(key) or ()
    return tuple(str(s) for s in found)


def target_fence_left(summary: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the statements that give the target its WRITE back, those that take it away again), from `summary`, the
    newest run of the migration's forward peer: a rollback that switched the clients back with the ACL fence on the
    target (it stays fenced, and current, until a cut-over lifts it), or a cut-over that did not switch and had
    inherited them (an attempt after such a rollback). Empty otherwise. A cut-over planned after it lifts that
    fence just before its switch (and puts it back if it aborts)."""
    if not summary:
        return (), ()
    run = summary.get("run") or {}
    plan = (run.get("params") or {}).get("switch_plan") or {}
    switched = (((summary.get("phases") or {}).get("*") or {}).get("switch") or {}).get("status") == "success"
    if run.get("dag_id") == CUTOVER_DAG and not switched:
        return tuple(plan.get("unfence_statements") or ()), tuple(plan.get("refence_statements") or ())
    if run.get("dag_id") != ROLLBACK_DAG or plan.get("freeze_method") != "acl" or not switched:
        return (), ()
    return recorded_unfence(summary), recorded_unfence(summary, "refence_statements")


def plan_rollback(summary: Mapping[str, Any]) -> SwitchPlan:
    """The rollback of a cut-over run, from its `Ledger.run_summary()` (its params carry the plan; an ACL
    cut-over's window recorded how to give the source its WRITE back)."""
    run = summary["run"]
    params = run.get("params") or {}
    plan = params.get("switch_plan")
    if run.get("dag_id") != CUTOVER_DAG or not isinstance(plan, Mapping) or plan.get("kind") != "cutover":
        raise SwitchRefused(f"rollback of run {run['run_id']!r}", [
            f"run {run['run_id']!r} is not a cut-over run (dag {run.get('dag_id')!r}): give the run id of an "
            f"{CUTOVER_DAG} run"])
    method = plan.get("freeze_method", "readonly")
    unfence = recorded_unfence(summary)
    if method == "acl" and not unfence:
        raise SwitchRefused(f"rollback of run {run['run_id']!r}", [
            f"cut-over {run['run_id']!r} fenced the source by ACL but its ledger holds no record of the permissions "
            "it took away (its window never fenced?): give the source's principals WRITE back by hand, or roll "
            "back only once the cut-over's window has run"])
    return SwitchPlan("rollback", run["run_id"], plan["migration_run_id"], plan["source_key"], plan["target_key"],
                      plan["peer_id"], plan["reverse_peer_id"], tuple(plan["tables"]), tuple(plan["run_tables"]),
                      plan.get("versions"), plan.get("start_time_ms"), plan.get("end_time_ms"), method, unfence,
                      recorded_unfence(summary, "refence_statements"))


def rollback_window_plan(plan: SwitchPlan) -> SwitchPlan:
    """The rollback's plan as the cut-over's window reads it, the roles swapped: the window's source is the
    migration's target (fenced, and its reverse peer drained: the window's `peer_id`), the window's target the
    migration's source (the forward peer re-created there DISABLED plays the reverse peer's part: it keeps every
    write made on the source from its creation, and is ENABLED after the switch back)."""
    from dataclasses import replace

    return replace(plan, source_key=plan.target_key, target_key=plan.source_key, peer_id=plan.reverse_peer_id,
                   reverse_peer_id=plan.peer_id)


def rollback_verified_ms(cutover_summary: Mapping[str, Any], tables: Sequence[str]) -> dict[str, int | None]:
    """Per table, when the cut-over run's last clean full verification started: `post_verify` (after the switch)
    if it succeeded, else `verify` (before it; a rollback often follows a post_verify that found a difference).
    The rollback's bounded checks start there: the reverse peer has kept the source current since."""
    phases = cutover_summary.get("phases") or {}
    started: dict[str, int | None] = {}
    for table in tables:
        found = [p.get("started_ms") for name in ("post_verify", "verify")
                 for p in [(phases.get(table) or {}).get(name) or {}] if p.get("status") == "success"]
        started[table] = next((ms for ms in found if ms is not None), None)
    return started


# --------------------------------------------------------------------------------------------------
# Facts and their evaluation (pure)


@dataclass(frozen=True)
class SwitchFacts:
    source_key: str  # cluster keys as the connections give them now
    target_key: str
    forward_peer: "Peer | None"
    reverse_peer: "Peer | None"
    target_scopes: Mapping[str, Mapping[str, int | None]]  # table -> family -> REPLICATION_SCOPE (target)
    drained: bool | None = None  # None: not checked
    drain_reasons: tuple[str, ...] = ()
    drain_notes: tuple[str, ...] = ()
    sync_replication: "Any" = None  # replication.sync_replication.Support when asked for, else None
    source_versions: Mapping[str, str | None] | None = None  # servername -> HBase version (rs/ znodes); None: not read
    metadata: "Any" = None  # metadata.CutoverMetadata: grants, quotas, RS groups compared (None: not read)


def _key(text: str) -> str:
    from hbase_migration.clusters.cluster import ClusterKey

    return str(ClusterKey.parse(str(text)).normalized())


def _scope_reasons(side: str, scopes: Mapping[str, Mapping[str, int | None]], tables: Sequence[str],
                   why: str) -> list[str]:
    reasons = []
    for table in tables:
        families = scopes.get(table)
        if families is None:
            reasons.append(f"table {table} does not exist on the {side}")
            continue
        off = sorted(f for f, scope in families.items() if scope != 1)
        if off:
            reasons.append(f"table {table} on the {side}: REPLICATION_SCOPE is not 1 for famil"
                           f"{'y' if len(off) == 1 else 'ies'} {', '.join(off)}: {why}")
    return reasons


def expected_reverse_config(source_key: str, tables: Sequence[str],
                            configuration: Mapping[str, str] | None = None) -> PeerConfig:
    """The reverse peer (on the target): to the source's cluster key, scoped to the cut-over tables; towards a
    Kerberized source in another realm, with the source's region server principal in its CONFIG."""
    return PeerConfig(cluster_key=source_key, table_cfs={t: [] for t in tables},
                      configuration=dict(configuration or {}))


def same_reverse_peer(found: PeerConfig, wanted: PeerConfig) -> bool:
    """Whether `found` is the reverse peer `wanted` describes, the cross-realm principal setting aside: it follows
    from the clusters' security (security.peer_principal_config), which a check that knows only the plan cannot
    derive; what the peer replicates, and where to, must be equal."""
    from hbase_migration.clusters.security import PEER_PRINCIPAL_KEY

    def bare(config: PeerConfig) -> PeerConfig:
        return config.replace(configuration={k: v for k, v in config.configuration.items() if k != PEER_PRINCIPAL_KEY})

    return bare(found) == bare(wanted)


def evaluate_cutover(plan: SwitchPlan, facts: SwitchFacts, owner: str = DEFAULT_OWNER) -> list[str]:
    """Everything that stops a cut-over, each with what to do (empty: go)."""
    reasons = _cluster_reasons(plan, facts, f"migration run {plan.migration_run_id!r}", "migrated from",
                               "migrated to")
    fwd = facts.forward_peer
    if fwd is None:
        reasons.append(f"forward peer {plan.peer_id} does not exist on the source: nothing replicates the source's "
                       "edits to the target (was the cut-over already done, or the peer removed by hand?)")
    else:
        if not is_ours(fwd, owner):
            reasons.append(f"peer {plan.peer_id} on the source was not created by this toolkit (owner mark "
                           f"{fwd.owner!r})")
        if fwd.enabled is not True:
            reasons.append(f"forward peer {plan.peer_id} is {fwd.state}: enable it and let it drain before a "
                           "cut-over")
        if _key(str(fwd.config.cluster_key)) != _key(plan.target_key):
            reasons.append(f"forward peer {plan.peer_id} ships to {fwd.config.cluster_key}, not to the target "
                           f"{plan.target_key}")
        missing = [t for t in plan.tables if t not in fwd.config.table_cfs]
        if missing:
            reasons.append(f"forward peer {plan.peer_id} does not replicate {', '.join(missing)} (its TABLE_CFS: "
                           f"{', '.join(fwd.config.table_cfs) or 'none'})")
    if facts.drained is False:
        reasons.append(f"forward peer {plan.peer_id} has not drained: " + "; ".join(facts.drain_reasons[:5]))
    reasons += _reverse_reasons(plan, facts.reverse_peer, owner)
    sync = facts.sync_replication
    if sync is not None:
        if not sync.supported:
            reasons += [f"synchronous replication: {r}" for r in sync.reasons]
        else:
            reasons.append("synchronous replication: these clusters have it (HBase 3.0+), but this DAG does not drive "
                           "it yet: run the toolkit's executor instead, `python -m hbase_migration sync-replication "
                           "run --kind setup`, then `--kind planned` (docs/cutover.md#the-executor)")
    elif hbase_3_servers(facts.source_versions):
        reasons.append("the source runs HBase 3.x (" + ", ".join(hbase_3_servers(facts.source_versions)[:3]) + "), "
                       "which keeps replication queues in the hbase:replication table, not in ZooKeeper: the "
                       "window's drain (replication/wal_drain.py reads the queues from ZooKeeper) would see none "
                       "and call the forward peer drained at once. Cut over with synchronous replication instead: "
                       "`python -m hbase_migration sync-replication run` (docs/cutover.md#the-executor)")
    reasons += _scope_reasons("target", facts.target_scopes, plan.tables,
                              "the reverse peer would not ship the target's edits back, a rollback would lose "
                              "them (alter it to 1 on the target first)")
    if facts.metadata is not None:  # a writer the fence stops on the source must be able to write on the target
        reasons += list(facts.metadata.unwritable)
    return reasons


def hbase_3_servers(versions: Mapping[str, str | None] | None) -> list[str]:
    """The region servers running HBase 3.0 or later (`servername (version)`), sorted."""
    from hbase_migration.replication.sync_replication import FIRST_RELEASE, parse_version

    return sorted(f"{s} ({v})" for s, v in (versions or {}).items()
                  if parse_version(v) is not None and parse_version(v) >= FIRST_RELEASE)


def _cluster_reasons(plan: SwitchPlan, facts: SwitchFacts, run: str, from_: str, to: str) -> list[str]:
    """A connection that points at another cluster than the one `run` used (a changed connection between the
    migration and its cut-over would switch the wrong clusters)."""
    return [f"the {side} connection points at {seen}, but {run} {verb} {planned}"
            for side, seen, planned, verb in (("source", facts.source_key, plan.source_key, from_),
                                               ("target", facts.target_key, plan.target_key, to))
            if _key(seen) != _key(planned)]


def _reverse_reasons(plan: SwitchPlan, rev: "Peer | None", owner: str) -> list[str]:
    if rev is None:
        return []
    wanted = expected_reverse_config(plan.source_key, plan.tables)
    if not is_ours(rev, owner):
        return [f"reverse peer id {plan.reverse_peer_id} is already taken on the target by a peer this toolkit "
                f"did not create (owner mark {rev.owner!r}, ships to {rev.config.cluster_key}): choose another "
                "reverse_peer_id"]
    if not same_reverse_peer(rev.config, wanted):
        return [f"reverse peer id {plan.reverse_peer_id} is already taken on the target by another config ("
                + "; ".join(rev.config.differences(wanted)) + "): choose another reverse_peer_id, or remove that "
                "peer if it is a leftover"]
    return []


def evaluate_rollback(plan: SwitchPlan, facts: SwitchFacts, owner: str = DEFAULT_OWNER) -> list[str]:
    """Everything that stops a rollback (empty: go). The reverse peer must exist, be ours, ENABLED, ship to the
    source with this cut-over's tables."""
    reasons = _cluster_reasons(plan, facts, f"cut-over run {plan.from_run_id!r}", "was from", "was to")
    rev = facts.reverse_peer
    if rev is None:
        reasons.append(f"no reverse peer {plan.reverse_peer_id} on the target: nothing has kept the source "
                       "current since the cut-over, a rollback would lose every write made on the target since "
                       "(was the cut-over rejected, or already rolled back?)")
        return reasons
    reasons += _reverse_reasons(plan, rev, owner)
    if rev.enabled is not True:
        reasons.append(f"reverse peer {plan.reverse_peer_id} is {rev.state}: enable it (python -m hbase_migration "
                       "peer enable --source <target conn> --peer-id ...) so its backlog ships, then roll back")
    reasons += _forward_again_reasons(plan, facts.forward_peer, owner)
    return reasons


def _forward_again_reasons(plan: SwitchPlan, fwd: "Peer | None", owner: str) -> list[str]:
    """The forward peer the rollback re-creates: absent (the cut-over retired it), or already the one it makes (a
    re-run). A forward peer still there with other tables (a cut-over of `only_tables` narrowed it: the others'
    migration goes on through it) is refused: it cannot be made DISABLED for these tables alone."""
    if fwd is None:
        return []
    wanted = expected_reverse_config(plan.target_key, plan.tables)
    if is_ours(fwd, owner) and same_reverse_peer(fwd.config, wanted):
        return []
    return [f"forward peer {plan.peer_id} is still on the source ({'ours' if is_ours(fwd, owner) else 'not ours'}, "
            f"{fwd.state}, TABLE_CFS {', '.join(fwd.config.table_cfs) or 'all'}, to {fwd.config.cluster_key}): the "
            "rollback re-creates it DISABLED for the tables rolled back and cannot while it replicates other "
            "tables (a cut-over of only_tables narrowed it); finish or cut over those tables first, or remove it"]


def retire_action(forward_tables: Sequence[str], cut_tables: Sequence[str]) -> tuple[str, dict[str, list[str]]]:
    """What happens to the forward peer once the clients are on the target: `remove` when every table it
    replicates was cut over, else `narrow` to the others (their migration goes on)."""
    left = {t: [] for t in forward_tables if t not in set(cut_tables)}
    return ("narrow", left) if left else ("remove", {})


# --------------------------------------------------------------------------------------------------
# I/O


def _scopes(cluster: "Cluster", tables: Sequence[str]) -> dict[str, dict[str, int | None]]:
    from hbase_migration.migration.tables import describe_present, existing_tables

    present = existing_tables(cluster, tables)
    described = describe_present(cluster, tables, present)
    return {t: {f.name: f.replication_scope for f in s.families} for t, s in described.items() if s is not None}


def drain_check(cluster: "Cluster", peer_id: str, thresholds: Any, *, interval_s: float = 2.0,
                timeout_s: float = 60.0, clock: Callable[[], float] = time.time,
                sleep: Callable[[float], None] = time.sleep) -> Any:
    """Poll the drain decision until it holds or `timeout_s` passes; the last `lag.Poll`."""
    from hbase_migration.replication import lag

    history: list[dict[str, Any]] = []
    deadline = clock() + timeout_s
    while True:
        result = lag.poll(cluster, peer_id, history, thresholds, clock())
        history = result.history
        log.info("%s", result.log_line())
        if result.decision.drained or clock() >= deadline:
            return result
        sleep(interval_s)


def gather(source: "Cluster", target: "Cluster", plan: SwitchPlan, *, thresholds: Any = None,
           drain_timeout_s: float = 60.0, drain_interval_s: float = 2.0, sync_replication: bool = False
           ) -> SwitchFacts:
    """The facts a cut-over (or rollback) is judged on: both peers from ZooKeeper, the families' scopes through
    the shells, (cut-over, with `thresholds`) the forward peer's drain, polled up to `drain_timeout_s`, and (with
    `sync_replication`) whether both clusters have synchronous replication (their region servers' versions)."""
    from hbase_migration.replication import peer_admin

    with peer_admin(source) as admin:
        forward = admin.get_peer(plan.peer_id)
    with peer_admin(target) as admin:
        reverse = admin.get_peer(plan.reverse_peer_id)
    drained, reasons, notes = None, (), ()
    if thresholds is not None and forward is not None and forward.enabled:
        poll = drain_check(source, plan.peer_id, thresholds, interval_s=drain_interval_s, timeout_s=drain_timeout_s)
        drained, reasons, notes = poll.decision.drained, poll.decision.reasons, poll.decision.notes
    sync = None
    from hbase_migration.replication.sync_replication import check_support, region_server_versions

    if sync_replication:
        sync = check_support(source, target)
    versions = sync.versions["source"] if sync is not None and sync.versions else region_server_versions(source)
    return SwitchFacts(str(source.cluster_key), str(target.cluster_key), forward, reverse,
                       _scopes(target, plan.tables) if plan.kind == "cutover" else {},
                       drained, tuple(reasons), tuple(notes), sync, versions)


def add_reverse_peer(target: "Cluster", source: "Cluster", plan: SwitchPlan, *, enabled: bool = True
                     ) -> dict[str, Any]:
    """The reverse peer on the target, to the source, scoped to the cut-over tables: ENABLED, or DISABLED
    (`enabled=False`: the cut-over creates it before the freeze, so every target write from then on is kept in
    the target's WALs, and enables it at the switch). First time: the target's WALs are rolled, so only edits made
    from now on ship (a new peer reads its servers' current WAL from the start, which may still hold the copy's
    writes, whose cluster id is the target's own). The forward peer's edits carry the source's cluster id and are
    never shipped back. Re-run: the peer is found and left (enabled if it was disabled and `enabled`)."""
    from hbase_migration.clusters.security import peer_principal_config
    from hbase_migration.migration.freeze import roll_wals
    from hbase_migration.replication import peer_admin

    config = expected_reverse_config(str(source.cluster_key), plan.tables,
                                     peer_principal_config(target.security, source.security))
    with peer_admin(target) as admin:
        existing = admin.get_peer(plan.reverse_peer_id)
        rolled: list[str] = []
        if existing is None:
            rolled = roll_wals(target, admin.zk)
            log.info("rolled the WALs of %d target region server(s) before adding the reverse peer: %s",
                     len(rolled), ", ".join(rolled))
        result = admin.add_peer(plan.reverse_peer_id, config, enabled=enabled)
        if enabled and result.peer is not None and result.peer.enabled is False:
            result = admin.enable_peer(plan.reverse_peer_id)
    data = result.to_dict()
    data["rolled_wals_on"] = rolled
    return data


def retire_forward_peer(source: "Cluster", plan: SwitchPlan) -> dict[str, Any]:
    """After the approval: remove the forward peer, or narrow it to the tables not cut over. Idempotent: an
    absent peer (removed by an earlier try) is reported as such."""
    from hbase_migration.replication import peer_admin

    with peer_admin(source) as admin:
        current = admin.get_peer(plan.peer_id)
        if current is None:
            return {"operation": "retire_forward_peer", "peer_id": plan.peer_id, "outcome": "absent",
                    "message": f"peer {plan.peer_id} is not on the source (already removed)", "changed": False}
        action, left = retire_action(list(current.config.table_cfs), plan.tables)
        if action == "remove":
            result = admin.remove_peer(plan.peer_id)
        else:
            result = admin.set_table_cfs(plan.peer_id, left)
    data = result.to_dict()
    data["action"] = action
    return data


def remove_reverse_peer(target: "Cluster", plan: SwitchPlan) -> dict[str, Any]:
    """Remove the reverse peer from the target when it is the one this cut-over made (ours, its config); absent
    is fine (a re-run, or never created); another peer under that id is left alone and reported."""
    from hbase_migration.replication import peer_admin

    wanted = expected_reverse_config(plan.source_key, plan.tables)
    with peer_admin(target) as admin:
        found = admin.get_peer(plan.reverse_peer_id)
        if found is None:
            return {"operation": "remove_peer", "peer_id": plan.reverse_peer_id, "outcome": "absent",
                    "changed": False, "message": f"peer {plan.reverse_peer_id} is not on the target"}
        if not is_ours(found, admin.owner) or not same_reverse_peer(found.config, wanted):
            return {"operation": "remove_peer", "peer_id": plan.reverse_peer_id, "outcome": "not_ours",
                    "changed": False, "message": f"peer {plan.reverse_peer_id} on the target is not this cut-over's "
                    "reverse peer: left alone"}
        return admin.remove_peer(plan.reverse_peer_id).to_dict()


def lift_fence(source: "Cluster", plan: SwitchPlan) -> Any:
    """Give the source its writes back after a cut-over, the way it was fenced: READONLY off (`freeze.set_readonly`,
    read back), or the principals' WRITE as the cut-over found it (`plan.unfence_statements`, run through the
    shell's JRuby Admin; a grant without merge sets exactly those actions, so a re-run changes nothing more)."""
    from hbase_migration.migration import freeze

    if plan.freeze_method == "acl":
        if not plan.unfence_statements:
            raise ValueError("an ACL cut-over's plan without the statements that give WRITE back")
        from hbase_migration.clusters import channels

        channels.shell(source, freeze.jruby_admin_statements() + list(plan.unfence_statements),
                       timeout_s=max(source.shell_timeout_s, 300.0))
        return {"method": "acl", "statements": list(plan.unfence_statements)}
    return {"method": "readonly", "tables": freeze.set_readonly(source, plan.tables, False)}


def acl_precheck(cluster: "Cluster", tables: Sequence[str], exempt: Sequence[str] = (),
                 canary: str | None = None, superusers: Sequence[str] | None = None) -> Any:
    """The ACL fence as the window would plan it, read before the approval (one shell call and the servers' /conf):
    `freeze.AclFence` whose `refusals` name each superuser not exempt, each WRITE that cannot be fenced, a
    `user_permission` line not understood, or a /conf not read. Changes nothing."""
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.hbase_conf import ConfUnreadable, read_server_confs
    from hbase_migration.clusters.shell import ShellCommandError
    from hbase_migration.migration import freeze

    try:
        found, unreadable = freeze.acl_conf_refusal(read_server_confs(cluster), superusers)
    except ConfUnreadable as e:
        return freeze.AclFence((), (), (), (f"hbase.superuser cannot be read, so who passes every permission check "
                                            f"is unknown: {e}",))
    if unreadable:
        return freeze.AclFence((), (), (), (unreadable,))
    prelude = freeze.jruby_admin_statements()
    try:
        grants, members = freeze.read_permissions(lambda s: channels.shell(cluster, prelude + list(s)), tables,
                                                  exempt)
    except freeze.UnreadablePermissions as e:
        return freeze.AclFence((), (), (), (str(e),))
    except ShellCommandError as e:
        return freeze.AclFence((), (), (), (f"the permissions of {cluster.name} cannot be read "
                                            f"({' '.join(str(e).split())[:300]}): an ACL fence needs HBase's "
                                            "AccessController; freeze with READONLY",))
    fence = freeze.acl_fence_plan(tables, grants, exempt, superusers=found, namespace_tables=members,
                                  canary=canary)
    if not fence.refusals and not fence.fenced:
        return freeze.AclFence((), (), (), (f"no principal holds WRITE on {', '.join(tables)}: an ACL fence would "
                                            "stop nothing (who writes?); use READONLY",))
    return fence
