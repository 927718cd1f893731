"""What the Thrift1 and Thrift2 gateways share: the listening socket and its connections, scanner ids, latency
injection and the mapping of HBase-side exceptions onto the IDL's exceptions.

Both serve HBase's defaults: buffered transport, binary protocol, one thread per connection. The socket is bound
without SO_REUSEPORT (thriftpy2's own server socket sets it, which would let two servers share a port). A
gateway can be stopped (its listening socket and every open connection closed, as when the gateway process
dies) and started again on the same port, with fresh state (scanner ids start again at 0), as a restarted
`hbase thrift` / `hbase thrift2` process would.
"""
from __future__ import annotations

import logging
import socket
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

    def __init__(self, service, handler, latency_ms: Callable[[], float]):
        super().__init__(service, handler)
        self.latency_ms = latency_ms

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

    @property
    def alive(self) -> bool:
        return self._running

    def describe(self) -> dict:
        return {"index": self.index, "host": self.host, "port": self.port, "alive": self.alive}

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
