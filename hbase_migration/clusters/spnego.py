"""SPNEGO (RFC 4559) for requests: `Authorization: Negotiate <token>` on every request, for the service principal
of the host each request goes to (HBase's `_HOST` expansion of the cluster's spnego_principal, with its realm).

Not requests-gssapi's HTTPSPNEGOAuth: that one names one target for every host, and logs the Authorization
header (the token) at DEBUG. Here the token is never logged; a 401 after a token was sent is raised as a
KerberosError naming the principal, the URL and the fix; a server's mutual-authentication token, when it sends
one, is checked.
"""
from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from hbase_migration.clusters.security import server_principal

if TYPE_CHECKING:
    from hbase_migration.clusters.kerberos import KeytabLogin


class SpnegoAuth(requests.auth.AuthBase):
    def __init__(self, login: "KeytabLogin", principal_pattern: str):
        self.login = login
        self.principal_pattern = principal_pattern

    def __call__(self, request: Any) -> Any:
        import gssapi

        from hbase_migration.clusters.kerberos import failure

        host = urlsplit(request.url).hostname or ""
        target = server_principal(self.principal_pattern, host)
        try:
            context = self.login.initiate(target)
            token = context.step()
        except gssapi.exceptions.GSSError as e:
            raise failure(f"SPNEGO to {_where(request.url)}", e, self.login.principal, target) from None
        request.headers["Authorization"] = "Negotiate " + base64.b64encode(token).decode("ascii")
        request.register_hook("response", lambda response, **_: self._check(response, context, target))
        return request

    def _check(self, response: Any, context: Any, target: str) -> Any:
        import gssapi

        from hbase_migration.clusters.kerberos import KerberosError, failure

        url = _where(response.url)
        challenge = _negotiate_token(response.headers.get("WWW-Authenticate", ""))
        if response.status_code == 401:
            raise KerberosError(
                f"{url} refused SPNEGO as {self.login.principal} for {target} (HTTP 401). Fix: the server's "
                "principal must be the connection's spnego_principal (with _HOST as the host connected to) and in "
                "its keytab; across realms the trust must hold; see the server's log for the reason")
        if challenge and not context.complete:
            try:
                context.step(challenge)  # the server's mutual-authentication token
            except gssapi.exceptions.GSSError as e:
                raise failure(f"checking the SPNEGO answer of {url}", e, self.login.principal, target) from None
        return response


def _negotiate_token(header: str) -> bytes | None:
    for part in header.split(","):
        scheme, _, value = part.strip().partition(" ")
        if scheme.lower() == "negotiate" and value.strip():
            try:
                return base64.b64decode(value.strip())
            except ValueError:
                return None
    return None


def _where(url: str) -> str:
    """The URL without its query string (which may name paths worth keeping out of an error)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"
