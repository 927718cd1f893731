"""Where the alert tests' messages land: a real SMTP server (aiosmtpd) and a real HTTP receiver (http.server),
both on loopback free ports, both stopped by their context managers; and the Airflow settings that point the
toolkit's alerts at them (connections as AIRFLOW_CONN_* JSON, the [hbase_migration] options as AIRFLOW__*)."""
from __future__ import annotations

import email
import email.policy
import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from bedkit.zookeeper import free_port

SMTP_USER, SMTP_PASSWORD = "alerts", "smtp-pw-5f1c9"  # must never appear in a message, a log or the ledger
WEBHOOK_TOKEN = "T0AL/B0RT/s3cr3t-w3bh00k"  # a Slack-style token: the URL's path is the secret
RECIPIENTS = ["oncall@example.com", "hbase-team@example.com"]


@dataclass
class Mail:
    mail_from: str
    rcpt_tos: list[str]
    subject: str
    text: str  # the HTML part's text, as the SMTP server received it

    @classmethod
    def parse(cls, mail_from: str, rcpt_tos: list[str], data: bytes) -> "Mail":
        msg = email.message_from_bytes(data, policy=email.policy.default)
        part = msg.get_body(("html", "plain"))
        return cls(mail_from, list(rcpt_tos), str(msg["Subject"]), part.get_content() if part else "")


@dataclass
class SmtpSink:
    port: int
    mails: list[Mail] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)


@contextmanager
def smtp_server() -> Iterator[SmtpSink]:
    """A real SMTP server on 127.0.0.1 that takes AUTH LOGIN/PLAIN without TLS (the SmtpHook logs in with the
    connection's login and password) and keeps every mail it receives."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    sink = SmtpSink(free_port())
    lock = threading.Lock()

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
            with lock:
                sink.mails.append(Mail.parse(envelope.mail_from, envelope.rcpt_tos, envelope.content))
            return "250 OK"

    def authenticator(server, session, envelope, mechanism, auth_data):
        login, password = auth_data.login.decode(), auth_data.password.decode()
        with lock:
            sink.logins.append((login, password))
        return AuthResult(success=(login, password) == (SMTP_USER, SMTP_PASSWORD))

    controller = Controller(Handler(), hostname="127.0.0.1", port=sink.port, authenticator=authenticator,
                            auth_require_tls=False)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


@dataclass
class Post:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class HttpSink:
    port: int
    posts: list[Post] = field(default_factory=list)
    status: int = 200  # what the receiver answers: set 500 to make deliveries fail

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def http_receiver() -> Iterator[HttpSink]:
    """A real HTTP server on 127.0.0.1 that keeps every POST (path, headers, JSON body) and answers `status`."""
    sink = HttpSink(free_port())
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's hook name)
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                sink.posts.append(Post(self.path, dict(self.headers), json.loads(raw)))
                status = sink.status
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"invalid_token")

        def log_message(self, *args):  # keep the test's output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", sink.port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def alert_env(smtp: SmtpSink | None, http: HttpSink | None) -> dict[str, str]:
    """Airflow's settings for alerts to these receivers: connections `alert_smtp` (with a login) and
    `alert_webhook` (token in the URL's path, as Slack's), and the [hbase_migration] options naming them."""
    env = {}
    if smtp is not None:
        env["AIRFLOW_CONN_ALERT_SMTP"] = json.dumps({
            "conn_type": "smtp", "host": "127.0.0.1", "port": smtp.port, "login": SMTP_USER,
            "password": SMTP_PASSWORD,
            "extra": {"from_email": "airflow@example.com", "disable_tls": True, "disable_ssl": True,
                      "timeout": 10, "retry_limit": 0}})
        env["AIRFLOW__HBASE_MIGRATION__ALERT_SMTP_CONN_ID"] = "alert_smtp"
        env["AIRFLOW__HBASE_MIGRATION__ALERT_EMAIL_TO"] = ", ".join(RECIPIENTS)
    if http is not None:
        env["AIRFLOW_CONN_ALERT_WEBHOOK"] = json.dumps({
            "conn_type": "http", "host": http.base, "password": WEBHOOK_TOKEN,
            "extra": {"endpoint": "services", "token_in_path": True}})
        env["AIRFLOW__HBASE_MIGRATION__ALERT_WEBHOOK_CONN_ID"] = "alert_webhook"
    return env


SECRETS = (SMTP_PASSWORD, WEBHOOK_TOKEN, "s3cr3t-w3bh00k")
