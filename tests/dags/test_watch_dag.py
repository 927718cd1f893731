"""The scheduled watch: passes on a healthy pair, fails (so Airflow alerts) on a peer disabled too long and on
oldWALs quota pressure, naming the cause in the task log."""
import dataclasses

import pytest

from tests.dags.airflow_run import airflow_env, dags_test

pytestmark = [pytest.mark.integration, pytest.mark.dags]


def run_watch(pair, tmp_path, **params):
    dc1, dc2 = pair
    conf = {"clusters": ["hbase_source"], "quota_sample_gap_s": 1, **params}
    log = tmp_path / "watch.log"
    rc = dags_test("hbase_replication_watch", conf, airflow_env(dc1, dc2, tmp_path / "ledger.db"), log)
    return rc, log.read_text()


def test_healthy_cluster_passes(minihbase_pair, tmp_path):
    rc, log = run_watch(minihbase_pair, tmp_path)
    assert rc == 0, log[-4000:]


def test_quota_pressure_fails(minihbase_pair, tmp_path):
    # The clusters carry a 4 GiB space quota on /hbase; a mark of one millionth of it is already crossed.
    rc, log = run_watch(minihbase_pair, tmp_path, quota_mark=0.000001)
    assert rc != 0
    assert "oldWALs" in log and "quota on /hbase" in log


def test_peer_disabled_too_long_fails(minihbase_pair, tmp_path):
    from hbase_migration.connections import cluster_from_connection_text
    from hbase_migration.preflight import migration_peer_config
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
    finally:
        with peer_admin(source) as admin:
            admin.remove_peer("stale_peer")
