"""The run ledger on a real PostgreSQL server (Debian's, started per session), as ARCHITECTURE.md promises:
the same schema and queries as on SQLite, the same answers, atomic schema changes, concurrent writers, and the
ledger named by an Airflow connection (`[hbase_migration] ledger_conn_id`)."""
from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy

from hbase_migration.ledger.store import ALL_TABLES, SQL_DIR, LagRow, Ledger, LedgerError, schema_migrations
from tests.ledger_writers import run_concurrent_copies

pytestmark = pytest.mark.integration


@pytest.fixture
def pg_url(postgres):
    return postgres.create_database("ledger_" + uuid.uuid4().hex[:8])


def test_the_server_asks_for_a_password_as_production_does(postgres, pg_url):
    """The test server authenticates every connection (scram-sha-256), so a URL without the password fails where a
    trusting server would have hidden its absence; the URL `create_database` returns carries it."""
    import psycopg

    url = sqlalchemy.engine.make_url(pg_url)
    assert url.password == postgres.password
    for password in (None, "not-" + postgres.password):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(host="127.0.0.1", port=postgres.port, user="postgres", password=password,
                            dbname=url.database, connect_timeout=5).close()
    assert pg_rows(pg_url, "select 1") == [(1,)]


def pg_rows(url, sql):
    """An independent look at what PostgreSQL stored (plain SQLAlchemy, not the ledger's queries)."""
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(sql)]
    finally:
        engine.dispose()


def one_migration(ledger: Ledger) -> dict:
    """A whole run through the public API, including re-runs and repeats that must be idempotent upserts."""
    for _ in range(2):  # a re-run resumes the same run
        ledger.start_run("run-1", "migrate_orders", "orders", "zk1,zk2:2181:/hbase", "zkb:2181:/hbase", "mig1",
                         ["ns:orders", "ns:items"], {"throttle": 500}, copy_id="copy-1", started_ms=1_000)
    ledger.record_t0("run-1", 2_000)
    ledger.record_t0("run-1", 2_500)  # the earliest T0 stays
    ledger.set_phase("run-1", ALL_TABLES, "add_peer", "success", at_ms=2_000)
    for table in ("ns:orders", "ns:items"):
        ledger.set_phase("run-1", table, "copy", "running", at_ms=3_000)
        ledger.set_phase("run-1", table, "copy", "failed", "Spark task lost", at_ms=3_500)
        ledger.set_phase("run-1", table, "copy", "running", at_ms=4_000)  # retried: first start kept
        ledger.set_phase("run-1", table, "copy", "success", at_ms=5_000)
    for i in range(3):
        ledger.partition_done("copy-1", "ns:orders", f"p{i}", bytes([i]), bytes([i + 1, 0xFF]), 10 * i, 20 * i,
                              300 * i, started_ms=3_000, finished_ms=4_000 + i, attempt=1 + i % 2)
    ledger.partition_done("copy-1", "ns:orders", "p0", b"", b"\x01", 7, 8, 9, finished_ms=4_100)  # overwrite
    for at in (6_000, 6_000, 7_000):
        ledger.lag_sample("run-1", "mig1", [
            LagRow("rs1,16020,1", "mig1", 2, 1_500, 70),
            {"server": "rs1,16020,1", "queue_id": "mig1-rs2,16020,9", "size_of_log_queue": 4,
             "age_of_last_shipped_op_ms": 90_000, "shipped_ops": 0}], sampled_ms=at)
    ledger.quota_sample("run-1", "/hbase/oldWALs", space_consumed=3_000, space_quota=-1, ns_consumed=12,
                        ns_quota=None, sampled_ms=6_000)
    ledger.quota_sample("run-1", "/hbase", space_consumed=9_000, space_quota=30_000, ns_consumed=40,
                        ns_quota=1_000, growth_bytes_per_s=12.5, projected_exhaustion_ms=1_680_000,
                        sampled_ms=6_000)
    for matching in (90, 97):  # verifying the same window again overwrites it
        ledger.verification("run-1", "ns:orders", window_start_ms=None, window_end_ms=9_000, source_rows=100,
                            target_rows=99, matching=matching, content_different=2, only_in_source=1,
                            only_in_target=0, sample_keys=[b"r\x01", b"r\xff"], verified_ms=9_500)
    ledger.peer_note("run-1", "mig1", "DISABLED", "copy failed; the peer pins WALs", noted_ms=5_500)
    ledger.peer_note("run-1", "mig1", "ENABLED", "caught up", noted_ms=8_000)
    ledger.copy_plan("copy-1", "ns:orders", 3, est_rows=30, planned_ms=2_900)
    ledger.copy_plan("copy-1", "ns:orders", 3, planned_ms=3_900)  # planned again: the first instant stays
    ledger.end_run("run-1", "success", ended_ms=10_000)
    ledger.start_run("watch-1", "hbase_replication_watch", "watch", "zk1:2181:/hbase", "zk1:2181:/hbase", "-",
                     ["*"], started_ms=11_000)
    # schema 5: fingerprinted ranges, the sizing, the switch guard's lease and holds
    ledger.partition_done("copy-1", "ns:items", "q0", b"", b"", 1, 1, 1, finished_ms=4_200, fingerprint="f" * 16)
    ledger.record_sizing("run-1", "ns:orders", {"regions": 3, "sample": {"rows": 10}}, sized_ms=1_500)
    ledger.record_sizing("run-1", "ns:orders", {"regions": 4, "sample": None}, sized_ms=1_600)  # sized again
    key = "zk1:2181,zk2:2181:2181:/hbase"
    lease = [ledger.switch_lock(key, "owner-a", 60, now=1_000), ledger.switch_lock(key, "owner-b", 60, now=2_000)]
    ledger.switch_hold(key, "copy copy-1 ns:orders", "run-1", held_ms=1_000)
    ledger.switch_hold(key, "copy copy-1 ns:items", "run-1", held_ms=1_100)
    ledger.switch_found(key, "owner-a", {"split": True, "merge": False, "normalizer": True}, found_ms=1_000)
    lease.append(ledger.switch_lock(key, "owner-b", 60, now=100_000))  # owner-a's lease expired
    try:
        ledger.switch_found(key, "owner-a", None)
        lease.append("written without the lease")
    except LedgerError as e:
        lease.append(str(e))
    remaining = ledger.switch_release(key, "copy copy-1 ns:orders")
    return {
        "ranges": ledger.finished_ranges("copy-1", "ns:items"),
        "sizings": ledger.run_sizings("run-1"),
        "lease": lease,
        "guard": ledger.switch_guard(key),
        "remaining": remaining,
        "run_holds": ledger.run_switch_holds("run-1"),
        "summary": ledger.run_summary("run-1"),
        "recent": ledger.recent_runs(),
        "migrations": ledger.recent_runs(except_plan="watch"),
        "charts": ledger.chart_series("run-1"),
        "samples": ledger.latest_samples("run-1"),
        "done": sorted(ledger.done_partitions("copy-1", "ns:orders")),
    }


def test_postgres_gives_the_same_answers_as_sqlite(pg_url, tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as lite, Ledger.open(pg_url) as pg:
        on_sqlite, on_postgres = one_migration(lite), one_migration(pg)
    assert on_postgres == on_sqlite
    assert on_postgres["done"] == ["p0", "p1", "p2"]
    assert on_postgres["ranges"] == [{"partition_id": "q0", "start_row": b"", "stop_row": b"", "fingerprint": "f" * 16,
                                      "rows": 1, "finished_ms": 4_200}]
    assert on_postgres["sizings"] == {"ns:orders": {"sized_ms": 1_600, "figures": {"regions": 4, "sample": None}}}
    assert on_postgres["lease"] == [True, False, True, "switch state of 'zk1:2181,zk2:2181:2181:/hbase' not written: "
                                                       "the lease is not 'owner-a''s"]
    assert on_postgres["guard"] == {"source_key": "zk1:2181,zk2:2181:2181:/hbase", "found": {
        "split": True, "merge": False, "normalizer": True}, "found_ms": 1_000, "lock_owner": "owner-b",
        "lock_expires_ms": 160_000}
    assert on_postgres["remaining"] == [{"holder": "copy copy-1 ns:items", "run_id": "run-1", "held_ms": 1_100}]
    assert on_postgres["summary"]["run"]["t0_ms"] == 2_000
    assert [r["run_id"] for r in on_postgres["migrations"]] == ["run-1"]
    charts = on_postgres["charts"]
    assert charts["lag"][0] == {"sampled_ms": 6_000, "server": "rs1,16020,1", "queues": 2, "size_of_log_queue": 6,
                                "age_of_last_shipped_op_ms": 90_000}
    assert charts["copy"]["plans"] == {"ns:orders": {"partitions": 3, "est_rows": None, "planned_ms": 2_900,
                                                     "replanned_ms": 3_900}}
    # Stored as the schema says: row keys as hex, unset quotas as NULL, flags as 0/1.
    assert pg_rows(pg_url, "SELECT partition_id, start_row_hex, stop_row_hex, row_count, scope_fingerprint FROM "
                           "copy_partitions ORDER BY partition_id") == [
        ("p0", "", "01", 7, None), ("p1", "01", "02ff", 10, None), ("p2", "02", "03ff", 20, None),
        ("q0", "", "", 1, "f" * 16)]
    assert pg_rows(pg_url, "SELECT path, space_quota, ns_quota, growth_bytes_per_s FROM quota_samples "
                           "ORDER BY path") == [("/hbase", 30_000, 1_000, 12.5), ("/hbase/oldWALs", None, None, None)]
    assert pg_rows(pg_url, "SELECT queue_id, recovered FROM lag_samples WHERE sampled_ms = 7000 "
                           "ORDER BY queue_id") == [("mig1", 0), ("mig1-rs2,16020,9", 1)]


def test_schema_applies_once_and_a_broken_version_leaves_nothing(pg_url, tmp_path):
    Ledger.open(pg_url).close()
    Ledger.open(pg_url).close()
    assert pg_rows(pg_url, "SELECT version, name FROM schema_version ORDER BY version") == [
        (1, "initial"), (2, "copy_plans"), (3, "throttle_and_cutover"), (4, "alerts"),
        (5, "switches_ranges_sizing"), (6, "snapshot_exports"), (7, "job_summaries"),
        (8, "oldwals_watch"), (9, "batches")]
    sql_dir = tmp_path / "sql"
    (sql_dir / "schema").mkdir(parents=True)
    (sql_dir / "queries.sql").write_text((SQL_DIR / "queries.sql").read_text())
    for shipped in sorted((SQL_DIR / "schema").glob("*.sql")):
        (sql_dir / "schema" / shipped.name).write_text(shipped.read_text())
    shipped = len(list((SQL_DIR / "schema").glob("*.sql")))
    extra = f"{shipped + 1:03d}_extra.sql"
    (sql_dir / "schema" / extra).write_text("CREATE TABLE extra (x TEXT);\nINSERT INTO nowhere VALUES (1);\n")
    with pytest.raises(LedgerError, match=f'{extra} failed, nothing applied: relation "nowhere" does not exist'):
        Ledger.open(pg_url, sql_dir=sql_dir)
    assert pg_rows(pg_url, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'extra'") == [(0,)]
    assert pg_rows(pg_url, "SELECT version FROM schema_version ORDER BY version") == [
        (v,) for v in range(1, shipped + 1)]


def test_concurrent_writers_all_land(pg_url):
    """Spark tasks record partitions at the same time, each opening (and schema-checking) the ledger."""
    with Ledger.open(pg_url) as ledger:
        ledger.start_run("run-1", "d", "p", "zk:2181:/hbase", "zkb:2181:/hbase", "mig1", ["t"], started_ms=1)
    for returncode, err in run_concurrent_copies(pg_url):
        assert returncode == 0, err
    assert pg_rows(pg_url, "SELECT COUNT(*), SUM(row_count) FROM copy_partitions") == [(160, 4 * sum(range(40)))]
    assert pg_rows(pg_url, "SELECT COUNT(*) FROM schema_version") == [(len(schema_migrations(SQL_DIR / "schema")),)]
    assert pg_rows(pg_url, "SELECT table_name, started_ms FROM migration_phases ORDER BY table_name") == [
        (f"t{w}", 0) for w in range(4)]


def test_alert_claims_and_leases_on_postgres(pg_url):
    """One message per occurrence rests on INSERT ... ON CONFLICT DO NOTHING reporting 0 rows to every caller but
    one, and a delivery's lease on a conditional UPDATE: both on PostgreSQL, with concurrent claimers."""
    import threading

    Ledger.open(pg_url).close()
    rec = {"message_key": "peer_disabled|ck|p|raised|1", "alert_key": "peer_disabled|ck|p", "event": "raised",
           "kind": "peer_disabled", "cluster_key": "ck", "conn_id": "hbase_source", "dag_run_id": "scheduled__1",
           "run_id": None, "subject": "S", "body": "B", "facts": {"peer_id": "p"}}
    results, start = [], threading.Barrier(4)

    def claim():
        with Ledger.open(pg_url) as led:
            start.wait()
            results.append(led.alert_message(rec, ["smtp:m", "webhook:w"], seq=1))

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [False, False, False, True]
    with Ledger.open(pg_url) as led:
        assert led.take_delivery(rec["message_key"], "smtp:m", lease_ms=1000, at_ms=10_000)
        assert not led.take_delivery(rec["message_key"], "smtp:m", lease_ms=1000, at_ms=10_500)
        led.delivery_failed(rec["message_key"], "smtp:m", "SMTPServerDisconnected: gone")
        assert [p["channel"] for p in led.pending_deliveries(0, 1000, at_ms=10_600)] == ["smtp:m", "webhook:w"]
        assert [h["event"] for h in led.alert_history("ck")] == ["raised"]
    assert pg_rows(pg_url, "SELECT channel, attempts, sent_ms, last_error FROM alert_deliveries ORDER BY channel") == [
        ("smtp:m", 1, None, "SMTPServerDisconnected: gone"), ("webhook:w", 0, None, None)]


def test_tasks_open_the_postgres_ledger_named_by_an_airflow_connection(postgres, pg_url, monkeypatch):
    from hbase_migration.operators.ledger import open_ledger

    database = pg_url.rsplit("/", 1)[1]
    monkeypatch.setenv("AIRFLOW_CONN_MIGRATION_LEDGER", json.dumps(
        {"conn_type": "postgres", "host": "127.0.0.1", "port": postgres.port, "login": "postgres",
         "password": postgres.password, "schema": database,
         "extra": {"sslmode": "disable", "cursor": "dictcursor"}}))  # libpq's key passes
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_CONN_ID", "migration_ledger")
    with open_ledger() as ledger:
        ledger.start_run("run-1", "d", "p", "zk:2181:/hbase", "zkb:2181:/hbase", "mig1", ["t"], started_ms=1)
    assert pg_rows(pg_url, "SELECT run_id, status FROM migration_runs") == [("run-1", "running")]
