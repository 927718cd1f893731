"""The executor of a synchronous-replication plan (HBase 3.0+, `replication/sync_replication.py`): set the sync peer
up, switch the clusters over (planned), or take over from a dead source (failover), one step at a time with each
cluster's `SYNC_REPLICATION_STATE` read back through its shell after every step.

`python -m hbase_migration sync-replication run --source A --target B --peer-id ID --kind setup|planned|failover`

State-driven, so a re-run resumes: each cluster's peer is read (`list_peers`), `remaining(kind, source, target)`
says which steps are left from those states, or refuses (nothing changed) when the plan cannot start from them. The
kinds, as (source, target) states:

* setup: (ABSENT, ABSENT) -> add on the target (DOWNGRADE_ACTIVE) -> target STANDBY -> add on the source
  (DOWNGRADE_ACTIVE) -> source ACTIVE = (ACTIVE, STANDBY). The target first: it refuses client writes of the
  tables (STANDBY) before the source's writes become synchronous, and while the target's new peer sits in
  DOWNGRADE_ACTIVE for one transition HBase refuses to apply replicated edits of the tables there (the existing
  asynchronous forward peer's shipping is retried, nothing lost; the source's sync peer does not exist yet).
  Each add names the *other* cluster's remote WAL directory and carries the toolkit's owner mark.
* planned: (ACTIVE, STANDBY) -> source STANDBY (the write fence: its clients are refused) -> target
  DOWNGRADE_ACTIVE (replays the remote WALs: every write the source acknowledged is there) -> the switch command
  (clients to the target) -> target ACTIVE = (STANDBY, ACTIVE). The write freeze is the first two transitions plus
  the switch command; target ACTIVE comes after the clients write there. Its rollback is the same kind the other
  way round (`--source B --target A`).
* failover: the target STANDBY, the source dead (`DOWN`: no region server or master in ZooKeeper, or no answer
  to `list_peers` within the read timeout) -> target DOWNGRADE_ACTIVE -> the switch command -> (once the old source
  is back: it comes back ACTIVE) source STANDBY -> target ACTIVE. With the source still down after the switch
  the run ends there, saying so (`pending`): re-run the same command once it is back. A source that answers and
  is ACTIVE is refused (both clusters would take writes: that is a planned switch), unless `force`.

What it guarantees: a step is run only when HBase allows it from the states read (`sync_replication.ALLOWED`),
every step's result is read back before the next one, and a refused or failed step stops the run with both
clusters' states read again and the next command named. What it cannot: know the state a dead source was in
when it died; the failover keeps every acknowledged write only if the source was ACTIVE then (the `setup` state).
"""
from __future__ import annotations

import contextlib
import logging
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.replication import sync_replication as sr

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

ABSENT = "ABSENT"  # no peer with that id on the cluster
DOWN = "DOWN"  # the cluster does not answer
KINDS = ("setup", "planned", "failover")
A, DA, S = sr.ACTIVE, sr.DOWNGRADE_ACTIVE, sr.STANDBY


class SyncSwitchRefused(ValueError):
    """The plan cannot start from the states read (or the clusters cannot do it): nothing was changed."""


@dataclass(frozen=True)
class Action:
    side: str  # "source" | "target"
    op: str  # "add" | "transit" | "switch"
    state: str = ""  # the side's state after it (add: DOWNGRADE_ACTIVE; switch: "")
    why: str = ""

    def describe(self) -> str:
        if self.op == "switch":
            return "the switch command (clients to the target)"
        if self.op == "add":
            return f"add the sync peer on the {self.side} ({DA})"
        return f"{self.side} -> {self.state}"


@dataclass(frozen=True)
class Remaining:
    actions: tuple[Action, ...] = ()
    done: bool = False
    pending: str = ""  # what the run waits for that it cannot do (failover: the source down)


def _add(side: str, why: str) -> Action:
    return Action(side, "add", DA, why)


def _to(side: str, state: str, why: str) -> Action:
    return Action(side, "transit", state, why)


SWITCH = Action("target", "switch", "", "the clients move to the target: it takes writes (DOWNGRADE_ACTIVE)")
WHY = {
    "target_standby": "the target refuses client writes of the tables and takes the source's edits",
    "source_active": "the source writes every edit to the remote WAL on the target's HDFS as well: synchronous",
    "source_standby": "the write fence: the source refuses its clients; all it acknowledged is in the remote WALs",
    "target_downgrade": "the target replays the remote WALs (every acknowledged write), then takes writes",
    "target_active": "synchronous the other way: the target writes remote WALs to the source's HDFS",
    "old_source_standby": "the old source (back ACTIVE, as it was) refuses clients; it may hold edits no client saw "
                          "acknowledged",
}


def _state_text(source: str, target: str) -> str:
    return f"source {source}, target {target}"


def remaining(kind: str, source: str, target: str, *, switched: bool = False, force: bool = False) -> Remaining:
    """The steps left of `kind` from the peer's states on the source and the target (`ACTIVE`, `DOWNGRADE_ACTIVE`,
    `STANDBY`, `ABSENT`, `DOWN`; `NONE`: an ordinary peer under that id). `switched`: the switch command already ran
    in this run. Raises SyncSwitchRefused (one line) when the plan cannot go on from these states."""
    now = _state_text(source, target)
    for side, state in (("source", source), ("target", target)):
        if state == sr.NONE:
            raise SyncSwitchRefused(f"the peer on the {side} is an ordinary (asynchronous) peer, not a synchronous "
                                    "one: choose the sync peer's id")
    switch = () if switched else (SWITCH,)
    if kind == "setup":
        if (source, target) == (A, S):
            return Remaining(done=True)
        if DOWN in (source, target):
            raise SyncSwitchRefused(f"setup needs both clusters up ({now})")
        if source not in (ABSENT, DA) or target not in (ABSENT, DA, S):
            raise SyncSwitchRefused(f"setup cannot start from {now}: it goes from no peer (or DOWNGRADE_ACTIVE, a "
                                    "peer just added) to source ACTIVE, target STANDBY")
        steps: list[Action] = []
        if target == ABSENT:
            steps.append(_add("target", "the target's peer names the source's remote WAL directory"))
        if target != S:
            steps.append(_to("target", S, WHY["target_standby"]))
        if source == ABSENT:
            steps.append(_add("source", "the source's peer names the target's remote WAL directory"))
        steps.append(_to("source", A, WHY["source_active"]))
        return Remaining(tuple(steps))
    if kind == "planned":
        if (source, target) == (S, A):
            return Remaining(done=True)
        if source == DOWN:
            raise SyncSwitchRefused(f"the source does not answer ({now}): a planned switch needs both clusters; "
                                    "if it is lost, use --kind failover")
        if target == DOWN:
            raise SyncSwitchRefused(f"the target does not answer ({now}): a planned switch needs both clusters")
        path = {(A, S): (_to("source", S, WHY["source_standby"]), _to("target", DA, WHY["target_downgrade"]),
                         *switch, _to("target", A, WHY["target_active"])),
                (S, S): (_to("target", DA, WHY["target_downgrade"]), *switch, _to("target", A, WHY["target_active"])),
                (S, DA): (*switch, _to("target", A, WHY["target_active"]))}
        if (source, target) not in path:
            raise SyncSwitchRefused(f"a planned switch cannot start from {now}: it starts from source ACTIVE, target "
                                    "STANDBY (or a switch stopped half-way: source STANDBY, target STANDBY or "
                                    "DOWNGRADE_ACTIVE)")
        return Remaining(path[(source, target)])
    if kind == "failover":
        if (source, target) == (S, A):
            return Remaining(done=True)
        if target == S:
            if source == A and not force:
                raise SyncSwitchRefused(f"the source answers and is ACTIVE ({now}): a failover now would leave both "
                                        "clusters taking writes; use --kind planned (or --force if the source's "
                                        "clients are fenced another way)")
            if source in (DA, ABSENT) and not force:
                raise SyncSwitchRefused(f"the source answers and is {source} ({now}): it is not writing remote WALs, "
                                        "the target may lack its latest writes; a failover keeps every "
                                        "acknowledged write only from an ACTIVE source")
            if source not in (DOWN, S, A, DA, ABSENT):
                raise SyncSwitchRefused(f"a failover cannot start from {now}")
            first = (_to("target", DA, WHY["target_downgrade"]), *switch)
            if source == S:
                return Remaining((*first, _to("target", A, WHY["target_active"])))
            return Remaining(first, pending="" if source == A else "the old source back up")
        if target == DA:
            if source == DOWN:
                return Remaining(switch, pending="the old source back up")
            if source == A:
                return Remaining((*switch, _to("source", S, WHY["old_source_standby"]),
                                  _to("target", A, WHY["target_active"])))
            if source == S:
                return Remaining((*switch, _to("target", A, WHY["target_active"])))
        raise SyncSwitchRefused(f"a failover cannot start from {now}: it starts from the target STANDBY (the source "
                                "dead), or resumes from the target DOWNGRADE_ACTIVE")
    raise SyncSwitchRefused(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")


def check_allowed(side_state: str, action: Action) -> None:
    """HBase's own rule for one transition (sync_replication.ALLOWED), checked before it is sent."""
    if action.op == "transit" and action.state not in sr.ALLOWED.get(side_state, frozenset()):
        raise SyncSwitchRefused(f"the {action.side} cannot go from {side_state} to {action.state}")


# --------------------------------------------------------------------------------------------------
# Peer rows and the statements (pure)


@dataclass(frozen=True)
class PeerRead:
    state: str  # ACTIVE | DOWNGRADE_ACTIVE | STANDBY | NONE | ABSENT | DOWN
    cluster_key: str | None = None
    remote_dir: str | None = None
    detail: str = ""  # DOWN: why
    tables: tuple[str, ...] | None = None  # TABLE_CFS's tables as `ns.table` (None: not read)


def qualified(table: str) -> str:
    """`t` -> `default.t`, `ns:t` -> `ns.t`: how HBase 3.x's list_peers prints a TABLE_CFS table."""
    return table.replace(":", ".", 1) if ":" in table else f"default.{table}"


def peer_from_list(stdout: str, peer_id: str) -> PeerRead:
    """The peer's row in `list_peers` output (HBase 3.x shell)."""
    from hbase_migration.replication.shell_parsers import parse_list_peers

    for peer in parse_list_peers(stdout):
        if peer.peer_id == peer_id:
            state = peer.sync_replication_state or sr.NONE
            tables = tuple(sorted(qualified(t) if "." not in t else t for t in peer.table_cfs_map()))
            return PeerRead(state, peer.cluster_key, peer.remote_root_dir, tables=tables)
    return PeerRead(ABSENT)


def peer_mismatch(side: str, read: PeerRead, other_key: str, remote_dir: str | None,
                  tables: Sequence[str] = ()) -> str | None:
    """Why the peer found on `side` is not this plan's sync peer (another cluster, another remote WAL dir, other
    tables than `tables`), or None."""
    from hbase_migration.clusters.cluster import ClusterKey

    if read.state in (ABSENT, DOWN):
        return None
    try:
        same = ClusterKey.parse(str(read.cluster_key)).normalized() == ClusterKey.parse(other_key).normalized()
    except Exception:  # an unparsable key is not ours
        same = False
    if not same:
        return f"the peer on the {side} ships to {read.cluster_key}, not to {other_key}"
    if remote_dir is not None and read.state != sr.NONE and (read.remote_dir or "").rstrip("/") != remote_dir.rstrip(
            "/"):
        return f"the peer on the {side} names remote WAL dir {read.remote_dir}, not {remote_dir}"
    wanted = sorted(qualified(t) for t in tables)
    if wanted and read.tables is not None and sorted(read.tables) != wanted:
        return (f"the peer on the {side} replicates {', '.join(read.tables) or 'no table'}, not "
                f"{', '.join(wanted)}")
    return None


def remote_wal_dir_from_conf(conf: Mapping[str, str]) -> str:
    """`<hbase.rootdir>/remoteWALs` as a full URI (fs.defaultFS before a rootdir without scheme)."""
    rootdir = (conf.get("hbase.rootdir") or "").strip()
    if not rootdir:
        raise ValueError("the cluster's configuration has no hbase.rootdir")
    match = re.match(r"^([a-z][a-z0-9+.-]*://[^/\s]+)(/.*)?$", rootdir)
    if match:
        return sr.remote_wal_dir(match.group(1), match.group(2) or "/")
    default_fs = (conf.get("fs.defaultFS") or "").strip()
    if not default_fs:
        raise ValueError(f"hbase.rootdir {rootdir!r} has no file system and fs.defaultFS is not set")
    return sr.remote_wal_dir(default_fs.rstrip("/"), rootdir)


TRY_PREFIX = "HM_" + "SYNC_"


def guarded(statement: str) -> str:
    """`statement` run inside begin/rescue, so a refusal is printed (and parsed) instead of ending the shell
    session: `HM_SYNC_OK`, or `HM_SYNC_FAILED <class>: <first line>`. The markers are built in Ruby so the shell's
    echo of the statement does not carry them."""
    return (f"begin; {statement}; puts 'HM_' + 'SYNC_OK'; rescue Exception, java.lang.Throwable => e; "
            "puts 'HM_' + 'SYNC_FAILED ' + e.class.to_s + ': ' + e.message.to_s.lines.first.to_s.strip; end")


def guarded_outcome(stdout: str) -> str | None:
    """None when the guarded statement ran; HBase's error when it was refused. ValueError when no marker."""
    said = re.findall(r"HM_SYNC_(FAILED [^\n]*|OK)", stdout)
    if not said:
        raise ValueError("the shell printed no outcome for the statement")
    return None if said[-1] == "OK" else said[-1][len("FAILED "):]


# --------------------------------------------------------------------------------------------------
# The run (the sides' I/O behind a small interface, so the loop is tested without clusters)


@dataclass
class Report:
    kind: str
    peer_id: str
    start: dict[str, str]
    steps: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, str] = field(default_factory=dict)
    outcome: str = ""  # done | pending | nothing_to_do | stopped
    message: str = ""
    next_command: str = ""
    freeze_s: float | None = None  # planned: source STANDBY sent -> the switch command done

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "peer_id": self.peer_id, "start": self.start, "steps": self.steps,
                "final": self.final, "outcome": self.outcome, "message": self.message,
                "next_command": self.next_command, "freeze_s": self.freeze_s}

    def text(self) -> str:
        lines = [f"{self.kind} of sync peer {self.peer_id}: started from {_state_text(**self.start)}"]
        for s in self.steps:
            lines.append(f"  {s['action']:52} {s['seconds']:6.1f}s  {s['result']}")
        lines.append(f"{self.outcome}: {self.message}")
        if self.freeze_s is not None:
            lines.append(f"write freeze (source STANDBY sent -> switch command done): {self.freeze_s:.1f}s")
        if self.next_command:
            lines.append(f"next: {self.next_command}")
        return "\n".join(lines)


class StepFailed(RuntimeError):
    """A step HBase refused, or whose read-back is not what it should be; `.report` says what was left."""

    def __init__(self, report: Report):
        super().__init__(report.message)
        self.report = report


def execute(kind: str, peer_id: str, sides: Mapping[str, Any], *, switch: Callable[[], None] | None = None,
            force: bool = False, command: str = "", clock: Callable[[], float] = time.monotonic) -> Report:
    """Run what `remaining` says, step by step. `sides[name]` (source, target) offers `read() -> PeerRead`,
    `add() -> None` and `transit(state) -> str | None` (HBase's error, or None). Raises SyncSwitchRefused before
    any change; StepFailed with the report when a step was refused or read back wrong."""
    states = {name: sides[name].read().state for name in ("source", "target")}
    report = Report(kind, peer_id, dict(states))
    switched = False
    fence_started: float | None = None
    first = True
    while True:
        try:
            left = remaining(kind, states["source"], states["target"], switched=switched, force=force)
        except SyncSwitchRefused as e:
            if first:
                raise
            return _stopped(report, sides, f"from {_state_text(**states)}: {e}", command)
        if first and (left.done or (not left.actions and left.pending)):
            report.final = dict(states)
            report.outcome = "nothing_to_do" if left.done else "pending"
            report.message = (f"already {_state_text(**states)}" if left.done else
                              f"{_state_text(**states)}: waiting for {left.pending}")
            report.next_command = "" if left.done else f"once {left.pending}: {command}"
            return report
        first = False
        if not left.actions and left.pending and states["source"] == DOWN:
            states["source"] = sides["source"].read().state  # the old source may be back by now
            left = remaining(kind, states["source"], states["target"], switched=switched, force=force)
        if left.done or not left.actions:
            report.final = dict(states)
            if left.done:
                report.outcome, report.message = "done", f"{_state_text(**states)}"
            else:
                report.outcome = "pending"
                report.message = (f"{_state_text(**states)}; the target takes writes; waiting for {left.pending}")
                report.next_command = f"once {left.pending}: {command}"
            return report
        action = left.actions[0]
        started = clock()
        if action.op == "switch":
            try:
                if switch is not None:
                    switch()
            except Exception as e:  # noqa: BLE001 - said in the report
                report.steps.append({"action": action.describe(), "seconds": round(clock() - started, 1),
                                     "result": f"failed: {e}"})
                return _stopped(report, sides, f"the switch command failed: {e}", command, after_switch=False)
            switched = True
            report.steps.append({"action": action.describe(), "seconds": round(clock() - started, 1),
                                 "result": "ran" if switch is not None else "no switch command given"})
            if fence_started is not None:
                report.freeze_s = round(clock() - fence_started, 1)
            continue
        side = sides[action.side]
        if action.op == "transit":
            check_allowed(states[action.side], action)
        if kind == "planned" and action.side == "source" and action.state == S:
            fence_started = started
        error = side.add() if action.op == "add" else side.transit(action.state)
        seen = side.read().state
        seconds = round(clock() - started, 1)
        states[action.side] = seen
        if error is not None or seen != action.state:
            said = f"HBase refused it: {error}" if error else f"read back {seen}, not {action.state}"
            report.steps.append({"action": action.describe(), "seconds": seconds, "result": said})
            return _stopped(report, sides, f"{action.describe()}: {said}", command, known=states)
        report.steps.append({"action": action.describe(), "seconds": seconds, "result": f"read back {seen}"})
        if fence_started is not None and kind == "planned" and action.side == "target" and action.state == DA \
                and switch is None:
            report.freeze_s = round(clock() - fence_started, 1)


def _stopped(report: Report, sides: Mapping[str, Any], why: str, command: str, *, after_switch: bool = True,
             known: Mapping[str, str] | None = None) -> Report:
    """Both clusters' states read again, and what to do next."""
    final = {}
    for name in ("source", "target"):
        try:
            final[name] = sides[name].read().state
        except Exception as e:  # noqa: BLE001 - the report says it could not be read
            final[name] = (known or {}).get(name, "UNKNOWN") + f" (not read again: {type(e).__name__})"
    report.final = final
    report.outcome = "stopped"
    report.message = f"stopped: {why}. Left: {_state_text(**final)}"
    try:
        remaining(report.kind, final["source"], final["target"])
        report.next_command = f"fix the cause, then re-run (it resumes from these states): {command}"
    except SyncSwitchRefused as e:
        report.next_command = (f"not resumable by this command ({e}); see docs/cutover.md#the-executor for "
                               "putting the peer back by hand")
    raise StepFailed(report)


# --------------------------------------------------------------------------------------------------
# I/O: a cluster's shell session


class ShellSide:
    """One cluster's side of the run: an open shell session (its JVM start paid before the first step), the
    peer read with `list_peers`, a transition sent guarded (a refusal is read, the session lives on)."""

    def __init__(self, name: str, cluster: "Cluster", peer_id: str, *, timeout_s: float = 600.0,
                 read_timeout_s: float = 180.0, may_be_down: bool = False, add_statement: str | None = None,
                 expect: tuple[str, str | None, tuple[str, ...]] | None = None):
        self.name, self.cluster, self.peer_id = name, cluster, peer_id
        self.timeout_s, self.read_timeout_s, self.may_be_down = timeout_s, read_timeout_s, may_be_down
        self.add_statement = add_statement
        self.expect = expect  # (the other cluster's key, its remote WAL dir, the tables): checked after an add
        self._stack = contextlib.ExitStack()
        self._session: Any = None

    def __enter__(self) -> "ShellSide":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()
        self._session = None

    def answers(self) -> str | None:
        """None when ZooKeeper shows a master or a region server of the cluster, else why it is taken as down."""
        from hbase_migration.clusters import zk

        try:
            with zk.connect(self.cluster, timeout=min(self.cluster.timeout_s, 15.0)) as client:
                servers = zk.live_region_servers(client, self.cluster.znode_parent)
                master = client.exists(zk.join(self.cluster.znode_parent, "master"))
        except Exception as e:  # noqa: BLE001 - a ZooKeeper that does not answer: the cluster is down
            return f"its ZooKeeper does not answer ({type(e).__name__})"
        if not servers and not master:
            return "no master and no region server in ZooKeeper"
        return None

    def session(self) -> Any:
        from hbase_migration.clusters import channels

        if self._session is None or not self._session.alive:
            self._stack.close()
            self._stack = contextlib.ExitStack()
            self._session = self._stack.enter_context(channels.shell_session(self.cluster,
                                                                             timeout_s=self.read_timeout_s))
        return self._session

    def run(self, statements: Sequence[str], timeout_s: float | None = None) -> str:
        return self.session().run(statements, timeout_s=timeout_s or self.timeout_s).stdout

    def read(self) -> PeerRead:
        if self.may_be_down:
            why = self.answers()
            if why is not None:
                return PeerRead(DOWN, detail=why)
        try:
            return peer_from_list(self.run(["list_peers"], self.read_timeout_s), self.peer_id)
        except Exception as e:  # noqa: BLE001 - a cluster that may be dead: DOWN; else the caller's failure
            if not self.may_be_down:
                raise
            self.close()
            return PeerRead(DOWN, detail=f"list_peers got no answer: {type(e).__name__}: {str(e)[:200]}")

    def probe_shell(self) -> bool | None:
        return sr.parse_shell_probe(self.run([sr.shell_probe_statement()], self.read_timeout_s))

    def transit(self, state: str) -> str | None:
        return guarded_outcome(self.run([guarded(sr.transit_statement(self.peer_id, state))]))

    def add(self) -> str | None:
        if not self.add_statement:
            raise ValueError(f"no add_peer statement for the {self.name}")
        error = guarded_outcome(self.run([guarded(self.add_statement)]))
        if error is None and self.expect is not None:  # read back: what HBase made of the statement
            return peer_mismatch(self.name, self.read(), *self.expect)
        return error


def run(source: "Cluster", target: "Cluster", peer_id: str, kind: str, *, tables: Sequence[str] = (),
        remote_dirs: Mapping[str, str] | None = None, switch_command: str | None = None, force: bool = False,
        read_timeout_s: float = 180.0, command: str = "", owner: str | None = None) -> Report:
    """The executor (module doc) on two clusters: support checked (the region servers' versions; the shells
    asked), the states read, then each step. `remote_dirs`: {"source": the remote WAL dir on the source's HDFS,
    "target": on the target's} (setup; default: each cluster's `<hbase.rootdir>/remoteWALs` from its /conf)."""
    from hbase_migration.replication.model import DEFAULT_OWNER, OWNER_KEY, validate_peer_id

    validate_peer_id(peer_id)
    if isinstance(tables, str):
        raise TypeError("tables must be a sequence of table names, not one string")
    if kind not in KINDS:
        raise SyncSwitchRefused(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "setup" and not tables:
        raise SyncSwitchRefused("setup needs the tables (--tables T1,T2): a sync peer is scoped to tables")
    clusters = {"source": source, "target": target}
    dirs: dict[str, str] = dict(remote_dirs or {})
    if kind == "setup":
        for name in ("source", "target"):
            if name not in dirs:
                dirs[name] = _remote_dir_of(clusters[name])
    mark = {OWNER_KEY: owner or DEFAULT_OWNER}
    other = {"source": "target", "target": "source"}
    with contextlib.ExitStack() as stack:
        sides = {}
        for name in ("source", "target"):
            add = None
            if kind == "setup":
                add = sr.add_sync_peer_statement(peer_id, str(clusters[other[name]].cluster_key), dirs[other[name]],
                                                 tables, configuration=mark)
            sides[name] = stack.enter_context(ShellSide(
                name, clusters[name], peer_id, read_timeout_s=read_timeout_s,
                may_be_down=kind == "failover" and name == "source", add_statement=add,
                expect=(str(clusters[other[name]].cluster_key), dirs.get(other[name]), tuple(tables))))
        _check_support(sides, kind)
        for name in ("source", "target"):
            read = sides[name].read()
            wrong = peer_mismatch(name, read, str(clusters[other[name]].cluster_key),
                                  dirs.get(other[name]) if kind == "setup" else None, tables)
            if wrong:
                raise SyncSwitchRefused(wrong + ": choose another peer id, or remove that peer")
        switch = None
        if switch_command:
            from hbase_migration.migration.cutover_window import command_switch

            phase_switch = command_switch(switch_command, {"HBASE_SYNC_PEER": peer_id,
                                                           "HBASE_CUTOVER_KIND": f"sync-{kind}"})

            def switch() -> None:
                phase_switch("switch")
        return execute(kind, peer_id, sides, switch=switch, force=force, command=command)


def _check_support(sides: Mapping[str, ShellSide], kind: str) -> None:
    """Both clusters' region servers run HBase 3.0+ and their shells have the transit command (a source that is
    down in a failover is not asked)."""
    versions, shells = {}, {}
    for name, side in sides.items():
        if side.may_be_down and side.answers() is not None:
            continue
        versions[name] = sr.region_server_versions(side.cluster)
        if side.may_be_down and not versions[name]:
            versions.pop(name)
            continue
        try:
            shells[name] = side.probe_shell()
        except Exception:  # noqa: BLE001 - a failover's source that stopped answering
            if not side.may_be_down:
                raise
    support = sr.support(versions, shells)
    if not support.supported:
        raise SyncSwitchRefused("synchronous replication is not possible here: " + "; ".join(support.reasons))


def _remote_dir_of(cluster: "Cluster") -> str:
    from hbase_migration.clusters import zk
    from hbase_migration.clusters.hbase_conf import read_cluster_conf

    with zk.connect(cluster, timeout=cluster.timeout_s) as client:
        conf, _ = read_cluster_conf(cluster, client)
    return remote_wal_dir_from_conf(conf)
