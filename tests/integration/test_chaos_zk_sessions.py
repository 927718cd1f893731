"""The chaos harness's ZooKeeper proxy (chaos/zkproxy.py) in front of a real ZooKeeper: it carries a client's
sessions transparently, and armed, it expires the next session that sends a request, on the server, before the
request goes on: the client's call fails and its next session is a new one."""
from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from chaos.zkproxy import ZkProxy
from tests.polling import wait_for

pytestmark = pytest.mark.integration

CHILD = """
import sys, time
from kazoo.client import KazooClient
end = time.time() + 60
while time.time() < end:
    c = KazooClient(hosts=sys.argv[1], timeout=5)
    try:
        c.start(timeout=5)
        c.create("/eph-", ephemeral=True, sequence=True, makepath=True)
        c.get_children("/")
        print("ok", flush=True)
    except Exception as e:
        print("failed:", type(e).__name__, flush=True)
    finally:
        c.stop()
        c.close()
    time.sleep(0.3)  # the toolkit's cadence: a short session per call, a call every 0.3 s (a workload, not a wait)
"""


@pytest.fixture
def proxy(zookeeper):
    p = ZkProxy(zookeeper.host, zookeeper.port).start()
    yield p
    p.stop()


def test_the_proxy_carries_sessions_and_records_them(proxy, zk_chroot):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=f"127.0.0.1:{proxy.port}{zk_chroot}", timeout=10)
    client.start(timeout=15)
    try:
        client.create("/node", b"v")
        assert client.get("/node")[0] == b"v"
        [session] = proxy.sessions
        assert (session.session_id, session.password) == client.client_id
    finally:
        client.stop()
        client.close()


def test_an_armed_proxy_expires_a_session_held_for_one_call(proxy, zookeeper):
    """The toolkit opens a session per call and closes it: the proxy expires one mid-call, the call fails, the
    process's next session is a new one (ZkExpire's recovery), its ephemeral node gone with the old one."""
    from kazoo.client import KazooClient

    from chaos.faults import ZkExpire

    child = subprocess.Popen([sys.executable, "-c", CHILD, f"127.0.0.1:{proxy.port}/chaos-zk-test"],
                             stdout=subprocess.PIPE, text=True)
    try:
        world = SimpleNamespace(zk_proxy=proxy, zk_hosts=zookeeper.hosts, toolkit_pids=lambda: [child.pid])
        fault = ZkExpire(world, "toolkit-session", {})
        fault.search_s = 20
        done = fault.inject()
        assert done["holder"].startswith(f"pid {child.pid}:"), done
        assert fault.victim.pid == child.pid
        wait_for(fault.recovered, 20, "a new session of the same process", interval=0.2)
    finally:
        child.kill()
        out = child.communicate(timeout=10)[0]
    admin = KazooClient(hosts=zookeeper.hosts)
    admin.start(timeout=15)
    try:  # no ephemeral node of the expired session is left
        names = admin.get_children("/chaos-zk-test") if admin.exists("/chaos-zk-test") else []  # none created yet
        stats = [admin.exists(f"/chaos-zk-test/{n}") for n in names]
        assert fault.victim.session_id not in {s.ephemeralOwner for s in stats if s is not None}
    finally:  # the killed child's own ephemeral nodes go when its session times out, possibly meanwhile
        from kazoo.exceptions import NoNodeError, NotEmptyError

        def deleted() -> bool:
            try:
                admin.delete("/chaos-zk-test", recursive=True)
            except NoNodeError:
                return admin.exists("/chaos-zk-test") is None
            except NotEmptyError:
                return False
            return True

        wait_for(deleted, timeout=30, what="the test's znodes deleted", interval=0.2)
        admin.stop()
        admin.close()
    assert "failed: " in out, out  # the call it hit failed
