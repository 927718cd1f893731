"""The nemesis's schedule and the migration's phases: pure functions, no I/O.

A schedule is a pure function of (seed, duration, fault kinds): the same three give the same faults, in the same
phases, at the same offsets, on the same targets, with the same hold times and settings. Each fault is tied to a
phase of the migration (peer add, copy, catch-up, verify) and fires `offset_s` after that phase began, as the
DAG run's task states show it; so every phase is hit, whatever its length on the day.

Only `random.Random(seed).random()` is drawn from (never `choice`/`randrange`/`shuffle`, whose algorithms
Python may change between versions), so a schedule stays the same across Python releases.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

PHASES = ("peer_add", "copy", "catch_up", "verify")
# How the faults beyond one per phase are shared out among the phases.
PHASE_WEIGHTS = {"peer_add": 0.15, "copy": 0.40, "catch_up": 0.20, "verify": 0.25}
# Where in a phase a fault falls: within a fixed window for the phases whose length does not grow with the data
# (the steps before the copy take ~25 s on the deployment, the catch-up ~15-30 s: three drained polls 5 s apart),
# within a share of `duration_s` for the copy and the verification (at least MIN_WINDOW_S).
FIXED_WINDOWS_S = {"peer_add": 15.0, "catch_up": 15.0}
DURATION_SHARES = {"copy": 0.45, "verify": 0.30}
MIN_WINDOW_S = 5.0
MEAN_INTERVAL_S = 30.0  # one fault per this many seconds of `duration_s`, at least one per phase

# The tasks of each phase (hbase_table_migration's task ids), in DAG order.
PHASE_TASKS = {
    "peer_add": ("open_run", "preflight", "create_target_tables", "plan_batches", "proceed_unless_dry_run",
                 "batch.wait_turn", "batch.add_peer"),
    "copy": ("batch.copy",),
    "catch_up": ("batch.enable_peer", "batch.wait_drained"),
    "verify": ("batch.verify", "report"),
}
# A task instance in one of these states has started (or been handed to an executor): its phase has begun.
STARTED = frozenset({"queued", "running", "success", "failed", "up_for_retry", "up_for_reschedule", "deferred",
                     "restarting"})


@dataclass(frozen=True)
class KindSpec:
    """A fault kind: what it does, its possible targets, how long it holds (seconds, drawn uniformly), its
    settings (each drawn uniformly from its range) and what "recovered" means for it."""
    name: str
    does: str
    targets: tuple[str, ...]
    hold_s: tuple[float, float]
    recovered: str
    settings: Mapping[str, tuple[float, float]] = field(default_factory=dict)


def _gateways() -> tuple[str, ...]:
    return tuple(f"{dc}:thrift2:{i}" for dc in ("dc1", "dc2") for i in (0, 1))


KINDS: dict[str, KindSpec] = {k.name: k for k in (
    KindSpec("rs_kill", "crash a region server of the source (dc1) or the target (dc2) at once, no flush (kill -9);"
             " restart it in its slot after the hold",
             tuple(f"{dc}:rs:{i}" for dc in ("dc1", "dc2") for i in range(3)), (5.0, 20.0),
             "the region server is back in ZooKeeper's rs/ and every region of the migrated tables on that cluster "
             "answers a read through a Thrift2 gateway"),
    KindSpec("gateway_kill", "kill a Thrift2 gateway (its port refuses, its connections drop); restart it after "
             "the hold", _gateways(), (3.0, 15.0),
             "the restarted gateway answers a Thrift2 call"),
    KindSpec("gateway_latency", "add latency to every call of one Thrift2 gateway for the hold", _gateways(),
             (10.0, 40.0), "once the latency is lifted, a call through that gateway answers within 1 s",
             {"latency_ms": (200.0, 1500.0)}),
    KindSpec("gateway_reset", "reset every open connection of one Thrift2 gateway now, then reset each call's "
             "connection with a probability for the hold (before the call runs or after it ran, unanswered)",
             _gateways(), (10.0, 40.0), "once the resets stop, a call through that gateway answers",
             {"reset_probability": (0.05, 0.30)}),
    KindSpec("worker_kill", "SIGKILL a Celery worker's whole session (its pool, task supervisors, spark-submit and "
             "the Spark driver); start it again after the hold", ("celery-worker-1", "celery-worker-2"),
             (5.0, 20.0),
             "the restarted worker is ready and every task instance that ran on the killed worker has a later try "
             "running or finished (Airflow failed the lost try after task_instance_heartbeat_timeout and retried "
             "it), or the run ended"),
    KindSpec("scheduler_kill", "SIGKILL the Airflow scheduler; start it again after the hold", ("scheduler",),
             (3.0, 15.0), "the restarted scheduler's heartbeat is healthy (/api/v2/monitor/health)"),
    KindSpec("triggerer_kill", "SIGKILL the Airflow triggerer (and its trigger runner); start it again after the hold",
             ("triggerer",), (3.0, 15.0),
             "the restarted triggerer's heartbeat is healthy and a deferred task's trigger runs again"),
    KindSpec("spark_worker_kill", "SIGKILL a Spark standalone worker and its executors; start it again after the "
             "hold", ("spark-worker-1", "spark-worker-2"), (5.0, 20.0),
             "the master lists every configured worker ALIVE again"),
    KindSpec("zk_expire", "expire the next ZooKeeper session the toolkit opens to the source, in the middle of "
             "its next request (seen through chaos/zkproxy.py; ended server-side by a twin connection presenting "
             "its id and password, as tests/conftest.py's expire_session does)", ("toolkit-session",), (0.0, 0.0),
             "the toolkit holds a ZooKeeper session again: the same process opened a new one, or (a process that "
             "ended) any toolkit process did"),
    KindSpec("postgres_restart", "stop PostgreSQL (Airflow's metadata database and the ledger) as a crash does "
             "(pg_ctl stop -m immediate) and start it again after the hold", ("postgres",), (2.0, 10.0),
             "PostgreSQL accepts connections and the API server reports the metadata database healthy"),
    # Real HBase only: real processes and real sockets (chaos/beds.py RealBed)
    KindSpec("rs_pause", "SIGSTOP a region server for the hold (past ZooKeeper's 20 s session it is declared dead "
             "and its regions move; continued, it aborts), then SIGCONT it; started again if it ended",
             tuple(f"{dc}:rs:{i}" for dc in ("dc1", "dc2") for i in range(3)), (10.0, 40.0),
             "the region server is back in ZooKeeper's rs/ and every region of the migrated tables on that cluster "
             "answers a read through a Thrift2 gateway"),
    KindSpec("master_kill", "SIGKILL the active master (its backup takes over); start it again after the hold, "
             "as the new backup", ("dc1:master", "dc2:master"), (5.0, 20.0),
             "the killed master runs again, ZooKeeper names an active master and a master call (list the tables) "
             "answers"),
    KindSpec("master_pause", "SIGSTOP the active master for the hold, then SIGCONT it (past its session the backup "
             "has taken over and it aborts: started again)", ("dc1:master", "dc2:master"), (5.0, 30.0),
             "the paused master runs, ZooKeeper names an active master and a master call answers"),
    KindSpec("gateway_pause", "SIGSTOP one gateway host's JVM (its Thrift1 and Thrift2 servers hang, connections "
             "open) for the hold, then SIGCONT it", _gateways(), (5.0, 20.0),
             "a Thrift2 call through that gateway answers"),
    KindSpec("datanode_kill", "SIGKILL a DataNode (every block has a replica on the other); start it again after "
             "the hold", tuple(f"{dc}:dn:{i}" for dc in ("dc1", "dc2") for i in range(2)), (5.0, 20.0),
             "the DataNode is live in its NameNode again and every region of the migrated tables answers a read"),
    KindSpec("datanode_pause", "SIGSTOP a DataNode for the hold (writes through it stall until HDFS's client "
             "times out and leaves it out of the pipeline), then SIGCONT it",
             tuple(f"{dc}:dn:{i}" for dc in ("dc1", "dc2") for i in range(2)), (5.0, 30.0),
             "the DataNode is live in its NameNode and every region of the migrated tables answers a read"),
    KindSpec("net_partition", "cut the toolkit off from one endpoint for the hold: every open connection through "
             "its proxy reset, every new one rejected (a gateway, a NameNode's WebHDFS, the source's ZooKeeper)",
             (*_gateways(), "dc1:webhdfs", "dc2:webhdfs", "dc1:zookeeper"), (3.0, 15.0),
             "a call through the proxy answers again (Thrift2, WebHDFS GETFILESTATUS, a ZooKeeper session)"),
    KindSpec("net_latency", "add latency to every request the toolkit sends a NameNode's WebHDFS or the source's "
             "ZooKeeper, for the hold", ("dc1:webhdfs", "dc2:webhdfs", "dc1:zookeeper"), (10.0, 40.0),
             "once the latency is lifted, a call through the proxy answers within 1 s",
             {"latency_ms": (200.0, 1500.0)}),
)}
# What the stand-in can do (its control API); real HBase can do every kind.
STAND_IN_KINDS = ("rs_kill", "gateway_kill", "gateway_latency", "gateway_reset", "worker_kill", "scheduler_kill",
                  "triggerer_kill", "spark_worker_kill", "zk_expire", "postgres_restart")
BACKEND_KINDS = {"realhbase": tuple(KINDS), "minihbase": STAND_IN_KINDS}


@dataclass(frozen=True)
class PlannedFault:
    index: int          # 1-based, in the schedule's order (phase, then offset)
    phase: str
    offset_s: float     # after the phase began
    kind: str
    target: str
    hold_s: float
    settings: Mapping[str, float]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["settings"] = dict(self.settings)
        return d


class ScheduleError(ValueError):
    """A bad seed, duration or fault kind list (names the input and the fix)."""


def parse_kinds(text: str | Sequence[str], backend: str | None = None) -> tuple[str, ...]:
    """`rs_kill,gateway_kill` (or a list) checked against KINDS (and what `backend` can do: BACKEND_KINDS); `all`
    means every kind (the backend's)."""
    known = BACKEND_KINDS[backend] if backend else tuple(KINDS)
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    if names == ["all"]:
        return known
    if not names:
        raise ScheduleError(f"--faults is empty: name one or more of {', '.join(known)} (or 'all')")
    unknown = [n for n in names if n not in KINDS]
    if unknown:
        raise ScheduleError(f"--faults: unknown fault kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
    other = [n for n in names if n not in known]
    if other:
        raise ScheduleError(f"--faults: {', '.join(other)} need real HBase (the stand-in can do "
                            f"{', '.join(known)}): drop --stand-in or those kinds")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ScheduleError(f"--faults names {', '.join(dupes)} more than once: name each kind once")
    return tuple(names)


def fault_count(duration_s: float) -> int:
    return max(len(PHASES), round(duration_s / MEAN_INTERVAL_S))


def phase_window_s(phase: str, duration_s: float) -> float:
    """Offsets into `phase` are drawn from [0, this)."""
    if phase in FIXED_WINDOWS_S:
        return FIXED_WINDOWS_S[phase]
    return max(MIN_WINDOW_S, DURATION_SHARES[phase] * duration_s)


def make_schedule(seed: int, duration_s: float, kinds: Sequence[str]) -> tuple[PlannedFault, ...]:
    """The faults of one run. `fault_count(duration_s)` faults: the first `len(PHASES)` one per phase, the others
    in phases drawn by PHASE_WEIGHTS; kinds dealt from shuffled rounds of `kinds` (so each kind appears once
    there are at least as many faults as kinds)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ScheduleError(f"--seed must be an integer >= 0, got {seed!r}")
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float)) or not duration_s > 0:
        raise ScheduleError(f"--duration must be a number of seconds > 0, got {duration_s!r}")
    kinds = parse_kinds(kinds)
    rng = random.Random(seed)
    draw: Callable[[], float] = rng.random
    n = fault_count(duration_s)

    phases = list(PHASES)
    cumulative, total = [], 0.0
    for p in PHASES:
        total += PHASE_WEIGHTS[p]
        cumulative.append(total)
    while len(phases) < n:
        u = draw() * total
        phases.append(next(p for p, c in zip(PHASES, cumulative) if u < c))

    dealt: list[str] = []
    while len(dealt) < n:  # a Fisher-Yates shuffle of the kinds per round, from draw() alone
        round_ = list(kinds)
        for i in range(len(round_) - 1, 0, -1):
            j = int(draw() * (i + 1))
            round_[i], round_[j] = round_[j], round_[i]
        dealt.extend(round_)

    faults = []
    for phase, kind in zip(phases, dealt[:n]):
        spec = KINDS[kind]
        offset = round(draw() * phase_window_s(phase, duration_s), 1)
        target = spec.targets[int(draw() * len(spec.targets))]
        lo, hi = spec.hold_s
        hold = round(lo + (hi - lo) * draw(), 1)
        settings = {}
        for name, (a, b) in sorted(spec.settings.items()):
            value = a + (b - a) * draw()
            settings[name] = round(value) if name.endswith("_ms") else round(value, 2)
        faults.append((PHASES.index(phase), offset, kind, target, hold, settings))
    faults.sort(key=lambda f: (f[0], f[1]))
    return tuple(PlannedFault(i + 1, PHASES[p], off, kind, target, hold, settings)
                 for i, (p, off, kind, target, hold, settings) in enumerate(faults))


def phase_of(states: Mapping[str, Sequence[str | None]]) -> str:
    """The migration's phase from its task instances' states ({task_id: [state of each map index]}): the last
    phase (in DAG order) one of whose tasks has started. Before any has, "peer_add" (the run is queued)."""
    current = "peer_add"
    for phase in PHASES:
        if any(s in STARTED for task in PHASE_TASKS[phase] for s in states.get(task, ())):
            current = phase
    return current
