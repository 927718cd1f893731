"""The scheduled watch: passes on a healthy pair, fails (so Airflow alerts) on a peer disabled too long and on
oldWALs quota pressure, naming the cause in the task log."""
import dataclasses
import json
import uuid

import pytest

from tests.dags.airflow_run import airflow_env, dags_test

pytestmark = [pytest.mark.integration, pytest.mark.dags]


def run_watch(pair, tmp_path, **params):
    dc1, dc2 = pair
    conf = {"clusters": ["hbase_source"], "quota_sample_gap_s": 1, **params}
    log = tmp_path / "watch.log"
    rc = dags_test("hbase_replication_watch", conf, airflow_env(dc1, dc2, tmp_path / "ledger.db"), log)
    return rc, log.read_text()


@pytest.mark.full  # make test: the lag-data watch below passes on the same healthy pair, and checks its ledger rows
def test_healthy_cluster_passes(minihbase_pair, tmp_path):
    rc, log = run_watch(minihbase_pair, tmp_path)
    assert rc == 0, log[-4000:]


def test_quota_pressure_fails(minihbase_pair, tmp_path):
    # The clusters carry a 4 GiB space quota on /hbase; a mark of one millionth of it is already crossed.
    rc, log = run_watch(minihbase_pair, tmp_path, quota_mark=0.000001)
    assert rc != 0
    assert "oldWALs" in log and "quota on /hbase" in log
    assert "new_state=up_for_retry" not in log  # a breach alerts at once; only errors are retried
    [(run, _, _)] = watch_runs(tmp_path / "ledger.db")  # a watch that fails ends its ledger run as failed
    assert run["status"] == "failed" and run["ended_ms"] is not None


@pytest.mark.full  # make test: test_watch_alerts.py's watch fails on a peer DISABLED too long and alerts on it
def test_peer_disabled_too_long_fails(minihbase_pair, tmp_path):
    from hbase_migration.clusters.connections import cluster_from_connection_text
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication import peer_admin

    dc1, dc2 = minihbase_pair
    # Added straight into ZooKeeper (the HBase 1.x path): the watch reads peers from ZooKeeper either way.
    source = dataclasses.replace(cluster_from_connection_text("src", dc1.connection_json), peer_admin="zookeeper")
    target = cluster_from_connection_text("dst", dc2.connection_json)
    with peer_admin(source) as admin:
        admin.add_peer("stale_peer", migration_peer_config(target, ["t"]), enabled=False)
    try:
        rc, log = run_watch(minihbase_pair, tmp_path, max_disabled_s=0)
        assert rc != 0
        assert "peer stale_peer" in log and "DISABLED for" in log
        assert "new_state=up_for_retry" not in log
    finally:
        with peer_admin(source) as admin:
            admin.remove_peer("stale_peer")


def watch_runs(ledger_path):
    from hbase_migration.ledger.store import Ledger

    with Ledger.open(f"sqlite:///{ledger_path}") as ledger:
        return [(r, ledger.run_summary(r["run_id"]), ledger.latest_samples(r["run_id"], 1000))
                for r in ledger.recent_runs(50) if r["plan"] == "watch"]


def test_enabled_peer_with_lag_data_records_one_row_per_queue(minihbase_pair, tmp_path):
    """Regression (issue 14, bug 1): an ENABLED peer has lag data, and the watch crashed writing it (one
    aggregated row with shipped_ops None), leaving its ledger run "running" forever. Now each region server's
    queue is one lag row, and the run ends."""
    from hbase_migration.clusters.connections import cluster_from_connection_text
    from hbase_migration.migration.preflight import migration_peer_config
    from hbase_migration.replication import peer_admin
    from tests.polling import wait_for

    dc1, dc2 = minihbase_pair
    table = "watch_" + uuid.uuid4().hex[:6]
    for c in (dc1, dc2):
        c.create_table(table, {"d": {"replication_scope": 1}})
    source = cluster_from_connection_text("src", dc1.connection_json)
    target = cluster_from_connection_text("dst", dc2.connection_json)
    peer_id = "watch_" + uuid.uuid4().hex[:6]
    with peer_admin(source) as admin:
        admin.add_peer(peer_id, migration_peer_config(target, [table]), enabled=True)
    try:
        conn = dc1.connection()
        for i in range(20):
            conn.table(table).put(b"r%02d" % i, {b"d:v": b"x"})
        conn.close()
        target_conn = dc2.connection()
        wait_for(lambda: len(list(target_conn.table(table).scan())) == 20, timeout=60, what="rows shipped")
        target_conn.close()
        rc, log = run_watch(minihbase_pair, tmp_path)
        assert rc == 0, log[-4000:]
    finally:
        with peer_admin(source) as admin:
            admin.remove_peer(peer_id, force=True)
    [(run, summary, samples)] = watch_runs(tmp_path / "ledger.db")
    assert run["status"] == "success" and run["ended_ms"] is not None
    rows = [r for r in samples["lag"] if r["peer_id"] == peer_id]
    servers = sorted(rs["servername"] for rs in dc1.region_servers)
    assert sorted(r["server"] for r in rows) == servers  # one row per region server's queue, at one instant
    assert {r["queue_id"] for r in rows} == {peer_id} and len({r["sampled_ms"] for r in rows}) == 1
    assert all(isinstance(r["shipped_ops"], int) for r in rows)
    assert sum(r["shipped_ops"] for r in rows) >= 20  # the puts shipped to dc2
    assert summary["lag"]["samples"] == 1


@pytest.mark.full  # make test: the quota breach above ends its ledger run as failed; this is the retried failure
def test_a_watch_that_fails_ends_its_ledger_run_as_failed(minihbase_pair, tmp_path):
    """Whatever makes the watch fail (here: the cluster's ZooKeeper does not answer), its ledger run ends as
    failed, never left "running"."""
    from bedkit.zookeeper import free_port

    dc1, dc2 = minihbase_pair
    dead = {"conn_type": "hbase", "host": "127.0.0.1", "port": free_port(),
            "extra": {"zookeeper_quorum": "127.0.0.1", "zookeeper_port": free_port(), "timeout_s": 1}}
    env = airflow_env(dc1, dc2, tmp_path / "ledger.db")
    env["AIRFLOW_CONN_HBASE_DEAD"] = json.dumps(dead)
    log_path = tmp_path / "watch.log"
    rc = dags_test("hbase_replication_watch", {"clusters": ["hbase_dead"], "quota_sample_gap_s": 1}, env, log_path)
    log = log_path.read_text()
    assert rc != 0
    assert "did not answer within 1s" in log, log[-4000:]
    assert "new_state=up_for_retry" in log  # an unreachable cluster may be transient: retried once
    [(run, _, _)] = watch_runs(tmp_path / "ledger.db")
    assert run["run_id"].endswith(":hbase_dead")
    assert run["status"] == "failed" and run["ended_ms"] is not None
