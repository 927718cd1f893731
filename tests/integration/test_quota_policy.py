"""The oldWALs quota policy against minihbase's WebHDFS and real HDFS-style quotas: the library's watchdog
records every reading in the ledger and applies `fail` or `enable_peer`; preflight's headroom check uses the
run's quota mark."""
import threading
import uuid

import pytest
import requests
from airflow.sdk.exceptions import AirflowFailException

from hbase_migration.clusters.cluster import ClusterKey
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.ledger.store import Ledger
from hbase_migration.migration.quota import Watchdog, settle_after_failure
from hbase_migration.replication import peer_admin
from hbase_migration.replication.model import PeerConfig
from tests.polling import wait_for

pytestmark = pytest.mark.integration


def space_consumed(cluster, path="/hbase"):
    r = requests.get(f"{cluster.webhdfs_url}/webhdfs/v1{path}", params={"op": "GETCONTENTSUMMARY"}, timeout=10)
    return r.json()["ContentSummary"]["spaceConsumed"]


@pytest.fixture
def quota_cluster(minihbase_factory):
    return minihbase_factory("quota")


@pytest.fixture
def ledger(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(url) as led:
        led.start_run("run-1", "hbase_table_migration", "manual", "a:2181:/hbase", "b:2181:/hbase", "p1", ["t"], {})
    return url


def disabled_peer(cluster) -> str:
    """A DISABLED peer to a cluster that does not exist (nothing ships: only its state matters here)."""
    peer_id = "q_" + uuid.uuid4().hex[:8]
    with peer_admin(cluster) as admin:
        admin.add_peer(peer_id, PeerConfig(ClusterKey.parse("127.0.0.1:1:/hbase-nowhere"), {"t": []}), enabled=False)
    return peer_id


def test_watchdog_records_every_reading_and_fails_past_the_mark(quota_cluster, ledger):
    source = cluster_from_text("source", quota_cluster.connection_json)
    peer_id = disabled_peer(source)
    used = space_consumed(quota_cluster)
    quota_cluster.set_quota("/hbase", space_bytes=used * 100)  # 1% used: below the mark
    failed = threading.Event()
    messages = []
    dog = Watchdog(source, peer_id, "fail", 0.8, interval_s=0.2, ledger_url=ledger, run_id="run-1",
                   on_fail=lambda m: (messages.append(m), failed.set()))
    dog.start()
    try:
        wait_for(lambda: dog.samples >= 3, timeout=30, what="three readings below the mark")
        assert not failed.is_set() and dog.action is None
        quota_cluster.set_quota("/hbase", space_bytes=int(used / 0.9) + 1)  # 90% used: past the mark
        assert failed.wait(30), "the watchdog did not act on the breach"
    finally:
        dog.stop()
    assert dog.action.action == "fail"
    assert "oldWALs quota breach on source" in messages[0] and f"peer {peer_id} is left as it is" in messages[0]
    with peer_admin(source) as admin:
        assert admin.get_peer(peer_id).state == "DISABLED"  # `fail` changes nothing on the cluster
    with Ledger.open(ledger) as led:
        quota = led.run_summary("run-1")["quota"]
    assert quota["samples"] >= 4  # every reading, the breach included, for the dashboard
    assert any(row["space_quota"] == int(used / 0.9) + 1 for row in quota["latest"])


def test_enable_peer_policy_enables_a_disabled_peer_once_its_tables_exist_on_the_target(quota_cluster, ledger,
                                                                                        minihbase_factory):
    """Issue 39: the policy enables the peer early only once each of its tables exists on the target (else the
    sink's TableNotFoundException would stall the queues and pin the WALs all the same): refused, the copy stops
    with the missing tables and the quota figure named, the peer left DISABLED."""
    source = cluster_from_text("source", quota_cluster.connection_json)
    target_mini = minihbase_factory("quota_tg")
    target = cluster_from_text("target", target_mini.connection_json)
    peer_id = disabled_peer(source)
    quota_cluster.set_quota("/hbase", space_bytes=int(space_consumed(quota_cluster) / 0.9) + 1)

    def breach(on_fail) -> Watchdog:
        dog = Watchdog(source, peer_id, "enable_peer", 0.8, interval_s=0.2, ledger_url=ledger, run_id="run-1",
                       on_fail=on_fail, target=target).start()
        try:
            wait_for(lambda: dog.action is not None, timeout=30, what="the policy's action")
        finally:
            dog.stop()
        return dog

    messages: list[str] = []
    refused = breach(messages.append)
    assert refused.action.action == "fail" and messages == [refused.action.message]
    assert messages[0].startswith("oldWALs quota breach on source (") and "space quota on /hbase" in messages[0]
    assert (f"quota policy enable_peer refused: peer {peer_id} not enabled: its table(s) t are absent on target"
            in messages[0] and f"Peer {peer_id} is left DISABLED" in messages[0]), messages[0]
    with peer_admin(source) as admin:
        assert admin.get_peer(peer_id).state == "DISABLED"

    target_mini.create_table("t", {"d": {"replication_scope": 1}})
    enabled = breach(lambda m: pytest.fail(f"enable_peer must not fail the copy: {m}"))
    assert enabled.action.action == "peer_enabled" and "its tables t exist on target" in enabled.action.message
    with peer_admin(source) as admin:
        assert admin.get_peer(peer_id).state == "ENABLED"
    with Ledger.open(ledger) as led:
        assert led.run_summary("run-1")["peer"]["state"] == "ENABLED"
    with pytest.raises(ValueError, match="quota policy enable_peer needs the target cluster"):
        Watchdog(source, peer_id, "enable_peer", 0.8)


def test_settle_after_failure_enables_only_with_that_policy_and_the_tables_on_the_target(quota_cluster,
                                                                                         minihbase_factory):
    source = cluster_from_text("source", quota_cluster.connection_json)
    target_mini = minihbase_factory("quota_ts")
    target = cluster_from_text("target", target_mini.connection_json)
    peer_id = disabled_peer(source)
    assert settle_after_failure(source, peer_id, "fail") == ("DISABLED", None)
    assert settle_after_failure(source, peer_id, "enable_peer", dry_run=True, target=target) == ("DISABLED", None)
    state, why = settle_after_failure(source, peer_id, "enable_peer", target=target)
    assert state == "DISABLED" and why.startswith(f"peer {peer_id} not enabled: its table(s) t are absent on target")
    target_mini.create_table("t", {"d": {"replication_scope": 1}})
    assert settle_after_failure(source, peer_id, "enable_peer", target=target) == ("ENABLED", "enabled")
    assert settle_after_failure(source, "absent_peer", "enable_peer", target=target) == ("ABSENT", None)


def test_preflight_headroom_uses_the_runs_quota_mark(quota_cluster, minihbase_factory, monkeypatch):
    """Regression: the trigger form's quota_mark never reached preflight, whose check stayed at 0.8."""
    from hbase_migration.operators.checks import PreflightOperator

    target = minihbase_factory("quota_t")
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", quota_cluster.connection_json)
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", target.connection_json)
    for c in (quota_cluster, target):
        c.create_table("qt", {"d": {"replication_scope": 1}})
    quota_cluster.set_quota("/hbase", space_bytes=int(space_consumed(quota_cluster) / 0.6))  # ~60% used
    args = dict(tables=["qt"], peer_id="qp", expected_copy_s=1, create_missing=False, bulk_loads="none")
    with pytest.raises(AirflowFailException) as e:
        PreflightOperator(task_id="p", quota_mark=0.5, **args).execute({})
    assert str(e.value).startswith("preflight failed: oldwals_headroom: ") and "at or above the quota mark 50%" \
        in str(e.value) and ";" not in str(e.value).split("oldwals_headroom: ")[1].split("quota on")[0]
    report = PreflightOperator(task_id="p", quota_mark=0.8, **args).execute({})
    assert report["ok"] is True


def test_watchdog_records_the_disabled_peers_queues_growing_and_a_last_reading_at_stop(quota_cluster, ledger):
    """The lag chart's disabled phase: beside the copy, the watchdog samples the run's DISABLED peer, whose
    queues only grow (every rolled WAL stays queued); stop() takes one last lag reading, so a copy shorter than the
    interval still leaves a first and a last point. The oldWALs reading is not repeated at stop: the NameNode is
    asked at most once per interval per run and cluster, however many copies stop."""
    source = cluster_from_text("source", quota_cluster.connection_json)
    quota_cluster.create_table("t", {"d": {"replication_scope": 1}})
    peer_id = disabled_peer(source)
    dog = Watchdog(source, peer_id, "fail", 0.99, interval_s=3600, ledger_url=ledger, run_id="run-1",
                   on_fail=lambda m: pytest.fail(f"no breach expected: {m}"))
    dog.start()
    try:
        wait_for(lambda: dog.lag_samples >= 1, timeout=30, what="the first lag reading")
        conn = quota_cluster.connection()
        for round_ in range(3):
            conn.table("t").put(b"row-%d" % round_, {b"d:v": b"x"})
            quota_cluster.roll_wals()
        conn.close()
    finally:
        dog.stop(timeout_s=30)
    assert (dog.samples, dog.lag_samples) == (1, 2)  # lag: the first reading and the last; oldWALs: the first
    with Ledger.open(ledger) as led:
        series = led.chart_series("run-1")
    samples = sorted({p["sampled_ms"] for p in series["lag"]})
    assert len(samples) == 2
    queued = [sum(p["size_of_log_queue"] for p in series["lag"] if p["sampled_ms"] == at) for at in samples]
    servers = len(quota_cluster.region_servers)
    assert queued[1] >= queued[0] + 3 * servers, queued  # three rolls on every server, none shipped
    assert len(series["quota"]) == 1


def test_the_watchdogs_of_a_run_share_one_reader_and_all_act_on_its_breach(quota_cluster, ledger):
    """Three tasks' watchdogs on one run and cluster: one holds the lease and reads, the others act on its
    readings from the ledger; on a breach each applies its policy to its own job (every `fail` called once)."""
    source = cluster_from_text("source", quota_cluster.connection_json)
    used = space_consumed(quota_cluster)
    quota_cluster.set_quota("/hbase", space_bytes=used * 100)
    failed = {i: threading.Event() for i in range(3)}
    dogs = [Watchdog(source, None, "fail", 0.8, interval_s=0.3, ledger_url=ledger, run_id="run-1",
                     on_fail=lambda m, i=i: failed[i].set()) for i in range(3)]
    for dog in dogs:
        dog.start()
    try:
        wait_for(lambda: all(d.seen >= 3 for d in dogs), timeout=60, what="every watchdog acting on readings")
        quota_cluster.set_quota("/hbase", space_bytes=int(used / 0.9) + 1)  # 90% used: past the mark
        assert all(e.wait(60) for e in failed.values()), "a watchdog did not act on the shared breach"
    finally:
        for dog in dogs:
            dog.stop()
    assert all(d.action.action == "fail" for d in dogs)
    with Ledger.open(ledger) as led:
        [watch] = led.watches("run-1")
    assert sum(d.samples for d in dogs) == watch["readings"]  # every reading taken once, by the holder of the day
    assert watch["plan"]["bearing"] == ["/hbase"] and watch["plan"]["quota_usage_op"] is True, watch["plan"]
    assert sum(d.calls for d in dogs) == watch["namenode_calls"]
    assert max(d.samples for d in dogs) >= 3, [d.samples for d in dogs]  # one held the lease for the readings
