"""A TCP fault proxy (as Toxiproxy is one) in front of one endpoint the toolkit uses: a Thrift gateway, a NameNode's
WebHDFS. The toolkit's connections point at it (the chaos run's `hbase_source` / `hbase_target`), HBase's own
traffic does not; the nemesis sets its faults for a hold:

    latency_ms          every request waits this long before it is passed on (a slow link or a slow server)
    reset_probability   each request's connection is reset (TCP RST) with this probability, before the request
                        reaches the server or after it ran, before its answer is passed back (answered or not:
                        the client cannot tell)
    partitioned         every open connection is reset and every new one is reset at once (the endpoint's port
                        rejects: a partition with a REJECT rule; a DROP rule would hang clients until their
                        timeouts)

`reset_now()` resets every open connection. A request is a client's bytes after the server last sent (or the
first bytes of a connection); an answer the server's bytes after the client last sent: what a Thrift or HTTP call
looks like on the wire. chaos/zkproxy.py is this idea for ZooKeeper's framed protocol (session expiry).
"""
from __future__ import annotations

import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Faults:
    latency_ms: float = 0.0
    reset_probability: float = 0.0
    partitioned: bool = False


@dataclass
class Counts:
    connections: int = 0
    requests: int = 0
    resets: int = 0
    delayed: int = 0
    refused: int = 0


@dataclass(eq=False)  # hashed by identity: kept in a set
class _Conn:
    client: socket.socket
    upstream: socket.socket
    last: str = "server"   # who sent last: a client's bytes after the server's begin a request
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0): the peer sees 'connection reset', not an orderly end."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class FaultProxy:
    """`start()` listens on a free loopback port (`port`) and forwards each connection to `upstream`."""

    def __init__(self, upstream_host: str, upstream_port: int, name: str = "", seed: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.name = name or f"{upstream_host}:{upstream_port}"
        self.port = 0
        self.faults = Faults()
        self.counts = Counts()
        self._rng = random.Random(seed)
        self._sock: socket.socket | None = None
        self._conns: set[_Conn] = set()
        self._lock = threading.Lock()
        self._running = False

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "FaultProxy":
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self._sock, self.port, self._running = sock, sock.getsockname()[1], True
        threading.Thread(target=self._accept, name=f"netproxy-{self.name}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._running = False
        if self._sock is not None:
            try:  # shutdown first: a close alone leaves the socket listening while accept() blocks on it
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        for conn in self._snapshot():
            self._close(conn, reset=False)

    # ---------------------------------------------------------------------------------------------- faults
    def set(self, latency_ms: float | None = None, reset_probability: float | None = None,
            partitioned: bool | None = None) -> Faults:
        with self._lock:
            if latency_ms is not None:
                self.faults.latency_ms = float(latency_ms)
            if reset_probability is not None:
                self.faults.reset_probability = float(reset_probability)
            if partitioned is not None:
                self.faults.partitioned = bool(partitioned)
        if partitioned:
            self.reset_now()
        return self.faults

    def clear(self) -> None:
        self.set(latency_ms=0, reset_probability=0, partitioned=False)

    def reset_now(self) -> int:
        conns = self._snapshot()
        for conn in conns:
            self._close(conn, reset=True)
        return len(conns)

    def _snapshot(self) -> list[_Conn]:
        with self._lock:
            return list(self._conns)

    def _draw(self) -> float:
        with self._lock:
            return self._rng.random()

    # ---------------------------------------------------------------------------------------------- pumps
    def _accept(self) -> None:
        while self._running:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            if self.faults.partitioned:
                self.counts.refused += 1
                _reset(client)
                continue
            threading.Thread(target=self._serve, args=(client,), name=f"netproxy-{self.name}-conn",
                             daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            _reset(client)  # the endpoint itself is down: the client sees its port refuse, as without us
            return
        upstream.settimeout(None)
        conn = _Conn(client, upstream)
        with self._lock:
            self._conns.add(conn)
            self.counts.connections += 1
        threading.Thread(target=self._pump, args=(conn, "server"), daemon=True).start()
        self._pump(conn, "client")

    def _pump(self, conn: _Conn, side: str) -> None:
        src, dst = (conn.client, conn.upstream) if side == "client" else (conn.upstream, conn.client)
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with conn.lock:
                    turn = conn.last != side  # the first bytes of a request (or of an answer)
                    conn.last = side
                if turn and side == "client":
                    self.counts.requests += 1
                    if self.faults.latency_ms:
                        self.counts.delayed += 1
                        time.sleep(self.faults.latency_ms / 1000.0)
                if self.faults.partitioned or (turn and self.faults.reset_probability
                                               and self._draw() < self.faults.reset_probability):
                    self._close(conn, reset=True)  # before the request ran, or after it ran and unanswered
                    return
                dst.sendall(data)
        except OSError:
            pass
        self._close(conn, reset=False)

    def _close(self, conn: _Conn, reset: bool) -> None:
        with conn.lock:
            if conn.closed:
                return
            conn.closed = True
        if reset:
            self.counts.resets += 1
            _reset(conn.client)
            _reset(conn.upstream)
        else:
            for s in (conn.client, conn.upstream):
                try:
                    s.close()
                except OSError:
                    pass
        with self._lock:
            self._conns.discard(conn)
