"""decide_drained as a truth table: each row a named history of snapshots and the exact verdict."""
from __future__ import annotations

from dataclasses import replace

import pytest

from hbase_migration.clusters.zk import QueueInfo
from hbase_migration.replication.metrics import (
    DrainDecision,
    DrainThresholds,
    PeerLagSnapshot,
    QueueMetrics,
    ServerReading,
    decide_drained,
)

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
STEP = 15.0
RS1 = "rs-1.dc-a.example.com,16020,1700000000001"
RS2 = "rs2.example.com,16020,1700000000002"
DEAD = "rs-9.dc-a.example.com,16020,1600000000009"
WAL1 = "rs-1.dc-a.example.com%2C16020%2C1700000000001.1700000000100"
WAL2 = "rs2.example.com%2C16020%2C1700000000002.1700000000200"
TH = DrainThresholds(stable_samples=3, caught_up_queue_size=1, max_lag_ms=30_000, idle_window_s=30.0)


def q(i: int = 0, *, queue_id: str = "1", size=1, age=120, form="gauge", read=None, shipped=None,
      filtered=None, batches=None, failed=0) -> QueueMetrics:
    """A healthy queue at sample i: every counter moves by 10 per sample (8 shipped, 2 filtered)."""
    from hbase_migration.clusters.zk import parse_queue_id

    parsed = parse_queue_id(queue_id)
    return QueueMetrics(
        queue_id=queue_id, peer_id=parsed.peer_id, recovered=parsed.recovered,
        dead_servers=parsed.dead_servers,
        size_of_log_queue=size, age_ms=age, age_form=form,
        log_edits_read=1000 + 10 * i if read is None else read,
        shipped_ops=800 + 8 * i if shipped is None else shipped,
        log_edits_filtered=200 + 2 * i if filtered is None else filtered,
        shipped_batches=100 + i if batches is None else batches,
        failed_batches=failed,
    )


def zkq(server: str, queue_id: str = "1", wals=((WAL1, 100),)) -> QueueInfo:
    from hbase_migration.clusters.zk import parse_queue_id

    parsed = parse_queue_id(queue_id)
    return QueueInfo(server, queue_id, parsed.peer_id, parsed.recovered, list(parsed.dead_servers),
                     list(wals))


def snap(i: int, *, rs1=None, rs2=None, live=(RS1, RS2), state="ENABLED", zk=None, servers=None,
         step=STEP) -> PeerLagSnapshot:
    """Sample i of a two-server cluster, both healthy unless overridden."""
    if servers is None:
        servers = (
            ServerReading(RS1, 16030, (q(i),) if rs1 is None else rs1),
            ServerReading(RS2, 16030, (q(i),) if rs2 is None else rs2),
        )
    if zk is None:
        zk = (zkq(RS1), zkq(RS2, wals=((WAL2, 7),)))
    return PeerLagSnapshot("1", T0 + step * i, state, tuple(live), tuple(servers), tuple(zk))


def healthy(n: int = 3, **overrides_by_index) -> list[PeerLagSnapshot]:
    """n healthy samples; `s<i>=dict(...)` overrides snap() arguments of sample i."""
    return [snap(i, **overrides_by_index.get(f"s{i}", {})) for i in range(n)]


W = "at 2023-11-14T22:13:20Z: "  # the first sample of a 3-sample window
ROWS = [
    ("steady_flow_drained", healthy(), TH, True, ()),
    ("no_sample_yet", [], TH, False, ("no sample taken yet",)),
    ("too_few_samples", healthy(2), TH, False, ("drained for only 2 consecutive sample(s), 3 needed",)),
    ("backlog_in_latest", healthy(s2=dict(rs2=(q(2, size=5),))), TH, False,
     (f"{RS2} queue 1: sizeOfLogQueue=5 WAL(s), caught up is <= 1",)),
    ("backlog_earlier_in_window", healthy(s0=dict(rs1=(q(0, size=3),))), TH, False,
     ("drained for only 2 consecutive sample(s), 3 needed",
      f"{W}{RS1} queue 1: sizeOfLogQueue=3 WAL(s), caught up is <= 1")),
    ("old_backlog_outside_window_forgotten", healthy(4, s0=dict(rs1=(q(0, size=3),))), TH, True, ()),
    ("age_over_threshold", healthy(s2=dict(rs1=(q(2, age=45_000),))), TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp=45000 ms > 30000 ms",)),
    ("age_at_threshold_is_caught_up", healthy(s2=dict(rs1=(q(2, age=30_000),))), TH, True, ()),
    ("hbase1_caught_up_is_zero", [snap(i, rs1=(q(i, size=0),), rs2=(q(i, size=0),)) for i in range(3)],
     replace(TH, caught_up_queue_size=0), True, ()),
    ("hbase1_one_wal_is_backlog", healthy(), replace(TH, caught_up_queue_size=0), False,
     (f"{RS1} queue 1: sizeOfLogQueue=1 WAL(s), caught up is <= 0",
      f"{RS2} queue 1: sizeOfLogQueue=1 WAL(s), caught up is <= 0")),
    ("size_not_reported", healthy(s2=dict(rs1=(q(2, size=None),))), TH, False,
     (f"{RS1} queue 1: sizeOfLogQueue not reported",)),
    ("age_not_reported", healthy(s2=dict(rs1=(q(2, age=None, form=None),))), TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp not reported",)),
    ("rs_without_queue_while_zk_has_one", healthy(s2=dict(rs2=())), TH, False,
     (f"{RS2}: reports no replication source for peer 1 while ZooKeeper holds its queue with 1 WAL(s)",)),
    ("rs_without_queue_nor_znode", healthy(s2=dict(rs2=(), zk=(zkq(RS1),))), TH, False,
     (f"{RS2}: reports no replication source for peer 1 (not started yet, or the peer was never "
      "refreshed on this server)",)),
    ("server_without_replication_bean", healthy(s2=dict(servers=(
        ServerReading(RS1, 16030, (q(2),)), ServerReading(RS2, 16030, (), bean_present=False)))), TH, False,
     (f"{RS2}: its /jmx has no sub=Replication bean: no replication source runs there while ZooKeeper holds "
      "its queue with 1 WAL(s)",)),
    ("unreadable_server", healthy(s2=dict(servers=(
        ServerReading(RS1, 16030, (q(2),)),
        ServerReading(RS2, 16030, error="region server rs2.example.com:16030: /jmx unreadable after 3 "
                                        "attempt(s): ConnectionError: refused")))), TH, False,
     (f"{RS2}: /jmx unreadable: region server rs2.example.com:16030: /jmx unreadable after 3 attempt(s): "
      "ConnectionError: refused",)),
    ("live_server_not_read", healthy(s2=dict(servers=(ServerReading(RS1, 16030, (q(2),)),))), TH, False,
     (f"{RS2}: live but not read in this sample",)),
    ("recovered_queue_in_jmx", healthy(s2=dict(rs1=(q(2), q(2, queue_id=f"1-{DEAD}", size=2)))), TH, False,
     (f"{RS1}: recovered queue 1-{DEAD} still running (sizeOfLogQueue=2) for dead server(s) {DEAD}",)),
    ("recovered_queue_in_zk_only", healthy(s2=dict(zk=(zkq(RS1), zkq(RS2), zkq(RS2, f"1-{DEAD}")))), TH,
     False,
     (f"ZooKeeper: recovered queue 1-{DEAD} (1 WAL(s)) under {RS2} not finished",)),
    ("dead_server_queue_unclaimed", healthy(s2=dict(zk=(zkq(RS1), zkq(RS2), zkq(DEAD, wals=())))), TH,
     False,
     (f"ZooKeeper: queue 1 (0 WAL(s)) under dead server {DEAD} not claimed by a live server yet",)),
    ("other_peers_queues_ignored", healthy(s2=dict(
        zk=(zkq(RS1), zkq(RS2), zkq(DEAD, "2"), zkq(RS1, f"2-{DEAD}")),
        rs1=(q(2), q(2, queue_id="2", size=9)))), TH, True, ()),
    ("read_but_nothing_shipped", healthy(s2=dict(rs1=(q(2, shipped=808, filtered=202, batches=101),))), TH,
     False, (f"{RS1} queue 1: read 10 WAL edit(s) since the previous sample but shipped and filtered none: "
             "edits are waiting to ship",)),
    ("read_and_only_filtered", healthy(s2=dict(rs1=(q(2, shipped=808, filtered=212, batches=101),))), TH,
     True, ()),
    ("failed_batches_moved", healthy(s2=dict(rs1=(q(2, failed=3),))), TH, False,
     (f"{RS1} queue 1: 3 batch(es) failed to ship since the previous sample",)),
    ("counters_went_backwards", healthy(s2=dict(rs1=(q(2, read=5, shipped=4, filtered=1, batches=1),))), TH,
     False, (f"{RS1} queue 1: counters went backwards since the previous sample (source restarted?); "
             "progress cannot be judged yet",)),
    ("server_new_in_latest_sample", healthy(s1=dict(
        live=(RS1,), servers=(ServerReading(RS1, 16030, (q(1),)),), zk=(zkq(RS1),))), TH, False,
     (f"{RS2} queue 1: no reading in the previous sample to compare its counters with",)),
    ("peer_disabled", healthy(s2=dict(state="DISABLED")), TH, False,
     ("peer 1 is DISABLED in ZooKeeper: nothing ships until it is enabled",)),
    ("peer_absent", healthy(s2=dict(state="ABSENT")), TH, False, ("peer 1 state is ABSENT in ZooKeeper",)),
    ("no_live_server", healthy(s2=dict(live=(), servers=(), zk=())), TH, False,
     ("no live region server registered in ZooKeeper",)),
]

# The stale-age rows: an idle 2.x source keeps its last age in the gauge forever (§3.3).
FROZEN = dict(read=1000, shipped=800, filtered=200, batches=100)
STALE = [snap(i, rs1=(q(i, age=95_000, **FROZEN),)) for i in range(3)]  # window spans 30 s
MOVING = dict(read=990, shipped=790, filtered=200, batches=99)
FIVE_S = [snap(i, step=5, rs1=(q(i, age=95_000, **FROZEN),)) for i in range(8)]  # 8 polls 5 s apart: 35 s
ROWS += [
    ("stale_age_idle_believed", STALE, TH, True, ()),
    ("stale_age_window_too_short", [replace(s, taken_at=T0 + 10 * i) for i, s in enumerate(STALE)], TH,
     False, (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    ("stale_age_but_age_changing",
     [snap(i, rs1=(q(i, age=95_000 + 15_000 * i, **FROZEN),)) for i in range(3)], TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp=125000 ms > 30000 ms",)),
    ("stale_age_histogram_form", [snap(i, rs1=(q(i, age=95_000, form="histogram", **FROZEN),))
                                  for i in range(3)], TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    ("stale_age_with_edits_read_not_shipped",
     [snap(i, rs1=(q(i, age=95_000, read=1010, shipped=800, filtered=200, batches=100),)) for i in range(3)],
     TH, False, (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    # a disabled peer freezes counters too: the stale age is not believed for the whole window
    ("stale_age_peer_disabled_earlier",
     STALE[:1] + [replace(STALE[1], peer_state="DISABLED")] + STALE[2:], TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    # The DAGs poll every 5 s with K=3: the stable window spans 10 s, less than the 30 s idle window. The stale
    # age is judged over the history reaching back 30 s (8 polls), as `lag.trim_history` keeps it. Before the
    # fix only the last K samples were looked at, so an idle, fully shipped peer never drained (the frozen
    # gauge at 95 s stayed above max_lag_ms forever).
    ("stale_age_idle_over_history_longer_than_window", FIVE_S, TH, True, ()),
    ("stale_age_history_not_yet_idle_window_long", FIVE_S[:-2], TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    # Counters moved 25 s ago (a shipment), inside the idle window: the frozen gauge is not believed yet.
    ("stale_age_counters_moved_inside_idle_window",
     [snap(i, step=5, rs1=(q(i, age=95_000, **(FROZEN if i >= 2 else MOVING)),)) for i in range(8)], TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    # The peer was disabled 30 s ago, before the stable window: a disabled peer freezes counters too.
    ("stale_age_peer_disabled_inside_idle_window",
     [replace(s, peer_state="DISABLED") if i == 1 else s for i, s in enumerate(FIVE_S)], TH, False,
     (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    # Edits queued: never drained, however long the history (the idle rule excuses only the age).
    ("stale_age_long_history_with_backlog",
     [snap(i, step=5, rs1=(q(i, age=95_000, size=2, **FROZEN),)) for i in range(8)], TH, False,
     (f"{RS1} queue 1: sizeOfLogQueue=2 WAL(s), caught up is <= 1",
      f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms")),
    ("stale_age_long_history_read_not_shipped",
     [snap(i, step=5, rs1=(q(i, age=95_000, read=1010, shipped=800, filtered=200, batches=100),))
      for i in range(8)], TH, False, (f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms",)),
    ("stale_age_queue_above_caught_up",
     [snap(i, rs1=(q(i, age=95_000, size=2, **FROZEN),)) for i in range(3)], TH, False,
     (f"{RS1} queue 1: sizeOfLogQueue=2 WAL(s), caught up is <= 1",
      f"{RS1} queue 1: ageOfLastShippedOp=95000 ms > 30000 ms")),
]


@pytest.mark.parametrize("history, thresholds, drained, reasons",
                         [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_drain_truth_table(history, thresholds, drained, reasons):
    decision = decide_drained(history, thresholds)
    assert (decision.drained, decision.reasons) == (drained, reasons)
    assert decision.required_samples == thresholds.stable_samples


def test_stale_age_verdict_carries_a_note_for_the_operator():
    decision = decide_drained(STALE, TH)
    assert decision == DrainDecision(
        drained=True, reasons=(), stable_samples=3, required_samples=3,
        notes=(f"{RS1} queue 1: ageOfLastShippedOp=95000 ms is stale: no edit read, shipped or failed for "
               "30s, queue at 1 WAL(s), nothing read-but-unshipped; treated as idle (the canary proves it "
               "end to end)",),
    )


def test_counters_compared_with_the_sample_before_the_window():
    # The window (last 3) is clean, but between sample 0 and 1 edits were read and none shipped.
    history = healthy(4, s1=dict(rs1=(q(0, read=1010),)))
    decision = decide_drained(history, TH)
    assert decision.drained is False
    assert decision.reasons == (
        "drained for only 2 consecutive sample(s), 3 needed",
        f"at 2023-11-14T22:13:35Z: {RS1} queue 1: read 10 WAL edit(s) since the previous sample but shipped "
        "and filtered none: edits are waiting to ship",
    )
    assert decision.stable_samples == 2


def test_history_must_be_one_peer_in_time_order():
    with pytest.raises(ValueError, match=r"history mixes peers: sample 1 is for peer '2', sample 0 for '1'"):
        decide_drained([snap(0), replace(snap(1), peer_id="2")], TH)
    with pytest.raises(ValueError, match=r"history must be in time order: sample 1 taken_at=1700000000.0"):
        decide_drained([snap(0), snap(0)], TH)


@pytest.mark.parametrize("kwargs, message", [
    (dict(stable_samples=1), r"DrainThresholds.stable_samples must be an integer >= 2, got 1"),
    (dict(stable_samples=True), r"DrainThresholds.stable_samples must be an integer >= 2, got True"),
    (dict(caught_up_queue_size=-1), r"DrainThresholds.caught_up_queue_size must be an integer >= 0, got -1"),
    (dict(max_lag_ms=1.5), r"DrainThresholds.max_lag_ms must be an integer >= 0, got 1.5"),
    (dict(idle_window_s=-1), r"DrainThresholds.idle_window_s must be a number >= 0, got -1"),
])
def test_thresholds_reject_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DrainThresholds(**kwargs)


def test_stale_age_over_a_long_history_carries_the_idle_note():
    """What the final drain of a cut-over meets: writes frozen, the gauge frozen above max_lag_ms (58 s here),
    the sensor polling every 5 s with K=3. After 30 s of frozen counters the peer is drained, with the note."""
    history = [snap(i, step=5, rs1=(q(i, age=58_000, **FROZEN),)) for i in range(7)]
    assert decide_drained(history[:6], TH).drained is False  # 25 s of history: not yet
    decision = decide_drained(history, TH)
    assert decision == DrainDecision(
        drained=True, reasons=(), stable_samples=3, required_samples=3,
        notes=(f"{RS1} queue 1: ageOfLastShippedOp=58000 ms is stale: no edit read, shipped or failed for "
               "30s, queue at 1 WAL(s), nothing read-but-unshipped; treated as idle (the canary proves it "
               "end to end)",),
    )


def test_idle_span_reaches_back_to_the_idle_window():
    from hbase_migration.replication.metrics import idle_span

    assert idle_span([], TH) == []
    assert idle_span(FIVE_S, TH) == FIVE_S[1:]  # FIVE_S[1] is 30 s before the last: exactly the window
    assert idle_span(FIVE_S[:-2], TH) == FIVE_S[:-2]  # 30 s not reached yet: all of it (judged too short)
    assert idle_span(STALE, TH) == STALE  # 15 s polls: the last K already span 30 s
    assert idle_span(healthy(5), TH) == healthy(5)[2:]  # 15 s polls, 5 samples: the last K span 30 s
    assert idle_span(FIVE_S, replace(TH, idle_window_s=0)) == FIVE_S[-3:]  # never shorter than the last K


def test_hbase_3_queues_named_after_their_server_drain_without_zookeeper_queues():
    """HBase 3.x: each server's queue of peer 1 is `1-<that server>` (metrics.queue_identity), and ZooKeeper holds no
    queue (hbase:replication): three healthy samples are drained; a queue of another server is a recovered one."""
    from hbase_migration.replication.metrics import queue_identity

    def q3(i: int, server: str, source: str | None = None) -> QueueMetrics:
        parsed = queue_identity(f"1-{server}" + (f"-{source}" if source else ""), server)
        return replace(q(i), queue_id=parsed.queue_id, peer_id=parsed.peer_id, recovered=parsed.recovered,
                       dead_servers=parsed.dead_servers)

    samples = [snap(i, rs1=(q3(i, RS1),), rs2=(q3(i, RS2),), zk=()) for i in range(3)]
    assert decide_drained(samples, TH).drained
    samples[-1] = snap(2, rs1=(q3(2, RS1), q3(2, RS1, DEAD)), rs2=(q3(2, RS2),), zk=())
    decision = decide_drained(samples, TH)
    assert not decision.drained and any(f"recovered queue 1-{RS1}-{DEAD}" in r for r in decision.reasons)
