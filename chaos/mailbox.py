"""Where a chaos run's failure alerts land: a real SMTP server (aiosmtpd) on a loopback port, and the Airflow
settings that point the toolkit's alerts at it (docs/alerts.md: `[hbase_migration] alert_smtp_conn_id` and
`alert_email_to`, an `smtp` connection)."""
from __future__ import annotations

import email
import email.policy
import threading
from dataclasses import dataclass, field
from typing import Any

SMTP_CONN_ID = "chaos_smtp"
RECIPIENT = "oncall@example.com"


@dataclass
class Mail:
    subject: str
    text: str
    received_at: float


@dataclass
class Mailbox:
    port: int = 0
    mails: list[Mail] = field(default_factory=list)
    _controller: Any = None

    def start(self) -> "Mailbox":
        import time

        from aiosmtpd.controller import Controller

        from deploy.processes import free_port

        self.port = free_port()
        lock = threading.Lock()
        box = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
                msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
                part = msg.get_body(("plain", "html"))
                with lock:
                    box.mails.append(Mail(str(msg["Subject"]), part.get_content() if part else "", time.time()))
                return "250 OK"

        self._controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def airflow_settings(self) -> dict[str, dict[str, str]]:
        """The deployment's airflow.cfg overrides that send the alerts here."""
        return {"hbase_migration": {"alert_smtp_conn_id": SMTP_CONN_ID, "alert_email_to": RECIPIENT,
                                    "alert_email_from": "airflow@example.com"}}

    def connection(self) -> dict[str, Any]:
        return {"conn_type": "smtp", "host": "127.0.0.1", "port": self.port,
                "extra": {"from_email": "airflow@example.com", "disable_tls": True, "disable_ssl": True,
                          "timeout": 10, "retry_limit": 0}}

    def for_run(self, run_id: str) -> list[Mail]:
        return [m for m in self.mails if run_id in m.subject or run_id in m.text]
