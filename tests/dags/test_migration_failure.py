"""A migration that fails halfway leaves the documented state: here the oldWALs watchdog stops the copy (quota
policy `fail`), so the peer added at T0 is left DISABLED, and the log, the ledger and one alert (a mail and a
chat webhook POST, though both tables' copies fail) say so and what to do."""
import json
import threading
import uuid

import pytest
import requests
from kazoo.client import KazooClient

from tests.alert_receivers import RECIPIENTS, SECRETS, alert_env, http_receiver, smtp_server
from tests.dags.airflow_run import airflow_env, dags_test

# make test-full: make test shows a migration failing with the exact state it left, said in its alert (the chaos
# run's forced first attempt) and the oldWALs guard acting on a real quota (test_toolkit_realhbase.py).
pytestmark = [pytest.mark.integration, pytest.mark.dags, pytest.mark.full]


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



@pytest.mark.timeout(1800)  # make test's two workers share two cores: several times its quiet-machine time
def test_quota_breach_during_copy_leaves_the_peer_disabled_and_says_so(minihbase_pair, zookeeper, tmp_path):
    from hbase_migration.ledger.store import Ledger

    dc1, dc2 = minihbase_pair
    table = "fail_" + uuid.uuid4().hex[:6]
    other = table + "_b"  # a second table of the batch's copy, stopped too: still one alert for the run
    conn = dc1.connection()
    for name in (table, other):
        dc1.create_table(name, {"d": {"replication_scope": 1}}, split_keys=[b"m"])
        with conn.table(name).batch(batch_size=500) as b:
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
    conf = {"tables": [table, other], "peer_id": peer_id, "quota_policy": "fail", "quota_mark": 0.8,
            "bulk_loads": "none"}
    try:
        with smtp_server() as smtp, http_receiver() as http:
            env = {**airflow_env(dc1, dc2, ledger), **alert_env(smtp, http)}
            rc = dags_test("hbase_table_migration", conf, env, tmp_path / "dag.log")
    finally:
        stop.set()
        filler.join(30)
        dc1.set_quota("/hbase", ns=-1)
    log = (tmp_path / "dag.log").read_text()
    assert rc != 0
    # preflight passed; the batch's copy (both tables, one application) was stopped by the run's watchdog
    assert f"copy of batch b1 ({table}, {other}) stopped: oldWALs quota breach" in log
    assert f"peer {peer_id} (batch b1) left DISABLED" in log and "pins every WAL since T0" in log

    # One alert for the run (the batch's copy failed, then the run), by mail and by webhook, with the same text.
    assert len(smtp.mails) == 1 and len(http.posts) == 1, (smtp.mails, http.posts, log[-3000:])
    [mail], [post] = smtp.mails, http.posts
    run_id = post.body["hbase_migration"]["dag_run_id"]
    assert mail.rcpt_tos == RECIPIENTS
    # Airflow names the failed instance of the batch group's copy batch.copy_0 (state_left_behind lists it).
    assert mail.subject == (f"[hbase-migration] FAILED: hbase_table_migration run {run_id} at batch.copy_0 "
                            "(hbase_source)")
    assert post.body["text"].startswith(mail.subject + "\n\n")
    text = post.body["text"]
    for fragment in (f"DAG run {run_id}; migration run {run_id} in the ledger",
                     f"source hbase_source (cluster key {dc1.cluster_key}) -> target hbase_target (cluster key "
                     f"{dc2.cluster_key})",
                     f"copy of {table} failed: quota breach: oldWALs quota breach on hbase_source (namespace "
                     "quota on /hbase: ",
                     f"copy of {other} failed: quota breach: ", f"peer: {peer_id}",
                     f"State: peer {peer_id} DISABLED: it pins every WAL since T0 ",
                     f"python -m hbase_migration peer enable --source hbase_source --peer-id {peer_id}",
                     f"clear the batch.copy_0 task(s) of DAG run {run_id} in hbase_table_migration to resume"):
        assert fragment in text, (fragment, text)
    assert post.body["hbase_migration"]["state_left_behind"]["state"] == "DISABLED"
    for secret in SECRETS:
        assert secret not in text and secret not in mail.text and secret not in log

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
    assert json.loads(summary["phases"]["*"]["report"]["detail"])["state"] == "DISABLED"  # the alert read it here
