"""What the Thrift1 and Thrift2 gateways share: the listening socket and its connections, scanner ids, latency
injection and the mapping of HBase-side exceptions onto the IDL's exceptions.

Both serve HBase's defaults: buffered transport, binary protocol, one thread per connection. The socket is bound
without SO_REUSEPORT (thriftpy2's own server socket sets it, which would let two servers share a port). A
gateway can be stopped (its listening socket and every open connection closed, as when the gateway process
dies) and started again on the same port, with fresh state (scanner ids start again at 0), as a restarted
`hbase thrift` / `hbase thrift2` process would.

Network faults of one gateway (`set_fault`): a latency of its own on every call (a slow link to that gateway, on
top of the cluster's `latency_ms`), connections reset now (RST, as a load balancer or a flapping link does) and a
probability that a call's connection is reset, either before the call runs (the request is lost) or after it ran
and before its answer (the client cannot know whether it was applied: only an idempotent retry is safe).
"""
from __future__ import annotations

import logging
import random
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TApplicationException, TProcessor
from thriftpy2.transport import TBufferedTransportFactory, TSocket, TTransportException

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

log = logging.getLogger(__name__)

SCANNER_LEASE_S = 600.0  # scanners untouched this long are dropped (HBase: hbase.client.scanner.timeout.period)


class IllegalArgumentAnswer(Exception):
    """Answered as the IDL's illegal-argument exception (`IllegalArgument` / `TIllegalArgument`) with this text."""


class InjectedReset(Exception):
    """The gateway's fault knob decided to reset this call's connection (no answer is sent)."""


def reset_socket(sock: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER on, timeout 0), as a reset connection ends: the peer reads ECONNRESET."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class ScannerRegistry:
    """Scanner ids of one gateway: consecutive from 0 (HBase: an AtomicInteger per handler); an id unused for
    `lease_s` is forgotten (it then answers as unknown)."""

    def __init__(self, lease_s: float = SCANNER_LEASE_S):
        self.lease_s = lease_s
        self._entries: dict[int, tuple[Any, Any]] = {}
        self._next = 0
        self._lock = threading.Lock()

    def add(self, scanner, extra: Any = None) -> int:
        with self._lock:
            now = time.monotonic()
            for sid in [s for s, (sc, _) in self._entries.items() if now - sc.last_used > self.lease_s]:
                del self._entries[sid]
            sid = self._next
            self._next += 1
            self._entries[sid] = (scanner, extra)
            return sid

    def get(self, sid: int) -> tuple[Any, Any] | None:
        with self._lock:
            entry = self._entries.get(sid)
            if entry is not None and time.monotonic() - entry[0].last_used > self.lease_s:
                del self._entries[sid]
                return None
            return entry

    def remove(self, sid: int) -> tuple[Any, Any] | None:
        with self._lock:
            return self._entries.pop(sid, None)


class GatewayProcessor(TProcessor):
    """Runs one call: injected latency first, then the handler; exceptions become the IDL's via `answer()`.

    A method of the IDL the handler lacks answers the IDL's I/O exception ("java.lang.UnsupportedOperationException:
    <m> is not implemented by minihbase"); a method not in the IDL answers TApplicationException UNKNOWN_METHOD
    (its arguments are skipped, so the connection goes on)."""

    def __init__(self, service, handler, latency_ms: Callable[[], float],
                 reset_at: Callable[[], str | None] | None = None):
        super().__init__(service, handler)
        self.latency_ms = latency_ms
        self.reset_at = reset_at or (lambda: None)  # "before" / "after" the call: reset its connection there

    # Subclasses: the IDL's I/O exception, and what each HBase-side exception becomes.
    def io_error(self, message: str):
        raise NotImplementedError

    def answer(self, api: str, e: Exception, result) -> tuple[str, Any] | None:
        """(result field, Thrift exception) for `e`, or None to answer TApplicationException INTERNAL_ERROR."""
        raise NotImplementedError

    @staticmethod
    def declares(result, name: str) -> bool:
        return any(spec[1] == name for spec in result.thrift_spec.values())

    def process(self, iprot, oprot) -> None:
        api, seqid, result, call = self.process_in(iprot)
        delay = self.latency_ms()
        if delay > 0:
            time.sleep(delay / 1000.0)
        reset = self.reset_at()
        if reset == "before":
            raise InjectedReset(api)
        if isinstance(result, TApplicationException):
            return self.send_exception(oprot, api, result, seqid)
        if not hasattr(self._handler, api):
            if self.declares(result, "io"):
                result.io = self.io_error(f"java.lang.UnsupportedOperationException: {api} is not implemented by "
                                          f"minihbase")
                return self.send_result(oprot, api, result, seqid)
            return self.send_exception(oprot, api, TApplicationException(
                TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{api}'"), seqid)
        try:
            result.success = call()
        except Exception as e:
            if reset == "after":
                raise InjectedReset(api) from None
            answered = self.answer(api, e, result)
            if answered is None:
                return self.send_exception(oprot, api, TApplicationException(
                    TApplicationException.INTERNAL_ERROR, f"Internal error processing {api}"), seqid)
            field, exc = answered
            if self.declares(result, field):
                setattr(result, field, exc)
            elif self.declares(result, "io"):
                result.io = self.io_error(getattr(exc, "message", None) or str(exc))
            else:
                return self.send_exception(oprot, api, TApplicationException(
                    TApplicationException.INTERNAL_ERROR, f"Internal error processing {api}"), seqid)
        if reset == "after":  # applied, but the client never hears so
            raise InjectedReset(api)
        return self.send_result(oprot, api, result, seqid)


class GatewayServer:
    """One gateway: a listening socket on a fixed port, one daemon thread per connection; idle connections stay
    open, as HBase's do. `stop()` closes the listening socket and every connection; `start()` listens again on the
    same port with a fresh processor (`make_processor()`)."""

    kind = "thrift"

    def __init__(self, cluster: "MiniHBaseCluster", host: str, port: int, index: int = 0):
        self.cluster = cluster
        self.host = host
        self.index = index
        self._sock: socket.socket | None = self._listen(host, port)
        self.port = self._sock.getsockname()[1]
        self.processor: TProcessor | None = None
        self._clients: set[socket.socket] = set()
        self._generation = 0
        self._running = False
        self._lock = threading.Lock()
        self._tfactory = TBufferedTransportFactory()
        self._pfactory = TBinaryProtocolFactory()
        # Injected network faults of this gateway (`set_fault`); kept across stop/start, as a link's are.
        self.fault_latency_ms = 0.0
        self.reset_probability = 0.0
        self.resets = 0  # connections reset by the fault knob (now or per call)
        self._random = random.Random()

    @staticmethod
    def _listen(host: str, port: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no obstacle; no REUSEPORT
            sock.bind((host, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        return sock

    def make_processor(self) -> TProcessor:
        raise NotImplementedError

    def call_latency_ms(self) -> float:
        """What every call of this gateway sleeps first: the cluster's latency plus this gateway's own."""
        return self.cluster.latency_ms + self.fault_latency_ms

    def call_reset(self) -> str | None:
        """Whether to reset this call's connection: None, or "before" / "after" the call runs (even odds)."""
        p = self.reset_probability
        if p <= 0 or self._random.random() >= p:
            return None
        return "before" if self._random.random() < 0.5 else "after"

    def set_fault(self, latency_ms: float | None = None, reset_probability: float | None = None,
                  reset_now: bool = False) -> dict:
        """Set this gateway's own latency and per-call reset probability (None keeps a value); `reset_now`
        resets every open connection at once (the gateway keeps listening)."""
        if latency_ms is not None:
            self.fault_latency_ms = float(latency_ms)
        if reset_probability is not None:
            self.reset_probability = float(reset_probability)
        if reset_now:
            with self._lock:
                clients = list(self._clients)
                self._clients.clear()
            for c in clients:
                reset_socket(c)
            self.resets += len(clients)
        return self.describe()

    @property
    def alive(self) -> bool:
        return self._running

    def describe(self) -> dict:
        return {"index": self.index, "host": self.host, "port": self.port, "alive": self.alive,
                "fault": {"latency_ms": self.fault_latency_ms, "reset_probability": self.reset_probability,
                          "resets": self.resets}}

    def start(self) -> "GatewayServer":
        with self._lock:
            if self._running:
                return self
            if self._sock is None:
                self._sock = self._listen(self.host, self.port)
            self.processor = self.make_processor()
            self._generation += 1
            self._running = True
            args = (self._sock, self.processor, self._generation)
        threading.Thread(target=self._accept_loop, args=args, name=f"{self.kind}{self.index}-accept",
                         daemon=True).start()
        return self

    def _accept_loop(self, sock: socket.socket, processor: TProcessor, generation: int) -> None:
        while self._generation == generation:
            try:
                client, _ = sock.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._generation != generation or not self._running:
                    client.close()
                    return
                self._clients.add(client)
            threading.Thread(target=self._serve, args=(client, processor, generation),
                             name=f"{self.kind}{self.index}-conn", daemon=True).start()

    def _serve(self, client: socket.socket, processor: TProcessor, generation: int) -> None:
        security = getattr(self.cluster, "security", None)
        try:
            # A secured cluster's gateway authenticates first (SASL), or serves HTTP mode itself (None then).
            raw = TSocket(sock=client) if security is None else security.thrift_transport(self, client, processor)
            if raw is None:
                return
            prot = self._pfactory.get_protocol(self._tfactory.get_transport(raw))
            while self._generation == generation and self._running:
                processor.process(prot, prot)
        except InjectedReset:
            with self._lock:
                self._clients.discard(client)
            self.resets += 1
            reset_socket(client)
            return
        except (TTransportException, OSError, EOFError):
            pass
        except Exception:
            log.exception("%s connection failed", self.kind)
        finally:
            with self._lock:
                self._clients.discard(client)
            try:
                client.close()
            except OSError:
                pass

    def stop(self) -> None:
        """As if the gateway process died: nothing listens on the port, every open connection is closed."""
        with self._lock:
            self._running = False
            self._generation += 1
            sock, self._sock = self._sock, None
            clients = list(self._clients)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for c in clients:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
