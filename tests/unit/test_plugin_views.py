"""The plugin's pure parts, exactly: the ledger URL, the dashboard's figures and verdicts."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from hbase_migration.ledger import store as ledger_module
from hbase_migration.ledger.store import ALL_TABLES
from hbase_migration.plugins.hbase_migration_plugin import dashboard_href
from hbase_migration.plugins.hbase_migration_ui import formatting, views
from hbase_migration.plugins.hbase_migration_ui.settings import (
    DEFAULT_URL,
    ENV_VAR,
    LedgerUrlError,
    connection_url,
    resolve_ledger_url,
)

T = 1_714_564_800_000  # 2024-05-01 12:00:00 UTC


# ---------------------------------------------------------------------------------------------------------
# Ledger URL

def test_default_url_is_the_ledgers_and_anchored_at_airflow_home(tmp_path):
    assert DEFAULT_URL == ledger_module.DEFAULT_URL
    loc = resolve_ledger_url(None, None, tmp_path)
    assert loc.url == f"sqlite:///{tmp_path}/.state/ledger.db"
    assert loc.sqlite_file == tmp_path / ".state" / "ledger.db"
    assert loc.source == "default"


def test_airflow_option_wins_over_env_and_env_over_default(tmp_path):
    assert resolve_ledger_url("sqlite:///a.db", "sqlite:///b.db", tmp_path).url == f"sqlite:///{tmp_path}/a.db"
    assert resolve_ledger_url("sqlite:///a.db", None, tmp_path).source == "[hbase_migration] ledger_url"
    loc = resolve_ledger_url("  ", "sqlite:////srv/ledger.db", tmp_path)  # a blank option counts as unset
    assert (loc.url, loc.source) == ("sqlite:////srv/ledger.db", ENV_VAR)
    assert loc.sqlite_file == Path("/srv/ledger.db")


def test_server_url_keeps_its_password_for_use_and_masks_it_for_show(tmp_path):
    loc = resolve_ledger_url("postgresql://mig:s3cret@db.example.com:5432/ledger", None, tmp_path)
    assert loc.url == "postgresql://mig:s3cret@db.example.com:5432/ledger"
    assert loc.shown == "postgresql://mig:***@db.example.com:5432/ledger"
    assert loc.sqlite_file is None


def test_ledger_url_cmd_is_read_after_the_option_and_before_the_variable(tmp_path):
    secret = tmp_path / "ledger_url"  # as a deployment keeps it: a file only Airflow's user reads
    secret.write_text("postgresql://mig:s3cret@db.example.com/ledger\n")
    loc = resolve_ledger_url(None, "sqlite:///b.db", tmp_path, option_cmd=f"cat {secret}")
    assert (loc.url, loc.shown, loc.source) == ("postgresql://mig:s3cret@db.example.com/ledger",
                                                "postgresql://mig:***@db.example.com/ledger",
                                                "[hbase_migration] ledger_url_cmd")
    ran = tmp_path / "ran"  # the option set: it wins, and the command is not run
    loc = resolve_ledger_url("sqlite:///a.db", None, tmp_path, option_cmd=f"touch {ran}")
    assert loc.source == "[hbase_migration] ledger_url" and not ran.exists()


def test_a_ledger_url_cmd_that_fails_is_refused_without_echoing_its_output(tmp_path):
    with pytest.raises(LedgerUrlError, match=r"^\[hbase_migration\] ledger_url_cmd exited with 3: no file") as e:
        resolve_ledger_url(None, None, tmp_path,
                           option_cmd="sh -c 'echo postgresql://u:hunter2@h/db; echo no file >&2; exit 3'")
    assert "hunter2" not in str(e.value)
    with pytest.raises(LedgerUrlError, match=r"ledger_url_cmd could not run \(FileNotFoundError\): fix the command"):
        resolve_ledger_url(None, None, tmp_path, option_cmd="/nonexistent/print-ledger-url")


@pytest.mark.parametrize("option, message", [
    ("not a url", r"ledger url from \[hbase_migration\] ledger_url is not a SQLAlchemy URL"),
    ("sqlite://", "must name a SQLite database file, got ''"),
    ("sqlite:///:memory:", "must name a SQLite database file, got ':memory:'"),
])
def test_unusable_urls_are_refused_naming_their_source(tmp_path, option, message):
    with pytest.raises(LedgerUrlError, match=message):
        resolve_ledger_url(option, None, tmp_path)


def conn(conn_type, host=None, port=None, login=None, password=None, schema=None, extra=None):
    return SimpleNamespace(conn_type=conn_type, host=host, port=port, login=login, password=password,
                           schema=schema, extra_dejson=extra or {})


@pytest.mark.parametrize("connection, url", [
    (conn("postgres", "db.example.com", 5432, "mig", "s3cret", "ledger"),
     "postgresql://mig:s3cret@db.example.com:5432/ledger"),
    (conn("postgres", "db", None, "mig", "p@ss/word", "ledger", {"sqlalchemy_scheme": "postgresql+psycopg2"}),
     "postgresql+psycopg2://mig:p%40ss%2Fword@db/ledger"),
    (conn("postgres", "db", 5432, "mig", None, "ledger", {"sslmode": "verify-full", "cursor": "dictcursor",
                                                         "sslrootcert": "/etc/ssl/ca.pem"}),
     "postgresql://mig@db:5432/ledger?sslmode=verify-full&sslrootcert=%2Fetc%2Fssl%2Fca.pem"),
    (conn("mysql", "db", 3306, "mig", None, "ledger"), "mysql://mig@db:3306/ledger"),
    (conn("sqlite", "/srv/ledger.db"), "sqlite:////srv/ledger.db"),
])
def test_a_ledger_connection_becomes_a_sqlalchemy_url(connection, url):
    assert connection_url("ledger_db", connection) == url


def test_a_ledger_connection_wins_and_is_named_with_its_password_masked(tmp_path):
    url = connection_url("ledger_db", conn("postgres", "db", 5432, "mig", "s3cret", "ledger"))
    loc = resolve_ledger_url("sqlite:///a.db", "sqlite:///b.db", tmp_path, ("ledger_db", url))
    assert loc.url == "postgresql://mig:s3cret@db:5432/ledger"
    assert loc.shown == "postgresql://mig:***@db:5432/ledger"
    assert loc.source == "[hbase_migration] ledger_conn_id (connection ledger_db)"


def test_a_ledger_connection_of_another_type_is_refused_by_name():
    with pytest.raises(LedgerUrlError, match="ledger connection 'ledger_db' has type 'http'; use one of mysql"):
        connection_url("ledger_db", conn("http", "db"))


def test_tasks_and_dashboard_open_the_ledger_named_by_ledger_conn_id(tmp_path, monkeypatch):
    from hbase_migration.operators.ledger import ledger_url
    from hbase_migration.plugins.hbase_migration_ui.settings import configured_ledger_location

    db = tmp_path / "via-connection.db"
    monkeypatch.setenv("AIRFLOW_CONN_LEDGER_DB", json.dumps({"conn_type": "sqlite", "host": str(db)}))
    monkeypatch.setenv("AIRFLOW__HBASE_MIGRATION__LEDGER_CONN_ID", "ledger_db")
    assert ledger_url() == f"sqlite:///{db}"
    assert configured_ledger_location().url == f"sqlite:///{db}"


def test_a_url_that_does_not_parse_is_not_echoed(tmp_path):
    with pytest.raises(LedgerUrlError) as info:
        resolve_ledger_url("postgres ql://u:hunter2@h/db", None, tmp_path)
    assert "hunter2" not in str(info.value)


# ---------------------------------------------------------------------------------------------------------
# Formatting

def test_formatting_exact():
    assert formatting.instant(T) == "2024-05-01 12:00:00 UTC"
    assert formatting.instant(None) == "\u2014"
    assert formatting.window_end(T) == "2024-05-01 12:00:00 UTC"
    assert formatting.window_end((1 << 63) - 1) == "no end (every timestamp)"  # verified without an end time
    assert [formatting.duration(v) for v in (0, 850, 1000, 95_000, 3_725_000, -2000, None)] == [
        "0 ms", "850 ms", "1s", "1m35s", "1h02m05s", "-2s", "\u2014"]
    assert formatting.count(1_234_567) == "1,234,567"
    assert formatting.size(1536) == "1.5 KiB"
    assert formatting.size(824_633_720_832) == "768.0 GiB"
    assert formatting.rate(1_572_864.0) == "1.5 MiB/s"
    assert formatting.percent(45, 60) == "75.0%"
    assert formatting.percent(45, None) == formatting.percent(45, 0) == "\u2014"
    assert formatting.relative(T + 7_200_000, T) == "in 2h00m00s"
    assert formatting.relative(T - 180_000, T) == "3m00s ago"
    rates = [formatting.per_second(v) for v in (12_345.6, 100, 0.333, None)]
    assert rates == ["12,346", "100", "0.3", "\u2014"]


def test_row_key_prints_like_hbase_to_string_binary():
    assert formatting.row_key("003c7363726970743eff") == "\\x00<script>\\xFF"
    assert formatting.row_key("5c41") == "\\x5CA"  # a backslash is escaped too, as Bytes.toStringBinary does
    assert formatting.row_key("") == ""


# ---------------------------------------------------------------------------------------------------------
# Verdicts and the peer

RUN = {"run_id": "r", "peer_id": "mig1", "tables": ["ns:a", "ns:b"], "status": "success", "t0_ms": T}


def window(different=0, source=0, target=0):
    return {"content_different": different, "only_in_source": source, "only_in_target": target,
            "clean": different + source + target == 0}


def test_verdict_branches():
    assert views.verdict(RUN, {}) == views.Verdict("none", "not verified")
    assert views.verdict(RUN, {"ns:a": [window()]}) == views.Verdict(
        "warn", "1 of 2 tables verified, clean so far")
    assert views.verdict(RUN, {"ns:a": [window()], "ns:b": [window(), window()]}) == views.Verdict(
        "ok", "clean")
    assert views.verdict(RUN, {"ns:a": [window()], "ns:b": [window(), window(1, 2, 1000)]}) == views.Verdict(
        "bad", "1,003 rows differ in 1 table")
    two = views.verdict(RUN, {"ns:a": [window(0, 1)], "ns:b": [window(0, 0, 1)]})
    assert two == views.Verdict("bad", "2 rows differ in 2 tables")


def test_peer_alert_only_for_a_disabled_peer():
    assert views.peer_alert(RUN, None, None) is None
    assert views.peer_alert(RUN, "ENABLED", "enabled after the copy") is None
    assert views.peer_alert({**RUN, "status": "failed"}, "REMOVED", "cut over") is None


def test_peer_alert_during_the_copy_is_a_warning():
    alert = views.peer_alert({**RUN, "status": "running"}, "DISABLED", "added disabled")
    assert alert.level == "warn"
    assert alert.title == "Peer mig1 is DISABLED while the run copies, as planned"


def test_peer_left_disabled_by_a_failed_run_says_what_to_do():
    alert = views.peer_alert({**RUN, "status": "failed"}, "DISABLED", "copy failed: region server down")
    assert alert.level == "bad"
    assert alert.title == "Peer mig1 was left DISABLED by a failed run"
    assert alert.lines[0] == "Reason noted: copy failed: region server down"
    assert "since T0 (2024-05-01 12:00:00 UTC)" in alert.lines[1]
    assert "clear the failed tasks of this DAG run" in alert.lines[2]
    assert "remove_peer 'mig1' in the source cluster's hbase shell" in alert.lines[3]
    assert views.peer_alert(RUN, "DISABLED", None).title == "Peer mig1 was left DISABLED by its run"
    assert views.peer_alert(RUN, "DISABLED", None).lines[0] == "Reason noted: none recorded"


def test_run_href_keeps_any_run_id_one_segment():
    assert views.run_href("manual__2024-05-01T12:00:00+00:00") == (
        "runs/manual__2024-05-01T12%3A00%3A00%2B00%3A00")
    assert views.run_href("a/b c") == "runs/a%2Fb%20c"


# ---------------------------------------------------------------------------------------------------------
# Run page parts

def phase(status, started=None, ended=None, detail=None):
    both = started is not None and ended is not None
    return {"status": status, "started_ms": started, "ended_ms": ended,
            "duration_ms": ended - started if both else None, "detail": detail}


def test_phase_grid_columns_in_migration_order_and_failures_apart():
    grid = views.phase_grid({
        "ns:a": {"preflight": phase("success", T, T + 5),
                 "copy": phase("failed", T + 10, T + 99, "scan failed")},
        "ns:b": {"preflight": phase("success", T, T + 7)},
        ALL_TABLES: {"add_peer": phase("success", None, T + 9)},
    })
    assert grid.columns == ["preflight", "add_peer", "copy"]
    assert [label for label, _ in grid.rows] == ["ns:a", "ns:b", "all tables"]
    a_cells = grid.rows[0][1]
    assert [c.status if c else None for c in a_cells] == ["success", None, "failed"]
    assert a_cells[2].duration_ms == 89 and a_cells[2].level == "bad"
    assert grid.rows[1][1][1:] == [None, None]
    assert grid.failures == [("ns:a", "copy", "scan failed")]


def test_copy_rows_rates():
    rows = views.copy_rows({"tables": {
        "ns:a": {"partitions": 3, "rows": 1_200, "cells": 2_400, "bytes": 9_000, "started_ms": T,
                 "finished_ms": T + 4_000},
        "ns:b": {"partitions": 1, "rows": 5, "cells": 5, "bytes": 10, "started_ms": None, "finished_ms": T},
    }})
    assert rows[0] == views.CopyRow("ns:a", 3, 1_200, 2_400, 9_000, 4_000, 300.0)
    assert (rows[1].duration_ms, rows[1].rows_per_s) == (None, None)


def lag(at, server, queue, size, age, recovered=False):
    return {"peer_id": "mig1", "sampled_ms": at, "server": server, "queue_id": queue, "recovered": recovered,
            "size_of_log_queue": size, "age_of_last_shipped_op_ms": age, "shipped_ops": 1}


def test_lag_history_folds_queues_per_sample_newest_first():
    points = views.lag_history([
        lag(T + 2, "rs1", "mig1", 0, 10), lag(T + 2, "rs2", "mig1", 1, 40),
        lag(T + 1, "rs1", "mig1", 5, 9_000), lag(T + 1, "rs2", "mig1", 2, 100),
        lag(T + 1, "rs2", "mig1-rs3,1,1", 7, 50, recovered=True),
    ])
    assert points == [views.LagPoint(T + 2, 2, 0, 1, 40), views.LagPoint(T + 1, 3, 1, 14, 9_000)]


def quota(space, space_quota, ns=1, ns_quota=None, exhaustion=None):
    return {"path": "/hbase/oldWALs", "sampled_ms": T, "space_consumed": space, "space_quota": space_quota,
            "ns_consumed": ns, "ns_quota": ns_quota, "growth_bytes_per_s": None,
            "projected_exhaustion_ms": exhaustion}


@pytest.mark.parametrize("sample, level", [
    (quota(10, None), "none"),
    (quota(10, 100), "ok"),
    (quota(75, 100), "warn"),
    (quota(90, 100), "bad"),
    (quota(10, 100, ns=95, ns_quota=100), "bad"),  # the fuller of the two quotas decides
    (quota(10, 100, exhaustion=T + 6 * 3600 * 1000), "warn"),
    (quota(10, 100, exhaustion=T + 6 * 3600 * 1000 + 1), "ok"),
])
def test_quota_levels(sample, level):
    assert views.quota_row(sample, now_ms=T).level == level


def test_verification_rows_list_every_window_and_unverified_tables():
    verification = {
        "ns:b": [{**window(), "sample_keys": []},
                 {**window(1, 0, 1), "sample_keys": ["003c7363726970743eff", "6b"]}],
        "ns:extra": [{**window(), "sample_keys": []}],
    }
    rows = views.verification_rows(RUN, verification)
    assert [(r.table, r.level, r.differing) for r in rows] == [
        ("ns:a", "none", 0), ("ns:b", "ok", 0), ("ns:b", "bad", 2), ("ns:extra", "ok", 0)]
    assert rows[2].sample_keys == [("003c7363726970743eff", "\\x00<script>\\xFF"), ("6b", "k")]


@pytest.mark.parametrize("base_url, href", [
    (None, "/hbase-migration/"),
    ("", "/hbase-migration/"),
    ("http://localhost:8080", "/hbase-migration/"),
    ("http://localhost:8080/", "/hbase-migration/"),
    ("https://airflow.example.com/airflow/", "/airflow/hbase-migration/"),
    ("https://example.com/a/b", "/a/b/hbase-migration/"),
])
def test_dashboard_href_follows_the_api_base_url_path(base_url, href):
    assert dashboard_href(base_url) == href
