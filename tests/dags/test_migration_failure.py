"""A migration that fails halfway leaves the documented state: here the oldWALs watchdog stops the copy (quota
policy `fail`), so the peer added at T0 is left DISABLED, and the log and the ledger say so and what to do."""
import json
import uuid

import pytest
from kazoo.client import KazooClient

from tests.dags.airflow_run import airflow_env, dags_test

pytestmark = [pytest.mark.integration, pytest.mark.dags]



def test_quota_breach_during_copy_leaves_the_peer_disabled_and_says_so(minihbase_pair, zookeeper, tmp_path):
    from hbase_migration.ledger import Ledger

    dc1, dc2 = minihbase_pair
    table = "fail_" + uuid.uuid4().hex[:6]
    dc1.create_table(table, {"d": {"replication_scope": 1}}, split_keys=[b"m"])
    conn = dc1.connection()
    with conn.table(table).batch(batch_size=500) as b:
        for i in range(2000):
            b.put(b"%05d" % i, {b"d:v": b"x"})
    conn.close()
    peer_id = "fail_" + uuid.uuid4().hex[:6]
    ledger = tmp_path / "ledger.db"
    conf = {"tables": [table], "peer_id": peer_id, "quota_policy": "fail", "quota_mark": 0.000001}
    rc = dags_test("hbase_table_migration", conf, airflow_env(dc1, dc2, ledger), tmp_path / "dag.log")
    log = (tmp_path / "dag.log").read_text()
    assert rc != 0
    assert "oldWALs quota breach" in log
    assert f"peer {peer_id} left DISABLED" in log and "pins every WAL since T0" in log

    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    try:
        state, _ = zk.get(f"{dc1.znode_parent}/replication/peers/{peer_id}/peer-state")
        assert state.endswith(b"PBUF\x08\x01")  # DISABLED, as HBase writes it
    finally:
        zk.stop()
        zk.close()
    with Ledger.open(f"sqlite:///{ledger}") as led:
        run = next(r for r in led.recent_runs(5) if r["dag_id"] == "hbase_table_migration")
        summary = led.run_summary(run["run_id"])
    assert summary["run"]["status"] == "failed"
    assert summary["peer"]["state"] == "DISABLED"
    assert any("copy" in n["reason"] for n in summary["peer"]["notes"]), json.dumps(summary["peer"])
    assert summary["phases"][table]["copy"]["status"] == "failed"
