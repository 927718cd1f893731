"""The shell peer-admin backend (HBase 2.x+ path) against real HBase: the session's bed, its real `hbase shell -n`
(the cluster's shell_command), its master's peer procedures. Every change is confirmed by reading ZooKeeper,
where the bytes are also checked here independently. Each test's peers carry ids of its own (the bed is shared)."""
from __future__ import annotations

import uuid

import pytest

from hbase_migration.clusters import zk
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.shell import ShellCommandError
from hbase_migration.replication import peer_admin
from hbase_migration.replication import shell as shell_statements
from hbase_migration.replication.errors import PeerConflict
from hbase_migration.replication.model import PeerConfig
from hbase_migration.replication.shell_backend import ShellPeerAdmin

pytestmark = pytest.mark.integration

OWNER = "hbase_migration:shell-test"


@pytest.fixture
def clusters(realhbase_pair):
    """dc1 (the source whose peers we change) and dc2 (the peer)."""
    return realhbase_pair


@pytest.fixture
def source(clusters) -> Cluster:
    connection = clusters[0].endpoints["connection"]
    return Cluster.from_connection("dc1", connection["host"], connection["port"], connection["extra"])


@pytest.fixture
def target_key(clusters) -> str:
    return clusters[1].cluster_key


@pytest.fixture
def ids():
    """Peer ids of this test's own: name -> name_<suffix>."""
    suffix = uuid.uuid4().hex[:6]
    return lambda name: f"{name}_{suffix}"


@pytest.fixture
def admin(source, ids):
    from kazoo.client import KazooClient

    root = KazooClient(hosts=source.zk_hosts, timeout=10)
    root.start(timeout=15)
    adm = peer_admin(source, zk_client=root, owner=OWNER, shell_timeout_s=300)
    yield adm
    mine = ids("")
    for peer in adm.list_peers():
        if peer.id.endswith(mine):
            adm.remove_peer(peer.id, force=True)
    root.stop()
    root.close()


def raw(admin, peer_id):
    path = zk.peer_path(admin.parent, peer_id)
    data, stat = admin.zk.get(path)
    state, state_stat = admin.zk.get(path + "/peer-state")
    return data, stat.mzxid, state, state_stat.mzxid


def test_factory_picks_the_shell_backend(admin):
    assert isinstance(admin, ShellPeerAdmin)
    assert admin.cluster.shell_command[1:4] == ("-m", "realhbase", "shell")


def test_add_disabled_rerun_conflict_enable_disable_remove(admin, target_key, ids):
    mig1 = ids("mig1")
    config = PeerConfig(cluster_key=target_key, table_cfs={"t1": [], "t2": ["cf"]})
    created = admin.add_peer(mig1, config)
    assert created.outcome == "created" and created.peer.enabled is False
    assert created.commands[0].startswith(f'add_peer "{mig1}", CLUSTER_KEY => ')
    data, _, state, _ = raw(admin, mig1)
    assert zk.strip_metadata(state) == b"PBUF\x08\x01"
    peer = zk.decode_replication_peer(data)
    assert dict(peer.configuration)["hbase_migration.owner"] == OWNER and peer.replicate_all is False

    before = raw(admin, mig1)
    assert admin.add_peer(mig1, config).outcome == "unchanged"
    with pytest.raises(PeerConflict, match="is ours but has another config"):
        admin.add_peer(mig1, config.replace(table_cfs={"t3": []}))
    assert raw(admin, mig1) == before

    listed = {p.peer_id: p for p in admin.shell_list_peers()}
    assert listed[mig1].state == "DISABLED" and listed[mig1].table_cfs_map() == {"t1": [], "t2": ["cf"]}

    assert admin.enable_peer(mig1).peer.enabled is True
    assert zk.strip_metadata(raw(admin, mig1)[2]) == b"PBUF\x08\x00"
    assert admin.set_table_cfs(mig1, {"t1": []}).peer.config.table_cfs == {"t1": []}
    assert admin.disable_peer(mig1).peer.enabled is False
    assert admin.remove_peer(mig1).outcome == "removed"
    assert admin.get_peer(mig1) is None


@pytest.mark.full
def test_serial_and_bandwidth_in_one_session_and_another_value_is_another_config(admin, target_key, ids):
    """SERIAL goes in add_peer itself (2.1+), BANDWIDTH follows as set_peer_bandwidth in the same session; both
    read back from the peer znode (fields 11 and 7), and a re-add with other values is refused. In make
    test-full: about two minutes of real shell starts under make test's load, a second peer life cycle beside
    test_add_disabled_rerun_conflict_enable_disable_remove (the statements themselves are unit-tested)."""
    ser1 = ids("ser1")
    config = PeerConfig(cluster_key=target_key, table_cfs={"t1": []}, serial=True, bandwidth=1_048_576)
    created = admin.add_peer(ser1, config)
    assert created.commands == [
        f'add_peer "{ser1}", CLUSTER_KEY => "{target_key}", STATE => "DISABLED", TABLE_CFS => {{"t1" => []}}, '
        f'CONFIG => {{"hbase_migration.owner" => "{OWNER}"}}, SERIAL => true',
        f'set_peer_bandwidth "{ser1}", 1048576']
    data, _, _, _ = raw(admin, ser1)
    peer = zk.decode_replication_peer(data)
    assert (peer.serial, peer.bandwidth) == (True, 1_048_576)
    listed = {p.peer_id: p for p in admin.shell_list_peers()}
    assert (listed[ser1].serial, listed[ser1].bandwidth) == (True, 1_048_576)
    assert admin.add_peer(ser1, config).outcome == "unchanged"
    with pytest.raises(PeerConflict, match="serial: True != False"):
        admin.add_peer(ser1, config.replace(serial=False))
    with pytest.raises(PeerConflict, match="bandwidth: 1048576 != 0"):
        admin.add_peer(ser1, config.replace(bandwidth=0))


def test_peer_added_outside_the_toolkit_needs_force(admin, target_key, ids):
    other = ids("other")
    key = shell_statements.ruby_str(target_key)
    admin.run([f'add_peer "{other}", CLUSTER_KEY => {key}, STATE => "DISABLED"'])  # no owner mark
    with pytest.raises(PeerConflict, match="remove_peer refused"):
        admin.remove_peer(other)
    assert admin.remove_peer(other, force=True).outcome == "removed"


def test_shell_errors_surface_with_the_shells_message(admin):
    """The real shell's own words for a peer that does not exist (its master's ReplicationPeerNotFoundException)."""
    with pytest.raises(ShellCommandError, match="ReplicationPeerNotFoundException"):
        admin.run([shell_statements.remove_peer("does_not_exist")])


def test_status_replication_parses(admin):
    status = admin.replication_status()
    assert status.live_servers == 2 and len(status.servers) <= 2  # the bed's two region servers
