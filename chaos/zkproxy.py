"""A transparent TCP proxy in front of the source cluster's ZooKeeper for the toolkit's connections (as Toxiproxy
sits in front of a service), through which the nemesis expires a toolkit session in the middle of a call.

Why a proxy: the toolkit opens a ZooKeeper session for each call (a drain poll, a load sample, a peer change) and
closes it tens of milliseconds later; no outside poll of ZooKeeper's connections catches one reliably. The proxy
sees each session begin (ZooKeeper's ConnectResponse carries the session id and password), so when armed it holds
the session's next request, expires the session on the server as tests/conftest.py's `expire_session` does (a
second client presents the id and password, then closes: the server closes the first client's connection and
ends the session, its ephemeral nodes go), and only then passes the request on: the toolkit's call meets a lost
connection and, reconnecting, an expired session.

Only the toolkit's source connection points here (`zookeeper_port` of `hbase_source`); minihbase's servers and
the replication peer's cluster key use ZooKeeper directly. The wire format: every message is a 4-byte big-endian
length and a payload; the first client message is the ConnectRequest, the first server message the
ConnectResponse (int protocolVersion, int timeOut, long sessionId, buffer passwd, [bool readOnly]); a request
starts with its header (int xid, int type), type -11 being closeSession.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

CLOSE_SESSION = -11


@dataclass
class Session:
    session_id: int
    password: bytes
    client_port: int
    established_at: float
    pid: int | None = None


@dataclass
class Strike:
    """What the armed proxy did: the session it expired, the process holding it, when."""
    session: Session
    expired_at: float
    holder: str


def parse_connect_response(payload: bytes) -> tuple[int, bytes]:
    """(session id, password) of a ConnectResponse payload (after its length prefix)."""
    if len(payload) < 20:
        raise ValueError(f"ConnectResponse too short ({len(payload)} bytes)")
    _version, _timeout, session_id, n = struct.unpack(">iiqi", payload[:20])
    if n < 0 or len(payload) < 20 + n:
        raise ValueError(f"ConnectResponse password of {n} bytes does not fit in {len(payload)}")
    return session_id & 0xFFFFFFFFFFFFFFFF, payload[20:20 + n]


def request_type(payload: bytes) -> int | None:
    """The op type of a request payload (its header's second int), None when too short."""
    return struct.unpack(">ii", payload[:8])[1] if len(payload) >= 8 else None


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">i", head)
    if n < 0 or n > 64 << 20:
        raise ValueError(f"frame of {n} bytes")
    body = _read_exact(sock, n)
    return None if body is None else head + body


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


@dataclass
class _Armed:
    expire: Callable[[Session], bool]          # ends the session on the server; False when it was gone
    owner: Callable[[Session], str]            # describes the process holding it
    done: threading.Event = field(default_factory=threading.Event)
    strike: Strike | None = None


class ZkProxy:
    """`start()` listens on a free loopback port (`port`) and forwards each connection to `upstream`."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.sessions: list[Session] = []   # every session established through the proxy, in order
        self._sock: socket.socket | None = None
        self._armed: _Armed | None = None
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._running = False
        self._blocked = False  # a network partition: every connection through the proxy is cut, new ones too
        self.latency_ms = 0.0  # every request waits this long before it is passed on (a slow link)
        # Called with each new session before the client hears it is established (its socket is then open, so
        # its process can be found); set while the nemesis wants to know who opens sessions.
        self.on_session: Callable[[Session], object] | None = None

    # ---------------------------------------------------------------------------------------------- life
    def start(self) -> "ZkProxy":
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self._sock, self.port, self._running = sock, sock.getsockname()[1], True
        threading.Thread(target=self._accept, name="zkproxy-accept", daemon=True).start()
        return self

    def stop(self) -> None:
        self._running = False
        if self._sock is not None:
            try:  # shutdown first: a close alone leaves the socket listening while accept() blocks on it
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                self._sock.close()
            except OSError:
                pass
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while self._running:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), name="zkproxy-conn", daemon=True).start()

    # ---------------------------------------------------------------------------------------------- arming
    def arm(self, expire: Callable[[Session], bool], owner: Callable[[Session], str]) -> _Armed:
        """Expire the next session that sends a request (not its closeSession) through the proxy."""
        armed = _Armed(expire, owner)
        with self._lock:
            self._armed = armed
        return armed

    def disarm(self) -> None:
        with self._lock:
            self._armed = None

    def block(self) -> None:
        """Cut the toolkit off from the source's ZooKeeper (a partition): open connections drop, new ones are
        closed as soon as they are accepted, until `unblock()`."""
        with self._lock:
            self._blocked = True
            conns = list(self._conns)
        for c in conns:
            try:
                c.close()
            except OSError:
                pass

    def unblock(self) -> None:
        with self._lock:
            self._blocked = False

    def set(self, latency_ms: float | None = None, partitioned: bool | None = None) -> None:
        """The nemesis's network faults, as chaos/netproxy.py's FaultProxy takes them."""
        if latency_ms is not None:
            self.latency_ms = float(latency_ms)
        if partitioned is True:
            self.block()
        elif partitioned is False:
            self.unblock()

    def clear(self) -> None:
        self.set(latency_ms=0, partitioned=False)

    def sessions_since(self, instant: float) -> list[Session]:
        with self._lock:
            return [s for s in self.sessions if s.established_at >= instant]

    # ---------------------------------------------------------------------------------------------- pumps
    def _serve(self, client: socket.socket) -> None:
        if self._blocked:
            client.close()
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            self._conns |= {client, upstream}
        state: dict = {"session": None}
        client_port = client.getpeername()[1]
        t = threading.Thread(target=self._from_server, args=(upstream, client, state, client_port),
                             name="zkproxy-down", daemon=True)
        t.start()
        try:
            first = True
            while True:
                frame = _read_frame(client)
                if frame is None:
                    break
                if not first:
                    self._maybe_strike(state, frame[4:])
                    if self.latency_ms:
                        time.sleep(self.latency_ms / 1000.0)
                first = False
                upstream.sendall(frame)
        except (OSError, ValueError):
            pass
        finally:
            self._close(client, upstream)

    def _from_server(self, upstream: socket.socket, client: socket.socket, state: dict, client_port: int) -> None:
        try:
            frame = _read_frame(upstream)
            if frame is None:
                return
            session_id, password = parse_connect_response(frame[4:])
            if session_id:
                session = Session(session_id, password, client_port, time.time())
                state["session"] = session
                hook = self.on_session
                if hook is not None:
                    try:
                        hook(session)
                    except Exception:  # the evidence is lost, the connection must not be
                        pass
                with self._lock:
                    self.sessions.append(session)
            client.sendall(frame)
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                client.sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            self._close(client, upstream)

    def _maybe_strike(self, state: dict, payload: bytes) -> None:
        session = state["session"]
        if session is None or request_type(payload) == CLOSE_SESSION:
            return
        with self._lock:
            armed, self._armed = self._armed, None
        if armed is None:
            return
        holder = armed.owner(session)
        if armed.expire(session):  # the request is passed on only now: it meets the expired session
            armed.strike = Strike(session, time.time(), holder)
            armed.done.set()
        else:
            with self._lock:
                self._armed = armed

    def _close(self, *socks: socket.socket) -> None:
        for s in socks:
            try:
                s.close()
            except OSError:
                pass
        with self._lock:
            self._conns -= set(socks)
