"""The synchronous-replication executor's logic (migration/sync_switch.py): the steps left from each pair of states,
the refusals, the run loop over stand-in sides (what it does on a refused step, a wrong read-back, a dead source),
the guarded statements and the remote WAL dir (pure)."""
from __future__ import annotations

import pytest

from hbase_migration.migration import sync_switch as ss
from hbase_migration.replication import sync_replication as sr

A, DA, S, NONE, ABSENT, DOWN = "ACTIVE", "DOWNGRADE_ACTIVE", "STANDBY", "NONE", "ABSENT", "DOWN"


def names(left: ss.Remaining) -> list[str]:
    return [a.describe() for a in left.actions]


SWITCH = "the switch command (clients to the target)"


@pytest.mark.parametrize("source, target, steps", [
    (ABSENT, ABSENT, ["add the sync peer on the target (DOWNGRADE_ACTIVE)", "target -> STANDBY",
                      "add the sync peer on the source (DOWNGRADE_ACTIVE)", "source -> ACTIVE"]),
    (ABSENT, DA, ["target -> STANDBY", "add the sync peer on the source (DOWNGRADE_ACTIVE)", "source -> ACTIVE"]),
    (ABSENT, S, ["add the sync peer on the source (DOWNGRADE_ACTIVE)", "source -> ACTIVE"]),
    (DA, S, ["source -> ACTIVE"]),
    (DA, ABSENT, ["add the sync peer on the target (DOWNGRADE_ACTIVE)", "target -> STANDBY", "source -> ACTIVE"]),
])
def test_setup_goes_target_first_and_resumes(source, target, steps):
    assert names(ss.remaining("setup", source, target)) == steps


def test_setup_done_and_refused():
    assert ss.remaining("setup", A, S).done
    for source, target in ((A, ABSENT), (A, DA), (S, S), (ABSENT, A), (DOWN, ABSENT), (ABSENT, DOWN)):
        with pytest.raises(ss.SyncSwitchRefused):
            ss.remaining("setup", source, target)


@pytest.mark.parametrize("source, target, steps", [
    (A, S, ["source -> STANDBY", "target -> DOWNGRADE_ACTIVE", SWITCH, "target -> ACTIVE"]),
    (S, S, ["target -> DOWNGRADE_ACTIVE", SWITCH, "target -> ACTIVE"]),
    (S, DA, [SWITCH, "target -> ACTIVE"]),
])
def test_planned_from_its_start_and_from_half_way(source, target, steps):
    assert names(ss.remaining("planned", source, target)) == steps
    assert names(ss.remaining("planned", source, target, switched=True)) == [s for s in steps if s != SWITCH]


def test_every_planned_and_setup_path_is_one_hbase_allows():
    for kind, start in (("planned", (A, S)), ("setup", (DA, DA))):
        states = {"source": start[0], "target": start[1]}
        for action in ss.remaining(kind, *start).actions:
            if action.op == "transit":
                ss.check_allowed(states[action.side], action)
            if action.op != "switch":
                states[action.side] = action.state
    assert (states["source"], states["target"]) == (A, S)  # the setup's end


@pytest.mark.parametrize("source, target, match", [
    (S, A, None), (A, A, "cannot start from source ACTIVE, target ACTIVE"), (A, DA, "cannot start"),
    (DA, S, "cannot start"), (DOWN, S, "use --kind failover"), (A, DOWN, "target does not answer"),
    (NONE, S, "ordinary"), (ABSENT, ABSENT, "cannot start"),
])
def test_planned_refusals(source, target, match):
    if match is None:
        assert ss.remaining("planned", source, target).done
    else:
        with pytest.raises(ss.SyncSwitchRefused, match=match):
            ss.remaining("planned", source, target)


def test_failover_from_a_dead_source_waits_for_it_then_finishes():
    first = ss.remaining("failover", DOWN, S)
    assert names(first) == ["target -> DOWNGRADE_ACTIVE", SWITCH] and first.pending == "the old source back up"
    still_down = ss.remaining("failover", DOWN, DA, switched=True)
    assert (still_down.actions, still_down.pending) == ((), "the old source back up")
    back = ss.remaining("failover", A, DA, switched=True)  # the old source returns ACTIVE, as it was
    assert names(back) == ["source -> STANDBY", "target -> ACTIVE"]
    assert names(ss.remaining("failover", S, DA, switched=True)) == ["target -> ACTIVE"]
    assert ss.remaining("failover", S, A).done
    assert names(ss.remaining("failover", S, S)) == ["target -> DOWNGRADE_ACTIVE", SWITCH, "target -> ACTIVE"]


def test_failover_refuses_a_live_active_or_async_source_unless_forced():
    with pytest.raises(ss.SyncSwitchRefused, match="both clusters taking writes; use --kind planned"):
        ss.remaining("failover", A, S)
    with pytest.raises(ss.SyncSwitchRefused, match="not writing remote WALs"):
        ss.remaining("failover", DA, S)
    assert names(ss.remaining("failover", A, S, force=True))[0] == "target -> DOWNGRADE_ACTIVE"
    for source, target in ((DA, DA), (A, A), (DOWN, A), (DOWN, ABSENT)):
        with pytest.raises(ss.SyncSwitchRefused):
            ss.remaining("failover", source, target)
    with pytest.raises(ss.SyncSwitchRefused, match="kind must be one of"):
        ss.remaining("rollback", A, S)


class Side:
    """A stand-in cluster: a peer state, what a transition HBase refuses, an add."""

    def __init__(self, state: str, refuse: dict | None = None, lie: dict | None = None, down_until: int = 0):
        self.state, self.refuse, self.lie = state, refuse or {}, lie or {}
        self.sent: list[str] = []
        self.reads = 0
        self.down_until = down_until  # reads answered DOWN before the cluster is back (in its old state)

    def read(self):
        self.reads += 1
        if self.reads <= self.down_until:
            return ss.PeerRead(DOWN, detail="no master")
        return ss.PeerRead(self.state, "zk:2181:/hbase", "hdfs://nn/hbase/remoteWALs")

    def transit(self, state):
        self.sent.append(state)
        if state in self.refuse:
            return self.refuse[state]
        self.state = self.lie.get(state, state)
        return None

    def add(self):
        self.sent.append("add")
        self.state = DA
        return None


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


def test_a_planned_run_reads_back_each_step_and_measures_the_freeze():
    sides = {"source": Side(A), "target": Side(S)}
    switched = []
    report = ss.execute("planned", "p1", sides, switch=lambda: switched.append(True), clock=Clock())
    assert (sides["source"].sent, sides["target"].sent, switched) == ([S], [DA, A], [True])
    assert report.outcome == "done" and report.final == {"source": S, "target": A}
    assert [s["result"] for s in report.steps] == ["read back STANDBY", "read back DOWNGRADE_ACTIVE", "ran",
                                                   "read back ACTIVE"]
    assert report.freeze_s is not None and report.freeze_s > 0


def test_a_bad_start_changes_nothing():
    sides = {"source": Side(S), "target": Side(A)}
    with pytest.raises(ss.SyncSwitchRefused):
        ss.execute("setup", "p1", sides)
    assert sides["source"].sent == sides["target"].sent == []
    nothing = ss.execute("planned", "p1", sides)
    assert (nothing.outcome, nothing.steps) == ("nothing_to_do", [])


def test_a_refused_step_stops_with_both_states_and_the_next_command():
    sides = {"source": Side(A), "target": Side(S, refuse={A: "DoNotRetryIOException: remote WAL dir"})}
    with pytest.raises(ss.StepFailed) as stopped:
        ss.execute("planned", "p1", sides, command="python -m hbase_migration sync-replication run ...")
    report = stopped.value.report
    assert report.final == {"source": S, "target": DA} and report.outcome == "stopped"
    assert "target -> ACTIVE: HBase refused it: DoNotRetryIOException: remote WAL dir" in report.message
    assert "Left: source STANDBY, target DOWNGRADE_ACTIVE" in report.message
    assert report.next_command.startswith("fix the cause, then re-run (it resumes from these states): python -m")
    # the re-run resumes where it stopped: no step repeated but the (idempotent) switch
    sides["target"].refuse = {}
    again = ss.execute("planned", "p1", sides, switch=lambda: None)
    assert [s["action"] for s in again.steps] == [SWITCH, "target -> ACTIVE"] and again.outcome == "done"


def test_a_wrong_read_back_stops_the_run():
    sides = {"source": Side(A, lie={S: A}), "target": Side(S)}  # the transition "worked" but the state did not move
    with pytest.raises(ss.StepFailed) as stopped:
        ss.execute("planned", "p1", sides)
    assert "read back ACTIVE, not STANDBY" in stopped.value.report.message
    assert sides["target"].sent == []  # nothing after the failed step


def test_a_failed_switch_command_stops_before_the_target_goes_active():
    sides = {"source": Side(A), "target": Side(S)}

    def fail():
        raise RuntimeError("exit 3")

    with pytest.raises(ss.StepFailed) as stopped:
        ss.execute("planned", "p1", sides, switch=fail)
    assert stopped.value.report.final == {"source": S, "target": DA}
    assert "the switch command failed: exit 3" in stopped.value.report.message
    assert sides["target"].sent == [DA]


def test_a_failover_with_the_source_down_ends_pending_then_resumes_when_it_is_back():
    source, target = Side(A, down_until=3), Side(S)
    report = ss.execute("failover", "p1", {"source": source, "target": target}, switch=lambda: None,
                        command="CMD")
    assert target.sent == [DA] and source.sent == []
    assert report.outcome == "pending" and report.final == {"source": DOWN, "target": DA}
    assert report.next_command == "once the old source back up: CMD"
    again = ss.execute("failover", "p1", {"source": source, "target": target}, switch=lambda: None)
    assert (source.sent, target.sent, again.outcome) == ([S], [DA, A], "done")
    assert again.final == {"source": S, "target": A}


def test_setup_runs_the_adds_in_order():
    sides = {"source": Side(ABSENT), "target": Side(ABSENT)}
    report = ss.execute("setup", "p1", sides)
    assert (sides["source"].sent, sides["target"].sent) == (["add", A], ["add", S])
    assert report.final == {"source": A, "target": S}


def test_peer_rows_the_statements_and_the_remote_wal_dir():
    out = (" PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME REMOTE_ROOT_DIR SYNC_REPLICATION_STATE STATE REPLICATE_ALL "
           "NAMESPACES TABLE_CFS BANDWIDTH SERIAL\n"
           " s1 127.0.0.1:13892:/hbase-dc2 nil hdfs://127.0.0.1:32135/hbase/remoteWALs STANDBY ENABLED false  "
           "default.sr1 0 false\n"
           " 2 127.0.0.1:13892:/hbase-dc2 nil nil NONE DISABLED false  default.t1:cf 0 false\n1 row(s)\n")
    read = ss.peer_from_list(out, "s1")
    assert (read.state, read.remote_dir) == (S, "hdfs://127.0.0.1:32135/hbase/remoteWALs")
    assert ss.peer_from_list(out, "2").state == NONE and ss.peer_from_list(out, "9").state == ABSENT
    assert ss.peer_mismatch("target", read, "127.0.0.1:13892:/hbase-dc2", None) is None
    assert "ships to" in ss.peer_mismatch("target", read, "127.0.0.1:13892:/hbase-dc1", None)
    assert "remote WAL dir" in ss.peer_mismatch("target", read, "127.0.0.1:13892:/hbase-dc2", "hdfs://x:1/hbase/"
                                                "remoteWALs")
    assert ss.remote_wal_dir_from_conf({"hbase.rootdir": "hdfs://127.0.0.1:9000/hbase"}) == \
        "hdfs://127.0.0.1:9000/hbase/remoteWALs"
    assert ss.remote_wal_dir_from_conf({"hbase.rootdir": "/hbase", "fs.defaultFS": "hdfs://nn:8020/"}) == \
        "hdfs://nn:8020/hbase/remoteWALs"
    with pytest.raises(ValueError):
        ss.remote_wal_dir_from_conf({"hbase.rootdir": "/hbase"})
    statement = ss.guarded(sr.transit_statement("s1", S))
    assert statement.startswith('begin; transit_peer_sync_replication_state "s1", "STANDBY"; ')
    assert "HM_SYNC" not in statement  # the shell's echo cannot fake an outcome
    assert ss.guarded_outcome("x\nHM_SYNC_OK\n") is None
    assert ss.guarded_outcome("Took 0.1 secondsHM_SYNC_FAILED DoNotRetryIOException: Can not transit") == \
        "DoNotRetryIOException: Can not transit"
    assert sr.add_sync_peer_statement("s1", "zk:2181:/h", "hdfs://nn/h/remoteWALs", ["t1"],
                                      {"hbase_migration.owner": "hbase_migration"}).endswith(
        'TABLE_CFS => {"t1" => []}, CONFIG => {"hbase_migration.owner" => "hbase_migration"}')


def test_cli_bad_input_is_exit_2_and_one_line(capsys):
    from hbase_migration.__main__ import main

    assert main(["sync-replication", "run", "--peer-id", "s1", "--kind", "planned"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run needs --source" in err[0]
    assert main(["sync-replication", "plan", "--peer-id", "s1", "--kind", "setup"]) == 2


def test_the_async_cutover_is_refused_on_hbase_3_and_the_sync_option_names_the_executor():
    from hbase_migration.migration.cutover import evaluate_cutover, hbase_3_servers
    from hbase_migration.replication.wal_drain import _major
    from tests.unit.migration.test_cutover_logic import PLAN, facts

    assert evaluate_cutover(PLAN, facts(source_versions={"rs1,1,1": "2.6.4-hadoop3"})) == []
    assert hbase_3_servers({"a,1,1": "3.0.0-alpha-4", "b,1,1": "2.6.4", "c,1,1": None}) == ["a,1,1 (3.0.0-alpha-4)"]
    reasons = evaluate_cutover(PLAN, facts(source_versions={"a,1,1": "3.0.0-alpha-4"}))
    assert len(reasons) == 1 and "keeps replication queues in the hbase:replication table" in reasons[0]
    assert "sync-replication run" in reasons[0]
    supported = sr.support({"source": {"a,1,1": "3.0.0-alpha-4"}, "target": {"b,1,1": "3.0.0-alpha-4"}})
    reasons = evaluate_cutover(PLAN, facts(sync_replication=supported, source_versions={"a,1,1": "3.0.0-alpha-4"}))
    assert len(reasons) == 1 and "sync-replication run --kind setup" in reasons[0]
    assert (_major("3.0.0-alpha-4"), _major("2.6.4-hadoop3"), _major(None)) == (3, 2, 0)


def test_the_tables_are_names_and_are_read_back():
    """Real HBase 3.0.0-alpha-4 caught it: `--tables sca2eddd` reached add_peer as its letters (TABLE_CFS {s, c, a,
    2, e, d}), HBase took it, and nothing was synchronous. The CLI parses the list; the peer's tables are read back."""
    from hbase_migration.__main__ import parser

    args = parser().parse_args(["sync-replication", "run", "--kind", "setup", "--tables", "sca2eddd,ns:t2"])
    assert list(args.tables) == ["sca2eddd", "ns:t2"]
    with pytest.raises(TypeError):
        ss.run(None, None, "p1", "setup", tables="sca2eddd")
    out = (" PEER_ID CLUSTER_KEY ENDPOINT_CLASSNAME REMOTE_ROOT_DIR SYNC_REPLICATION_STATE STATE REPLICATE_ALL "
           "NAMESPACES TABLE_CFS BANDWIDTH SERIAL\n"
           " p1 zk:2181:/h nil hdfs://nn/hbase/remoteWALs DOWNGRADE_ACTIVE ENABLED false  "
           "default.a;default.2;default.s 0 false\n")
    read = ss.peer_from_list(out, "p1")
    assert read.tables == ("default.2", "default.a", "default.s")
    assert ss.peer_mismatch("source", read, "zk:2181:/h", None, ["sca2eddd"]) == (
        "the peer on the source replicates default.2, default.a, default.s, not default.sca2eddd")
    good = ss.PeerRead(DA, "zk:2181:/h", "hdfs://nn/hbase/remoteWALs", tables=("default.t1", "ns.t2"))
    assert ss.peer_mismatch("source", good, "zk:2181:/h", "hdfs://nn/hbase/remoteWALs/", ["t1", "ns:t2"]) is None
