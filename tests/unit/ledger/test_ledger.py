"""The run ledger on a real SQLite file (the database the ledger uses by default, not a mock)."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hbase_migration.ledger.store import (
    ALL_TABLES,
    SQL_DIR,
    LagRow,
    Ledger,
    LedgerError,
    named_statements,
    phase_times,
    row_hex,
    schema_migrations,
    split_statements,
    strip_comments,
)
from tests.ledger_writers import run_concurrent_copies

REPO = Path(__file__).resolve().parents[3]
TABLES = [
    "alert_deliveries", "alert_messages", "batch_slots", "copy_partitions", "copy_plans", "copy_sizings",
    "initial_copies", "job_summaries", "lag_samples", "migration_batches", "migration_phases", "migration_runs",
    "oldwals_watch", "peer_notes", "quota_samples", "schema_version", "snapshot_exports", "snapshot_files",
    "switch_guards", "switch_holds", "throttle_decisions", "verification_results",
]


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "ledger.db"


@pytest.fixture
def ledger(db_path):
    with Ledger.open(f"sqlite:///{db_path}") as opened:
        yield opened


def start(ledger, run_id="run-1", **overrides):
    args = dict(
        dag_id="migrate_orders", plan="orders", source_key="zk1,zk2:2181:/hbase",
        target_key="zkb:2181:/hbase", peer_id="mig1", tables=["ns:orders", "ns:items"],
        params={"throttle": 500, "families": ["d"]}, started_ms=1_000,
    )
    args.update(overrides)
    return ledger.start_run(run_id, **args)


def raw(db_path, sql, *args):
    """Read the file with the standard library's sqlite3: an independent look at what was stored."""
    with sqlite3.connect(db_path) as conn:
        return conn.execute(sql, args).fetchall()


# ---------------------------------------------------------------------------------------------------------
# SQL files

def test_strip_comments_keeps_quoted_text():
    sql = "SELECT '--not a comment', 1 -- a comment\nFROM t; -- tail"
    assert strip_comments(sql) == "SELECT '--not a comment', 1 \nFROM t; "


def test_split_statements_splits_outside_quotes_and_drops_blanks():
    sql = "-- header\nCREATE TABLE a (x TEXT);\n\nINSERT INTO a VALUES ('x;y', 'it''s');\n;\n"
    assert split_statements(sql) == ["CREATE TABLE a (x TEXT)", "INSERT INTO a VALUES ('x;y', 'it''s')"]


def test_named_statements_parses_blocks():
    sql = "-- file comment\n\n-- name: one\n-- why\nSELECT 1;\n\n-- name: two\nSELECT\n  :x;\n"
    assert named_statements(sql) == {"one": "SELECT 1", "two": "SELECT :x"}


@pytest.mark.parametrize(
    "sql, message",
    [
        ("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;", "<sql>:3: statement name 'a' is defined twice"),
        ("SELECT 0;\n-- name: a\nSELECT 1;", "<sql>:1: SQL before the first '-- name:' line"),
        ("-- name: a\nSELECT 1; SELECT 2;", "<sql>: block 'a' must hold one statement, has 2"),
        ("-- name: a\n-- nothing\n", "<sql>: block 'a' must hold one statement, has 0"),
    ],
    ids=["duplicate", "orphan-sql", "two-statements", "empty"],
)
def test_named_statements_rejects_malformed_files(sql, message):
    with pytest.raises(LedgerError) as err:
        named_statements(sql)
    assert str(err.value) == message


def test_shipped_sql_parses():
    queries = named_statements((SQL_DIR / "queries.sql").read_text())
    assert {"set_phase", "partition_done", "done_partitions", "record_t0", "recent_runs"} <= set(queries)
    [(version, name, statements), (version2, name2, statements2), (version3, name3, statements3),
     (version4, name4, statements4), (version5, name5, statements5),
     (version6, name6, statements6), (version7, name7, statements7),
     (version8, name8, statements8), (version9, name9, statements9)] = schema_migrations(SQL_DIR / "schema")
    assert (version, name, version2, name2, version3, name3, version4, name4, version5, name5, version6, name6,
            version7, name7, version8, name8, version9, name9) == (
        1, "initial", 2, "copy_plans", 3, "throttle_and_cutover", 4, "alerts", 5, "switches_ranges_sizing",
        6, "snapshot_exports", 7, "job_summaries", 8, "oldwals_watch", 9, "batches")
    assert [s.split("(")[0] for s in statements8] == ["CREATE TABLE IF NOT EXISTS oldwals_watch "]
    assert [s.split("(")[0] for s in statements9] == [
        "CREATE TABLE IF NOT EXISTS migration_batches ", "CREATE TABLE IF NOT EXISTS batch_slots ",
        "CREATE UNIQUE INDEX IF NOT EXISTS batch_slots_batch ON batch_slots "]
    assert [s.split("(")[0] for s in statements7] == ["CREATE TABLE IF NOT EXISTS job_summaries "]
    assert [s.split("(")[0] for s in statements6] == [
        "CREATE TABLE IF NOT EXISTS initial_copies ", "CREATE TABLE IF NOT EXISTS snapshot_exports ",
        "CREATE TABLE IF NOT EXISTS snapshot_files "]
    assert [s.split("(")[0] for s in statements2] == ["CREATE TABLE IF NOT EXISTS copy_plans "]
    assert [s.split("(")[0] for s in statements3] == ["CREATE TABLE IF NOT EXISTS throttle_decisions "]
    assert [s.split("(")[0] for s in statements4] == [
        "CREATE TABLE IF NOT EXISTS alert_messages ",
        "CREATE INDEX IF NOT EXISTS alert_messages_by_cluster ON alert_messages ",
        "CREATE TABLE IF NOT EXISTS alert_deliveries "]
    assert [s.split("(")[0] for s in statements5] == [
        "ALTER TABLE copy_partitions ADD COLUMN scope_fingerprint TEXT", "CREATE TABLE IF NOT EXISTS switch_guards ",
        "CREATE TABLE IF NOT EXISTS switch_holds ", "CREATE TABLE IF NOT EXISTS copy_sizings "]
    assert [s.split("(")[0] for s in statements] == [
        "CREATE TABLE IF NOT EXISTS migration_runs ",
        "CREATE INDEX IF NOT EXISTS migration_runs_started ON migration_runs ",
        "CREATE TABLE IF NOT EXISTS migration_phases ", "CREATE TABLE IF NOT EXISTS copy_partitions ",
        "CREATE TABLE IF NOT EXISTS lag_samples ", "CREATE TABLE IF NOT EXISTS quota_samples ",
        "CREATE TABLE IF NOT EXISTS verification_results ", "CREATE TABLE IF NOT EXISTS peer_notes ",
    ]


def test_schema_files_must_be_numbered_without_gaps(tmp_path):
    (tmp_path / "001_a.sql").write_text("CREATE TABLE a (x TEXT);")
    (tmp_path / "003_c.sql").write_text("CREATE TABLE c (x TEXT);")
    with pytest.raises(LedgerError, match=r"numbered 1\.\.N without gaps, found \[1, 3\]"):
        schema_migrations(tmp_path)


# ---------------------------------------------------------------------------------------------------------
# Pure helpers

@pytest.mark.parametrize(
    "status, expected",
    [("running", (50, None)), ("success", (None, 50)), ("failed", (None, 50)), ("skipped", (None, 50)),
     ("pending", (None, None))],
)
def test_phase_times(status, expected):
    assert phase_times(status, 50) == expected


def test_row_hex():
    assert row_hex(b"", "start_row") == ""
    assert row_hex(b"\x00row\xff", "start_row") == "00726f77ff"
    with pytest.raises(LedgerError) as err:
        row_hex("r", "start_row")
    assert str(err.value) == "start_row must be a row key as bytes (b'' for an open end), got 'r'"


# ---------------------------------------------------------------------------------------------------------
# Opening and the schema

def test_schema_applies_twice_as_a_no_op(db_path):
    with Ledger.open(f"sqlite:///{db_path}") as first:
        start(first)
    tables = raw(db_path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    versions = raw(db_path, "SELECT version, name, applied_ms FROM schema_version")
    with Ledger.open(f"sqlite:///{db_path}") as second:
        assert second.apply_schema() == 9
        assert second.recent_runs()[0]["run_id"] == "run-1"
    assert [t for (t,) in tables] == TABLES
    assert raw(db_path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") == tables
    assert raw(db_path, "SELECT version, name, applied_ms FROM schema_version") == versions
    assert len(versions) == 9


def test_new_schema_version_applies_on_top_and_a_broken_one_leaves_nothing(db_path, tmp_path):
    sql_dir = tmp_path / "sql"
    (sql_dir / "schema").mkdir(parents=True)
    (sql_dir / "queries.sql").write_text((SQL_DIR / "queries.sql").read_text())
    (sql_dir / "schema" / "001_initial.sql").write_text((SQL_DIR / "schema" / "001_initial.sql").read_text())
    Ledger.open(f"sqlite:///{db_path}", sql_dir=sql_dir).close()

    # Version 2 fails half-way: its first table must not survive (DDL runs in the transaction).
    broken = "CREATE TABLE extra (x TEXT);\nINSERT INTO nowhere VALUES (1);\n"
    (sql_dir / "schema" / "002_extra.sql").write_text(broken)
    with pytest.raises(LedgerError) as err:
        Ledger.open(f"sqlite:///{db_path}", sql_dir=sql_dir)
    assert str(err.value) == (
        "ledger schema file 002_extra.sql failed, nothing applied: no such table: nowhere")
    assert raw(db_path, "SELECT name FROM sqlite_master WHERE name = 'extra'") == []
    assert raw(db_path, "SELECT version FROM schema_version") == [(1,)]

    (sql_dir / "schema" / "002_extra.sql").write_text("CREATE TABLE IF NOT EXISTS extra (x TEXT);\n")
    with Ledger.open(f"sqlite:///{db_path}", sql_dir=sql_dir) as ledger:
        assert ledger.apply_schema(sql_dir / "schema") == 2
    versions = raw(db_path, "SELECT version, name FROM schema_version ORDER BY version")
    assert versions == [(1, "initial"), (2, "extra")]
    assert raw(db_path, "SELECT name FROM sqlite_master WHERE name = 'extra'") == [("extra",)]


def test_a_newer_schema_is_refused(db_path):
    Ledger.open(f"sqlite:///{db_path}").close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO schema_version VALUES (10, 'future', 0)")
    with pytest.raises(LedgerError, match=r"schema version 10 is newer than this toolkit knows \(9\)"):
        Ledger.open(f"sqlite:///{db_path}")


def test_open_rejects_bad_urls_without_showing_secrets(tmp_path):
    with pytest.raises(LedgerError, match=r"directory .*/missing does not exist"):
        Ledger.open(f"sqlite:///{tmp_path}/missing/ledger.db")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(LedgerError, match="must name a database file"):
        Ledger.open("sqlite://")
    with pytest.raises(LedgerError, match="is not a SQLAlchemy URL") as err:
        Ledger.open("user:s3cret@nowhere")
    assert "s3cret" not in str(err.value)
    with pytest.raises(LedgerError, match=r"cannot use ledger url 'nosuchdb://user:\*\*\*@host/db'") as err:
        Ledger.open("nosuchdb://user:s3cret@host/db")
    assert "s3cret" not in str(err.value)


# ---------------------------------------------------------------------------------------------------------
# Runs, T0, phases

def test_start_run_round_trips_and_a_rerun_resumes(ledger):
    run = start(ledger)
    assert run == {
        "run_id": "run-1", "dag_id": "migrate_orders", "plan": "orders", "source_key": "zk1,zk2:2181:/hbase",
        "target_key": "zkb:2181:/hbase", "peer_id": "mig1", "copy_id": "run-1",
        "tables": ["ns:orders", "ns:items"], "params": {"families": ["d"], "throttle": 500},
        "status": "running", "started_ms": 1_000, "ended_ms": None, "duration_ms": None, "t0_ms": None,
    }
    assert start(ledger, started_ms=2_000) == run  # same task again: nothing moves
    ledger.end_run("run-1", "failed", ended_ms=5_000)
    assert ledger.recent_runs()[0]["status"] == "failed"
    assert ledger.recent_runs()[0]["duration_ms"] == 4_000
    assert start(ledger, started_ms=9_000) == run  # a retry after a failure: running again, first start kept
    ledger.end_run("run-1", "success", ended_ms=12_000)
    assert ledger.run_summary("run-1")["run"] == run | {"status": "success", "ended_ms": 12_000,
                                                        "duration_ms": 11_000}


def test_start_run_with_another_description_is_refused_and_changes_nothing(ledger):
    run = start(ledger)
    with pytest.raises(LedgerError) as err:
        start(ledger, tables=["ns:orders"], peer_id="mig2")
    assert str(err.value) == (
        "run_id 'run-1' was started with a different description (peer_id: 'mig1' != 'mig2', "
        "tables_json: '[\"ns:orders\",\"ns:items\"]' != '[\"ns:orders\"]')"
    )
    assert ledger.run_summary("run-1")["run"] == run


def test_start_run_accepts_cluster_keys_and_a_copy_id(ledger):
    from hbase_migration.clusters.cluster import ClusterKey

    run = start(ledger, source_key=ClusterKey.parse("zk1,zk2:2181:/hbase"), copy_id="orders-copy")
    assert (run["source_key"], run["copy_id"]) == ("zk1,zk2:2181:/hbase", "orders-copy")


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"run_id": ""}, "run_id must be a non-empty string, got ''"),
        ({"tables": []}, "tables must be a non-empty list of table names, got []"),
        ({"tables": "ns:orders"}, "tables must be a non-empty list of table names, got 'ns:orders'"),
        ({"tables": ["a", "a"]}, "tables lists a table twice: ['a', 'a']"),
        ({"params": {"when": object}}, "params must be JSON-serialisable: "),
        ({"source_key": None}, "source_key must be a non-empty string, got None"),
        ({"started_ms": -1}, "started_ms must be a non-negative integer, got -1"),
    ],
    ids=["run_id", "no-tables", "tables-str", "tables-twice", "params", "source_key", "started_ms"],
)
def test_start_run_rejects_bad_input_and_writes_nothing(ledger, db_path, overrides, message):
    run_id = overrides.pop("run_id", "run-1")
    with pytest.raises(LedgerError) as err:
        start(ledger, run_id, **overrides)
    assert str(err.value).startswith(message)
    assert raw(db_path, "SELECT COUNT(*) FROM migration_runs") == [(0,)]


def test_end_run_rejects_unknown_runs_and_statuses(ledger):
    with pytest.raises(LedgerError, match=r"run_id 'nope' is not in the ledger: start_run\(\) it first"):
        ledger.end_run("nope", "success")
    start(ledger)
    with pytest.raises(LedgerError, match="status must be one of success, failed, got 'running'"):
        ledger.end_run("run-1", "running")
    assert ledger.run_summary("run-1")["run"]["status"] == "running"


def test_record_t0_keeps_the_earliest_instant(ledger):
    start(ledger)
    assert ledger.record_t0("run-1", 5_000) == 5_000
    assert ledger.record_t0("run-1", 7_000) == 5_000  # add_peer re-ran and found its peer
    assert ledger.record_t0("run-1", 4_000) == 4_000
    assert ledger.run_summary("run-1")["run"]["t0_ms"] == 4_000
    with pytest.raises(LedgerError, match="not in the ledger"):
        ledger.record_t0("other", 1)


def test_set_phase_records_first_start_and_last_end(ledger, db_path):
    start(ledger)
    ledger.set_phase("run-1", "ns:orders", "copy", "running", at_ms=10)
    ledger.set_phase("run-1", "ns:orders", "copy", "failed", "region server rs1 went away", at_ms=20)
    assert ledger.run_summary("run-1")["phases"] == {"ns:orders": {"copy": {
        "status": "failed", "started_ms": 10, "ended_ms": 20, "duration_ms": 10,
        "detail": "region server rs1 went away"}}}
    ledger.set_phase("run-1", "ns:orders", "copy", "running", at_ms=30)  # the retry
    assert ledger.run_summary("run-1")["phases"]["ns:orders"]["copy"] == {
        "status": "running", "started_ms": 10, "ended_ms": None, "duration_ms": None, "detail": None}
    ledger.set_phase("run-1", "ns:orders", "copy", "success", "120 partitions", at_ms=45)
    ledger.set_phase("run-1", "ns:orders", "copy", "success", "120 partitions", at_ms=45)  # idempotent
    assert raw(db_path, "SELECT status, started_ms, ended_ms, detail, updated_ms FROM migration_phases") == [
        ("success", 10, 45, "120 partitions", 45)]


@pytest.mark.parametrize(
    "args, message",
    [
        (("run-1", "ns:orders", "copying", "running"),
         "phase must be one of preflight, create_tables, add_peer, copy, enable_peer, catch_up, metadata, verify, "
         "report, check, freeze, final_drain, reverse_peer, approval, remove_peer, unfreeze, window, lag_gate, "
         "live_pass, bounded_check, switch, post_verify, forward_peer, unfreeze_source, lift_fence, got 'copying'"),
        (("run-1", "ns:orders", "copy", "done"),
         "status must be one of pending, running, success, failed, skipped, got 'done'"),
        (("run-1", "", "copy", "running"), "table must be a non-empty string, got ''"),
        (("run-2", "ns:orders", "copy", "running"),
         "run_id 'run-2' is not in the ledger: start_run() it first"),
    ],
    ids=["phase", "status", "table", "unknown-run"],
)
def test_set_phase_rejects_bad_input(ledger, db_path, args, message):
    start(ledger)
    with pytest.raises(LedgerError) as err:
        ledger.set_phase(*args)
    assert str(err.value) == message
    assert raw(db_path, "SELECT COUNT(*) FROM migration_phases") == [(0,)]


# ---------------------------------------------------------------------------------------------------------
# Copy partitions

def test_partition_done_stores_rows_as_hex_and_is_idempotent(ledger, db_path):
    args = ("copy-1", "ns:orders", "p-0001", b"", b"\x00\x10row", 1_000, 3_000, 65_536)
    ledger.partition_done(*args, started_ms=100, finished_ms=200)
    ledger.partition_done(*args, started_ms=100, finished_ms=200)
    assert raw(db_path, "SELECT * FROM copy_partitions") == [
        ("copy-1", "ns:orders", "p-0001", "", "0010726f77", 1_000, 3_000, 65_536, 100, 200, 1, None)]
    # A re-copied partition (attempt 2) overwrites its figures: there is still one row.
    ledger.partition_done(*args[:5], 1_001, 3_001, 65_600, started_ms=300, finished_ms=400, attempt=2)
    assert raw(db_path, "SELECT row_count, started_ms, finished_ms, attempt FROM copy_partitions") == [
        (1_001, 300, 400, 2)]
    assert ledger.done_partitions("copy-1", "ns:orders") == {"p-0001"}
    assert ledger.done_partitions("copy-1", "ns:items") == set()
    assert ledger.done_partitions("copy-2", "ns:orders") == set()
    # With the scope's fingerprint (schema 5): kept, and read back with the range as bytes.
    ledger.partition_done("copy-1", "ns:orders", "p-0002", b"\x00\x10row", b"", 5, 6, 7, finished_ms=500,
                          fingerprint="0123456789abcdef")
    assert ledger.finished_ranges("copy-1", "ns:orders") == [
        {"partition_id": "p-0001", "start_row": b"", "stop_row": b"\x00\x10row", "fingerprint": None,
         "rows": 1_001, "finished_ms": 400},
        {"partition_id": "p-0002", "start_row": b"\x00\x10row", "stop_row": b"", "fingerprint": "0123456789abcdef",
         "rows": 5, "finished_ms": 500}]
    assert ledger.finished_ranges("copy-1", "ns:items") == []


@pytest.mark.parametrize(
    "change, message",
    [
        ({"start_row": "row"}, "start_row must be a row key as bytes (b'' for an open end), got 'row'"),
        ({"rows": -1}, "rows must be a non-negative integer, got -1"),
        ({"bytes": 1.5}, "bytes must be a non-negative integer, got 1.5"),
        ({"cells": True}, "cells must be a non-negative integer, got True"),
        ({"attempt": 0}, "attempt must be a positive integer, got 0"),
        ({"partition_id": None}, "partition_id must be a non-empty string, got None"),
    ],
    ids=["row-str", "rows", "bytes", "cells-bool", "attempt", "partition_id"],
)
def test_partition_done_rejects_bad_input(ledger, db_path, change, message):
    args = dict(copy_id="c", table="t", partition_id="p", start_row=b"", stop_row=b"",
                rows=1, cells=1, bytes=1)
    args.update(change)
    with pytest.raises(LedgerError) as err:
        ledger.partition_done(**args)
    assert str(err.value) == message
    assert raw(db_path, "SELECT COUNT(*) FROM copy_partitions") == [(0,)]


CRASHING_COPY = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[2])
    from hbase_migration.ledger.store import Ledger

    run = Ledger._run
    def crash_before_commit(self, conn, query, **params):
        result = run(self, conn, query, **params)
        if query == "partition_done" and params["partition_id"] == "p3":
            os._exit(3)  # the process dies with p3 written but not committed
        return result
    Ledger._run = crash_before_commit

    ledger = Ledger.open(sys.argv[1])
    for i in range(5):
        ledger.partition_done("copy-1", "t", f"p{i}", bytes([i]), bytes([i + 1]), 10, 20, 300)
""")


def test_done_partitions_after_a_crash(db_path):
    url = f"sqlite:///{db_path}"
    proc = subprocess.run([sys.executable, "-c", CRASHING_COPY, url, str(REPO)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    with Ledger.open(url) as ledger:  # the dead writer left no lock behind
        assert ledger.done_partitions("copy-1", "t") == {"p0", "p1", "p2"}
        for i in (3, 4):  # the resumed copy does the rest
            ledger.partition_done("copy-1", "t", f"p{i}", bytes([i]), bytes([i + 1]), 10, 20, 300)
        assert ledger.done_partitions("copy-1", "t") == {"p0", "p1", "p2", "p3", "p4"}


def test_concurrent_writers_all_land(db_path):
    """Spark tasks record partitions at the same time, and each opens (and schema-checks) the ledger."""
    url = f"sqlite:///{db_path}"
    with Ledger.open(url) as ledger:
        start(ledger)
    for returncode, err in run_concurrent_copies(url):
        assert returncode == 0, err
    with Ledger.open(url) as ledger:
        assert ledger.done_partitions("copy-1", "t") == {f"w{w}-p{i}" for w in range(4) for i in range(40)}
    assert raw(db_path, "SELECT COUNT(*), SUM(row_count) FROM copy_partitions") == [(160, 4 * sum(range(40)))]
    assert raw(db_path, "SELECT COUNT(*) FROM schema_version") == [(len(schema_migrations(SQL_DIR / "schema")),)]
    assert raw(db_path, "SELECT table_name, started_ms FROM migration_phases ORDER BY table_name") == [
        (f"t{w}", 0) for w in range(4)]


# ---------------------------------------------------------------------------------------------------------
# Samples, verification, peer notes

def test_lag_sample_round_trips_and_derives_recovered(ledger, db_path):
    start(ledger)
    written = ledger.lag_sample("run-1", "mig1", [
        LagRow("rs1,16020,1", "mig1", 2, 1_500, 70),
        {"server": "rs1,16020,1", "queue_id": "mig1-rs2,16020,9", "size_of_log_queue": 4,
         "age_of_last_shipped_op_ms": 90_000, "shipped_ops": 0},
    ], sampled_ms=100)
    ledger.lag_sample("run-1", "mig1", [LagRow("rs1,16020,1", "mig1", 2, 1_500, 70)], sampled_ms=100)  # again
    assert written == 2
    assert raw(db_path, "SELECT * FROM lag_samples ORDER BY queue_id") == [
        ("run-1", "mig1", 100, "rs1,16020,1", "mig1", 0, 2, 1_500, 70),
        ("run-1", "mig1", 100, "rs1,16020,1", "mig1-rs2,16020,9", 1, 4, 90_000, 0),
    ]


@pytest.mark.parametrize(
    "queues, message",
    [
        ([LagRow("rs1", "mig1", 1, 0, 0), LagRow("rs1", "mig1", -1, 0, 0)],
         "queues[1].size_of_log_queue must be a non-negative integer, got -1"),
        ([LagRow("rs1", "mig1", 1, 0, 0), LagRow("rs1", "mig1", 1, 0, 0)],
         "queues lists a (server, queue_id) twice: [('rs1', 'mig1'), ('rs1', 'mig1')]"),
        ([{"server": "rs1", "queue": "mig1"}],
         "queues[0]: LagRow.__init__() got an unexpected keyword argument 'queue'"),
        (["rs1"], "queues[0] must be a LagRow or a mapping of its fields, got 'rs1'"),
        ([LagRow("rs1", "", 1, 0, 0)], "queues[0].queue_id must be a non-empty string, got ''"),
    ],
    ids=["negative", "duplicate", "unknown-field", "not-a-row", "queue_id"],
)
def test_lag_sample_rejects_bad_rows_and_writes_none(ledger, db_path, queues, message):
    start(ledger)
    with pytest.raises(LedgerError) as err:
        ledger.lag_sample("run-1", "mig1", queues, sampled_ms=1)
    assert str(err.value) == message
    assert raw(db_path, "SELECT COUNT(*) FROM lag_samples") == [(0,)]


def test_quota_sample_round_trips_with_unset_quotas_as_null(ledger, db_path):
    start(ledger)
    ledger.quota_sample("run-1", "/hbase/oldWALs", space_consumed=3_000, space_quota=-1, ns_consumed=12,
                        ns_quota=None, sampled_ms=100)
    ledger.quota_sample("run-1", "/hbase", space_consumed=9_000, space_quota=30_000, ns_consumed=40,
                        ns_quota=1_000, growth_bytes_per_s=12.5, projected_exhaustion_ms=1_680_000,
                        sampled_ms=100)
    assert raw(db_path, "SELECT * FROM quota_samples ORDER BY path") == [
        ("run-1", "/hbase", 100, 9_000, 30_000, 40, 1_000, 12.5, 1_680_000),
        ("run-1", "/hbase/oldWALs", 100, 3_000, None, 12, None, None, None),
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"path": "hbase/oldWALs"}, "path must be an absolute HDFS path, got 'hbase/oldWALs'"),
        ({"space_quota": -2}, "space_quota must be a non-negative integer, got -2"),
        ({"growth_bytes_per_s": float("nan")}, "growth_bytes_per_s must be finite or None, got nan"),
        ({"ns_consumed": None}, "ns_consumed must be a non-negative integer, got None"),
    ],
    ids=["path", "quota", "nan", "ns_consumed"],
)
def test_quota_sample_rejects_bad_input(ledger, db_path, change, message):
    start(ledger)
    args = dict(path="/hbase/oldWALs", space_consumed=1, space_quota=None, ns_consumed=1, ns_quota=None)
    args.update(change)
    with pytest.raises(LedgerError) as err:
        ledger.quota_sample("run-1", args.pop("path"), **args)
    assert str(err.value) == message
    assert raw(db_path, "SELECT COUNT(*) FROM quota_samples") == [(0,)]


def verify(ledger, **overrides):
    args = dict(window_start_ms=None, window_end_ms=9_000, source_rows=100, target_rows=99, matching=97,
                content_different=2, only_in_source=1, only_in_target=0, sample_keys=[b"r\x01", b"r\x02"],
                verified_ms=9_500)
    args.update(overrides)
    ledger.verification("run-1", "ns:orders", **args)


def test_verification_round_trips_and_a_repeat_overwrites(ledger, db_path):
    start(ledger)
    verify(ledger)
    assert raw(db_path, "SELECT * FROM verification_results") == [
        ("run-1", "ns:orders", 0, 9_000, 100, 99, 97, 2, 1, 0, '["7201","7202"]', 9_500)]
    verify(ledger, target_rows=100, matching=100, content_different=0, only_in_source=0, sample_keys=[],
           verified_ms=9_900)  # the re-compare after edits in flight landed
    assert raw(db_path, "SELECT matching, sample_keys_json, verified_ms FROM verification_results") == [
        (100, "[]", 9_900)]


def test_a_verification_without_an_end_time_is_kept_as_open_ended(ledger, db_path):
    start(ledger)
    verify(ledger, window_end_ms=None)  # every timestamp compared, future ones included
    assert raw(db_path, "SELECT window_start_ms, window_end_ms FROM verification_results") == [(0, (1 << 63) - 1)]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"window_start_ms": 9_000}, "window_end_ms (9000) must be after window_start_ms (9000)"),
        ({"sample_keys": ["7201"]},
         "sample_keys[0] must be a row key as bytes (b'' for an open end), got '7201'"),
        ({"sample_keys": b"r1"}, "sample_keys must be a list of row keys (bytes), got b'r1'"),
        ({"matching": -3}, "matching must be a non-negative integer, got -3"),
    ],
    ids=["window", "str-key", "bytes-not-list", "matching"],
)
def test_verification_rejects_bad_input(ledger, db_path, change, message):
    start(ledger)
    with pytest.raises(LedgerError) as err:
        verify(ledger, **change)
    assert str(err.value) == message
    assert raw(db_path, "SELECT COUNT(*) FROM verification_results") == [(0,)]


def test_peer_note_validates_and_recent_runs_show_the_last_note(ledger):
    start(ledger)
    with pytest.raises(LedgerError, match="state must be one of ENABLED, DISABLED, REMOVED, got 'disabled'"):
        ledger.peer_note("run-1", "mig1", "disabled", "copy failed")
    with pytest.raises(LedgerError, match="reason must be a non-empty string"):
        ledger.peer_note("run-1", "mig1", "DISABLED", " ")
    ledger.peer_note("run-1", "mig1", "DISABLED", "copy failed: partition p7 kept failing", noted_ms=100)
    ledger.peer_note("run-1", "mig1", "DISABLED", "copy failed: partition p7 kept failing", noted_ms=100)
    [recent] = ledger.recent_runs()
    assert recent["peer_state"] == "DISABLED"
    assert recent["peer_reason"] == "copy failed: partition p7 kept failing"
    ledger.peer_note("run-1", "mig1", "ENABLED", "retry enabled the peer", noted_ms=200)
    [recent] = ledger.recent_runs()
    assert (recent["peer_state"], recent["peer_reason"]) == ("ENABLED", "retry enabled the peer")
    assert len(ledger.run_summary("run-1")["peer"]["notes"]) == 2


# ---------------------------------------------------------------------------------------------------------
# Reading: summary, recent runs, dashboard samples

def test_run_summary_shape_is_exact(ledger):
    start(ledger, copy_id="copy-1")
    ledger.record_t0("run-1", 2_000)
    ledger.set_phase("run-1", ALL_TABLES, "add_peer", "success", "peer mig1 added DISABLED", at_ms=2_000)
    ledger.set_phase("run-1", "ns:items", "copy", "running", at_ms=2_100)
    ledger.set_phase("run-1", "ns:orders", "copy", "running", at_ms=2_100)
    ledger.set_phase("run-1", "ns:orders", "copy", "success", at_ms=4_100)
    ledger.set_phase("run-1", "ns:orders", "preflight", "success", at_ms=1_500)
    ledger.record_sizing("run-1", "ns:orders", {"regions": 3, "store_file_bytes": 1_024}, sized_ms=1_400)
    ledger.record_sizing("run-1", ALL_TABLES, {"projected_copy_s": 90.5}, sized_ms=1_450)
    for i, (table, rows) in enumerate([("ns:orders", 10), ("ns:orders", 30), ("ns:items", 5)]):
        ledger.partition_done("copy-1", table, f"p{i}", b"", b"", rows, 2 * rows, 100 * rows,
                              started_ms=2_200 + i, finished_ms=3_000 + i)
    ledger.partition_done("copy-other", "ns:orders", "p0", b"", b"", 999, 999, 999)  # not this run's copy
    queue = {"server": "rs1,16020,1", "queue_id": "mig1", "size_of_log_queue": 9,
             "age_of_last_shipped_op_ms": 60_000, "shipped_ops": 0}
    recovered = {**queue, "queue_id": "mig1-rs2,16020,7", "size_of_log_queue": 3}
    ledger.lag_sample("run-1", "mig1", [queue, recovered], sampled_ms=5_000)
    # The recovered queue drained and vanished: the latest sample must not show its old backlog.
    ledger.lag_sample("run-1", "mig1", [{**queue, "size_of_log_queue": 1, "age_of_last_shipped_op_ms": 0,
                                         "shipped_ops": 500}], sampled_ms=6_000)
    for at, used in ((5_000, 1_000), (6_000, 1_600)):
        ledger.quota_sample("run-1", "/hbase/oldWALs", space_consumed=used, space_quota=None, ns_consumed=4,
                            ns_quota=None, sampled_ms=at)
    ledger.quota_sample("run-1", "/hbase", space_consumed=8_000, space_quota=20_000, ns_consumed=50,
                        ns_quota=None, growth_bytes_per_s=600.0, projected_exhaustion_ms=26_000,
                        sampled_ms=6_000)
    verify(ledger)
    verify(ledger, window_start_ms=9_000, window_end_ms=12_000, source_rows=5, target_rows=5, matching=5,
           content_different=0, only_in_source=0, sample_keys=[], verified_ms=12_500)
    ledger.peer_note("run-1", "mig1", "ENABLED", "caught up", noted_ms=7_000)
    ledger.end_run("run-1", "success", ended_ms=13_000)

    summary = ledger.run_summary("run-1")
    assert json.loads(json.dumps(summary)) == summary
    assert list(summary["phases"]) == ["ns:orders", "ns:items", "*"]
    assert list(summary["phases"]["ns:orders"]) == ["preflight", "copy"]
    assert summary == {
        "run": {
            "run_id": "run-1", "dag_id": "migrate_orders", "plan": "orders",
            "source_key": "zk1,zk2:2181:/hbase", "target_key": "zkb:2181:/hbase", "peer_id": "mig1",
            "copy_id": "copy-1", "tables": ["ns:orders", "ns:items"],
            "params": {"families": ["d"], "throttle": 500}, "status": "success",
            "started_ms": 1_000, "ended_ms": 13_000, "duration_ms": 12_000, "t0_ms": 2_000,
        },
        "phases": {
            "ns:orders": {
                "preflight": {"status": "success", "started_ms": None, "ended_ms": 1_500, "duration_ms": None,
                              "detail": None},
                "copy": {"status": "success", "started_ms": 2_100, "ended_ms": 4_100, "duration_ms": 2_000,
                         "detail": None},
            },
            "ns:items": {"copy": {"status": "running", "started_ms": 2_100, "ended_ms": None,
                                  "duration_ms": None, "detail": None}},
            "*": {"add_peer": {"status": "success", "started_ms": None, "ended_ms": 2_000,
                               "duration_ms": None, "detail": "peer mig1 added DISABLED"}},
        },
        "copy": {
            "copy_id": "copy-1",
            "tables": {
                "ns:items": {"partitions": 1, "rows": 5, "cells": 10, "bytes": 500, "started_ms": 2_202,
                             "finished_ms": 3_002},
                "ns:orders": {"partitions": 2, "rows": 40, "cells": 80, "bytes": 4_000, "started_ms": 2_200,
                              "finished_ms": 3_001},
            },
            "total": {"partitions": 3, "rows": 45, "cells": 90, "bytes": 4_500},
        },
        "verification": {"ns:orders": [
            {"window_start_ms": 0, "window_end_ms": 9_000, "source_rows": 100, "target_rows": 99,
             "matching": 97, "content_different": 2, "only_in_source": 1, "only_in_target": 0,
             "verified_ms": 9_500, "sample_keys": ["7201", "7202"], "clean": False},
            {"window_start_ms": 9_000, "window_end_ms": 12_000, "source_rows": 5, "target_rows": 5,
             "matching": 5, "content_different": 0, "only_in_source": 0, "only_in_target": 0,
             "verified_ms": 12_500, "sample_keys": [], "clean": True},
        ]},
        "lag": {
            "samples": 2, "max_age_of_last_shipped_op_ms": 60_000, "max_size_of_log_queue": 9,
            "latest": {"sampled_ms": 6_000, "queues": [
                {"peer_id": "mig1", "server": "rs1,16020,1", "queue_id": "mig1", "recovered": False,
                 "size_of_log_queue": 1, "age_of_last_shipped_op_ms": 0, "shipped_ops": 500},
            ]},
        },
        "quota": {"samples": 3, "latest": [
            {"path": "/hbase", "sampled_ms": 6_000, "space_consumed": 8_000, "space_quota": 20_000,
             "ns_consumed": 50, "ns_quota": None, "growth_bytes_per_s": 600.0,
             "projected_exhaustion_ms": 26_000},
            {"path": "/hbase/oldWALs", "sampled_ms": 6_000, "space_consumed": 1_600, "space_quota": None,
             "ns_consumed": 4, "ns_quota": None, "growth_bytes_per_s": None, "projected_exhaustion_ms": None},
        ], "watch": []},
        "peer": {"state": "ENABLED", "notes": [
            {"peer_id": "mig1", "noted_ms": 7_000, "state": "ENABLED", "reason": "caught up"}]},
        "sizing": {"*": {"sized_ms": 1_450, "figures": {"projected_copy_s": 90.5}},
                   "ns:orders": {"sized_ms": 1_400, "figures": {"regions": 3, "store_file_bytes": 1_024}}},
        "batches": [],
    }


def test_run_summary_of_a_fresh_run(ledger):
    run = start(ledger)
    assert ledger.run_summary("run-1") == {
        "run": run, "phases": {},
        "copy": {"copy_id": "run-1", "tables": {},
                 "total": {"partitions": 0, "rows": 0, "cells": 0, "bytes": 0}},
        "verification": {},
        "lag": {"samples": 0, "max_age_of_last_shipped_op_ms": None, "max_size_of_log_queue": None,
                "latest": None},
        "quota": {"samples": 0, "latest": [], "watch": []},
        "peer": {"state": None, "notes": []},
        "sizing": {}, "batches": [],
    }
    with pytest.raises(LedgerError, match="run_id 'run-9' is not in the ledger"):
        ledger.run_summary("run-9")


def test_recent_runs_newest_first_with_limit(ledger):
    for i, started in enumerate([300, 100, 200]):
        start(ledger, f"run-{i}", started_ms=started)
    assert [r["run_id"] for r in ledger.recent_runs()] == ["run-0", "run-2", "run-1"]
    assert [r["run_id"] for r in ledger.recent_runs(2)] == ["run-0", "run-2"]
    assert ledger.recent_runs(1)[0]["peer_state"] is None
    with pytest.raises(LedgerError, match="limit must be a positive integer, got 0"):
        ledger.recent_runs(0)


def test_latest_samples_newest_first_with_limit(ledger):
    start(ledger)
    for at in (100, 200, 300):
        queues = [LagRow("rs2", "mig1", 1, at, at), LagRow("rs1", "mig1", 1, at, at)]
        ledger.lag_sample("run-1", "mig1", queues, sampled_ms=at)
        ledger.quota_sample("run-1", "/hbase/oldWALs", space_consumed=at, space_quota=None, ns_consumed=1,
                            ns_quota=None, sampled_ms=at)
    samples = ledger.latest_samples("run-1", limit=3)
    assert [(r["sampled_ms"], r["server"]) for r in samples["lag"]] == [
        (300, "rs1"), (300, "rs2"), (200, "rs1")]
    assert samples["lag"][0] == {"peer_id": "mig1", "sampled_ms": 300, "server": "rs1", "queue_id": "mig1",
                                 "recovered": False, "size_of_log_queue": 1, "age_of_last_shipped_op_ms": 300,
                                 "shipped_ops": 300}
    assert [r["space_consumed"] for r in samples["quota"]] == [300, 200, 100]
    with pytest.raises(LedgerError, match="limit must be a positive integer, got -1"):
        ledger.latest_samples("run-1", limit=-1)


# ---------------------------------------------------------------------------------------------------------
# The copy's load throttle


def test_throttle_decisions_are_kept_per_copy_in_order_and_upserted(ledger, db_path):
    ledger.throttle_decision("copy-1", "t", "slow", 0.5, "past max_load: queueSize=9 on rs1 >= 5",
                             {"queueSize": {"value": 9.0, "server": "rs1"}}, decided_ms=2000)
    ledger.throttle_decision("copy-1", "t", "full", 1.0, "under max_load", {}, decided_ms=1000)
    ledger.throttle_decision("copy-2", "t", "paused", 0.0, "past critical_load", {}, decided_ms=1500)
    ledger.throttle_decision("copy-1", "t", "paused", 0.0, "past critical_load: queueSize=90 on rs1 >= 50",
                             {"queueSize": {"value": 90.0, "server": "rs1"}}, decided_ms=2000)  # same instant
    assert ledger.throttle_decisions("copy-1") == [
        {"copy_id": "copy-1", "table_name": "t", "decided_ms": 1000, "state": "full", "factor": 1.0,
         "reason": "under max_load", "load": {}},
        {"copy_id": "copy-1", "table_name": "t", "decided_ms": 2000, "state": "paused", "factor": 0.0,
         "reason": "past critical_load: queueSize=90 on rs1 >= 50",
         "load": {"queueSize": {"value": 90.0, "server": "rs1"}}},
    ]
    assert ledger.throttle_decisions("copy-3") == []


@pytest.mark.parametrize("kwargs, message", [
    (dict(state="fast"), "state must be one of full, slow, paused, aborted, got 'fast'"),
    (dict(factor=1.5), "factor must be a number within 0..1, got 1.5"),
    (dict(reason=""), "reason must be a non-empty string, got ''"),
    (dict(load={"x": object()}), "load must be JSON-serialisable"),
])
def test_throttle_decision_rejects_bad_input(ledger, db_path, kwargs, message):
    args = dict(copy_id="copy-1", table="t", state="slow", factor=0.5, reason="r", load={}, decided_ms=1)
    with pytest.raises(LedgerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ledger.throttle_decision(**{**args, **kwargs})
    assert raw(db_path, "SELECT COUNT(*) FROM throttle_decisions") == [(0,)]


def test_a_schema_3_ledger_is_migrated_and_its_finished_partitions_still_resume(db_path, tmp_path):
    """A ledger written by the release before ranges were kept (schema 3): opening it applies 004 and 005 in
    place, its copy rows stay, and a resume still recognises them (by id, as they carry no fingerprint)."""
    from hbase_migration.data.partitions import partition_id
    from hbase_migration.data.resume import FinishedRange, relevant
    from hbase_migration.data.scope import TableScope

    old_sql = tmp_path / "old-sql"
    (old_sql / "schema").mkdir(parents=True)
    (old_sql / "queries.sql").write_text((SQL_DIR / "queries.sql").read_text())
    for name in ("001_initial.sql", "002_copy_plans.sql", "003_throttle_and_cutover.sql"):
        (old_sql / "schema" / name).write_text((SQL_DIR / "schema" / name).read_text())
    with Ledger.open(f"sqlite:///{db_path}", sql_dir=old_sql) as old:
        assert old.apply_schema(old_sql / "schema") == 3
    fp = TableScope(table="t").fingerprint()
    pid = partition_id("t", b"", b"m", fp)
    with sqlite3.connect(db_path) as conn:  # what the old release wrote: no scope_fingerprint column
        conn.execute("INSERT INTO copy_partitions VALUES ('copy-1', 't', ?, '', '6d', 5, 5, 50, 1, 2, 1)", (pid,))
    with Ledger.open(f"sqlite:///{db_path}") as migrated:
        ranges = migrated.finished_ranges("copy-1", "t")
    versions = raw(db_path, "SELECT version, name FROM schema_version ORDER BY version")
    assert versions[-1] == (9, "batches")
    assert ranges == [{"partition_id": pid, "start_row": b"", "stop_row": b"m", "fingerprint": None, "rows": 5,
                       "finished_ms": 2}]
    finished = [FinishedRange(r["partition_id"], r["start_row"], r["stop_row"], r["fingerprint"]) for r in ranges]
    assert relevant(finished, "t", fp) == finished


def test_a_jobs_summary_is_kept_under_its_key_and_taken_once(ledger):
    """A Spark driver (anywhere: YARN cluster mode) keeps its summary; the submitting task takes it."""
    assert ledger.take_job_summary("copy/t/run/1/abc") is None
    ledger.put_job_summary("copy/t/run/1/abc", "copy", '{"rows": 1}', written_ms=5)
    ledger.put_job_summary("copy/t/run/1/abc", "copy", '{"rows": 2, "spark": {"application_id": "application_1_0001"}}')
    ledger.put_job_summary("verify/t/run/1/def", "verify", '{"identical": true}')
    assert ledger.take_job_summary("copy/t/run/1/abc") == {"rows": 2, "spark": {"application_id": "application_1_0001"}}
    assert ledger.take_job_summary("copy/t/run/1/abc") is None
    assert ledger.take_job_summary("verify/t/run/1/def") == {"identical": True}
    with pytest.raises(LedgerError, match="summary must be a JSON text"):
        ledger.put_job_summary("k", "copy", "not json")
    with pytest.raises(LedgerError, match="summary_key must be a non-empty string"):
        ledger.put_job_summary("", "copy", "{}")


def test_the_oldwals_watch_lease_is_one_holders_at_a_time(ledger):
    """One watchdog per run and cluster reads (hbase_migration/migration/quota.py): the lease is taken when free,
    renewed by its holder, refused to another until it expires or is given up; only the holder records."""
    assert ledger.watch_take("run-1", "zk:2181:/hbase", "a", 30, now=1000) == (True, {
        "run_id": "run-1", "cluster_key": "zk:2181:/hbase", "owner": "a", "expires_ms": 31000, "plan": None,
        "reading": None, "read_ms": None, "readings": 0, "namenode_calls": 0, "updated_ms": 1000})
    held, row = ledger.watch_take("run-1", "zk:2181:/hbase", "b", 30, now=2000)
    assert not held and row["owner"] == "a"
    assert ledger.watch_reading("run-1", "zk:2181:/hbase", "a", {"bearing": ["/hbase"]}, {"taken_at": 2.5}, 2500, 3)
    assert not ledger.watch_reading("run-1", "zk:2181:/hbase", "b", {}, {}, 2600, 1)  # not b's: nothing written
    assert ledger.watch_take("run-1", "zk:2181:/hbase", "a", 30, now=3000)[0]  # renewed
    held, row = ledger.watch_take("run-1", "zk:2181:/hbase", "b", 30, now=33001)  # expired: b takes over
    assert held and (row["plan"], row["reading"], row["readings"], row["namenode_calls"]) == (
        {"bearing": ["/hbase"]}, {"taken_at": 2.5}, 1, 3)
    ledger.watch_release("run-1", "zk:2181:/hbase", "b")
    assert ledger.watch_take("run-1", "zk:2181:/hbase", "c", 30, now=33002)[0]  # given up: free at once
    assert ledger.watch_take("run-1", "other:2181:/hbase", "d", 30, now=33003)[0]  # another cluster: its own
    assert [w["cluster_key"] for w in ledger.watches("run-1")] == ["other:2181:/hbase", "zk:2181:/hbase"]


def test_a_runs_batches_are_planned_once_and_take_numbered_slots(ledger):
    start(ledger)
    plan = [{"index": 0, "batch": "b1", "peer_id": "mig1_b1", "tables": ["ns:orders"], "bytes": 10},
            {"index": 1, "batch": "b2", "peer_id": "mig1_b2", "tables": ["ns:items"], "bytes": 0}]
    kept = ledger.record_batches("run-1", plan, planned_ms=5)
    assert [(b["batch"], b["peer_id"], b["tables"], b["slot"]) for b in kept] == [
        ("b1", "mig1_b1", ["ns:orders"], None), ("b2", "mig1_b2", ["ns:items"], None)]
    assert ledger.record_batches("run-1", [{**plan[0], "peer_id": "other"}]) == kept  # the first plan stands
    assert ledger.take_batch_slot("run-1", "b1", 1, at_ms=6) == 0
    assert ledger.take_batch_slot("run-1", "b1", 1) == 0  # already its own: the same slot
    assert ledger.take_batch_slot("run-1", "b2", 1) is None  # one at once: b2 waits
    ledger.release_batch_slot("run-1", "b1")
    assert ledger.take_batch_slot("run-1", "b2", 1) == 0
    ledger.batch_t0("run-1", "b2", 900)
    ledger.batch_t0("run-1", "b2", 950)  # the earliest stands
    assert [(b["batch"], b["slot"], b["t0_ms"]) for b in ledger.run_batches("run-1")] == [
        ("b1", None, None), ("b2", 0, 900)]
    with pytest.raises(LedgerError, match="limit must be"):
        ledger.take_batch_slot("run-1", "b1", 0)
