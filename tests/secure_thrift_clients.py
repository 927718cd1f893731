"""Thrift clients of secured gateways for tests, written from Apache Thrift's `TSaslClientTransport`, RFC 4752
and HBase's THttpClient use independently of minihbase's server side (minihbase/security/thrift_sasl.py,
thrift_http.py): each side checks the other.

    transport = SaslClientTransport(host, port, creds, "hbase/localhost@DC1.TEST", qop="auth-conf").open()
    transport = HttpSpnegoTransport("https://localhost:port/", creds, "HTTP/localhost@DC2.TEST", ca="ca.pem")
    client = thrift_client(T2.THBaseService, transport)
"""
from __future__ import annotations

import socket
import struct

import gssapi
import requests
from requests_gssapi import REQUIRED, HTTPSPNEGOAuth
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TClient

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
QOP_BITS = {"auth": 1, "auth-int": 2, "auth-conf": 4}


class SaslFailed(Exception):
    """The negotiation failed: `status` is the server's (BAD, ERROR) or None when this client gave up."""

    def __init__(self, status: int | None, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class SaslClientTransport:
    def __init__(self, host: str, port: int, creds: gssapi.Credentials, service_principal: str,
                 qop: str = "auth-conf", authzid: str | None = None, mechanism: str = "GSSAPI",
                 force_qop: bool = False):
        self.host, self.port = host, port
        self.creds = creds
        self.target = gssapi.Name(service_principal, gssapi.NameType.kerberos_principal)
        self.qop = qop
        self.authzid = authzid
        self.mechanism = mechanism
        self.force_qop = force_qop  # choose `qop` even when the server does not offer it
        self.sock: socket.socket | None = None
        self.ctx: gssapi.SecurityContext | None = None
        self.offered: set[str] = set()
        self._rbuf = b""
        self._wbuf = b""

    def _recv(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError("server closed the connection")
            data += chunk
        return data

    def send_message(self, status: int, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">BI", status, len(payload)) + payload)

    def recv_message(self) -> tuple[int, bytes]:
        status, length = struct.unpack(">BI", self._recv(5))
        payload = self._recv(length) if length else b""
        if status in (BAD, ERROR):
            raise SaslFailed(status, payload.decode("utf-8", "replace"))
        return status, payload

    def open(self) -> "SaslClientTransport":
        self.sock = socket.create_connection((self.host, self.port), timeout=10)
        flags = (gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.integrity
                 | gssapi.RequirementFlag.confidentiality)
        self.ctx = gssapi.SecurityContext(name=self.target, creds=self.creds, usage="initiate",
                                          mech=gssapi.MechType.kerberos, flags=flags)
        self.send_message(START, self.mechanism.encode())
        self.send_message(OK, self.ctx.step())
        while True:
            status, payload = self.recv_message()
            if status == COMPLETE:
                return self
            if not self.ctx.complete:
                self.send_message(OK, self.ctx.step(payload) or b"")
                continue
            offer = self.ctx.unwrap(payload).message
            self.offered = {name for name, bit in QOP_BITS.items() if offer[0] & bit}
            if self.qop not in self.offered and not self.force_qop:
                message = "No common protection layer between client and server"
                self.send_message(BAD, message.encode())
                self.sock.close()
                raise SaslFailed(None, message)
            buffer = 0 if self.qop == "auth" else 65536
            authzid = (self.authzid or str(self.creds.name)).encode()
            choice = struct.pack(">I", QOP_BITS[self.qop] << 24 | buffer) + authzid
            self.send_message(COMPLETE, self.ctx.wrap(choice, False).message)

    # thriftpy2 transport
    def is_open(self) -> bool:
        return self.sock is not None

    def read(self, sz: int) -> bytes:
        while len(self._rbuf) < sz:
            length = struct.unpack(">i", self._recv(4))[0]
            frame = self._recv(length)
            self._rbuf += frame if self.qop == "auth" else self.ctx.unwrap(frame).message
        out, self._rbuf = self._rbuf[:sz], self._rbuf[sz:]
        return out

    def write(self, buf: bytes) -> None:
        self._wbuf += buf

    def flush(self, encrypt: bool | None = None) -> None:
        data, self._wbuf = self._wbuf, b""
        if self.qop != "auth":
            data = self.ctx.wrap(data, self.qop == "auth-conf" if encrypt is None else encrypt).message
        self.sock.sendall(struct.pack(">i", len(data)) + data)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class HttpRefused(Exception):
    def __init__(self, status: int, text: str, headers):
        super().__init__(f"HTTP {status}: {text[:200]}")
        self.status, self.text, self.headers = status, text, headers


class HttpSpnegoTransport:
    """Thrift over HTTP(S): each flush POSTs the message with a fresh SPNEGO token (mutual authentication
    required), `ca` the CA bundle that verifies the gateway's certificate."""

    def __init__(self, url: str, creds: gssapi.Credentials | None, service_principal: str, ca: str | None = None):
        self.url = url
        self.session = requests.Session()
        self.verify = ca if ca else True  # per request: a session's own would yield to REQUESTS_CA_BUNDLE
        self.auth = None if creds is None else HTTPSPNEGOAuth(
            creds=creds, target_name=gssapi.Name(service_principal, gssapi.NameType.kerberos_principal),
            mutual_authentication=REQUIRED, opportunistic_auth=True)
        self._wbuf = b""
        self._rbuf = b""

    def is_open(self) -> bool:
        return True

    def write(self, buf: bytes) -> None:
        self._wbuf += buf

    def flush(self) -> None:
        data, self._wbuf = self._wbuf, b""
        response = self.session.post(self.url, data=data, auth=self.auth, timeout=10, verify=self.verify,
                                     headers={"Content-Type": "application/x-thrift"})
        if response.status_code != 200:
            raise HttpRefused(response.status_code, response.text, response.headers)
        self._rbuf += response.content

    def read(self, sz: int) -> bytes:
        out, self._rbuf = self._rbuf[:sz], self._rbuf[sz:]
        if len(out) < sz:
            raise EOFError(f"the reply ended after {len(out)} of {sz} bytes")
        return out

    def close(self) -> None:
        self.session.close()


def thrift_client(service, transport) -> TClient:
    """A thriftpy2 client of `service` over `transport` (binary protocol, as HBase's gateways serve)."""
    return TClient(service, TBinaryProtocol(transport))
