"""The peer operators through both peer-admin backends: the HBase 2.x shell on real HBase (the session's bed: the
real `hbase shell -n`, the master's own peer procedures), and the HBase 1.x ZooKeeper path on the stand-in (no
HBase 1.x runs here: docs/testing.md). What ZooKeeper holds afterwards is read with plain kazoo and compared with
HBase's exact bytes."""
import dataclasses
import json
import os

import pytest
from airflow.sdk.exceptions import AirflowFailException
from kazoo.client import KazooClient

from hbase_migration.operators.replication import (
    AddPeerOperator,
    DisablePeerOperator,
    EnablePeerOperator,
    RemovePeerOperator,
)
from hbase_migration.replication.errors import PeerConflict

pytestmark = pytest.mark.integration

DISABLED = b"PBUF\x08\x01"
ENABLED = b"PBUF\x08\x00"


def strip_metadata(data: bytes) -> bytes:
    if data[:1] == b"\xff":
        id_len = int.from_bytes(data[1:5], "big")
        return data[5 + id_len:]
    return data


# The shell backend on real HBase is `full`: make test runs the shell peer admin on real HBase itself
# (test_peer_admin_shell.py: add DISABLED, the re-run, the conflict, enable, disable, remove) and these operators
# through it in the secured migration's and the cut-over's DAG runs; here each case costs two shell JVMs.
@pytest.fixture(params=["zookeeper", pytest.param("shell", marks=[pytest.mark.realhbase, pytest.mark.full])])
def backend(request, monkeypatch, zookeeper):
    dc1, dc2 = request.getfixturevalue("minihbase_pair" if request.param == "zookeeper" else "realhbase_pair")
    conn = json.loads(dc1.connection_json)
    conn["extra"]["peer_admin"] = request.param
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_SOURCE", json.dumps(conn))
    monkeypatch.setenv("AIRFLOW_CONN_HBASE_TARGET", dc2.connection_json)
    zk = KazooClient(hosts=zookeeper.hosts)
    zk.start(timeout=15)
    yield request.param, dc1, dc2, zk
    zk.stop()
    zk.close()


def peer_state(zk, dc1, peer_id):
    data, stat = zk.get(f"{dc1.znode_parent}/replication/peers/{peer_id}/peer-state")
    return strip_metadata(data), stat


def test_peer_lifecycle(backend):
    name, dc1, dc2, zk = backend
    peer_id = f"ops_{name}"
    tables = [f"ops_{name}_1", f"ops_{name}_2"]  # absent on the target until created below
    add = AddPeerOperator(task_id="add", peer_id=peer_id, tables=tables)
    result = add.execute({})
    assert result["outcome"] == "created"
    state, stat = peer_state(zk, dc1, peer_id)
    assert state == DISABLED

    again = add.execute({})  # a re-run finds its own peer and changes nothing
    assert again["outcome"] == "unchanged"
    assert peer_state(zk, dc1, peer_id)[1].mzxid == stat.mzxid

    # Issue 39: never enabled while a table of the peer is absent on the target (one `list` there says which)
    with pytest.raises(AirflowFailException) as refused:
        EnablePeerOperator(task_id="e", peer_id=peer_id).execute({})
    assert str(refused.value).startswith(f"peer {peer_id} not enabled: its table(s) {tables[0]}, {tables[1]} are "
                                         "absent on hbase_target") and "the peer is left DISABLED" in str(refused.value)
    assert peer_state(zk, dc1, peer_id)[0] == DISABLED
    dc2.create_table(tables[0], {"d": {"replication_scope": 1}})
    with pytest.raises(AirflowFailException, match=f"its table\\(s\\) {tables[1]} are absent"):
        EnablePeerOperator(task_id="e", peer_id=peer_id).execute({})
    dc2.create_table(tables[1], {"d": {"replication_scope": 1}})
    assert EnablePeerOperator(task_id="e", peer_id=peer_id).execute({})["outcome"] == "enabled"
    assert peer_state(zk, dc1, peer_id)[0] == ENABLED
    assert DisablePeerOperator(task_id="d", peer_id=peer_id).execute({})["outcome"] == "disabled"
    assert peer_state(zk, dc1, peer_id)[0] == DISABLED
    assert RemovePeerOperator(task_id="r", peer_id=peer_id).execute({})["outcome"] == "removed"
    assert zk.exists(f"{dc1.znode_parent}/replication/peers/{peer_id}") is None


def test_conflicting_re_add_is_refused_and_changes_nothing(backend):
    name, dc1, dc2, zk = backend
    peer_id = f"conflict_{name}"
    AddPeerOperator(task_id="add", peer_id=peer_id, tables=["t1"]).execute({})
    peer_path = f"{dc1.znode_parent}/replication/peers/{peer_id}"
    before = (zk.get(peer_path), zk.get(peer_path + "/peer-state"))
    try:
        with pytest.raises(PeerConflict, match=peer_id):
            AddPeerOperator(task_id="add2", peer_id=peer_id, tables=["t1", "other"]).execute({})
        after = (zk.get(peer_path), zk.get(peer_path + "/peer-state"))
        assert [(d, s.mzxid) for d, s in after] == [(d, s.mzxid) for d, s in before]
    finally:
        RemovePeerOperator(task_id="r", peer_id=peer_id).execute({})


def test_dry_run_prints_commands_and_changes_nothing(backend):
    name, dc1, dc2, zk = backend
    result = AddPeerOperator(task_id="add", peer_id=f"dry_{name}", tables=["t1"], dry_run=True).execute({})
    assert result["outcome"] == "would_create" and result["commands"]
    assert zk.exists(f"{dc1.znode_parent}/replication/peers/dry_{name}") is None


def test_removing_a_foreign_peer_needs_force(backend):
    from hbase_migration.clusters.connections import cluster_from_connection_text
    from hbase_migration.replication import peer_admin
    from hbase_migration.replication.model import PeerConfig

    name, dc1, dc2, zk = backend
    peer_id = f"foreign_{name}"
    # added by someone else through the same backend (the master of a real HBase 2.x knows only its own peers), to
    # a cluster that answers: HBase 2.6's master reads the peer cluster's id through its ZooKeeper before it adds a
    # peer (ReplicationPeerManager.checkSameClusterKey), so an unreachable key is refused there
    target = cluster_from_connection_text("t", os.environ["AIRFLOW_CONN_HBASE_TARGET"])
    source = dataclasses.replace(cluster_from_connection_text("s", dc1.connection_json), peer_admin=name)
    with peer_admin(source, owner="someone_else") as admin:
        admin.add_peer(peer_id, PeerConfig(cluster_key=str(target.cluster_key), table_cfs={"x": []}), enabled=False)
    with pytest.raises(PeerConflict, match="force"):
        RemovePeerOperator(task_id="r", peer_id=peer_id).execute({})
    assert zk.exists(f"{dc1.znode_parent}/replication/peers/{peer_id}") is not None
    assert RemovePeerOperator(task_id="r", peer_id=peer_id, force=True).execute({})["outcome"] == "removed"
