"""The ledger's alert records (schema 4): a message is claimed once, its deliveries are taken under a lease, a
failed one waits for a retry, the watch's history says which alerts are open (SQLite; the same queries run on
PostgreSQL in tests/integration/test_ledger_postgres.py)."""
import threading

import pytest

from hbase_migration.ledger.store import Ledger, LedgerError
from hbase_migration.migration.alerts import open_alerts

T = 1_700_000_000_000


def record(key="lag_breach|ck|p1", event="raised", occurrence="1", **over):
    return {"message_key": f"{key}|{event}|{occurrence}", "alert_key": key, "event": event, "kind": "lag_breach",
            "cluster_key": "ck", "conn_id": "hbase_source", "dag_run_id": "scheduled__1", "run_id": None,
            "subject": "S", "body": "B", "facts": {"peer_id": "p1"}, **over}


@pytest.fixture
def ledger(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as led:
        yield led


def test_a_message_is_claimed_once_with_its_deliveries(ledger):
    assert ledger.alert_message(record(), ["smtp:m", "webhook:w"], seq=1, created_ms=T) is True
    assert ledger.alert_message(record(subject="other"), ["smtp:m", "webhook:w", "webhook:new"], seq=1,
                                created_ms=T + 1) is False
    [msg] = ledger.alert_messages()
    assert (msg["subject"], msg["seq"], msg["created_ms"], msg["facts"]) == ("S", 1, T, {"peer_id": "p1"})
    assert [(d["channel"], d["attempts"], d["sent_ms"]) for d in msg["deliveries"]] == [
        ("smtp:m", 0, None), ("webhook:w", 0, None)]


def test_concurrent_claims_of_one_occurrence_make_one_message(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    Ledger.open(url).close()
    results, start = [], threading.Barrier(6)

    def claim():
        with Ledger.open(url) as led:
            start.wait()
            results.append(led.alert_message(record(), ["smtp:m"], seq=1))

    threads = [threading.Thread(target=claim) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [False] * 5 + [True]


def test_a_delivery_is_taken_under_a_lease_and_sent_once(ledger):
    ledger.alert_message(record(), ["smtp:m"], seq=1, created_ms=T)
    key = record()["message_key"]
    assert ledger.take_delivery(key, "smtp:m", lease_ms=1000, at_ms=T) is True
    assert ledger.take_delivery(key, "smtp:m", lease_ms=1000, at_ms=T + 500) is False  # another sender holds it
    assert ledger.pending_deliveries(since_ms=0, lease_ms=1000, at_ms=T + 500) == []
    # The sender died holding it: once the lease is over, it can be taken again.
    assert ledger.take_delivery(key, "smtp:m", lease_ms=1000, at_ms=T + 1001) is True
    ledger.delivery_sent(key, "smtp:m", at_ms=T + 1002)
    assert ledger.take_delivery(key, "smtp:m", lease_ms=1000, at_ms=T + 10_000) is False
    [d] = ledger.alert_messages()[0]["deliveries"]
    assert (d["attempts"], d["sent_ms"], d["last_error"]) == (2, T + 1002, None)


def test_a_failed_delivery_waits_for_a_retry(ledger):
    ledger.alert_message(record(), ["smtp:m", "webhook:w"], seq=1, created_ms=T)
    key = record()["message_key"]
    for channel in ("smtp:m", "webhook:w"):
        assert ledger.take_delivery(key, channel, lease_ms=1000, at_ms=T)
    ledger.delivery_sent(key, "smtp:m", at_ms=T)
    ledger.delivery_failed(key, "webhook:w", "WebhookError: webhook w: http://127.0.0.1:1 answered 500")
    [pending] = ledger.pending_deliveries(since_ms=T - 1, lease_ms=1000, at_ms=T + 1)
    assert (pending["message_key"], pending["channel"], pending["attempts"], pending["subject"], pending["body"],
            pending["facts"]) == (key, "webhook:w", 1, "S", "B", {"peer_id": "p1"})
    assert pending["last_error"] == "WebhookError: webhook w: http://127.0.0.1:1 answered 500"
    assert ledger.pending_deliveries(since_ms=T + 1, lease_ms=1000, at_ms=T + 1) == []  # older than the window


def test_history_says_which_alerts_are_open(ledger):
    ledger.alert_message(record(), [], seq=1, created_ms=T)
    ledger.alert_message(record(event="cleared"), [], seq=1, created_ms=T + 10)
    ledger.alert_message(record(occurrence="2"), [], seq=2, created_ms=T + 20)
    ledger.alert_message(record(key="oldwals_quota|ck", kind="oldwals_quota"), [], seq=1, created_ms=T + 30)
    ledger.alert_message(record(key="oldwals_quota|ck", kind="oldwals_quota", event="cleared"), [], seq=1,
                         created_ms=T + 40)
    ledger.alert_message(record(key="peer_disabled|other|p", cluster_key="other"), [], seq=1, created_ms=T)
    ledger.alert_message(record(key="migration_failed|d|r", event="failed", occurrence="copy#1",
                                kind="migration_failed"), [], created_ms=T)
    history = ledger.alert_history("ck")
    assert [(h["alert_key"], h["event"], h["seq"]) for h in history] == [
        ("lag_breach|ck|p1", "raised", 1), ("lag_breach|ck|p1", "cleared", 1), ("lag_breach|ck|p1", "raised", 2),
        ("oldwals_quota|ck", "raised", 1), ("oldwals_quota|ck", "cleared", 1)]
    opened = open_alerts(history)
    assert list(opened) == ["lag_breach|ck|p1"]
    assert (opened["lag_breach|ck|p1"]["seq"], opened["lag_breach|ck|p1"]["facts"]) == (2, {"peer_id": "p1"})


def test_latest_run_of_a_peer_leaves_the_watch_out(ledger):
    ledger.start_run("r1", "hbase_table_migration", "manual", "ck", "ck2", "p1", ["t"], started_ms=T)
    ledger.start_run("r2", "hbase_migration__orders", "orders", "ck", "ck2", "p1", ["t"], started_ms=T + 5)
    ledger.start_run("w:hbase_source", "hbase_replication_watch", "watch", "ck", "ck", "-", ["*"], started_ms=T + 9)
    ledger.start_run("r3", "hbase_table_migration", "manual", "other", "ck2", "p1", ["t"], started_ms=T + 9)
    assert ledger.latest_run_of_peer("ck", "p1") == {"run_id": "r2", "dag_id": "hbase_migration__orders",
                                                     "status": "running", "started_ms": T + 5}
    assert ledger.latest_run_of_peer("ck", "nope") is None


def test_bad_records_are_refused_and_change_nothing(ledger):
    with pytest.raises(LedgerError, match="subject must be a non-empty string"):
        ledger.alert_message(record(subject=""), ["smtp:m"])
    with pytest.raises(LedgerError, match="facts must be JSON-serialisable"):
        ledger.alert_message(record(facts={"x": object()}), ["smtp:m"])
    with pytest.raises(LedgerError, match=r"channels\[\] must be a non-empty string"):
        ledger.alert_message(record(), [""])
    assert ledger.alert_messages() == []
