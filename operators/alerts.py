"""Alerts in Airflow: which channels are on (`airflow.cfg` [hbase_migration]), the migration DAGs' failure
callback, the watch's breach starts and ends, and delivery through Airflow's notifiers: the SMTP provider's
`SmtpNotifier` and this toolkit's `WebhookNotifier`.

The text is the library's (`hbase_migration.migration.alerts`); the ledger decides what is sent once (a message's key is
its identity) and keeps each delivery until it is sent (a failed one is retried by the next watch run, for a
day). Nothing configured: nothing is read, claimed or sent, and nothing fails. Alerting never fails the task or
callback that triggers it: an error is logged (without any secret) and the run goes on as it would have.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

log = logging.getLogger(__name__)

SECTION = "hbase_migration"
OPTIONS = ("alert_smtp_conn_id", "alert_email_to", "alert_email_from", "alert_webhook_conn_id")
LEASE_MS = 5 * 60_000  # a sender's hold on a delivery: longer than an SMTP or webhook call can take
RETRY_WINDOW_MS = 24 * 3600_000  # undelivered messages older than this are not retried (stale news)


@dataclass(frozen=True)
class Channel:
    """One way to reach a person: `smtp` (mail to `to` through an SMTP connection) or `webhook` (a chat tool's
    incoming webhook through an `http` connection)."""

    kind: str
    conn_id: str
    to: tuple[str, ...] = ()
    from_email: str | None = None

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.conn_id}"


def channels_from(options: Mapping[str, str | None]) -> tuple[list[Channel], list[str]]:
    """The channels the [hbase_migration] alert options turn on, and the problems that turn one off (each naming
    the option and the fix). Empty options: no channel."""
    def opt(name: str) -> str:
        return (options.get(name) or "").strip()

    channels, problems = [], []
    smtp, to = opt("alert_smtp_conn_id"), [a.strip() for a in opt("alert_email_to").replace(";", ",").split(",")]
    to = [a for a in to if a]
    if smtp and not to:
        problems.append(f"[{SECTION}] alert_smtp_conn_id is {smtp!r} but alert_email_to is empty: name the "
                        "recipients (comma-separated); no mail is sent")
    elif to and not smtp:
        problems.append(f"[{SECTION}] alert_email_to is set but alert_smtp_conn_id is empty: name the SMTP "
                        "connection; no mail is sent")
    elif smtp:
        bad = [a for a in to if "@" not in a]
        if bad:
            problems.append(f"[{SECTION}] alert_email_to holds {', '.join(bad)}, not mail addresses; no mail is sent")
        else:
            channels.append(Channel("smtp", smtp, tuple(to), opt("alert_email_from") or None))
    if opt("alert_webhook_conn_id"):
        channels.append(Channel("webhook", opt("alert_webhook_conn_id")))
    return channels, problems


def configured_channels() -> list[Channel]:
    from airflow.sdk import conf

    channels, problems = channels_from({o: conf.get(SECTION, o, fallback="") for o in OPTIONS})
    for problem in problems:
        log.error("alerts: %s", problem)
    return channels


def deliver(channel: Channel, subject: str, body: str, facts: Mapping[str, Any], context: Mapping[str, Any]) -> None:
    """Hand one message to the channel's notifier. Its `notify()` is called with no template context, not the
    notifier itself: calling it would render the subject and text as Jinja templates, and they are final (a `{{`
    in an error is text). (With a context, SmtpNotifier renders the connection's from_email with the DAG's
    template environment, which `airflow dags test`'s serialized DAG does not have.)"""
    from hbase_migration.migration.alerts import email_html, webhook_payload

    if channel.kind == "smtp":
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        SmtpNotifier(to=list(channel.to), from_email=channel.from_email, subject=subject,
                     html_content=email_html(body), smtp_conn_id=channel.conn_id).notify({})
    else:
        from hbase_migration.operators.webhook import WebhookNotifier

        WebhookNotifier(payload=webhook_payload(subject, body, facts), webhook_conn_id=channel.conn_id).notify({})


def send(ledger: Any, message_key: str, channel: Channel, subject: str, body: str, facts: Mapping[str, Any],
         context: Mapping[str, Any], deliver_to: Callable[..., None] = deliver) -> bool:
    """Deliver one message through one channel unless it was sent or another sender holds it; record the
    outcome. True when sent now."""
    if not ledger.take_delivery(message_key, channel.name, LEASE_MS):
        return False
    try:
        deliver_to(channel, subject, body, facts, context)
    except Exception as e:  # the notifiers' errors name connections and hosts, never a password or token
        error = f"{type(e).__name__}: {e}"
        ledger.delivery_failed(message_key, channel.name, error)
        log.error("alert %s not delivered through %s (the next watch run retries it): %s", message_key,
                  channel.name, error)
        return False
    ledger.delivery_sent(message_key, channel.name)
    log.info("alert %s sent through %s", message_key, channel.name)
    return True


def publish(ledger: Any, alert: Any, channels: Sequence[Channel], context: Mapping[str, Any], seq: int = 0,
            deliver_to: Callable[..., None] = deliver) -> bool:
    """Claim the alert's occurrence in the ledger and, when this call claimed it, send it through every channel.
    False when it was claimed before (a duplicate: nothing is sent)."""
    record = alert.record()
    if not ledger.alert_message(record, [c.name for c in channels], seq=seq):
        log.info("alert %s was claimed before: not sent again (one message per occurrence)", alert.message_key)
        return False
    log.warning("alert %s: %s", alert.message_key, alert.subject)
    for channel in channels:
        send(ledger, record["message_key"], channel, record["subject"], record["body"], record["facts"], context,
             deliver_to)
    return True


def retry_pending(ledger: Any, channels: Sequence[Channel], context: Mapping[str, Any],
                  deliver_to: Callable[..., None] = deliver) -> int:
    """Send again the deliveries that failed (of the last day, through channels still configured)."""
    by_name = {c.name: c for c in channels}
    sent = 0
    for row in ledger.pending_deliveries(int(time.time() * 1000) - RETRY_WINDOW_MS, LEASE_MS):
        channel = by_name.get(row["channel"])
        if channel is not None:
            sent += send(ledger, row["message_key"], channel, row["subject"], row["body"], row["facts"], context,
                         deliver_to)
    return sent


# ---------------------------------------------------------------------------------------------------------
# A failed migration DAG run


def dag_callbacks() -> dict[str, Any]:
    """What every migration DAG passes to `DAG(...)`: the failure alert as its `on_failure_callback`.

    DAG level, not task level: a DAG run fails once, after its last task (so `state_left_behind` has said what
    is left), whatever the retries (a retried task does not fail the run) and the mapped tasks (many may fail,
    the run fails once). Airflow runs it in the DAG processor (in `airflow dags test`, in that process)."""
    return {"on_failure_callback": on_run_failed}


def on_run_failed(context: Mapping[str, Any]) -> None:
    """A migration DAG run failed: one message per failure of that run, through every configured channel."""
    dag = context.get("dag")
    dag_id, run_id = getattr(dag, "dag_id", "unknown DAG"), context.get("run_id") or "unknown run"
    try:
        channels = configured_channels()
        if not channels:
            return
        from hbase_migration.operators.ledger import open_ledger

        with open_ledger() as ledger:
            alert = failed_alert(ledger, context, dag_id, run_id)
            publish(ledger, alert, channels, context)
    except Exception as e:
        log.error("alerts: the failure of %s run %s could not be alerted: %s: %s", dag_id, run_id,
                  type(e).__name__, e)


def _cluster_ref(conn_id: str | None, cluster_key: str | None) -> Any:
    from hbase_migration.migration.alerts import ClusterRef

    if cluster_key is None and conn_id:
        try:  # the connection only: no cluster is contacted
            from hbase_migration.operators.hooks import HBaseClusterHook

            cluster_key = str(HBaseClusterHook(conn_id).get_cluster().cluster_key)
        except Exception as e:
            log.warning("alerts: connection %s not read (%s): its cluster key stays unknown", conn_id,
                        type(e).__name__)
    return ClusterRef(conn_id, cluster_key)


def run_url(dag_id: str, run_id: str) -> str | None:
    """The DAG run in the Airflow UI, when `[api] base_url` says where the UI is."""
    from airflow.sdk import conf

    base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    return f"{base}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}" if base else None


def failed_alert(ledger: Any, context: Mapping[str, Any], dag_id: str, run_id: str) -> Any:
    """The failure's message from the callback's context and the run's ledger summary."""
    from hbase_migration.migration.alerts import failed_run_alert

    summary, planned = None, {}
    found = ledger.find_run(run_id)
    if found is not None:
        summary = ledger.run_summary(run_id)
        planned = {t: p["partitions"] for t, p in ledger.copy_progress(found["copy_id"], 1)["plans"].items()}
    params = dict(summary["run"]["params"]) if summary else dict(context.get("params") or {})
    ti = context.get("ti") or context.get("task_instance")
    return failed_run_alert(
        dag_id=dag_id, dag_run_id=run_id, reason=context.get("reason"),
        task_id=getattr(ti, "task_id", None), map_index=getattr(ti, "map_index", None),
        try_number=getattr(ti, "try_number", None), summary=summary, planned=planned,
        source=_cluster_ref(params.get("source_conn_id"), summary["run"]["source_key"] if summary else None),
        target=_cluster_ref(params.get("target_conn_id"), summary["run"]["target_key"] if summary else None),
        url=run_url(dag_id, run_id), now_ms=int(time.time() * 1000))


# ---------------------------------------------------------------------------------------------------------
# The watch


def on_watch_reading(conn_id: str, cluster: Any, report: Any, thresholds: Any, dag_run_id: str,
                     context: Mapping[str, Any] | None = None) -> list[str]:
    """After one watch reading of one cluster: a message for each breach that starts and each that ends, then
    the retry of earlier deliveries that failed. Returns the message keys sent; never raises."""
    try:
        channels = configured_channels()
        if not channels:
            return []
        from hbase_migration.migration.alerts import ClusterRef, open_alerts, plan_watch_alerts
        from hbase_migration.migration.health import quota_facts
        from hbase_migration.operators.ledger import open_ledger

        cluster_key = str(cluster.cluster_key)
        with open_ledger() as ledger:
            history = ledger.alert_history(cluster_key)
            peer_ids = {p.peer_id for p in report.peers} | {
                row["facts"].get("peer_id") for row in open_alerts(history).values() if row["facts"].get("peer_id")}
            runs = {p: run for p in sorted(peer_ids) if (run := ledger.latest_run_of_peer(cluster_key, p))}
            alerts = plan_watch_alerts(
                findings=report.findings, peers=report.peers,
                quota_now=quota_facts(report.quota, thresholds) if report.quota is not None else None,
                quota_known=report.quota is not None and report.quota_error is None,
                cluster=ClusterRef(conn_id, cluster_key), dag_run_id=dag_run_id, history=history, runs=runs,
                now_s=report.taken_at)
            sent = [a.message_key for a in alerts if publish(ledger, a, channels, context or {}, seq=a.facts["seq"])]
            retry_pending(ledger, channels, context or {})
        return sent
    except Exception as e:
        log.error("alerts: the watch of %s could not alert: %s: %s", conn_id, type(e).__name__, e)
        return []
