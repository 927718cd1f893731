"""HTTP SPNEGO (RFC 4559) in front of every route of a minihbase HTTP server, as Hadoop's
`AuthenticationFilter` with `KerberosAuthenticationHandler` guards HBase's info servers (`/jmx`, `/conf`, ...),
the NameNode's WebHDFS, and as minihbase guards its region servers' RPC port and the master's control API.

- no `Authorization: Negotiate` header: 401 with `WWW-Authenticate: Negotiate` ("Authentication required");
  a `user.name` query parameter changes nothing (Hadoop ignores it once Kerberos is on);
- a token that does not authenticate (a ticket for another principal, a wrong key, garbage): 403 with GSSAPI's
  reason, as Hadoop's filter answers an AuthenticationException;
- a principal no auth_to_local rule maps: 403 (`NoMatchingRule`);
- else the request goes on as its client principal (`request.user`, `request.short_user`) and the response
  carries `WWW-Authenticate: Negotiate <token>` (mutual authentication). An optional `policy(request)` may then
  refuse it (403, authorization).
"""
from __future__ import annotations

import base64
import binascii
import html
import logging
from typing import Callable

from bedkit.security import gss
from bedkit.security.names import NoMatchingRule
from minihbase.httpserver import Request, Response

log = logging.getLogger(__name__)
AUTH_EXCEPTION = "org.apache.hadoop.security.authentication.client.AuthenticationException"


def header(headers: dict[str, str], name: str) -> str | None:
    lower = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lower), None)


def error_response(status: int, message: str, json_errors: bool, headers: dict[str, str] | None = None) -> Response:
    """Jetty's error page (Hadoop's servlets) or minihbase's JSON `{"error": ...}` (its own APIs)."""
    if json_errors:
        return Response(status, {"error": message}, headers=dict(headers or {}))
    reason = {401: "Unauthorized", 403: "Forbidden"}.get(status, "Error")
    text = html.escape(message)
    body = (f"<html>\n<head>\n<title>Error {status} {text}</title>\n</head>\n<body><h2>HTTP ERROR {status} {text}"
            f"</h2>\n<table>\n<tr><th>MESSAGE:</th><td>{text}</td></tr>\n<tr><th>STATUS:</th><td>{status}</td>"
            f"</tr>\n<tr><th>SERVLET:</th><td>{reason}</td></tr>\n</table>\n</body>\n</html>\n")
    return Response(status, body, content_type="text/html;charset=iso-8859-1", headers=dict(headers or {}))


class SpnegoAuthenticator:
    """`HttpServer.authenticator` accepting tickets for `principal` (its keytab's acceptor credentials)."""

    def __init__(self, principal: str, keytab: str, short_name: Callable[[str], str],
                 policy: Callable[[Request], str | None] | None = None, json_errors: bool = False):
        self.principal = principal
        self.creds = gss.acceptor_credentials(principal, keytab)
        self.short_name = short_name
        self.policy = policy
        self.json_errors = json_errors

    def __call__(self, request: Request) -> Response | dict[str, str]:
        value = header(request.headers, "Authorization") or ""
        scheme, _, data = value.partition(" ")
        if scheme.lower() != "negotiate" or not data.strip():
            return error_response(401, "Authentication required", self.json_errors,
                                  {"WWW-Authenticate": "Negotiate"})
        try:
            token = base64.b64decode(data.strip(), validate=True)
            negotiated = gss.accept_token(self.creds, token)
        except (binascii.Error, ValueError):
            return error_response(403, f"{AUTH_EXCEPTION}: the Negotiate token is not base64", self.json_errors)
        except gss.KerberosError as e:
            log.info("refused %s %s: not authenticated as a client of %s: %s", request.method, request.path,
                     self.principal, e)
            return error_response(403, f"{AUTH_EXCEPTION}: GSSException: {e}", self.json_errors)
        try:
            request.short_user = self.short_name(negotiated.principal)
        except NoMatchingRule as e:
            return error_response(403, str(e), self.json_errors)
        request.user = negotiated.principal
        if self.policy is not None:
            denied = self.policy(request)
            if denied is not None:
                log.info("refused %s %s to %s: %s", request.method, request.path, request.user, denied)
                return error_response(403, denied, self.json_errors)
        if negotiated.out_token:
            return {"WWW-Authenticate": "Negotiate " + base64.b64encode(negotiated.out_token).decode("ascii")}
        return {}
