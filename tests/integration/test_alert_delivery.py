"""Alerts delivered for real: the SMTP provider's SmtpNotifier to an SMTP server on loopback (aiosmtpd, with a
login) and the WebhookNotifier to an HTTP receiver, through the ledger that makes each occurrence one message;
a failed delivery retried once the receiver is back; nothing configured, nothing touched. No secret in any
message, error, log line or ledger row."""
import html
import json
import logging

import pytest

from hbase_migration.ledger.store import Ledger
from hbase_migration.migration.alerts import ClusterRef, failed_run_alert
from tests.alert_receivers import RECIPIENTS, SECRETS, SMTP_PASSWORD, SMTP_USER, alert_env, http_receiver, smtp_server

pytestmark = pytest.mark.integration


@pytest.fixture
def receivers(monkeypatch):
    with smtp_server() as smtp, http_receiver() as http:
        for name, value in alert_env(smtp, http).items():
            monkeypatch.setenv(name, value)
        yield smtp, http


@pytest.fixture
def ledger(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as led:
        yield led


def an_alert(try_number=1):
    return failed_run_alert(dag_id="hbase_table_migration", dag_run_id="manual__1", reason="task_failure",
                            task_id="preflight", map_index=-1, try_number=try_number, summary=None, planned={},
                            source=ClusterRef("hbase_source", "127.0.0.1:2181:/hbase-dc1"),
                            target=ClusterRef("hbase_target", "127.0.0.1:2181:/hbase-dc2"), url=None, now_ms=0)


def ledger_text(ledger) -> str:
    return json.dumps(ledger.alert_messages(), default=str)


def assert_no_secret(*texts):
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_one_mail_and_one_post_per_occurrence(receivers, ledger, caplog):
    from hbase_migration.operators.alerts import configured_channels, publish

    smtp, http = receivers
    caplog.set_level(logging.INFO)
    channels = configured_channels()
    assert [c.name for c in channels] == ["smtp:alert_smtp", "webhook:alert_webhook"]
    alert = an_alert()
    assert publish(ledger, alert, channels, {}) is True
    assert publish(ledger, an_alert(), channels, {}) is False  # the same failure again (a duplicated callback)
    [mail] = smtp.mails
    assert (mail.mail_from, mail.rcpt_tos, mail.subject) == ("airflow@example.com", RECIPIENTS, alert.subject)
    assert mail.text == f'<pre style="font-family: monospace">{html.escape(alert.body)}</pre>'
    assert "source hbase_source (cluster key 127.0.0.1:2181:/hbase-dc1) -&gt; target" in mail.text
    assert smtp.logins == [(SMTP_USER, SMTP_PASSWORD)]  # the connection's login reached the server, not the mail
    [post] = http.posts
    assert post.path == "/services/T0AL/B0RT/s3cr3t-w3bh00k"  # the token is the path (token_in_path)
    assert "Authorization" not in post.headers
    assert post.body == {"text": f"{alert.subject}\n\n{alert.body}", "hbase_migration": alert.record()["facts"]}
    [msg] = ledger.alert_messages()
    assert [(d["channel"], d["attempts"], d["sent_ms"] is not None) for d in msg["deliveries"]] == [
        ("smtp:alert_smtp", 1, True), ("webhook:alert_webhook", 1, True)]
    # A new failure of the same run (cleared, failed again: a new try) is a new occurrence.
    assert publish(ledger, an_alert(try_number=2), channels, {}) is True
    assert len(smtp.mails) == len(http.posts) == 2
    assert_no_secret(mail.text, mail.subject, json.dumps(post.body), ledger_text(ledger), caplog.text)


def test_a_failed_delivery_is_retried_once_the_receiver_is_back(receivers, ledger, caplog):
    from hbase_migration.operators.alerts import configured_channels, publish, retry_pending

    smtp, http = receivers
    channels = configured_channels()
    http.status = 500
    assert publish(ledger, an_alert(), channels, {}) is True
    assert len(smtp.mails) == 1 and len(http.posts) == 1  # the mail went; the receiver refused the POST
    [msg] = ledger.alert_messages()
    webhook = msg["deliveries"][1]
    assert webhook["sent_ms"] is None and webhook["claimed_ms"] is None
    assert webhook["last_error"] == ("WebhookError: webhook alert_webhook: " + http.base +
                                     " answered 500 Internal Server Error: invalid_token")
    assert "the next watch run retries it" in caplog.text
    http.status = 200
    assert retry_pending(ledger, channels, {}) == 1
    assert retry_pending(ledger, channels, {}) == 0  # sent: never again
    assert len(smtp.mails) == 1 and len(http.posts) == 2
    assert http.posts[0].body == http.posts[1].body
    assert_no_secret(ledger_text(ledger), caplog.text)


def test_an_unreachable_receiver_is_named_without_its_secret(monkeypatch, ledger, caplog):
    from bedkit.zookeeper import free_port
    from hbase_migration.operators.alerts import configured_channels, publish

    with http_receiver() as http:
        env = alert_env(None, http)
    for name, value in env.items():  # the receiver is gone: connection refused
        monkeypatch.setenv(name, value.replace(str(http.port), str(free_port())))
    [channel] = configured_channels()
    assert publish(ledger, an_alert(), [channel], {}) is True
    error = ledger.alert_messages()[0]["deliveries"][0]["last_error"]
    assert error.startswith("WebhookError: webhook alert_webhook: POST to http://127.0.0.1:")
    assert "failed: ConnectionError: " in error and "<redacted>" in error  # requests named the URL: redacted
    assert_no_secret(error, caplog.text)


def test_nothing_configured_nothing_touched(monkeypatch, tmp_path, caplog):
    """No alert option: the callbacks read no connection and no ledger (one in a missing folder would fail to
    open), send nothing and raise nothing."""
    from types import SimpleNamespace

    from hbase_migration.operators.alerts import on_run_failed, on_watch_reading

    for option in ("ALERT_SMTP_CONN_ID", "ALERT_EMAIL_TO", "ALERT_EMAIL_FROM", "ALERT_WEBHOOK_CONN_ID"):
        monkeypatch.delenv(f"AIRFLOW__HBASE_MIGRATION__{option}", raising=False)
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_URL", f"sqlite:///{tmp_path}/missing/ledger.db")
    with smtp_server() as smtp, http_receiver() as http:
        on_run_failed({"dag": SimpleNamespace(dag_id="hbase_table_migration"), "run_id": "manual__1"})
        assert on_watch_reading("hbase_source", None, None, None, "scheduled__1") == []
    assert smtp.mails == [] and http.posts == []
    assert not (tmp_path / "missing").exists()
    assert "alerts:" not in caplog.text
