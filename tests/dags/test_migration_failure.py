"""A migration that fails halfway leaves the documented state: here the oldWALs watchdog stops the copy (quota
policy `fail`), so the peer added at T0 is left DISABLED, and the log and the ledger say so and what to do."""
import json
import threading
import uuid

import pytest
import requests
from kazoo.client import KazooClient

from tests.dags.airflow_run import airflow_env, dags_test

pytestmark = [pytest.mark.integration, pytest.mark.dags]


def names_used(cluster, path="/hbase") -> int:
    r = requests.get(f"{cluster.webhdfs_url}/webhdfs/v1{path}", params={"op": "GETCONTENTSUMMARY"}, timeout=10)
    summary = r.json()["ContentSummary"]
    return summary["fileCount"] + summary["directoryCount"]


def fill_after_add_peer(cluster, zk_hosts: str, peer_id: str, quota: int, fraction: float,
                        stop: threading.Event) -> None:
    """Once the peer exists (preflight passed, it is DISABLED and pins every WAL), roll WALs until the names
    under the quota reach `fraction` of it: the copy's watchdog then meets a breach preflight did not see."""
    zk = KazooClient(hosts=zk_hosts)
    zk.start(timeout=15)
    try:
        while not stop.is_set() and not zk.exists(f"{cluster.znode_parent}/replication/peers/{peer_id}"):
            stop.wait(0.05)
    finally:
        zk.stop()
        zk.close()
    while not stop.is_set() and names_used(cluster) < fraction * quota:
        cluster.roll_wals()  # one new WAL file per region server; the disabled peer keeps the old ones



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
    # A namespace quota preflight accepts (70% used, under the 80% mark)...
    quota = int(names_used(dc1) / 0.7) + 1
    dc1.set_quota("/hbase", ns=quota)
    stop = threading.Event()
    filler = threading.Thread(target=fill_after_add_peer, args=(dc1, zookeeper.hosts, peer_id, quota, 0.85, stop),
                              daemon=True)
    filler.start()
    conf = {"tables": [table], "peer_id": peer_id, "quota_policy": "fail", "quota_mark": 0.8}
    try:
        rc = dags_test("hbase_table_migration", conf, airflow_env(dc1, dc2, ledger), tmp_path / "dag.log")
    finally:
        stop.set()
        filler.join(30)
        dc1.set_quota("/hbase", ns=-1)
    log = (tmp_path / "dag.log").read_text()
    assert rc != 0
    assert f"copy of {table} stopped: oldWALs quota breach" in log  # preflight passed; the copy's watchdog acted
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
