"""The Thrift gateways' HTTP mode (`hbase.regionserver.thrift.http`), as HBase's `ThriftHttpServlet` serves it:
each call is a POST of the binary-protocol message (`Content-Type: application/x-thrift`) authenticated with
SPNEGO (`Authorization: Negotiate <token>` on every request, accepted as the HTTP principal), optionally over TLS
(`hbase.thrift.ssl.enabled`).

- no Authorization header: 401 with `WWW-Authenticate: Negotiate`;
- a token that does not authenticate: 401, `WWW-Authenticate: Negotiate`, "Authentication Error: ...";
- success: 200 with the reply and `WWW-Authenticate: Negotiate <token>` (mutual authentication);
- other methods: 405, as the servlet implements POST only; a client speaking plain HTTP (or raw Thrift) to a
  TLS gateway fails the TLS handshake.

Each connection is served by its gateway's connection thread (keep-alive, one request after the other), so
stopping the gateway closes it as it closes binary connections.
"""
from __future__ import annotations

import base64
import binascii
import logging
import os
import socket
import ssl
from http.server import BaseHTTPRequestHandler

from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.transport import TMemoryBuffer

from bedkit.security import gss
from minihbase.security.spnego import error_response, header

log = logging.getLogger(__name__)
HTTP_AUTH_EXCEPTION = "org.apache.hadoop.hbase.thrift.HttpAuthenticationException"
_protocols = TBinaryProtocolFactory()


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


class _ThriftHttpHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "Jetty(9.4.53.v20231009)"
    sys_version = ""
    processor = None
    creds = None
    gateway_name = ""

    def log_message(self, fmt, *args):
        log.debug("%s %s", self.gateway_name, fmt % args)

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        response = error_response(status, message, json_errors=False, headers=headers)
        self._send(status, response.payload(), response.content_type, response.headers)

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        return self.rfile.read(int(length)) if length and length.isdigit() else b""

    def do_POST(self):  # noqa: N802 (BaseHTTPRequestHandler's naming)
        body = self._read_body()
        value = header(dict(self.headers), "Authorization") or ""
        if not value:
            return self._error(401, "Unauthorized", {"WWW-Authenticate": "Negotiate"})
        scheme, _, data = value.partition(" ")
        try:
            if scheme.lower() != "negotiate" or not data.strip():
                raise gss.KerberosError("Authorization header received from the client does not contain any data.")
            negotiated = gss.accept_token(self.creds, base64.b64decode(data.strip(), validate=True))
        except (gss.KerberosError, binascii.Error, ValueError) as e:
            log.info("%s: Kerberos authentication failed: %s", self.gateway_name, e)
            return self._error(401, f"Authentication Error: {HTTP_AUTH_EXCEPTION}: Kerberos authentication "
                                    f"failed: {e}", {"WWW-Authenticate": "Negotiate"})
        inbuf, outbuf = TMemoryBuffer(body), TMemoryBuffer()
        self.processor.process(_protocols.get_protocol(inbuf), _protocols.get_protocol(outbuf))
        headers = {"WWW-Authenticate": "Negotiate " + base64.b64encode(negotiated.out_token).decode("ascii")} \
            if negotiated.out_token else {}
        self._send(200, outbuf.getvalue(), "application/x-thrift", headers)

    def _not_allowed(self):
        self._read_body()
        self._error(405, f"HTTP method {self.command} is not supported by this URL")

    do_GET = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _not_allowed  # noqa: N815


def serve_connection(gateway, client: socket.socket, processor, creds, tls: ssl.SSLContext | None) -> None:
    """Serve one gateway connection in HTTP mode until the client or the gateway closes it. With TLS the handshake
    runs on a duplicate of the socket, so the gateway's `stop()` (a shutdown of its own) still ends it."""
    conn = client
    try:
        if tls is not None:
            conn = tls.wrap_socket(socket.socket(fileno=os.dup(client.fileno())), server_side=True)
        handler = type("ThriftHttpHandler", (_ThriftHttpHandler,), {
            "processor": processor, "creds": creds, "gateway_name": f"{gateway.kind}{gateway.index}"})
        handler(conn, conn.getpeername(), gateway)
    except ssl.SSLError as e:
        log.info("%s gateway %d: TLS handshake failed: %s", gateway.kind, gateway.index, e)
    except (OSError, EOFError):
        pass
    finally:
        if conn is not client:
            try:
                conn.close()
            except OSError:
                pass
