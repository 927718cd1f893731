"""The Thrift gateways' binary SASL transport, as HBase runs it with `hbase.thrift.security.qop` set: Apache
Thrift's `TSaslServerTransport` with mechanism GSSAPI (RFC 4752) and the one QOP the gateway is configured with.

Negotiation (Thrift's framing): each message is 1 status byte (START=1, OK=2, BAD=3, ERROR=4, COMPLETE=5), a
4-byte big-endian length and the payload. The client sends START with the mechanism name, then OK with its
first GSSAPI token; the server answers OK with its tokens (the AP-REP, then the wrapped security-layer offer:
the QOP bit and its maximum buffer) and COMPLETE once the client's wrapped choice (QOP bit, buffer, authzid) is
accepted. A client choosing a QOP the server does not offer, an authzid other than its own principal, a ticket
the gateway cannot decrypt, a mechanism other than GSSAPI, or bytes that are not Thrift SASL (a plain client)
get BAD or ERROR with Java's text, and the connection is closed.

Afterwards every message is a frame: 4-byte length + payload, the payload GSSAPI-wrapped per frame (integrity
for auth-int, confidentiality for auth-conf; a frame without the negotiated protection is refused) or plain for
auth. A flush sends what was written as one frame.
"""
from __future__ import annotations

import logging
import socket
import struct

import gssapi.exceptions

from bedkit.security import gss
from minihbase.security.settings import QOP_BITS

log = logging.getLogger(__name__)
START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
STATUSES = {START, OK, BAD, ERROR, COMPLETE}
MAX_PAYLOAD = 104857600  # TSaslTransport's limit on a negotiation message (100 MB)
MAX_BUFFER = 65536       # javax.security.sasl.maxbuffer, what Java's GSSAPI server advertises


class SaslRefused(Exception):
    """The negotiation failed; `status` (BAD or ERROR) and the message are what was sent to the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class GssapiSaslServer:
    """RFC 4752's server side (Java's `GssKrb5Server`) offering exactly `qop`."""

    def __init__(self, creds, qop: str):
        self.ctx = gss.accept(creds)
        self.qop = qop
        self.offer = QOP_BITS[qop]
        self.stage = 0
        self.complete = False
        self.principal: str | None = None

    def evaluate(self, response: bytes) -> bytes:
        if self.stage == 0:
            try:
                out = self.ctx.step(response)
                established = self.ctx.complete
                if established:
                    self.principal = str(self.ctx.initiator_name)
            except gssapi.exceptions.GSSError as e:
                log.info("Thrift SASL: GSS initiate failed: %s", gss.gss_reason(e))
                raise SaslRefused(BAD, "GSS initiate failed") from None
            if not established:
                return out or b""
            self.stage = 1
            if out:
                return out  # the AP-REP (mutual authentication); the client answers with an empty response
            return self._offer()
        if self.stage == 1:
            if response:
                raise SaslRefused(BAD, "Handshake expecting no response data from server")
            return self._offer()
        if self.stage == 2:
            return self._choice(response)
        raise SaslRefused(BAD, "SASL negotiation already complete")

    def _offer(self) -> bytes:
        self.stage = 2
        return self.ctx.wrap(struct.pack(">I", self.offer << 24 | MAX_BUFFER), False).message

    def _choice(self, response: bytes) -> bytes:
        try:
            data = self.ctx.unwrap(response).message
        except gssapi.exceptions.GSSError as e:
            raise SaslRefused(BAD, f"Problem unwrapping handshake: {gss.gss_reason(e)}") from None
        if len(data) < 4:
            raise SaslRefused(BAD, "Final handshake expecting at least 4 bytes")
        selected = data[0]
        if selected & self.offer == 0:
            signed = selected - 256 if selected > 127 else selected
            raise SaslRefused(BAD, f"Client selected unsupported protection: {signed}")
        authzid = data[4:].decode("utf-8") if len(data) > 4 else self.principal
        if authzid != self.principal:  # HBase's callback: the authorization id must be the authenticated one
            raise SaslRefused(BAD, f"{self.principal} is not authorized to connect as {authzid}")
        self.complete = True
        return b""


class TSaslServerTransport:
    """A negotiated SASL connection as a thriftpy2 transport (read returns what the current frame holds, as a
    transport wrapped by TCyBufferedTransport may)."""

    def __init__(self, sock: socket.socket, qop: str):
        self.sock = sock
        self.qop = qop
        self.principal: str | None = None
        self._ctx = None
        self._rbuf = b""
        self._wbuf: list[bytes] = []

    # ------------------------------------------------------------------------------------------ negotiation
    def _recv_exact(self, n: int) -> bytes:
        chunks, have = [], 0
        while have < n:
            chunk = self.sock.recv(n - have)
            if not chunk:
                raise EOFError("connection closed by the client")
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def _send(self, status: int, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">BI", status, len(payload)) + payload)

    def _refuse(self, status: int, message: str) -> SaslRefused:
        """Tell the client, then let it read that before the connection closes: closing with its bytes still
        unread would reset the connection and lose the message (so: FIN first, then drain briefly)."""
        try:
            self._send(status, message.encode("utf-8"))
            self.sock.shutdown(socket.SHUT_WR)
            self.sock.settimeout(1.0)
            while self.sock.recv(65536):
                pass
        except OSError:
            pass
        return SaslRefused(status, message)

    def _receive(self) -> tuple[int, bytes]:
        header = self._recv_exact(5)
        status, length = header[0], struct.unpack(">i", header[1:])[0]
        if status not in STATUSES:
            signed = status - 256 if status > 127 else status
            raise self._refuse(ERROR, f"Invalid status {signed}")
        if length < 0 or length > MAX_PAYLOAD:
            raise self._refuse(ERROR, f"Invalid payload header length: {length}")
        payload = self._recv_exact(length) if length else b""
        if status in (BAD, ERROR):
            raise SaslRefused(status, f"Peer indicated failure: {payload.decode('utf-8', 'replace')}")
        return status, payload

    def negotiate(self, creds) -> str:
        """Run the server side of the negotiation; returns the client's principal. Raises SaslRefused (after
        telling the client) or EOFError/OSError when the client goes away."""
        status, payload = self._receive()
        if status != START:
            raise self._refuse(ERROR, f"Expecting START status, received {status}")
        mechanism = payload.decode("utf-8", "replace")
        if mechanism != "GSSAPI":
            raise self._refuse(BAD, f"Unsupported mechanism type {mechanism}")
        server = GssapiSaslServer(creds, self.qop)
        while not server.complete:
            status, payload = self._receive()
            if status not in (OK, COMPLETE):
                raise self._refuse(ERROR, f"Expected COMPLETE or OK, got {status}")
            try:
                challenge = server.evaluate(payload)
            except SaslRefused as e:
                raise self._refuse(e.status, str(e)) from None
            self._send(COMPLETE if server.complete else OK, challenge)
        self.principal = server.principal
        self._ctx = server.ctx
        return self.principal

    # ------------------------------------------------------------------------------------------ frames
    def is_open(self) -> bool:
        return True

    def read(self, sz: int) -> bytes:
        if not self._rbuf:
            length = struct.unpack(">i", self._recv_exact(4))[0]
            if length < 0:
                raise EOFError(f"negative frame length {length}")
            frame = self._recv_exact(length) if length else b""
            self._rbuf = self._unwrap(frame)
        out, self._rbuf = self._rbuf[:sz], self._rbuf[sz:]
        return out

    def _unwrap(self, frame: bytes) -> bytes:
        if self.qop == "auth":
            return frame
        try:
            result = self._ctx.unwrap(frame)
        except gssapi.exceptions.GSSError as e:
            raise EOFError(f"a frame that does not unwrap: {gss.gss_reason(e)}") from None
        if self.qop == "auth-conf" and not result.encrypted:
            raise EOFError("a frame without confidentiality on an auth-conf connection")
        return result.message

    def write(self, buf: bytes) -> None:
        self._wbuf.append(bytes(buf))

    def flush(self) -> None:
        data = b"".join(self._wbuf)
        self._wbuf = []
        if self.qop != "auth":
            data = self._ctx.wrap(data, self.qop == "auth-conf").message
        self.sock.sendall(struct.pack(">i", len(data)) + data)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
