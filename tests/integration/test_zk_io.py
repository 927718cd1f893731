"""zk.py's I/O helpers against the real ZooKeeper, on znodes laid out as HBase lays them out.

The znodes are written here with hand-assembled bytes (not through zk.py's
encoders) so that a codec bug cannot cancel itself out.
"""
from __future__ import annotations

import time

import pytest

from bedkit.zookeeper import free_port
from hbase_migration.clusters import channels, zk
from tests.polling import wait_for

pytestmark = pytest.mark.integration

# FF | idLength=len("4242@rs1")+8=16 | "4242@rs1" | 8-byte salt | payload  (reference §0.1)
HEADER = b"\xff\x00\x00\x00\x10" + b"4242@rs1" + bytes(range(1, 9))
RS_INFO_16030 = HEADER + b"PBUF" + b"\x08\x9e\x7d"  # RegionServerInfo{infoPort=16030}
RS_INFO_WITH_VERSION = HEADER + b"PBUF" + b"\x08\x9f\x7d" + b"\x12\x07\x0a\x052.5.8"  # 16031, version "2.5.8"
UUID = "5f1f6c5e-4a3b-4c2d-9e8f-0123456789ab"


@pytest.fixture
def parent(zk_client, zk_chroot):
    """The znode parent of an HBase cluster living inside this test's chroot."""
    zk_client.ensure_path("/hbase")
    return "/hbase"


def test_live_region_servers_from_ephemeral_znodes(zookeeper, zk_chroot, zk_client, parent, expire):
    from kazoo.client import KazooClient

    zk_client.ensure_path("/hbase/rs")
    # Each region server owns its ephemeral znode through its own session, as in HBase.
    rs_sessions = []
    for name, data in [
        ("rs-b.example.com,16020,1700000000002", RS_INFO_WITH_VERSION),
        ("rs-a.example.com,16020,1700000000001", RS_INFO_16030),
        ("rs-c.example.com,16021,1700000000003", b""),  # an old server wrote no RegionServerInfo
    ]:
        session = KazooClient(hosts=zookeeper.hosts + zk_chroot, timeout=5)
        session.start(timeout=15)
        session.create(f"/hbase/rs/{name}", data, ephemeral=True)
        rs_sessions.append(session)
    try:
        servers = zk.live_region_servers(zk_client, parent)
        assert servers == [
            zk.RegionServer("rs-a.example.com,16020,1700000000001", "rs-a.example.com", 16020,
                            1700000000001, 16030, None),
            zk.RegionServer("rs-b.example.com,16020,1700000000002", "rs-b.example.com", 16020,
                            1700000000002, 16031, "2.5.8"),
            zk.RegionServer("rs-c.example.com,16021,1700000000003", "rs-c.example.com", 16021,
                            1700000000003, None, None),
        ]
        # A region server whose session expires is no longer live.
        expire(rs_sessions[1])
        wait_for(lambda: "rs-a.example.com,16020,1700000000001" not in
                 [s.servername for s in zk.live_region_servers(zk_client, parent)], 15, "the expired server to go")
        names = [s.servername for s in zk.live_region_servers(zk_client, parent)]
        assert names == ["rs-b.example.com,16020,1700000000002", "rs-c.example.com,16021,1700000000003"]
    finally:
        for session in rs_sessions:
            session.stop()
            session.close()


def test_live_region_servers_wrong_parent_is_a_clear_error(zk_client, parent):
    with pytest.raises(zk.ZnodeMissing, match=r"/hbase-typo/rs does not exist.*znode parent '/hbase-typo'"):
        zk.live_region_servers(zk_client, "/hbase-typo")


def test_read_cluster_id_with_and_without_metadata(zk_client, parent):
    zk_client.create("/hbase/hbaseid", HEADER + b"PBUF\x0a\x24" + UUID.encode())
    assert zk.read_cluster_id(zk_client, parent) == UUID
    zk_client.set("/hbase/hbaseid", UUID.encode())  # legacy raw string
    assert zk.read_cluster_id(zk_client, parent) == UUID
    with pytest.raises(zk.ZnodeMissing, match="/nowhere/hbaseid does not exist"):
        zk.read_cluster_id(zk_client, "/nowhere")


def test_replication_queues_normal_recovered_and_chained(zk_client, parent):
    rs1 = "rs1.example.com,16020,1700000000001"
    rs2 = "ip-10-0-0-2.ec2.internal,16020,1700000000002"
    dead1 = "rs-old-1.example.com,16020,1600000000001"
    dead2 = "rs-old-2.example.com,16020,1600000000002"
    wal1 = "rs1.example.com%2C16020%2C1700000000001.1700000123456"
    wal0 = "rs1.example.com%2C16020%2C1700000000001.1700000000999"
    base = "/hbase/replication/rs"
    layout = {
        f"{base}/{rs1}/1/{wal1}": HEADER + b"PBUF\x08\xfe\x01",  # position 254, with the header
        f"{base}/{rs1}/1/{wal0}": b"",  # just added: position 0
        f"{base}/{rs1}/peer2/{wal1}": (1234).to_bytes(8, "big"),  # legacy 8-byte long
        f"{base}/{rs2}/1-{dead1}/w.1600000000500": b"PBUF\x08\x00",
        f"{base}/{rs2}/1-{dead1}-{dead2}/w.1600000000600": b"PBUF\x08\x96\x01",  # chained claim, 150
    }
    for path, data in layout.items():
        zk_client.create(path, data, makepath=True)
    zk_client.create(f"{base}/{rs2}/lock", b"", makepath=True)  # 1.x failover lock: not a queue
    zk_client.create(f"{base}/{rs2}/peer3", b"", makepath=True)  # a queue with no WAL yet

    queues = zk.replication_queues(zk_client, parent)
    assert queues == [
        zk.QueueInfo(rs2, "1-" + dead1, "1", True, [dead1], [("w.1600000000500", 0)]),
        zk.QueueInfo(rs2, f"1-{dead1}-{dead2}", "1", True, [dead1, dead2], [("w.1600000000600", 150)]),
        zk.QueueInfo(rs2, "peer3", "peer3", False, [], []),
        zk.QueueInfo(rs1, "1", "1", False, [], [(wal0, 0), (wal1, 254)]),
        zk.QueueInfo(rs1, "peer2", "peer2", False, [], [(wal1, 1234)]),
    ]


def test_replication_queues_without_replication_znode_is_empty(zk_client, parent):
    assert zk.replication_queues(zk_client, parent) == []


def test_connect_reads_through_a_chroot(zookeeper, zk_chroot, zk_client, parent):
    zk_client.create("/hbase/hbaseid", b"PBUF\x0a\x24" + UUID.encode())
    with zk.connect(zookeeper.hosts + zk_chroot, timeout=10) as client:
        assert zk.read_cluster_id(client, "/hbase") == UUID
    assert not client.connected


def test_unreachable_zookeeper_is_a_clear_error_after_the_timeout_given():
    hosts = f"127.0.0.1:{free_port()}"
    took = {}
    for timeout in (1, 6):
        started = time.monotonic()
        with pytest.raises(channels.ZooKeeperUnreachable,
                           match=rf"ZooKeeper quorum {hosts} did not answer within {timeout}s"):
            with zk.connect(hosts, timeout=timeout):
                pass  # pragma: no cover - never reached
        took[timeout] = time.monotonic() - started
    # The wait follows the timeout given, compared within this run (a busy machine adds to both): the longer one
    # waited its whole 6 s, the shorter one less than that.
    assert took[6] >= 5.9 and took[1] < took[6], took
