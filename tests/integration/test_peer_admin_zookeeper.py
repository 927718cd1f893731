"""The ZooKeeper peer-admin backend (HBase 1.x path) end to end against the real ZooKeeper.

The source cluster's znode parent is `<chroot>/hbase`, so every test has its
own HBase tree; a root client reads the raw bytes back independently.
"""
from __future__ import annotations

import pytest

from bedkit.zookeeper import free_port
from hbase_migration.clusters import channels, zk
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.replication import peer_admin
from hbase_migration.replication.errors import PeerAdminError, PeerConflict, PeerNotFound, PeerStateMismatch
from hbase_migration.replication.model import OWNER_KEY, InvalidPeerConfig, PeerConfig
from hbase_migration.replication.zookeeper_backend import ZooKeeperPeerAdmin

pytestmark = pytest.mark.integration

TARGET = "zk-b1.dc2.example.com,zk-b2.dc2.example.com:2181:/hbase-dc2"
OWNER = "hbase_migration:test"


def peer_bytes(cluster_key: str, owner: str, tables: list[str], replicate_all: bool = False) -> bytes:
    """ReplicationPeer assembled by hand (not by zk.py): key, owner, whole tables, 38 00 40 0x 58 00."""
    def ld(tag: int, payload: bytes) -> bytes:
        assert len(payload) < 128
        return bytes([tag, len(payload)]) + payload

    body = ld(0x0A, cluster_key.encode())
    body += ld(0x22, ld(0x0A, OWNER_KEY.encode()) + ld(0x12, owner.encode()))
    for table in tables:
        body += ld(0x2A, ld(0x0A, ld(0x0A, b"default") + ld(0x12, table.encode())))
    return b"PBUF" + body + b"\x38\x00\x40" + bytes([replicate_all]) + b"\x58\x00"


@pytest.fixture
def root(zookeeper):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper.hosts, timeout=10)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def cluster(zookeeper, zk_chroot, root):
    host, port = zookeeper.hosts.split(":")
    parent = f"{zk_chroot}/hbase"
    root.ensure_path(parent)  # HBase has run on this cluster
    return Cluster(name="dc1", thrift_host="127.0.0.1", zk_quorum=(host,), zk_port=int(port),
                   znode_parent=parent, peer_admin="zookeeper", timeout_s=5.0)


@pytest.fixture
def admin(cluster):
    with peer_admin(cluster, owner=OWNER) as adm:
        yield adm


def config(**kw) -> PeerConfig:
    kw.setdefault("cluster_key", TARGET)
    kw.setdefault("table_cfs", {"t1": []})
    return PeerConfig(**kw)


def snapshot(root, parent: str, peer_id: str):
    """(bytes, mzxid) of the peer znode and its peer-state, or None when absent."""
    path = zk.peer_path(parent, peer_id)
    if root.exists(path) is None:
        return None
    data, stat = root.get(path)
    state, state_stat = root.get(path + "/peer-state")
    return data, stat.mzxid, state, state_stat.mzxid


def test_factory_picks_the_zookeeper_backend(admin):
    assert isinstance(admin, ZooKeeperPeerAdmin) and admin.backend == "zookeeper"


def test_add_creates_a_disabled_peer_in_hbase_bytes_and_rerun_is_a_no_op(admin, cluster, root):
    result = admin.add_peer("1", config())
    assert (result.outcome, result.changed, result.dry_run) == ("created", True, False)
    assert result.peer.enabled is False and result.peer.owner == OWNER
    assert any("create " + zk.peer_path(cluster.znode_parent, "1") in c for c in result.commands)

    data, _, state, _ = snapshot(root, cluster.znode_parent, "1")
    assert data[0] == 0xFF and state[0] == 0xFF  # written with the ZKMetadata header, as HBase does
    assert zk.strip_metadata(data) == peer_bytes(TARGET, OWNER, ["t1"])
    assert zk.strip_metadata(state) == bytes.fromhex("50 42 55 46 08 01")  # DISABLED, byte-exact
    assert not zk.hbase_sees_enabled(state)

    before = snapshot(root, cluster.znode_parent, "1")
    same_spelled_otherwise = "ZK-B2.dc2.example.com:2181,zk-b1.dc2.example.com:2181:/hbase-dc2"
    again = admin.add_peer("1", config(cluster_key=same_spelled_otherwise, table_cfs={"default:t1": []}))
    assert (again.outcome, again.changed, again.commands) == ("unchanged", False, [])
    assert snapshot(root, cluster.znode_parent, "1") == before


def test_rerun_after_enable_leaves_the_peer_enabled(admin, cluster, root):
    admin.add_peer("1", config())
    admin.enable_peer("1")
    again = admin.add_peer("1", config())
    assert again.outcome == "unchanged" and again.peer.enabled is True
    assert "add_peer never changes the state" in again.message
    assert zk.hbase_sees_enabled(root.get(zk.peer_state_path(cluster.znode_parent, "1"))[0])


def test_conflicting_readd_is_refused_and_changes_nothing(admin, cluster, root):
    admin.add_peer("1", config())
    before = snapshot(root, cluster.znode_parent, "1")
    with pytest.raises(PeerConflict) as err:
        admin.add_peer("1", config(table_cfs={"t1": [], "t2": ["cf"]}), enabled=True)
    message = str(err.value)
    assert "is ours but has another config" in message and "nothing was changed" in message
    assert "table_cfs: {'t1': []} != {'t1': [], 't2': ['cf']}" in message
    assert '"table_cfs": {"t1": []}' in message and '"table_cfs": {"t1": [], "t2": ["cf"]}' in message
    assert snapshot(root, cluster.znode_parent, "1") == before


def test_enable_disable_and_remove(admin, cluster, root):
    state_path = zk.peer_state_path(cluster.znode_parent, "1")
    admin.add_peer("1", config())

    enabled = admin.enable_peer("1")
    assert (enabled.outcome, enabled.peer.enabled) == ("enabled", True)
    assert zk.strip_metadata(root.get(state_path)[0]) == bytes.fromhex("50 42 55 46 08 00")
    assert admin.enable_peer("1").outcome == "unchanged"

    disabled = admin.disable_peer("1")
    assert (disabled.outcome, disabled.peer.enabled) == ("disabled", False)
    assert zk.strip_metadata(root.get(state_path)[0]) == bytes.fromhex("50 42 55 46 08 01")

    removed = admin.remove_peer("1")
    assert (removed.outcome, removed.peer) == ("removed", None)
    assert root.exists(zk.peer_path(cluster.znode_parent, "1")) is None
    assert admin.remove_peer("1").outcome == "absent"
    with pytest.raises(PeerNotFound, match="peer '1' does not exist on cluster 'dc1'"):
        admin.enable_peer("1")


def test_dry_runs_write_nothing(admin, cluster, root):
    peers = zk.join(cluster.znode_parent, "replication", "peers")
    plan = admin.add_peer("1", config(), dry_run=True)
    assert (plan.outcome, plan.changed, plan.peer) == ("would_create", False, None)
    assert plan.commands[0] == f"ensure {peers}"
    assert plan.commands[2].startswith(
        f"transaction: create {peers}/1/peer-state <- ReplicationState DISABLED")
    assert root.exists(peers) is None

    admin.add_peer("1", config())
    before = snapshot(root, cluster.znode_parent, "1")
    assert admin.enable_peer("1", dry_run=True).outcome == "would_enable"
    assert admin.set_table_cfs("1", {"t9": []}, dry_run=True).outcome == "would_update"
    assert admin.remove_peer("1", dry_run=True).outcome == "would_remove"
    assert snapshot(root, cluster.znode_parent, "1") == before


def test_peer_not_ours_needs_force(admin, cluster, root):
    path = zk.peer_path(cluster.znode_parent, "legacy")
    foreign = b"PBUF\x0a" + bytes([len(TARGET)]) + TARGET.encode() + b"\x38\x00\x40\x01"  # no owner mark
    root.create(path, zk.add_metadata(foreign), makepath=True)
    root.create(path + "/peer-state", b"PBUF\x08\x00")
    before = snapshot(root, cluster.znode_parent, "legacy")

    with pytest.raises(PeerConflict, match="already exists .* not created by 'hbase_migration:test' "
                                           r"\(owner mark: None\)"):
        admin.add_peer("legacy", PeerConfig(cluster_key=TARGET))
    with pytest.raises(PeerConflict, match="remove_peer refused: peer 'legacy' .* Pass force=True"):
        admin.remove_peer("legacy")
    with pytest.raises(PeerConflict, match="disable_peer refused"):
        admin.disable_peer("legacy")
    assert snapshot(root, cluster.znode_parent, "legacy") == before

    # another migration's peer is not ours either
    other = peer_admin(cluster, zk_client=admin.zk, owner="hbase_migration:other")
    other.add_peer("2", config())
    with pytest.raises(PeerConflict, match=r"owner mark: 'hbase_migration:other'"):
        admin.remove_peer("2")

    assert admin.remove_peer("legacy", force=True).outcome == "removed"
    assert root.exists(path) is None


def test_set_table_cfs(admin, cluster, root):
    admin.add_peer("1", config())
    result = admin.set_table_cfs("1", {"t1": [], "t2": []})
    assert result.outcome == "updated" and result.peer.config.table_cfs == {"t1": [], "t2": []}
    data = root.get(zk.peer_path(cluster.znode_parent, "1"))[0]
    assert zk.strip_metadata(data) == peer_bytes(TARGET, OWNER, ["t1", "t2"])
    assert result.peer.enabled is False  # state untouched
    assert admin.set_table_cfs("1", {"t2": [], "default:t1": []}).outcome == "unchanged"
    with pytest.raises(InvalidPeerConfig, match="table_cfs must name at least one table"):
        admin.set_table_cfs("1", {})


def test_bad_input_changes_nothing(admin, cluster, root):
    peers = zk.join(cluster.znode_parent, "replication", "peers")
    with pytest.raises(InvalidPeerConfig, match="peer id 'a-b' contains '-'"):
        admin.add_peer("a-b", config())
    with pytest.raises(InvalidPeerConfig, match="is cluster 'dc1' .* itself"):
        admin.add_peer("1", config(cluster_key=str(cluster.cluster_key)))
    with pytest.raises(InvalidPeerConfig, match="owner mark 'someone' but this admin acts for"):
        admin.add_peer("1", config(configuration={OWNER_KEY: "someone"}))
    assert root.exists(peers) is None


def test_serial_is_refused_by_the_1x_backend_and_bandwidth_is_written(admin, cluster, root):
    """HBase 1.x has no serial peers: SERIAL is refused naming the backend and the fix, nothing written; a
    bandwidth is the peer message's field 7, as 1.3+ read it."""
    peers = zk.join(cluster.znode_parent, "replication", "peers")
    with pytest.raises(InvalidPeerConfig, match=r"serial replication needs HBase 2\.1\+ .*ZooKeeper peer-admin "
                                                r"backend .*Nothing was changed: use the shell backend "
                                                r"\(connection extra peer_admin=shell\)"):
        admin.add_peer("s1", config(serial=True))
    assert root.exists(peers) is None or root.get_children(peers) == []
    assert admin.add_peer("b1", config(bandwidth=2_000_000)).outcome == "created"
    data, _ = root.get(zk.peer_path(cluster.znode_parent, "b1"))
    decoded = zk.decode_replication_peer(data)
    assert (decoded.bandwidth, decoded.serial) == (2_000_000, False)
    with pytest.raises(PeerConflict, match="bandwidth: 2000000 != 1000"):  # another bandwidth: another config
        admin.add_peer("b1", config(bandwidth=1000))


def test_leftover_queues_of_a_former_peer_block_add(admin, cluster, root):
    rs = "rs1.example.com,16020,1700000000001"
    queue = zk.join(cluster.znode_parent, "replication", "rs", rs, "1-rs2.example.com,16020,1600000000000")
    root.create(queue + "/rs2.example.com%2C16020%2C1600000000000.1600000000123", b"", makepath=True)
    with pytest.raises(PeerConflict, match=r"queues of a former peer '1' remain .*checkQueuesDeleted"):
        admin.add_peer("1", config())
    assert root.exists(zk.peer_path(cluster.znode_parent, "1")) is None


def test_legacy_table_cfs_znode_for_hbase_1_0_to_1_2(cluster, root):
    with peer_admin(cluster, owner=OWNER, legacy_table_cfs_znode=True) as admin:
        admin.add_peer("1", config(table_cfs={"t1": [], "t2": ["cf2", "cf1"]}))
        legacy = root.get(zk.peer_path(cluster.znode_parent, "1") + "/tableCFs")[0]
        assert zk.strip_metadata(legacy) == b"t1;t2:cf1,cf2"
        admin.set_table_cfs("1", {"t3": []})
        assert zk.strip_metadata(root.get(zk.peer_path(cluster.znode_parent, "1") + "/tableCFs")[0]) == b"t3"
        with pytest.raises(InvalidPeerConfig, match="namespace"):
            admin.add_peer("2", config(table_cfs={"ns:t": []}))
        assert root.exists(zk.peer_path(cluster.znode_parent, "2")) is None


class IgnoresStateAdmin(ZooKeeperPeerAdmin):
    """A backend that creates every peer ENABLED, like an old shell that ignores STATE => DISABLED."""

    def _add(self, peer_id, config, enabled, execute):
        return super()._add(peer_id, config, True, execute)


def test_read_back_catches_a_peer_created_in_the_wrong_state(cluster, root):
    admin = IgnoresStateAdmin(cluster, owner=OWNER, confirm_timeout_s=0.3)
    try:
        with pytest.raises(PeerStateMismatch, match=r"after add_peer, ZooKeeper shows peer '1' .* ENABLED .*"
                                                    r"expected DISABLED") as err:
            admin.add_peer("1", config())
        assert err.value.found.enabled is True
    finally:
        admin.close()


def test_unreachable_zookeeper_is_a_clear_error_within_the_cluster_timeout():
    # That the wait follows the timeout given is shown by tests/integration/test_zk_io.py, relative to a second
    # timeout in the same run; here, that the backend passes the cluster's own (1.5 s) and says so.
    cluster = Cluster(name="gone", thrift_host="127.0.0.1", zk_quorum=("127.0.0.1",), zk_port=free_port(),
                      peer_admin="zookeeper", timeout_s=1.5)
    with peer_admin(cluster) as admin:
        with pytest.raises(channels.ZooKeeperUnreachable,
                           match=r"quorum 127\.0\.0\.1:\d+ did not answer within 1\.5s"):
            admin.list_peers()


def test_list_and_get(admin):
    admin.add_peer("b", config())
    admin.add_peer("a", config(table_cfs={"ns1:t": ["f"]}), enabled=True)
    assert [(p.id, p.state) for p in admin.list_peers()] == [("a", "ENABLED"), ("b", "DISABLED")]
    assert admin.get_peer("a").config.table_cfs == {"ns1:t": ["f"]}
    assert admin.get_peer("zzz") is None


def test_half_created_or_odd_peers_are_reported_not_guessed(admin, cluster, root):
    half = zk.peer_path(cluster.znode_parent, "half")
    root.create(half, zk.add_metadata(peer_bytes(TARGET, OWNER, ["t1"])), makepath=True)  # no peer-state
    assert admin.get_peer("half").state == "MISSING"
    with pytest.raises(PeerAdminError, match="has no peer-state znode"):
        admin.enable_peer("half")
    with pytest.raises(PeerAdminError, match="has no peer-state znode"):
        admin.add_peer("half", config())
    assert root.get_children(half) == []

    odd = zk.peer_path(cluster.znode_parent, "odd")
    root.create(odd, zk.add_metadata(peer_bytes(TARGET, OWNER, ["t1"])), makepath=True)
    root.create(odd + "/peer-state", b"ENABLED")  # 0.94's string: decodes, but HBase's byte compare says no
    with pytest.raises(PeerAdminError, match="reads ENABLED but is not the exact bytes PBUF 08 00"):
        admin.get_peer("odd")


def test_admin_reopens_its_own_session_after_close(cluster):
    admin = peer_admin(cluster, owner=OWNER)
    admin.add_peer("1", config())
    first = admin.zk
    admin.close()
    assert not first.connected
    assert admin.get_peer("1").enabled is False  # a fresh session
    admin.close()
