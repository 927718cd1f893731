"""How the demo's own clients authenticate to secured clusters, sharing no code with the toolkit.

The independent comparison must not trust the toolkit's Kerberos, SASL or SPNEGO code, so it builds on other
implementations: thriftpy2's own `TSaslClientTransport` (driven through a Cyrus-style SASL object written here on
python-gssapi) for binary gateways, thriftpy2's `THttpClient` with a fresh `Negotiate` header per request for
HTTP mode, and `kinit` (MIT's) for the shell. It authenticates as each realm's HBase admin (`hbase@REALM`, the
principal an operator uses by hand), not as the toolkit.
"""
from __future__ import annotations

import base64
import os
import ssl
import struct
import subprocess
import uuid
from pathlib import Path
from typing import Any

QOP_BITS = {"auth": 1, "auth-int": 2, "auth-conf": 4}


def credentials(principal: str, keytab: str) -> Any:
    import gssapi

    return gssapi.Credentials(name=gssapi.Name(principal, gssapi.NameType.kerberos_principal), usage="initiate",
                              store={"client_keytab": keytab, "ccache": f"MEMORY:demo-{uuid.uuid4().hex}"})


def _target(principal: str) -> Any:
    import gssapi

    return gssapi.Name(principal, gssapi.NameType.kerberos_principal)


class GssapiSasl:
    """The interface thriftpy2's TSaslClientTransport expects of a SASL client (start/step/encode/decode, as the
    Cyrus `sasl` module has it), on python-gssapi: RFC 4752 with exactly the QOP asked for."""

    def __init__(self, creds: Any, service: str, principal: str, qop: str):
        import gssapi

        flags = [gssapi.RequirementFlag.mutual_authentication, gssapi.RequirementFlag.integrity,
                 gssapi.RequirementFlag.confidentiality]
        self.ctx = gssapi.SecurityContext(name=_target(service), creds=creds, usage="initiate", flags=flags)
        self.principal = principal
        self.qop = qop
        self.error = ""
        self.done = False

    def start(self, mechanism: str) -> tuple[bool, str, bytes]:
        return True, mechanism, self.ctx.step()

    def step(self, challenge: bytes) -> tuple[bool, bytes]:
        try:
            if not self.ctx.complete:
                return True, self.ctx.step(challenge) or b""
            offer = self.ctx.unwrap(challenge).message
            if not offer[0] & QOP_BITS[self.qop]:
                self.error = f"the gateway does not offer QOP {self.qop} (bits {offer[0]})"
                return False, b""
            size = 0 if self.qop == "auth" else 0xFFFFFF
            reply = bytes([QOP_BITS[self.qop]]) + size.to_bytes(3, "big") + self.principal.encode()
            self.done = True
            return True, self.ctx.wrap(reply, False).message
        except Exception as e:  # thriftpy2 reports getError()
            self.error = str(e)
            return False, b""

    def encode(self, data: bytes) -> tuple[bool, bytes]:
        """Plain data unchanged for auth (thriftpy2 then frames it itself); else the wrapped frame with its
        length header."""
        if self.qop == "auth":
            return True, data
        wrapped = self.ctx.wrap(data, self.qop == "auth-conf").message
        return True, struct.pack(">I", len(wrapped)) + wrapped

    def decode(self, frame: bytes) -> tuple[bool, bytes]:
        return True, self.ctx.unwrap(frame[4:]).message

    def getError(self) -> str:  # noqa: N802 (the Cyrus interface's name)
        return self.error


def thrift_transport(host: str, port: int, extra: dict, creds: Any, principal: str, timeout_ms: int) -> Any:
    """An open transport to a secured Thrift gateway, as its connection extras describe it."""
    if extra.get("thrift_http"):
        from thriftpy2.http import THttpClient, THttpHeaderFactory

        service = f"HTTP/{_host_name(host)}@{extra['spnego_principal'].rsplit('@', 1)[1]}"

        class Negotiate(THttpHeaderFactory):
            def get_headers(self) -> dict[str, str]:
                import gssapi

                ctx = gssapi.SecurityContext(name=_target(service), creds=creds, usage="initiate")
                return {"Authorization": "Negotiate " + base64.b64encode(ctx.step()).decode()}

        scheme = "https" if extra.get("thrift_ssl") else "http"
        ca = extra.get("ssl_ca")
        client = THttpClient(f"{scheme}://{host}:{port}/", timeout=timeout_ms, http_header_factory=Negotiate(),
                             ssl_context_factory=lambda: ssl.create_default_context(cafile=ca))
        client.open()
        return client
    from thriftpy2.transport import TSocket
    from thriftpy2.transport.sasl import TSaslClientTransport

    realm = (extra.get("thrift_principal") or extra["hbase_principal"]).rsplit("@", 1)[1]
    service = f"hbase/{_host_name(host)}@{realm}"
    sock = TSocket(host, port, socket_timeout=timeout_ms, connect_timeout=timeout_ms)
    transport = TSaslClientTransport(lambda: GssapiSasl(creds, service, principal, extra["thrift_qop"]), "GSSAPI",
                                     sock)
    transport.open()
    return transport


def _host_name(host: str) -> str:
    import socket

    return socket.getfqdn(host).lower()


def describe(extra: dict, principal: str) -> str:
    if extra.get("thrift_http"):
        tls = "over TLS" if extra.get("thrift_ssl") else "without TLS"
        return f"Thrift2 HTTP mode, SPNEGO as {principal} (thriftpy2's THttpClient), {tls}"
    return f"Thrift2 SASL GSSAPI as {principal}, QOP {extra['thrift_qop']} (thriftpy2's TSaslClientTransport)"


def kinit_env(principal: str, keytab: str, krb5_conf: str | None, directory: Path) -> dict[str, str]:
    """A ticket cache of `principal` filled by MIT's kinit, for the shell the demo runs by hand."""
    directory.mkdir(parents=True, exist_ok=True)
    env = {"KRB5CCNAME": f"FILE:{directory / ('cc-' + principal.replace('/', '_'))}"}
    if krb5_conf:
        env["KRB5_CONFIG"] = krb5_conf
    proc = subprocess.run(["kinit", "-kt", keytab, principal], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"kinit {principal} failed: {proc.stderr.strip()}")
    return env
