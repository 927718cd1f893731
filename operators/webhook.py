"""A generic webhook notifier for chat tools: one JSON POST to an incoming webhook (Slack, Mattermost, Microsoft
Teams, or any receiver), its address and token from an Airflow connection of type `http`.

The connection: `host` is the receiver (`https://hooks.slack.com`, or a bare host with `schema` https/http and
`port`), extra `endpoint` the path (`services`), the password the token. Most chat tools carry their secret in
the URL's path: with extra `"token_in_path": true` the token is the path's last part
(`https://hooks.slack.com/services/<T000/B000/XXXX>`); otherwise it is sent as `Authorization: Bearer <token>`.
Extra `headers` adds (non-secret) headers. Neither the token nor the URL's path is ever logged or put in an
error: messages name the connection id and the receiver's scheme://host only.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from airflow.sdk import BaseHook
from airflow.sdk.bases.notifier import BaseNotifier

CONN_TYPES = ("http",)
DEFAULT_TIMEOUT_S = 10.0


class WebhookError(RuntimeError):
    """A webhook connection that cannot be used, or a POST that failed; never holds the token or the URL path."""


@dataclass(frozen=True)
class WebhookTarget:
    url: str
    headers: dict[str, str]
    shown: str  # scheme://host[:port]: what logs and errors may name
    secrets: tuple[str, ...]  # text an error must not show (token, path)
    timeout_s: float = DEFAULT_TIMEOUT_S

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret:
                text = text.replace(secret, "<redacted>")
        return text


def webhook_target(conn_id: str, conn_type: str | None, host: str | None, schema: str | None, port: int | None,
                   password: str | None, extra: Mapping[str, Any],
                   timeout_s: float = DEFAULT_TIMEOUT_S) -> WebhookTarget:
    """Where and how to POST, from a connection's fields (pure). Refuses a connection that cannot work, naming
    the field and the fix."""
    if (conn_type or "") not in CONN_TYPES:
        raise WebhookError(f"webhook connection {conn_id!r} has conn_type {conn_type!r}: make it an 'http' "
                           "connection (host = the receiver's URL, password = its token)")
    if not host:
        raise WebhookError(f"webhook connection {conn_id!r} has no host: set it to the receiver's URL, e.g. "
                           "https://hooks.slack.com")
    unknown = sorted(set(extra) - {"endpoint", "token_in_path", "headers", "timeout_s"})
    if unknown:
        raise WebhookError(f"webhook connection {conn_id!r}: unknown extra {', '.join(unknown)} (known: endpoint, "
                           "token_in_path, headers, timeout_s)")
    base = host if "://" in host else f"{schema or 'https'}://{host}" + (f":{port}" if port else "")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise WebhookError(f"webhook connection {conn_id!r}: host must be an http(s) URL or a host name")
    token_in_path = extra.get("token_in_path", False)
    if not isinstance(token_in_path, bool):
        raise WebhookError(f"webhook connection {conn_id!r}: extra token_in_path must be true or false")
    if token_in_path and not password:
        raise WebhookError(f"webhook connection {conn_id!r}: token_in_path is set but the password (the token) is "
                           "empty")
    segments = [base.rstrip("/")] + [p.strip("/") for p in (extra.get("endpoint"), password if token_in_path
                                                             else None) if p and p.strip("/")]
    url = "/".join(segments)
    headers = {"Content-Type": "application/json"}
    extra_headers = extra.get("headers") or {}
    if not isinstance(extra_headers, Mapping) or not all(isinstance(v, str) for v in extra_headers.values()):
        raise WebhookError(f"webhook connection {conn_id!r}: extra headers must be an object of strings")
    headers.update(extra_headers)
    timeout = extra.get("timeout_s", timeout_s)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise WebhookError(f"webhook connection {conn_id!r}: extra timeout_s must be a positive number of seconds")
    if password and not token_in_path:
        headers["Authorization"] = f"Bearer {password}"
    path = url[len(f"{parts.scheme}://{parts.netloc}"):]
    return WebhookTarget(url, headers, f"{parts.scheme}://{parts.netloc}",
                         tuple(s for s in (password, path, url) if s and s != "/"), float(timeout))


class WebhookNotifier(BaseNotifier):
    """POST one JSON payload to the webhook of an Airflow `http` connection (see the module's doc).

    Delivery only: the payload is built elsewhere (`hbase_migration.migration.alerts.webhook_payload`). A non-2xx answer
    or a transport error raises `WebhookError` naming the connection, the receiver's host and the status.

    :param payload: the JSON object to send (templated).
    :param webhook_conn_id: the `http` connection holding the URL and the token.
    :param timeout_s: connect and read timeout (extra `timeout_s` of the connection wins).
    """

    template_fields = ("payload", "webhook_conn_id")

    def __init__(self, *, payload: Mapping[str, Any], webhook_conn_id: str, timeout_s: float = DEFAULT_TIMEOUT_S,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.payload = payload
        self.webhook_conn_id = webhook_conn_id
        self.timeout_s = timeout_s

    def target(self) -> WebhookTarget:
        conn = BaseHook.get_connection(self.webhook_conn_id)
        return webhook_target(self.webhook_conn_id, conn.conn_type, conn.host, conn.schema, conn.port,
                              conn.password, conn.extra_dejson, self.timeout_s)

    def notify(self, context: Any) -> None:
        import requests

        target = self.target()
        try:
            response = requests.post(target.url, json=dict(self.payload), headers=target.headers,
                                     timeout=target.timeout_s, allow_redirects=False)
        except requests.RequestException as e:
            # requests names the URL in its errors (a Slack URL's path is its secret): say the host only.
            raise WebhookError(f"webhook {self.webhook_conn_id}: POST to {target.shown} failed: "
                               f"{type(e).__name__}: {target.redact(str(e))}") from None
        if not 200 <= response.status_code < 300:
            raise WebhookError(f"webhook {self.webhook_conn_id}: {target.shown} answered {response.status_code} "
                               f"{response.reason}: {target.redact(response.text[:200])}")
        self.log.info("webhook %s: posted to %s (%s)", self.webhook_conn_id, target.shown, response.status_code)

    async def async_notify(self, context: Any) -> None:
        await asyncio.to_thread(self.notify, context)
