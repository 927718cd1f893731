"""Thrift transports for secured gateways, under thriftpy2's protocols (happybase's and Thrift2's clients).

`TSaslClientTransport`: Apache Thrift's `TSaslTransport`, client side, as the Java library speaks it (HBase's
gateways use it when `hbase.thrift.security.qop` is set). Negotiation messages are 1 status byte + 4-byte
big-endian length + payload: START with the mechanism name, then the client's tokens (OK, or COMPLETE once the
client is done), the server's (OK) and its final COMPLETE; BAD/ERROR carry the reason. Afterwards each flush is
one frame, 4-byte length + payload, wrapped unless the QOP is auth. The SASL framing replaces a framed
transport (HBase's server does not add a second frame). thriftpy2's own SASL transport needs a Cyrus-style
`sasl` client and guesses the QOP from the lengths of encoded data; this one is told it.

`THttpTransport`: HBase's HTTP mode (`hbase.regionserver.thrift.http`): each flushed message is one POST of
`application/x-thrift`, with SPNEGO and TLS as the cluster's HTTP channel applies them (channels.py); a 401 is an
authentication failure, not a transport error.
"""
from __future__ import annotations

import io
import struct
from typing import Any, Callable

from thriftpy2.transport import TTransportBase, TTransportException
from thriftpy2.transport.base import readall

from hbase_migration.clusters.sasl import GssapiSaslClient, SaslConnectionLost, SaslError

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
STATUS_NAMES = {START: "START", OK: "OK", BAD: "BAD", ERROR: "ERROR", COMPLETE: "COMPLETE"}
MAX_NEGOTIATION_PAYLOAD = 100 << 20  # as Java's TSaslTransport refuses longer headers


def negotiation_message(status: int, payload: bytes) -> bytes:
    """One SASL negotiation message (pure)."""
    return struct.pack(">BI", status, len(payload)) + payload


class TSaslClientTransport(TTransportBase):
    """SASL GSSAPI over `trans` (an unopened TSocket). `sasl_factory()` makes one `GssapiSaslClient` per open."""

    def __init__(self, trans: Any, sasl_factory: Callable[[], GssapiSaslClient], endpoint: str):
        self._trans = trans
        self._sasl_factory = sasl_factory
        self.endpoint = endpoint
        self.sasl: GssapiSaslClient | None = None
        self._wbuf = io.BytesIO()
        self._rbuf = io.BytesIO(b"")

    def is_open(self) -> bool:
        return self._trans.is_open() and self.sasl is not None and self.sasl.complete

    def _send(self, status: int, payload: bytes) -> None:
        self._trans.write(negotiation_message(status, payload))
        self._trans.flush()

    def _receive(self) -> tuple[int, bytes]:
        status, length = struct.unpack(">BI", readall(self._trans.read, 5))
        if status not in STATUS_NAMES or length > MAX_NEGOTIATION_PAYLOAD:
            raise SaslError(f"{self.endpoint} answered something that is not Thrift SASL (status byte {status}, "
                            f"length {length}): is it a SASL gateway (thrift_qop), or plain Thrift/HTTP?")
        payload = readall(self._trans.read, length) if length else b""
        if status in (BAD, ERROR):
            reason = payload.decode("utf-8", "replace")
            raise SaslError(f"{self.endpoint} refused the SASL negotiation ({STATUS_NAMES[status]}): {reason}")
        return status, payload

    def open(self) -> None:
        if self.sasl is not None and self.sasl.complete:
            raise TTransportException(TTransportException.ALREADY_OPEN, f"{self.endpoint}: SASL already open")
        if not self._trans.is_open():
            self._trans.open()  # a refused connection stays a (transient) TTransportException
        sasl = self._sasl_factory()
        try:
            self._send(START, b"GSSAPI")
            token = sasl.initial()
            self._send(COMPLETE if sasl.complete else OK, token)
            status = OK
            while not sasl.complete:
                status, payload = self._receive()
                if status not in (OK, COMPLETE):
                    raise SaslError(f"{self.endpoint}: expected OK or COMPLETE during SASL, got "
                                    f"{STATUS_NAMES[status]}")
                answer = sasl.step(payload)
                if status == COMPLETE:
                    break
                self._send(COMPLETE if sasl.complete else OK, answer)
            if status == OK:  # the server's own COMPLETE is still to come
                status, _ = self._receive()
                if status != COMPLETE:
                    raise SaslError(f"{self.endpoint}: expected the server's SASL COMPLETE, got "
                                    f"{STATUS_NAMES[status]}")
            if not sasl.complete:
                raise SaslError(f"{self.endpoint}: the server ended SASL before the security layer was agreed")
        except TTransportException as e:
            self._trans.close()
            raise SaslConnectionLost(f"{self.endpoint} closed the connection during SASL negotiation "
                                     f"({e.message}): the gateway may not run SASL (is thrift_qop right?) or "
                                     "refused this client: see its log") from None
        except BaseException:
            self._trans.close()
            raise
        self.sasl = sasl
        self._wbuf = io.BytesIO()
        self._rbuf = io.BytesIO(b"")

    def close(self) -> None:
        self._trans.close()
        self.sasl = None

    def write(self, buf: bytes) -> None:
        self._wbuf.write(buf)

    def flush(self) -> None:
        if self.sasl is None:
            raise TTransportException(TTransportException.NOT_OPEN, f"{self.endpoint}: SASL is not open")
        data = self._wbuf.getvalue()
        self._wbuf = io.BytesIO()
        data = self.sasl.wrap(data)
        self._trans.write(struct.pack(">I", len(data)) + data)
        self._trans.flush()

    def read(self, sz: int) -> bytes:
        """Up to `sz` bytes (a buffered transport above asks for what it can get), a new frame when empty."""
        data = self._rbuf.read(sz)
        if data:
            return data
        if self.sasl is None:
            raise TTransportException(TTransportException.NOT_OPEN, f"{self.endpoint}: SASL is not open")
        (length,) = struct.unpack(">I", readall(self._trans.read, 4))
        frame = readall(self._trans.read, length) if length else b""
        self._rbuf = io.BytesIO(self.sasl.unwrap(frame))
        return self._rbuf.read(sz)


class THttpTransport(TTransportBase):
    """Thrift over HTTP(S) POSTs through `session` (a requests.Session with the cluster's SPNEGO and TLS)."""

    def __init__(self, url: str, session_factory: Callable[[], Any], timeout_s: float, endpoint: str):
        self.url = url
        self._session_factory = session_factory
        self.timeout_s = timeout_s
        self.endpoint = endpoint
        self._session: Any = None
        self._wbuf = io.BytesIO()
        self._rbuf = io.BytesIO(b"")

    def is_open(self) -> bool:
        return self._session is not None

    def open(self) -> None:
        if self._session is None:
            self._session = self._session_factory()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session = None

    def write(self, buf: bytes) -> None:
        self._wbuf.write(buf)

    def flush(self) -> None:
        import requests

        from hbase_migration.clusters.kerberos import KerberosError

        data = self._wbuf.getvalue()
        self._wbuf = io.BytesIO()
        if not data:
            return
        if self._session is None:
            self.open()
        try:
            response = self._session.post(self.url, data=data, timeout=self.timeout_s, headers={
                "Content-Type": "application/x-thrift", "Accept": "application/x-thrift"})
        except requests.exceptions.SSLError as e:
            raise KerberosError(f"TLS with the Thrift gateway {self.url} failed: {e}. Fix: ssl_ca must name the CA "
                                "bundle that signed the gateway's certificate (hbase.thrift.ssl.keystore.store), "
                                "and the certificate must name the host connected to") from None
        except requests.RequestException as e:
            raise TTransportException(TTransportException.UNKNOWN, f"POST {self.url}: {type(e).__name__}: {e}") \
                from None
        if response.status_code in (401, 403):
            raise KerberosError(f"the Thrift gateway {self.url} refused the request: HTTP {response.status_code} "
                                f"{response.headers.get('WWW-Authenticate') or response.reason}. Fix: the gateway "
                                "runs SPNEGO (hbase.thrift.spnego.principal): set principal, keytab and "
                                "spnego_principal; a 403 means the principal is not allowed (hbase.superuser, "
                                "HBase ACLs)")
        if response.status_code != 200:
            raise TTransportException(TTransportException.UNKNOWN,
                                      f"POST {self.url} answered HTTP {response.status_code}: {response.text[:200]}")
        self._rbuf = io.BytesIO(response.content)

    def read(self, sz: int) -> bytes:
        return self._rbuf.read(sz)
