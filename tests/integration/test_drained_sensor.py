"""The replication-drained sensor, poke and deferrable, against real HBase dc1 -> dc2 (the session's bed) with a
writer running: real region servers' queues and /jmx, a real peer added through the real shell.

The property under test is "no lost edit": whenever the sensor says drained, every edit written on the source
before the first sample of its stable window is already readable on the target. The writer keeps writing while
the sensor polls, so a sensor that trusted a momentary quiet queue would be caught.
"""
import asyncio
import threading
import time
import uuid

import pytest

from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.operators.replication import AddPeerOperator, EnablePeerOperator, RemovePeerOperator
from hbase_migration.operators.sensors import ReplicationDrainedSensor
from hbase_migration.operators.triggers import ReplicationDrainedTrigger
from tests.polling import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


THRESHOLDS = {"stable_samples": 3, "max_lag_ms": 5_000, "caught_up_queue_size": 1, "idle_window_s": 5}
# The sensor takes the same thresholds as its own arguments (the trigger gets them as one dict).


class Writer:
    """Writes rows on the source at a steady pace, remembering when each write was acknowledged."""

    def __init__(self, cluster, table: str, interval_s: float = 0.02):
        self.cluster, self.table, self.interval_s = cluster, table, interval_s
        self.acked: list[tuple[float, bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        conn = self.cluster.connection()
        t = conn.table(self.table)
        i = 0
        while not self._stop.is_set():
            row = b"w%08d" % i
            t.put(row, {b"d:v": b"x%d" % i})
            self.acked.append((time.time(), row))
            i += 1
            self._stop.wait(self.interval_s)
        conn.close()

    def __enter__(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(30)

    def __exit__(self, *exc):
        self.stop()


def missing_on_target(target, table, rows):
    conn = target.connection()
    try:
        got = conn.table(table).rows(rows)
        return sorted(set(rows) - {r for r, _ in got})
    finally:
        conn.close()


@pytest.fixture
def replicated(realhbase_pair, monkeypatch):
    """A scope-1 table on both clusters and a DISABLED peer dc1 -> dc2 (the shell backend), removed after."""
    dc1, dc2 = realhbase_pair
    table = "drain_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"max_versions": 1, "replication_scope": 1}}, split_keys=[b"w00001000"])
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", dc1.connection_json)
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", dc2.connection_json)
    peer_id = "drain_" + uuid.uuid4().hex[:6]
    AddPeerOperator(task_id="add", peer_id=peer_id, tables=[table]).execute({})
    yield dc1, dc2, table, peer_id
    RemovePeerOperator(task_id="rm", peer_id=peer_id).execute({})
    for c in (dc1, dc2):
        c.drop_table(table)


def test_never_drained_while_edits_remain_poke_mode(replicated):
    dc1, dc2, table, peer_id = replicated
    sensor = ReplicationDrainedSensor(task_id="s", peer_id=peer_id, **THRESHOLDS)
    with Writer(dc1, table) as writer:
        # Disabled: a backlog builds and the sensor must not pass.
        deadline = time.time() + 6
        while time.time() < deadline:
            assert sensor.poke({}) is False
            time.sleep(0.5)
        assert len(writer.acked) > 50
        EnablePeerOperator(task_id="en", peer_id=peer_id).execute({})
        sensor = ReplicationDrainedSensor(task_id="s", peer_id=peer_id, **THRESHOLDS)
        windows = []  # (time of the first sample of the window, verdict time)
        drained_seen = 0
        deadline = time.time() + 120
        while time.time() < deadline and drained_seen < 3:
            sample_started = time.time()
            windows.append(sample_started)
            if sensor.poke({}):
                drained_seen += 1
                window_start = windows[-THRESHOLDS["stable_samples"]]
                before = [row for t, row in writer.acked if t < window_start]
                assert missing_on_target(dc2, table, before) == [], "drained while edits were still queued"
            time.sleep(0.5)
        assert drained_seen, "never drained within 120 s with a steady writer"
    # Writer stopped: the sensor passes, and then every edit is on the target.
    sensor = ReplicationDrainedSensor(task_id="s", peer_id=peer_id, **THRESHOLDS)
    wait_for(lambda: sensor.poke({}), 120, "the sensor to pass after the writer stopped", interval=0.5)
    assert missing_on_target(dc2, table, [row for _, row in writer.acked]) == []


def test_deferrable_trigger_waits_for_the_backlog(replicated, tmp_path, monkeypatch):
    dc1, dc2, table, peer_id = replicated
    from hbase_migration.ledger.store import Ledger

    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", ledger_url)
    with Ledger.open(ledger_url) as ledger:
        ledger.start_run("run-1", "hbase_table_migration", "test", "127.0.0.1:2181:/hbase-dc1",
                         "127.0.0.1:2181:/hbase-dc2", peer_id, [table])
    conn = dc1.connection()
    t = conn.table(table)
    with t.batch(batch_size=500) as b:
        for i in range(3000):
            b.put(b"b%08d" % i, {b"d:v": b"y"})
    conn.close()
    dc1.roll_wals()  # more than one WAL queued: sizeOfLogQueue above its caught-up value
    EnablePeerOperator(task_id="en", peer_id=peer_id).execute({})
    trigger = ReplicationDrainedTrigger(
        cluster=cluster_from_text("src", dc1.connection_json).to_dict(),
        peer_id=peer_id, thresholds=THRESHOLDS, poll_interval_s=0.5, deadline=time.time() + 120,
        ledger_run_id="run-1")
    # The trigger survives serialization (the triggerer rebuilds it from these kwargs).
    classpath, kwargs = trigger.serialize()
    assert classpath == "hbase_migration.operators.triggers.ReplicationDrainedTrigger"
    trigger = ReplicationDrainedTrigger(**kwargs)

    async def first_event():
        async for event in trigger.run():
            return event

    event = asyncio.run(first_event())
    assert event.payload["status"] == "drained", event.payload
    assert missing_on_target(dc2, table, [b"b%08d" % i for i in range(3000)]) == []
    # Every poll left its queues in the ledger, down to the caught-up queues of the stable window.
    with Ledger.open(ledger_url) as ledger:
        lag = ledger.latest_samples("run-1", limit=1000)["lag"]
    instants = sorted({row["sampled_ms"] for row in lag})
    assert len(instants) >= THRESHOLDS["stable_samples"]
    assert {row["peer_id"] for row in lag} == {peer_id}
    last = [row for row in lag if row["sampled_ms"] == instants[-1]]
    assert len(last) == len(dc1.region_servers)  # one queue per live region server
    assert max(row["size_of_log_queue"] for row in last) <= THRESHOLDS["caught_up_queue_size"]
