"""A tiny threaded HTTP server with a handler registry (region server RPC and info ports, WebHDFS, control).

Handlers take a `Request` and return a `Response`; routes are exact paths or prefixes. Part 2 registers e.g.
`POST /replicateWALEntry` on a region server's RPC server.

`authenticator` (secured clusters, `minihbase.security.spnego`) sees every request before any route is looked
up, so a route added later is covered too: it answers a refusal (401/403) or lets the request through with its
client principal in `request.user` and headers for the response (the SPNEGO mutual-authentication token).
"""
from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

log = logging.getLogger(__name__)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    user: str | None = None        # the authenticated client principal (secured servers)
    short_user: str | None = None  # its short name (auth_to_local), what authorization checks

    def json(self) -> Any:
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise BadRequest(f"request body is not JSON: {e}") from None


@dataclass
class Response:
    status: int = 200
    body: Any = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    def payload(self) -> bytes:
        if isinstance(self.body, (bytes, bytearray)):
            return bytes(self.body)
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


class BadRequest(Exception):
    """Answered as 400 with `{"error": message}`."""


Handler = Callable[[Request], Response]


class HttpServer:
    def __init__(self, host: str, port: int, name: str, before: Callable[[Request], None] | None = None):
        self.host = host
        self.name = name
        self.routes: dict[tuple[str, str], Handler] = {}
        self.prefixes: list[tuple[str, str, Handler]] = []
        self.before = before
        self.authenticator: Callable[[Request], Response | dict[str, str]] | None = None
        self.open_connections = 0  # client connections open now (numOpenConnections of a region server)
        self._connections_lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # requests are logged at debug level, not on stderr
                log.debug("%s %s", server.name, fmt % args)

            def setup(self):
                super().setup()
                with server._connections_lock:
                    server.open_connections += 1

            def finish(self):
                try:
                    super().finish()
                finally:
                    with server._connections_lock:
                        server.open_connections -= 1

            def _serve(self):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                request = Request(self.command, unquote(parts.path), query, dict(self.headers), body)
                response = server.dispatch(request)
                payload = response.payload()
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for k, v in response.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[(method.upper(), path)] = handler

    def route_prefix(self, method: str, prefix: str, handler: Handler) -> None:
        self.prefixes.append((method.upper(), prefix, handler))

    def dispatch(self, request: Request) -> Response:
        if self.authenticator is None:
            return self._dispatch(request)
        try:
            outcome = self.authenticator(request)
        except Exception as e:  # an authentication bug refuses, never lets through
            log.exception("%s: authenticating %s %s failed", self.name, request.method, request.path)
            return Response(500, {"error": f"{type(e).__name__}: {e}"})
        if isinstance(outcome, Response):
            return outcome
        response = self._dispatch(request)
        response.headers = {**outcome, **response.headers}
        return response

    def _dispatch(self, request: Request) -> Response:
        try:
            if self.before is not None:
                self.before(request)
            handler = self.routes.get((request.method, request.path))
            if handler is None:
                for method, prefix, h in self.prefixes:
                    if method == request.method and request.path.startswith(prefix):
                        handler = h
                        break
            if handler is None:
                known = {p for (_, p) in self.routes}
                status = 405 if request.path in known else 404
                return Response(status, {"error": f"no handler for {request.method} {request.path}"})
            return handler(request)
        except BadRequest as e:
            return Response(400, {"error": str(e)})
        except Exception as e:  # a handler bug must not kill the server thread
            log.exception("%s: %s %s failed", self.name, request.method, request.path)
            return Response(500, {"error": f"{type(e).__name__}: {e}"})

    def start(self) -> "HttpServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name=f"http-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for serve_forever: only if it ever ran
            self._httpd.shutdown()
            self._thread.join(5)
        self._httpd.server_close()
