"""The cut-over plan's pure decisions: options, the lag gate, the deadline, the timeline, the switch's env."""
from __future__ import annotations

import pytest

from hbase_migration.migration.cutover_plan import (
    AbortConditions,
    Step,
    WindowOptions,
    lag_gate,
    past_deadline,
    switch_environment,
    timeline,
)
from hbase_migration.replication.metrics import PeerLagSnapshot, QueueMetrics, ServerReading

RS1, RS2 = "rs1,16020,1", "rs2,16020,2"


def q(*, size=1, age=100, read=1000, filtered=100, shipped=900, queue_id="p1", recovered=False) -> QueueMetrics:
    return QueueMetrics(queue_id=queue_id, peer_id="p1", recovered=recovered, size_of_log_queue=size, age_ms=age,
                        age_form="gauge", log_edits_read=read, log_edits_filtered=filtered, shipped_ops=shipped)


def snap(*readings: ServerReading, state="ENABLED", live=(RS1, RS2)) -> PeerLagSnapshot:
    return PeerLagSnapshot("p1", 1.0, state, tuple(live), tuple(readings))


def test_lag_gate_passes_a_caught_up_peer():
    assert lag_gate(snap(ServerReading(RS1, 1, (q(),)), ServerReading(RS2, 1, (q(size=2),))), 5000) == []


def test_lag_gate_names_each_reason():
    reasons = lag_gate(snap(ServerReading(RS1, 1, (q(size=3, age=9000, shipped=500),)),
                            ServerReading(RS2, 1, error="refused"), state="DISABLED"), 5000)
    assert reasons == ["forward peer p1 is DISABLED", f"{RS1} queue p1: 3 WALs queued",
                       f"{RS1} queue p1: ageOfLastShippedOp 9000 ms > 5000 ms", f"{RS2}: /jmx unreadable: refused"]


def test_lag_gate_allows_one_wal_per_wal_group_plus_one():
    # two WAL groups (multiwal with 2 groups, or HBase 3.x's .syncrep group of an ACTIVE sync peer): 3 WALs are
    # one past caught up, 4 are two past
    three, four = snap(ServerReading(RS1, 1, (q(size=3),)), ServerReading(RS2, 1, (q(size=2),))), \
        snap(ServerReading(RS1, 1, (q(size=4),)), ServerReading(RS2, 1, (q(),)))
    assert lag_gate(three, 5000, caught_up_queue_size=2) == []
    assert lag_gate(three, 5000) == [f"{RS1} queue p1: 3 WALs queued"]
    assert lag_gate(four, 5000, caught_up_queue_size=2) == [f"{RS1} queue p1: 4 WALs queued"]


def test_lag_gate_believes_a_stale_age_of_an_idle_source():
    assert lag_gate(snap(ServerReading(RS1, 1, (q(age=90_000),)), ServerReading(RS2, 1, (q(),))), 5000) == []


def test_lag_gate_refuses_recovered_queues_and_missing_sources():
    reasons = lag_gate(snap(ServerReading(RS1, 1, (q(), q(queue_id="p1-rs9,1,1", recovered=True))),
                            ServerReading(RS2, 1, ())), 5000)
    assert reasons == [f"{RS1}: recovered queue p1-rs9,1,1 still shipping a dead server's WALs",
                       f"{RS2}: no replication source for peer p1"]


def test_conditions_validate_and_describe():
    with pytest.raises(ValueError, match="max_freeze_s must be a number of seconds > 0"):
        AbortConditions(max_freeze_s=0)
    with pytest.raises(ValueError, match="max_lag_ms must be an integer >= 0"):
        AbortConditions(max_lag_ms=-1)
    with pytest.raises(ValueError, match="freeze_method must be one of readonly, acl"):
        WindowOptions(freeze_method="disable")
    assert len(AbortConditions().describe()) == 4
    with pytest.raises(ValueError, match="caught_up_queue_size must be an integer >= 0"):
        WindowOptions(caught_up_queue_size=-1)
    for bad in (0, 257, True, 2.0):
        with pytest.raises(ValueError, match="parallel_checks must be an integer from 1 to 256"):
            WindowOptions(parallel_checks=bad)
    assert WindowOptions().parallel_checks == 16
    options = WindowOptions("acl", ("svc",), AbortConditions(max_freeze_s=30), caught_up_queue_size=2)
    assert WindowOptions.from_dict(options.to_dict()) == options


def test_deadline():
    c = AbortConditions(max_freeze_s=10)
    assert not past_deadline(100.0, 110.0, c) and past_deadline(100.0, 110.5, c)


def test_timeline_shares_of_the_freeze():
    steps = [Step("sessions", 0, 20), Step("live_pass", 20, 30), Step("fence", 30, 36), Step("wal_roll", 36, 37),
             Step("drain", 37, 38), Step("bounded_check", 38, 39.5), Step("switch", 39.5, 40),
             Step("enable_reverse_peer", 40, 41)]
    out = timeline(steps)
    assert out["freeze_s"] == 10.0
    assert out["freeze_shares"] == {"fence": 0.6, "wal_roll": 0.1, "drain": 0.1, "bounded_check": 0.15,
                                    "switch": 0.05}
    assert [s["step"] for s in out["steps"]][0] == "sessions" and out["steps"][-1]["seconds"] == 1.0
    assert "freeze_s" not in timeline([Step("sessions", 0, 1)])


def test_switch_environment():
    assert switch_environment("r1", "abort", ["t1", "t2"], "a:2181:/h", "b:2181:/h") == {
        "HBASE_CUTOVER_RUN_ID": "r1", "HBASE_CUTOVER_PHASE": "abort", "HBASE_CUTOVER_TABLES": "t1,t2",
        "HBASE_CUTOVER_SOURCE": "a:2181:/h", "HBASE_CUTOVER_TARGET": "b:2181:/h", "HBASE_CUTOVER_KIND": "cutover"}
    # A rollback's: the clients move from SOURCE (the migration's target) to TARGET (its source).
    assert switch_environment("r2", "switch", ["t1"], "b:2181:/h", "a:2181:/h", "rollback")["HBASE_CUTOVER_KIND"] \
        == "rollback"
    with pytest.raises(ValueError, match="phase"):
        switch_environment("r1", "go", [], "a", "b")
    with pytest.raises(ValueError, match="kind must be 'cutover' or 'rollback', got 'back'"):
        switch_environment("r1", "switch", [], "a", "b", "back")
