"""The harness's real ZooKeeper: kazoo create, watches, and ephemeral nodes vanishing on session expiry."""
import threading

import pytest
from kazoo.client import KazooClient

pytestmark = pytest.mark.integration


def test_create_and_read_back_in_own_chroot(zk_client, zk_chroot, zookeeper):
    zk_client.create("/a/b", b"payload", makepath=True)
    data, stat = zk_client.get("/a/b")
    assert data == b"payload"
    assert stat.version == 0
    # The chroot is a real prefix on the server: an unrooted client sees the node under it.
    outside = KazooClient(hosts=zookeeper.hosts)
    outside.start(timeout=15)
    try:
        assert outside.get(zk_chroot + "/a/b")[0] == b"payload"
    finally:
        outside.stop()
        outside.close()


def test_data_watch_fires_on_change(zk_client):
    zk_client.create("/watched", b"v1")
    seen = []
    changed = threading.Event()

    @zk_client.DataWatch("/watched")
    def _watch(data, stat):
        seen.append(data)
        if data == b"v2":
            changed.set()

    zk_client.set("/watched", b"v2")
    assert changed.wait(10), f"watch did not fire, saw {seen!r}"
    assert seen[0] == b"v1"


def test_ephemeral_node_vanishes_when_its_session_expires(zk_client, zookeeper, zk_chroot, expire):
    owner = KazooClient(hosts=zookeeper.hosts + zk_chroot, timeout=10)
    owner.start(timeout=15)
    try:
        owner.create("/rs/host1,16020,1", b"", ephemeral=True, makepath=True)
        gone = threading.Event()

        @zk_client.ChildrenWatch("/rs")
        def _children(children):
            if not children:
                gone.set()

        assert zk_client.get_children("/rs") == ["host1,16020,1"]
        old_session = owner.client_id[0]
        expire(owner)
        assert gone.wait(15), "the ephemeral node survived its session"
        assert zk_client.exists("/rs/host1,16020,1") is None
        # The client itself reconnects with a new session, as an HBase region server would not.
        assert owner.client_id is None or owner.client_id[0] != old_session
    finally:
        owner.stop()
        owner.close()
