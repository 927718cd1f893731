"""The bed's WAN link (realhbase/wan.py): a proxy process between two datacenters that counts every byte each way
and holds each direction to its rate; here in front of a local echo server standing for the gateways."""
from __future__ import annotations

import socket
import threading

import pytest

from realhbase import wan

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_pipe_holds_its_rate_and_counts_bytes():
    clock = Clock()
    pipe = wan.Pipe(8.0, clock)  # 8 megabits/s = 1e6 bytes/s
    burst = wan.BURST_S  # an idle link keeps this much credit
    assert pipe.send(500_000) == pytest.approx(0.5 - burst)  # half a second to cross
    assert pipe.send(500_000) == pytest.approx(1.0 - burst)  # queued behind the first
    clock.now += 1.0
    assert pipe.send(250_000) == pytest.approx(0.25 - burst)
    clock.now += 10.0
    assert pipe.send(100_000) == pytest.approx(0.1 - burst)
    assert pipe.bytes == 1_350_000
    unlimited = wan.Pipe(None, clock)
    assert unlimited.send(10**9) == 0.0 and unlimited.bytes == 10**9


def test_routes_cross_the_link_both_ways():
    endpoints = {n: {"thrift": {"host": "h", "port": p}, "thrift2": {"host": "h", "port": p + 1}}
                 for n, p in (("dc1", 10), ("dc2", 20))}
    assert wan.routes(endpoints) == [
        {"cluster": "dc1", "kind": "thrift", "forward": ["h", 10], "request_way": "dc2->dc1", "answer_way": "dc1->dc2"},
        {"cluster": "dc1", "kind": "thrift2", "forward": ["h", 11], "request_way": "dc2->dc1",
         "answer_way": "dc1->dc2"},
        {"cluster": "dc2", "kind": "thrift", "forward": ["h", 20], "request_way": "dc1->dc2", "answer_way": "dc2->dc1"},
        {"cluster": "dc2", "kind": "thrift2", "forward": ["h", 21], "request_way": "dc1->dc2",
         "answer_way": "dc2->dc1"}]
    with pytest.raises(ValueError, match="two datacenters"):
        wan.routes({"dc1": endpoints["dc1"]})


def _echo_server():
    """Answers each connection with twice what it received (so the two directions carry different counts)."""
    server = socket.create_server(("127.0.0.1", 0))

    def handle(conn):
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data + data)

    def accept():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server


def test_the_proxy_counts_every_byte_each_way_and_the_endpoints_show_the_remote_view(tmp_path):
    server = _echo_server()
    port = server.getsockname()[1]
    endpoints = {n: {"thrift": {"host": "127.0.0.1", "port": port}, "thrift2": {"host": "127.0.0.1", "port": port},
                     "connection": {"conn_type": "hbase", "host": "127.0.0.1", "port": port,
                                    "extra": {"thrift2_servers": f"127.0.0.1:{port}", "zookeeper_quorum": "zk"}}}
                 for n in ("dc1", "dc2")}
    state = wan.start(tmp_path, endpoints, 800)
    try:
        annotated = wan.annotate(tmp_path, endpoints)
        remote = annotated["dc1"]["remote"]  # dc1 as dc2 reaches it: through the link
        assert remote["connection"]["port"] == remote["thrift"]["port"] != port
        assert remote["connection"]["extra"]["thrift2_servers"] == f"127.0.0.1:{remote['thrift2']['port']}"
        assert remote["connection"]["extra"]["zookeeper_quorum"] == "zk"  # not proxied
        assert remote["wan"]["mbps"] == 800
        payload = b"x" * 300_000
        with socket.create_connection(("127.0.0.1", remote["thrift2"]["port"])) as c:
            c.sendall(payload)
            c.shutdown(socket.SHUT_WR)
            got = b""
            while len(got) < 2 * len(payload):
                chunk = c.recv(65536)
                if not chunk:
                    break
                got += chunk
        assert len(got) == 600_000
        stats = wan.stats(tmp_path)
        assert stats["bytes"] == {"dc2->dc1": 300_000, "dc1->dc2": 600_000}  # requests in, answers out
        assert stats["connections"] == 1 and state["mbps"] == 800
    finally:
        wan.stop(tmp_path)
        server.close()
    assert wan.state(tmp_path) is None
    assert wan.annotate(tmp_path, {"dc1": {}}) == {"dc1": {}}
    with pytest.raises(RuntimeError, match="no WAN link"):
        wan.stats(tmp_path)
