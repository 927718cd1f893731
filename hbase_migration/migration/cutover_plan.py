"""The cut-over's plan and its automatic decisions (pure): the options a person approves before writes stop, the
abort conditions that end a cut-over without a person in the window, and the timeline of the write freeze.

gh-ost's lesson: the lock is short because every slow step happens before it. So the order (docs/cutover.md):

    approve the plan                   a person: tables, freeze method, switch command, the abort conditions below
    full verification                  every version of every table, clients still writing to the source
    reverse peer, DISABLED             target -> source, after a WAL roll on the target: every target write from now
                                       on is kept (HBase's cluster ids keep the forward peer's edits from looping);
                                       one from before is found by the verification or the bounded check (stops)
    ---- the window (one task: `cutover_window.run_window`) ----
    shell sessions opened              the shells' JVM start (10 to 20 s) paid before the freeze
    lag gate                           the forward peer's lag under `max_lag_ms`, else abort (nothing changed)
    live pass                          the bounded check from the verification's start, writes still on: abort on a
                                       difference that stays `lag_wait_s` (nothing changed); its start is the next
                                       bound
    FREEZE: fence                      READONLY (every region reopens) or WRITE revoked (ACL, no region reopens)
            WAL roll + drain           every queue of the forward peer lets go of the WALs from before the roll
            bounded check              what changed since the live pass, on both sides, writes fenced
            switch                     `switch_command`: the clients write to the target from now on
    ---- after the freeze ----
    reverse peer ENABLED               the target's writes (early ones too) ship to the source
    READONLY: source unfrozen          a READONLY source refuses replicated edits too; ACL: the fence stays
    full verification again            both sides live, the reverse peer keeping the source current; rollback is
                                       one step away
    forward peer retired

Abort conditions (`AbortConditions`), each decided here from gathered facts: the forward peer's lag above
`max_lag_ms` for longer than `lag_wait_s` before the freeze; a verification difference (the full one, the live
pass, or the bounded check in the freeze); the freeze's fenced steps running past `max_freeze_s`; the switch
command failing. An abort before the fence changes nothing; one after it lifts the fence (the clients stay on the
source) and says the state of both sides and both peers.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from hbase_migration.replication.metrics import PeerLagSnapshot

READONLY, ACL = "readonly", "acl"
FREEZE_METHODS = (READONLY, ACL)


@dataclass(frozen=True)
class AbortConditions:
    """When a cut-over stops by itself (docs/cutover.md, "Abort conditions").

    max_lag_ms: before the freeze, the forward peer's ageOfLastShippedOp must be at most this on every queue.
    lag_wait_s: how long the lag may stay above it before the cut-over is aborted (nothing changed yet); also how
      long the live pass goes on re-reading versions that have not reached the target yet.
    max_freeze_s: the fenced steps (fence, WAL roll and drain, bounded check, switch) must be done within this
      after the fence started, else the fence is lifted and the clients stay on the source.
    skew_margin_ms: how far the region servers' clocks (which stamp the cells) may be behind the toolkit's; the
      bounded check reaches back this much before the last verification's start.
    recompare_sleep_s: the live pass re-reads its differing rows after this pause (edits in flight), and again
      every such pause while some still differ, for up to `lag_wait_s`: the lag metrics can look drained while a
      replication batch is held up (HBase 2.6's ageOfLastShippedOp is a histogram whose max drops to 0 in an
      interval where nothing shipped).
    """

    max_lag_ms: int = 10_000
    lag_wait_s: float = 300.0
    max_freeze_s: float = 120.0
    skew_margin_ms: int = 5_000
    recompare_sleep_s: float = 2.0

    def __post_init__(self) -> None:
        for name in ("max_lag_ms", "skew_margin_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        for name in ("lag_wait_s", "max_freeze_s", "recompare_sleep_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                    or (name == "max_freeze_s" and value == 0):
                raise ValueError(f"{name} must be a number of seconds {'> 0' if name == 'max_freeze_s' else '>= 0'}"
                                 f", got {value!r}")

    def describe(self) -> list[str]:
        return [f"the forward peer's lag stays above {self.max_lag_ms} ms for {self.lag_wait_s:g} s before the "
                "freeze (nothing changed)",
                "a verification difference: the full verification, the live pass before the freeze, or the bounded "
                f"check in the freeze (from the last verification's start minus {self.skew_margin_ms} ms)",
                f"the fenced steps not done within {self.max_freeze_s:g} s (the fence is lifted, clients stay on "
                "the source)",
                "the switch command fails (the fence is lifted; the command runs again with "
                "HBASE_CUTOVER_PHASE=abort)"]


@dataclass(frozen=True)
class WindowOptions:
    """How the window runs: the freeze method and what it needs, and the abort conditions."""

    freeze_method: str = READONLY
    freeze_exempt: tuple[str, ...] = ()  # ACL: principals whose WRITE is left alone (e.g. a replication tool)
    conditions: AbortConditions = field(default_factory=AbortConditions)
    caught_up_queue_size: int = 1  # the lag gate's: WALs of a caught-up queue, one per WAL group (the run spec's)
    superusers: tuple[str, ...] | None = None  # ACL: hbase.superuser as the operator attests it (/conf masks it)
    canary: str = "hbase_migration_canary"  # ACL: the toolkit's principal whose refused write proves the fence
    canary_keytab: str | None = None  # ACL on Kerberos: the canary's keytab (on the host the window runs on)
    flush_before: bool = True  # READONLY: flush the tables before the freeze (less to flush when regions close)
    unfreeze_after_switch: bool = True  # READONLY: the source writable again once the clients are on the target
    parallel_checks: int = 16  # the bounded check's pool: key ranges (one per region) compared at once
    drain_poll_s: float = 0.1
    session_open_s: float = 300.0  # a shell session not open by then: one shell call per batch instead

    def __post_init__(self) -> None:
        if self.freeze_method not in FREEZE_METHODS:
            raise ValueError(f"freeze_method must be one of {', '.join(FREEZE_METHODS)}, got {self.freeze_method!r}")
        if not isinstance(self.caught_up_queue_size, int) or self.caught_up_queue_size < 0:
            raise ValueError(f"caught_up_queue_size must be an integer >= 0, got {self.caught_up_queue_size!r}")
        if isinstance(self.parallel_checks, bool) or not isinstance(self.parallel_checks, int) \
                or not 1 <= self.parallel_checks <= 256:
            raise ValueError(f"parallel_checks must be an integer from 1 to 256, got {self.parallel_checks!r}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["freeze_exempt"] = list(self.freeze_exempt)
        d["superusers"] = None if self.superusers is None else list(self.superusers)
        return d

    @property
    def canary_user(self) -> str:
        """The name HBase's AccessController knows the canary by (its grants): a Kerberos principal's short name
        (`name/host@REALM` -> `name`, as auth_to_local's DEFAULT rule maps the cluster's own realm)."""
        return self.canary.split("@", 1)[0].split("/", 1)[0]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "WindowOptions":
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "conditions" in values and isinstance(values["conditions"], Mapping):
            values["conditions"] = AbortConditions(**values["conditions"])
        values["freeze_exempt"] = tuple(values.get("freeze_exempt") or ())
        if values.get("superusers") is not None:
            values["superusers"] = tuple(values["superusers"])
        return cls(**values)


@dataclass(frozen=True)
class Roles:
    """Who is who in a window. The cut-over's: the source fenced, the forward peer drained in the freeze, the
    reverse peer (DISABLED until the switch) keeping the target's writes. A rollback runs the same window with the
    roles swapped (`cutover.rollback_window_plan`): the target fenced, the reverse peer drained, the re-created
    forward peer keeping the source's writes. The names say which in logs, errors and step names."""

    kind: str = "cut-over"
    fenced: str = "source"  # the side the clients leave: fenced in the window
    joined: str = "target"  # the side the clients move to
    drained: str = "forward peer"  # on the fenced side, drained inside the freeze
    kept: str = "reverse peer"  # on the joined side: DISABLED until the switch, then ENABLED
    unfreeze_step: str = "unfreeze_source"
    enable_step: str = "enable_reverse_peer"
    lag_step: str = "reverse_lag_gate"


CUTOVER_ROLES = Roles()
ROLLBACK_ROLES = Roles("rollback", "target", "source", "reverse peer", "forward peer", "unfreeze_target",
                       "enable_forward_peer", "forward_lag_gate")


class CutoverAborted(RuntimeError):
    """The cut-over (or rollback) stopped by one of its abort conditions; `state` says what was left (fence lifted
    or not, both peers' states), `condition` which condition."""

    def __init__(self, condition: str, message: str, state: Mapping[str, Any] | None = None,
                 kind: str = "cut-over"):
        self.condition = condition
        self.state = dict(state or {})
        super().__init__(f"{kind} aborted ({condition}): {message}")


# --------------------------------------------------------------------------------------------------
# Decisions


def lag_gate(snapshot: "PeerLagSnapshot", max_lag_ms: int, caught_up_queue_size: int = 1) -> list[str]:
    """Why the forward peer is not close enough to drained to freeze now (empty: go).

    Close enough: the peer ENABLED, every live server read, each normal queue at most one WAL past its caught-up
    size, its ageOfLastShippedOp at most `max_lag_ms` unless nothing read is waiting to ship (an idle source's
    HBase 2.x gauge keeps the age of the last shipped edit), no recovered queue. The in-window drain then takes
    seconds."""
    reasons = []
    if snapshot.peer_state != "ENABLED":
        reasons.append(f"forward peer {snapshot.peer_id} is {snapshot.peer_state}")
    if not snapshot.live_servers:
        reasons.append("no live region server")
    readings = {r.servername: r for r in snapshot.servers}
    for server in snapshot.live_servers:
        reading = readings.get(server)
        if reading is None or reading.error is not None:
            reasons.append(f"{server}: /jmx unreadable{': ' + reading.error if reading and reading.error else ''}")
            continue
        queues = [q for q in reading.queues if q.peer_id == snapshot.peer_id]
        for q in queues:
            if q.recovered:
                reasons.append(f"{server}: recovered queue {q.queue_id} still shipping a dead server's WALs")
                continue
            if q.size_of_log_queue is not None and q.size_of_log_queue > caught_up_queue_size + 1:
                reasons.append(f"{server} queue {q.queue_id}: {q.size_of_log_queue:g} WALs queued")
            idle = None not in (q.log_edits_read, q.log_edits_filtered, q.shipped_ops) and \
                q.log_edits_read - q.log_edits_filtered <= q.shipped_ops
            if q.age_ms is not None and q.age_ms > max_lag_ms and not idle:
                reasons.append(f"{server} queue {q.queue_id}: ageOfLastShippedOp {q.age_ms:g} ms > {max_lag_ms} ms")
        if not any(not q.recovered for q in queues):
            reasons.append(f"{server}: no replication source for peer {snapshot.peer_id}")
    return reasons


def past_deadline(fence_started: float, now: float, conditions: AbortConditions) -> bool:
    return now - fence_started > conditions.max_freeze_s


@dataclass(frozen=True)
class Step:
    name: str
    started: float  # epoch seconds
    ended: float

    @property
    def seconds(self) -> float:
        return self.ended - self.started


# the steps while the clients cannot write; lift_joined_fence is one of them before the switch or (plans from
# before refence_statements) after it: the clients moved there are refused until it ends
FENCED_STEPS = ("fence", "wal_roll", "drain", "bounded_check", "lift_joined_fence", "switch")


def timeline(steps: Sequence[Step]) -> dict[str, Any]:
    """Each step's seconds, and the write freeze as the toolkit sees it (fence start -> switch done) with each
    fenced step's share of it (the clients' own freeze, last source write -> first target write, is the
    writer's to measure)."""
    out: dict[str, Any] = {"steps": [{"step": s.name, "started": round(s.started, 3), "seconds": round(s.seconds, 3)}
                                     for s in steps]}
    fenced = [s for s in steps if s.name in FENCED_STEPS]
    if fenced:
        total = max(s.ended for s in fenced) - min(s.started for s in fenced)
        out["freeze_s"] = round(total, 3)
        out["freeze_shares"] = {s.name: round(s.seconds / total, 3) if total > 0 else 0.0 for s in fenced}
    return out


def switch_environment(run_id: str, phase: str, tables: Sequence[str], source_key: str, target_key: str,
                       kind: str = "cutover") -> dict[str, str]:
    """The environment `switch_command` runs with: what it switches, whether to (`switch`) or back (`abort`), and
    for which kind of run (`cutover`; `rollback`: the clients move from SOURCE back to TARGET, the keys given
    as the clients move: a rollback passes the migration's target as SOURCE)."""
    if phase not in ("switch", "abort"):
        raise ValueError(f"phase must be 'switch' or 'abort', got {phase!r}")
    if kind not in ("cutover", "rollback"):
        raise ValueError(f"kind must be 'cutover' or 'rollback', got {kind!r}")
    return {"HBASE_CUTOVER_RUN_ID": run_id, "HBASE_CUTOVER_PHASE": phase, "HBASE_CUTOVER_TABLES": ",".join(tables),
            "HBASE_CUTOVER_SOURCE": source_key, "HBASE_CUTOVER_TARGET": target_key, "HBASE_CUTOVER_KIND": kind}
