"""The nemesis's TCP fault proxy (chaos/netproxy.py) in front of a real server (an echo server on loopback): it
passes bytes both ways, delays each request by its latency, resets connections before or after a request and
rejects every connection while partitioned, and goes back to passing bytes once cleared."""
from __future__ import annotations

import socket
import socketserver
import threading

import pytest

from chaos.netproxy import FaultProxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(65536):
            self.server.seen.append(data)
            self.request.sendall(data)


@pytest.fixture
def proxy():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    server.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    p = FaultProxy("127.0.0.1", server.server_address[1], "echo", seed=3).start()
    p.server = server
    yield p
    p.stop()
    server.shutdown()
    server.server_close()


def _call(port: int, payload: bytes, sock: socket.socket | None = None) -> bytes:
    s = sock or socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionResetError("closed")
        got += chunk
    if sock is None:
        s.close()
    return got


def test_bytes_pass_both_ways_and_latency_delays_each_request(proxy):
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        assert _call(proxy.port, b"one", s) == b"one"
        assert _call(proxy.port, b"two", s) == b"two"
        proxy.set(latency_ms=300)
        assert _call(proxy.port, b"three", s) == b"three"
        proxy.clear()
        assert _call(proxy.port, b"four", s) == b"four"
    assert proxy.counts.delayed == 1  # the one request sent while the latency was set waited, the others not
    assert proxy.counts.requests == 4 and proxy.counts.connections == 1


def test_resets_before_or_after_a_request_and_a_partition_rejects_everything(proxy):
    proxy.set(reset_probability=1.0)
    with pytest.raises(OSError):
        _call(proxy.port, b"lost")
    assert proxy.counts.resets >= 1
    proxy.set(reset_probability=0.0)
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
        assert _call(proxy.port, b"ok", s) == b"ok"
        proxy.set(partitioned=True)  # the open connection is reset at once
        with pytest.raises(OSError):
            _call(proxy.port, b"cut", s)
    with pytest.raises(OSError):
        _call(proxy.port, b"refused")
    assert proxy.counts.refused >= 1 and b"cut" not in proxy.server.seen and b"refused" not in proxy.server.seen
    proxy.clear()
    assert _call(proxy.port, b"healed") == b"healed"


def test_a_reset_now_drops_open_connections_only(proxy):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    assert _call(proxy.port, b"a", s) == b"a"
    assert proxy.reset_now() == 1
    with pytest.raises(OSError):
        _call(proxy.port, b"b", s)
    s.close()
    assert _call(proxy.port, b"c") == b"c"
