"""The chaos harness finds a process's ZooKeeper session through a real ZooKeeper's `cons` and /proc, and
expires it server-side with the password ZooKeeper derived from its id."""
from __future__ import annotations

import os
import threading

import pytest

from chaos.zksessions import expire, session_password, sessions_of

pytestmark = pytest.mark.integration


def test_a_sessions_password_is_derived_from_its_id(zookeeper):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=15)
    try:
        session_id, password = client.client_id
        assert session_password(session_id) == password
    finally:
        client.stop()
        client.close()


def test_a_processs_session_is_found_and_expired_on_the_server(zookeeper, zk_chroot):
    from kazoo.client import KazooClient, KazooState

    client = KazooClient(hosts=zookeeper.hosts + zk_chroot, timeout=10)
    client.start(timeout=15)
    lost = threading.Event()
    client.add_listener(lambda state: lost.set() if state == KazooState.LOST else None)
    try:
        client.create("/owned", ephemeral=True)
        session_id = client.client_id[0]
        held = [s for s in sessions_of(zookeeper.host, zookeeper.port, [os.getpid()]) if s.session_id == session_id]
        assert len(held) == 1 and held[0].pid == os.getpid(), held
        assert sessions_of(zookeeper.host, zookeeper.port, [1]) == []  # not held by another process

        assert expire(zookeeper.hosts, session_id)
        assert lost.wait(15)  # the owner is told its session expired ...
        client.retry(client.exists, "/")
        assert client.client_id[0] != session_id  # ... and kazoo opened a new one
        assert client.exists("/owned") is None  # the ephemeral node went with the old session
        assert not expire(zookeeper.hosts, session_id)  # an ended session cannot be attached to again
    finally:
        client.stop()
        client.close()


CHILD = """
import sys, time
from kazoo.client import KazooClient
end = time.time() + 60
while time.time() < end:
    c = KazooClient(hosts=sys.argv[1], timeout=5)
    try:
        c.start(timeout=5)
        c.get_children("/")
        time.sleep(0.05)  # a call's length: the toolkit holds a session only this long
        c.get_children("/")
        print("ok", flush=True)
    except Exception as e:
        print("failed:", type(e).__name__, flush=True)
    finally:
        c.stop()
        c.close()
    time.sleep(0.5)
"""


def test_the_nemesis_expires_a_session_held_only_for_the_length_of_a_call(zookeeper, tmp_path):
    """The toolkit opens a session per call (a drain poll, a load sample) and closes it: the nemesis catches
    one such session in flight, expires it, and sees the process hold a new one afterwards."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from chaos.faults import ZkExpire

    child = subprocess.Popen([sys.executable, "-c", CHILD, zookeeper.hosts], stdout=subprocess.PIPE, text=True)
    try:
        world = SimpleNamespace(zk=(zookeeper.host, zookeeper.port), zk_hosts=zookeeper.hosts,
                                toolkit_pids=lambda: [child.pid])
        fault = ZkExpire(world, "toolkit-session", {})
        fault.search_s = 20
        done = fault.inject()
        assert done["holder"].startswith(f"pid {child.pid}:"), done
        fault.healed_at = fault.injected_at
        assert any(fault.recovered() for _ in range(10))  # a new session of the same process
    finally:
        child.kill()
        out = child.communicate(timeout=10)[0]
    assert "failed: SessionExpiredError" in out or "failed: ConnectionLoss" in out, out  # the call it hit failed
