"""The run ledger: every migration run's figures, kept in SQL.

Operators read it after a run, a resumed copy reads its finished partitions from it, and the Airflow
dashboard plugin shows it. The SQL lives in `sql/` (schema migrations in `sql/schema/NNN_name.sql`, named
statements in `sql/queries.sql`), is portable between SQLite (the default) and PostgreSQL, and runs through
SQLAlchemy Core `text()`. Each public method is one transaction; writes a task may repeat are upserts on
natural keys, so a re-run leaves the same rows. Instants are epoch milliseconds passed by the caller
(`time.time()` is only the default at this boundary). HBase row keys are bytes: they are stored as lower-case
hex text, '' standing for an open end. Nothing here imports Airflow.

A `Ledger` holds a connection pool and cannot be pickled: a Spark executor opens its own from the URL.
"""
from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

log = logging.getLogger(__name__)



def _sql_dir() -> Any:
    """The ledger's SQL, `hbase_migration.sql`: beside the package in an installed distribution (package data),
    the checkout's top-level `sql/` (an editable install maps it there), or inside the zip the Spark jobs ship
    (`hbase_migration.data.executors.package_zip`), read with `zipfile.Path`: a driver in a YARN container (cluster
    mode) opens the ledger with no checkout and no installed package on its host. Found by path, not imported:
    the folder holds no module."""
    package = Path(__file__).resolve().parents[1]
    for here in (package / "sql", package.parent / "sql"):
        if here.is_dir():
            return here
    archive = getattr(globals().get("__loader__"), "archive", None)  # zipimport's loader names its zip
    if archive:
        import zipfile

        return zipfile.Path(archive, "hbase_migration/sql/")
    return package / "sql"


SQL_DIR = _sql_dir()
DEFAULT_URL = "sqlite:///.state/ledger.db"
SQLITE_BUSY_TIMEOUT_S = 30.0  # Spark tasks write partitions concurrently; SQLite serialises writers

PHASES = ("preflight", "create_tables", "add_peer", "copy", "enable_peer", "catch_up", "metadata", "verify", "report",
          # cut-over and rollback runs (hbase_cutover, hbase_rollback)
          "check", "freeze", "final_drain", "reverse_peer", "approval", "remove_peer", "unfreeze",
          # the cut-over's window (hbase_migration/migration/cutover_window.py) and the verification after the switch
          "window", "lag_gate", "live_pass", "bounded_check", "switch", "post_verify",
          # the rollback's own (its forward peer re-created; a READONLY source unfrozen before its window), and
          # the side the clients moved to given WRITE back after a switch (an ACL fence left by the run before)
          "forward_peer", "unfreeze_source", "lift_fence")
THROTTLE_STATES = ("full", "slow", "paused", "aborted")
PHASE_STATUSES = ("pending", "running", "success", "failed", "skipped")
RUN_END_STATUSES = ("success", "failed")
PEER_STATES = ("ENABLED", "DISABLED", "REMOVED")
COPY_FIGURES = ("partitions", "rows", "cells", "bytes")
INITIAL_COPY_METHODS = ("scan", "snapshot")
SNAPSHOT_EXPORT_STATES = ("started", "snapshot_taken", "manifest_copied", "files_copied", "published", "cloned",
                          "cleaned", "failed")
NO_PEER = "-"  # peer id of a run that touches no peer (backfill, watch): never a valid peer id
OPEN_END_MS = (1 << 63) - 1  # a verification window without an end (HBase's LATEST_TIMESTAMP)
ALL_TABLES = "*"  # table name of a phase that covers every table of the run (add_peer, catch_up)


class LedgerError(ValueError):
    """Bad input to the ledger, or a ledger the toolkit cannot use; the message names the field or value."""


def now_ms() -> int:
    return int(time.time() * 1000)


def is_transient(exc: BaseException) -> bool:
    """Whether a database error is one a retry can outlive: the server is restarting or failing over (a lost or
    refused connection), or SQLite's file is busy. Statement errors (a missing table, a constraint) are not."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    module = type(orig).__module__ or ""
    if module.startswith("psycopg"):  # psycopg.OperationalError / InterfaceError: the connection, not the SQL
        return type(orig).__name__ in ("OperationalError", "InterfaceError")
    if module == "sqlite3":
        return "database is locked" in str(orig) or "database is busy" in str(orig)
    return False


# ---------------------------------------------------------------------------------------------------------
# SQL files (pure)

def strip_comments(sql: str) -> str:
    """`sql` without `--` comments; quoted text is kept as is (a `--` or `;` inside quotes is not syntax)."""
    out, i, quoted = [], 0, False
    while i < len(sql):
        ch = sql[i]
        if ch == "'":
            quoted = not quoted  # '' (an escaped quote) toggles twice: still correct
        elif not quoted and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def split_statements(sql: str) -> list[str]:
    """The statements of a script, comments removed, split on `;` outside quotes, blanks dropped."""
    statements, current, quoted = [], [], False
    for ch in strip_comments(sql):
        if ch == "'":
            quoted = not quoted
        if ch == ";" and not quoted:
            statements.append("".join(current))
            current = []
        else:
            current.append(ch)
    statements.append("".join(current))
    return [" ".join(s.split()) for s in statements if s.strip()]


_NAME_LINE = re.compile(r"^--\s*name:\s*(\S+)\s*$")


def named_statements(sql: str, source: str = "<sql>") -> dict[str, str]:
    """Parse `-- name: <name>` blocks, each holding exactly one statement."""
    blocks: dict[str, list[str]] = {}
    name = None
    for number, line in enumerate(sql.splitlines(), 1):
        match = _NAME_LINE.match(line.strip())
        if match:
            name = match.group(1)
            if name in blocks:
                raise LedgerError(f"{source}:{number}: statement name {name!r} is defined twice")
            blocks[name] = []
        elif name is None:
            if split_statements(line):
                raise LedgerError(f"{source}:{number}: SQL before the first '-- name:' line")
        else:
            blocks[name].append(line)
    result = {}
    for name, lines in blocks.items():
        statements = split_statements("\n".join(lines))
        if len(statements) != 1:
            raise LedgerError(f"{source}: block {name!r} must hold one statement, has {len(statements)}")
        result[name] = statements[0]
    return result


_MIGRATION_FILE = re.compile(r"^(\d+)_(\w+)\.sql$")


def schema_migrations(directory: Any) -> list[tuple[int, str, list[str]]]:
    """(version, name, statements) of every `NNN_name.sql` in `directory`, by version."""
    found = []
    for path in sorted(directory.iterdir(), key=lambda p: p.name):  # a Path, or a zipfile.Path (no ordering)
        match = _MIGRATION_FILE.match(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), split_statements(path.read_text())))
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise LedgerError(f"schema files in {directory} must be numbered 1..N without gaps, found {versions}")
    return found


# ---------------------------------------------------------------------------------------------------------
# Validation and conversion (pure)

def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise LedgerError(f"{field} must be a non-empty string, got {value!r}")
    return value


def _count(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LedgerError(f"{field} must be a non-negative integer, got {value!r}")
    return value


def _positive(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LedgerError(f"{field} must be a positive integer, got {value!r}")
    return value


def _instant(value: Any, field: str) -> int:
    return _count(value, field)


def _optional_instant(value: Any, field: str) -> int | None:
    return None if value is None else _instant(value, field)


def _choice(value: Any, allowed: tuple[str, ...], field: str) -> str:
    if value not in allowed:
        raise LedgerError(f"{field} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def row_hex(value: Any, field: str) -> str:
    """A row key (bytes) as stored: lower-case hex, b'' (an open end) as ''."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise LedgerError(f"{field} must be a row key as bytes (b'' for an open end), got {value!r}")
    return bytes(value).hex()


def _json(value: Any, field: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"{field} must be JSON-serialisable: {exc}") from None


def _tables(value: Any) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise LedgerError(f"tables must be a non-empty list of table names, got {value!r}")
    tables = [_text(t, "tables[]") for t in value]
    if not tables:
        raise LedgerError("tables must be a non-empty list of table names, got []")
    if len(set(tables)) != len(tables):
        raise LedgerError(f"tables lists a table twice: {tables!r}")
    return tables


def phase_times(status: str, at_ms: int) -> tuple[int | None, int | None]:
    """(start candidate, end) written by a status change.

    Going `running` offers `at_ms` as the start (the first one stays) and clears the end, so a retried phase
    is open again; a final status ends it at `at_ms`; `pending` neither starts nor ends it.
    """
    if status == "running":
        return at_ms, None
    if status in ("success", "failed", "skipped"):
        return None, at_ms
    return None, None


def _duration(start: int | None, end: int | None) -> int | None:
    return end - start if start is not None and end is not None else None


@dataclass(frozen=True)
class LagRow:
    """One replication queue of one region server in one lag sample."""

    server: str
    queue_id: str
    size_of_log_queue: int
    age_of_last_shipped_op_ms: int
    shipped_ops: int
    recovered: bool | None = None  # None: derived (a recovered queue's id is `<peer>-<dead server>`)

    def params(self, peer_id: str, index: int) -> dict[str, Any]:
        where = f"queues[{index}]"
        queue_id = _text(self.queue_id, f"{where}.queue_id")
        recovered = queue_id != peer_id if self.recovered is None else self.recovered
        if not isinstance(recovered, bool):
            raise LedgerError(f"{where}.recovered must be a bool or None, got {self.recovered!r}")
        return {
            "server": _text(self.server, f"{where}.server"),
            "queue_id": queue_id,
            "recovered": int(recovered),
            "size_of_log_queue": _count(self.size_of_log_queue, f"{where}.size_of_log_queue"),
            "age_of_last_shipped_op_ms": _count(
                self.age_of_last_shipped_op_ms, f"{where}.age_of_last_shipped_op_ms"
            ),
            "shipped_ops": _count(self.shipped_ops, f"{where}.shipped_ops"),
        }


def _lag_row(value: Any, index: int) -> LagRow:
    if isinstance(value, LagRow):
        return value
    if isinstance(value, Mapping):
        try:
            return LagRow(**value)
        except TypeError as exc:
            raise LedgerError(f"queues[{index}]: {exc}") from None
    raise LedgerError(f"queues[{index}] must be a LagRow or a mapping of its fields, got {value!r}")


def _quota(value: Any, field: str) -> int | None:
    """A quota as stored: None when unset (HDFS reports -1)."""
    if value is None or value == -1:
        return None
    return _count(value, field)


def _lag_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    return {**row, "recovered": bool(row["recovered"])}


# ---------------------------------------------------------------------------------------------------------
# The ledger

class Ledger:
    """The run ledger over one database. Build it with `Ledger.open(url)`."""

    def __init__(self, engine: Any, queries: Mapping[str, str]):
        self._engine = engine
        self._reader = engine.execution_options(ledger_read_only=True)
        self._queries = {name: text(sql) for name, sql in queries.items()}

    # -- opening ----------------------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str = DEFAULT_URL, *, sql_dir: Path = SQL_DIR) -> "Ledger":
        """Connect to `url` (a SQLAlchemy URL) and bring its schema up to date (a no-op when it is)."""
        try:
            parsed = make_url(url)
        except (ArgumentError, TypeError, ValueError):
            # Not echoed: a URL that does not parse may still hold a password.
            raise LedgerError("ledger url is not a SQLAlchemy URL (like 'sqlite:///path')") from None
        shown = parsed.render_as_string(hide_password=True)
        sqlite = parsed.get_backend_name() == "sqlite"
        kwargs: dict[str, Any] = {}
        if sqlite:
            if not parsed.database or parsed.database == ":memory:":
                raise LedgerError(f"ledger url {shown!r} must name a database file (it outlives tasks)")
            folder = Path(parsed.database).expanduser().resolve().parent
            if not folder.is_dir():
                raise LedgerError(f"ledger url {shown!r}: directory {folder} does not exist")
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_S}
        try:
            engine = create_engine(parsed, **kwargs)
        except Exception as exc:  # a missing driver (psycopg2) or a bad option: say which URL
            raise LedgerError(f"cannot use ledger url {shown!r}: {exc}") from None
        if sqlite:
            _sqlite_transactions(engine)
        queries = named_statements((sql_dir / "queries.sql").read_text(), str(sql_dir / "queries.sql"))
        ledger = cls(engine, queries)
        try:
            ledger.apply_schema(sql_dir / "schema")
        except BaseException:
            engine.dispose()
            raise
        log.info("ledger open at %s", shown)
        return ledger

    def apply_schema(self, schema_dir: Path = SQL_DIR / "schema", applied_ms: int | None = None) -> int:
        """Apply the schema files newer than the database's `schema_version`, all in one transaction.

        Returns the version now in place. Applying twice changes nothing; a database newer than these files
        is refused rather than written with an old idea of its tables.
        """
        migrations = schema_migrations(schema_dir)
        known = len(migrations)
        with self._engine.begin() as conn:
            self._run(conn, "create_schema_version")
            current = self._run(conn, "schema_version").scalar_one()
            if current > known:
                raise LedgerError(
                    f"ledger schema version {current} is newer than this toolkit knows ({known}): "
                    "upgrade the toolkit"
                )
            for version, name, statements in migrations[current:]:
                for statement in statements:
                    try:
                        conn.exec_driver_sql(statement)
                    except DBAPIError as exc:  # the transaction rolls back: no part of the file stays
                        raise LedgerError(
                            f"ledger schema file {version:03d}_{name}.sql failed, nothing applied: {exc.orig}"
                        ) from exc
                self._run(conn, "insert_schema_version", version=version, name=name,
                          applied_ms=now_ms() if applied_ms is None else applied_ms)
                log.info("ledger schema: applied version %d (%s)", version, name)
        return max(current, known)

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _run(self, conn: Any, query: str, **params: Any) -> Any:
        return conn.execute(self._queries[query], params)

    def _rows(self, conn: Any, query: str, **params: Any) -> list[dict[str, Any]]:
        return [dict(r) for r in self._run(conn, query, **params).mappings()]

    def _require_run(self, conn: Any, run_id: str) -> Mapping[str, Any]:
        row = self._run(conn, "get_run", run_id=run_id).mappings().first()
        if row is None:
            raise LedgerError(f"run_id {run_id!r} is not in the ledger: start_run() it first")
        return row

    # -- runs -------------------------------------------------------------------------------------------

    def start_run(self, run_id: str, dag_id: str, plan: str, source_key: Any, target_key: Any, peer_id: str,
                  tables: Iterable[str], params: Mapping[str, Any] | None = None, *,
                  copy_id: str | None = None, started_ms: int | None = None) -> dict[str, Any]:
        """Record a run as running; a re-run of the same run resumes it (first start time kept).

        `source_key`/`target_key`: a `ClusterKey` or its text. `copy_id` names the run's copy in the
        partition table (default: the run id). Re-starting a run with a different description is refused:
        the run id would then stand for two migrations. Returns the run as `run_summary()["run"]` shows it.
        """
        values = {
            "run_id": _text(run_id, "run_id"),
            "dag_id": _text(dag_id, "dag_id"),
            "plan_name": _text(plan, "plan"),
            "source_key": _text(str(source_key) if source_key is not None else None, "source_key"),
            "target_key": _text(str(target_key) if target_key is not None else None, "target_key"),
            "peer_id": _text(peer_id, "peer_id"),
            "tables_json": _json(_tables(tables), "tables"),
            "params_json": _json(dict(params or {}), "params"),
            "copy_id": _text(run_id if copy_id is None else copy_id, "copy_id"),
        }
        started = _instant(now_ms() if started_ms is None else started_ms, "started_ms")
        with self._engine.begin() as conn:
            self._run(conn, "insert_run", started_ms=started, **values)
            row = self._run(conn, "get_run", run_id=run_id).mappings().one()
            different = [k for k, v in values.items() if row[k] != v]
            if different:
                shown = ", ".join(f"{k}: {row[k]!r} != {values[k]!r}" for k in different)
                raise LedgerError(f"run_id {run_id!r} was started with a different description ({shown})")
            if row["status"] != "running":
                self._run(conn, "resume_run", run_id=run_id)
                log.info("ledger: run %s resumed (was %s)", run_id, row["status"])
            run = _run_dict(self._run(conn, "get_run", run_id=run_id).mappings().one())
        log.info("ledger: run %s running (plan %s, peer %s, tables %s)", run_id, plan, peer_id, run["tables"])
        return run

    def end_run(self, run_id: str, status: str, ended_ms: int | None = None) -> None:
        _choice(status, RUN_END_STATUSES, "status")
        ended = _instant(now_ms() if ended_ms is None else ended_ms, "ended_ms")
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "end_run", run_id=run_id, status=status, ended_ms=ended)
        log.info("ledger: run %s ended %s", run_id, status)

    def record_t0(self, run_id: str, t0_ms: int) -> int:
        """Record the instant the peer was added; the earliest recorded T0 is kept and returned."""
        _instant(t0_ms, "t0_ms")
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "record_t0", run_id=run_id, t0_ms=t0_ms)
            t0 = self._require_run(conn, run_id)["t0_ms"]
        log.info("ledger: run %s T0 = %d", run_id, t0)
        return t0

    def set_phase(self, run_id: str, table: str, phase: str, status: str, detail: str | None = None,
                  at_ms: int | None = None) -> None:
        """Record a phase's status for one table (`ALL_TABLES` for a run-wide phase); see `phase_times`."""
        _text(table, "table")
        _choice(phase, PHASES, "phase")
        _choice(status, PHASE_STATUSES, "status")
        if detail is not None and not isinstance(detail, str):
            raise LedgerError(f"detail must be a string or None, got {detail!r}")
        at = _instant(now_ms() if at_ms is None else at_ms, "at_ms")
        started, ended = phase_times(status, at)
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "set_phase", run_id=run_id, table_name=table, phase=phase, status=status,
                      started_ms=started, ended_ms=ended, detail=detail, updated_ms=at)

    # -- copy -------------------------------------------------------------------------------------------

    def partition_done(self, copy_id: str, table: str, partition_id: str, start_row: bytes, stop_row: bytes,
                       rows: int, cells: int, bytes: int, *, started_ms: int | None = None,
                       finished_ms: int | None = None, attempt: int = 1, fingerprint: str | None = None) -> None:
        """Record a finished copy partition (rows as bytes, b'' = open end); re-recording overwrites it.
        `fingerprint`: the scope it was copied under (`TableScope.fingerprint`), what a resume matches."""
        values = {
            "copy_id": _text(copy_id, "copy_id"),
            "table_name": _text(table, "table"),
            "partition_id": _text(partition_id, "partition_id"),
            "start_row_hex": row_hex(start_row, "start_row"),
            "stop_row_hex": row_hex(stop_row, "stop_row"),
            "row_count": _count(rows, "rows"),
            "cell_count": _count(cells, "cells"),
            "byte_count": _count(bytes, "bytes"),
            "started_ms": _optional_instant(started_ms, "started_ms"),
            "finished_ms": _instant(now_ms() if finished_ms is None else finished_ms, "finished_ms"),
            "attempt": _positive(attempt, "attempt"),
            "scope_fingerprint": None if fingerprint is None else _text(fingerprint, "fingerprint"),
        }
        with self._engine.begin() as conn:
            self._run(conn, "partition_done", **values)

    def done_partitions(self, copy_id: str, table: str) -> set[str]:
        """Partition ids of `table` already copied by `copy_id`: a resumed copy skips them."""
        with self._reader.begin() as conn:
            rows = self._run(conn, "done_partitions", copy_id=_text(copy_id, "copy_id"),
                             table_name=_text(table, "table"))
            return {r[0] for r in rows}

    def finished_ranges(self, copy_id: str, table: str) -> list[dict[str, Any]]:
        """Every finished partition of `table` in `copy_id` as a key range (`start_row`/`stop_row` bytes, b'' =
        open end) with the scope fingerprint it was copied under (None: recorded before schema 5)."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "finished_ranges", copy_id=_text(copy_id, "copy_id"),
                              table_name=_text(table, "table"))
        return [{"partition_id": r["partition_id"], "start_row": bytes.fromhex(r["start_row_hex"]),
                 "stop_row": bytes.fromhex(r["stop_row_hex"]), "fingerprint": r["scope_fingerprint"],
                 "rows": r["row_count"], "finished_ms": r["finished_ms"]} for r in rows]

    def copy_plan(self, copy_id: str, table: str, partitions: int, est_rows: int | None = None,
                  planned_ms: int | None = None) -> None:
        """Record how many partitions a copy of `table` was planned into (finished ones included) and the
        rows it expects (None: unknown). A copy that plans again (a resume) overwrites the figures and keeps
        the first planning instant."""
        values = {
            "copy_id": _text(copy_id, "copy_id"),
            "table_name": _text(table, "table"),
            "partitions": _count(partitions, "partitions"),
            "est_rows": None if est_rows is None else _count(est_rows, "est_rows"),
            "planned_ms": _instant(now_ms() if planned_ms is None else planned_ms, "planned_ms"),
        }
        with self._engine.begin() as conn:
            self._run(conn, "copy_plan", **values)

    def copy_progress(self, copy_id: str, limit: int = 5000) -> dict[str, Any]:
        """A copy's plan per table (`copy_plan`) and its finished partitions in the order they finished
        (oldest first; the newest `limit` when there are more): the dashboard's progress chart."""
        _positive(limit, "limit")
        with self._reader.begin() as conn:
            rows = self._rows(conn, "copy_plans", copy_id=_text(copy_id, "copy_id"))
            plans = {r.pop("table_name"): r for r in rows}
            partitions = self._rows(conn, "copy_timeline", copy_id=copy_id, limit=limit)
        partitions.sort(key=lambda r: (r["finished_ms"], r["table_name"], r["partition_id"]))
        return {"plans": plans, "partitions": partitions}

    # -- samples ----------------------------------------------------------------------------------------

    def lag_sample(self, run_id: str, peer_id: str, queues: Iterable[LagRow | Mapping[str, Any]],
                   sampled_ms: int | None = None) -> int:
        """Record one lag sample: every (region server, queue) of the peer seen at one instant.

        `queues` holds `LagRow`s or mappings of their fields. Returns the number of queue rows written.
        """
        _text(peer_id, "peer_id")
        sampled = _instant(now_ms() if sampled_ms is None else sampled_ms, "sampled_ms")
        rows = [_lag_row(q, i).params(peer_id, i) for i, q in enumerate(queues)]
        keys = [(r["server"], r["queue_id"]) for r in rows]
        if len(set(keys)) != len(keys):
            raise LedgerError(f"queues lists a (server, queue_id) twice: {sorted(keys)!r}")
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            for row in rows:
                self._run(conn, "lag_sample", run_id=run_id, peer_id=peer_id, sampled_ms=sampled, **row)
        return len(rows)

    def quota_sample(self, run_id: str, path: str, *, space_consumed: int, space_quota: int | None,
                     ns_consumed: int, ns_quota: int | None, growth_bytes_per_s: float | None = None,
                     projected_exhaustion_ms: int | None = None, sampled_ms: int | None = None) -> None:
        """Record the quota state of one HDFS path (quotas: None or -1 when unset)."""
        if not isinstance(path, str) or not path.startswith("/"):
            raise LedgerError(f"path must be an absolute HDFS path, got {path!r}")
        if growth_bytes_per_s is not None and (
            isinstance(growth_bytes_per_s, bool) or not isinstance(growth_bytes_per_s, (int, float))
            or growth_bytes_per_s != growth_bytes_per_s or abs(growth_bytes_per_s) == float("inf")
        ):
            raise LedgerError(f"growth_bytes_per_s must be finite or None, got {growth_bytes_per_s!r}")
        values = {
            "path": path,
            "sampled_ms": _instant(now_ms() if sampled_ms is None else sampled_ms, "sampled_ms"),
            "space_consumed": _count(space_consumed, "space_consumed"),
            "space_quota": _quota(space_quota, "space_quota"),
            "ns_consumed": _count(ns_consumed, "ns_consumed"),
            "ns_quota": _quota(ns_quota, "ns_quota"),
            "growth_bytes_per_s": None if growth_bytes_per_s is None else float(growth_bytes_per_s),
            "projected_exhaustion_ms": _optional_instant(projected_exhaustion_ms, "projected_exhaustion_ms"),
        }
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "quota_sample", run_id=run_id, **values)

    # -- verification and peer --------------------------------------------------------------------------

    def verification(self, run_id: str, table: str, *, window_start_ms: int | None, window_end_ms: int | None,
                     source_rows: int, target_rows: int, matching: int, content_different: int,
                     only_in_source: int, only_in_target: int, sample_keys: Iterable[bytes] = (),
                     verified_ms: int | None = None) -> None:
        """Record a table's verification over `[window_start_ms, window_end_ms)` (start None = 0; end None = no
        end, every timestamp: stored as HBase's LATEST_TIMESTAMP, Long.MAX_VALUE).

        `sample_keys` are row keys as bytes (stored as hex). Verifying the same window again overwrites it.
        """
        if isinstance(sample_keys, (str, bytes)):
            raise LedgerError(f"sample_keys must be a list of row keys (bytes), got {sample_keys!r}")
        start = _instant(0 if window_start_ms is None else window_start_ms, "window_start_ms")
        end = _instant(OPEN_END_MS if window_end_ms is None else window_end_ms, "window_end_ms")
        if end <= start:
            raise LedgerError(f"window_end_ms ({end}) must be after window_start_ms ({start})")
        values = {
            "table_name": _text(table, "table"),
            "window_start_ms": start,
            "window_end_ms": end,
            "source_rows": _count(source_rows, "source_rows"),
            "target_rows": _count(target_rows, "target_rows"),
            "matching": _count(matching, "matching"),
            "content_different": _count(content_different, "content_different"),
            "only_in_source": _count(only_in_source, "only_in_source"),
            "only_in_target": _count(only_in_target, "only_in_target"),
            "sample_keys_json": _json([row_hex(k, f"sample_keys[{i}]") for i, k in enumerate(sample_keys)],
                                      "sample_keys"),
            "verified_ms": _instant(now_ms() if verified_ms is None else verified_ms, "verified_ms"),
        }
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "verification", run_id=run_id, **values)
        differing = values["content_different"] + values["only_in_source"] + values["only_in_target"]
        log.info("ledger: run %s table %s verified [%d, %d): %d matching, %d differing",
                 run_id, table, start, end, values["matching"], differing)

    def peer_note(self, run_id: str, peer_id: str, state: str, reason: str,
                  noted_ms: int | None = None) -> None:
        """Note the peer's state and why, e.g. left DISABLED by a failed run (it then pins WALs)."""
        _text(peer_id, "peer_id")
        _choice(state, PEER_STATES, "state")
        _text(reason, "reason")
        noted = _instant(now_ms() if noted_ms is None else noted_ms, "noted_ms")
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "peer_note", run_id=run_id, peer_id=peer_id, noted_ms=noted, state=state,
                      reason=reason)
        log.warning("ledger: run %s peer %s is %s: %s", run_id, peer_id, state, reason)

    # -- the copy's load-aware throttle -----------------------------------------------------------------

    def throttle_decision(self, copy_id: str, table: str, state: str, factor: float, reason: str,
                          load: Mapping[str, Any], decided_ms: int | None = None) -> None:
        """One decision of the copy's load throttle (`hbase_migration.data.throttle`); re-recording overwrites."""
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 <= factor <= 1:
            raise LedgerError(f"factor must be a number within 0..1, got {factor!r}")
        values = {
            "copy_id": _text(copy_id, "copy_id"),
            "table_name": _text(table, "table"),
            "decided_ms": _instant(now_ms() if decided_ms is None else decided_ms, "decided_ms"),
            "state": _choice(state, THROTTLE_STATES, "state"),
            "factor": float(factor),
            "reason": _text(reason, "reason"),
            "load_json": _json(dict(load), "load"),
        }
        with self._engine.begin() as conn:
            self._run(conn, "throttle_decision", **values)

    def throttle_decisions(self, copy_id: str) -> list[dict[str, Any]]:
        """Every throttle decision of a copy, oldest first (`load` decoded)."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "throttle_decisions", copy_id=_text(copy_id, "copy_id"))
        for row in rows:
            row["load"] = json.loads(row.pop("load_json"))
        return rows

    # -- alerts (hbase_migration/migration/alerts.py): one message per occurrence, and its deliveries --------------

    def alert_message(self, record: Mapping[str, Any], channels: Iterable[str], seq: int = 0,
                      created_ms: int | None = None) -> bool:
        """Claim a message (`Alert.record()`) and queue one delivery per channel, in one transaction. True when
        this call made it; False when its `message_key` was already there (that occurrence was claimed: the
        caller sends nothing)."""
        values = {
            "message_key": _text(record.get("message_key"), "message_key"),
            "alert_key": _text(record.get("alert_key"), "alert_key"),
            "event": _text(record.get("event"), "event"),
            "seq": _count(seq, "seq"),
            "kind": _text(record.get("kind"), "kind"),
            "cluster_key": _text(record.get("cluster_key"), "cluster_key"),
            "conn_id": _text(record.get("conn_id"), "conn_id"),
            "dag_run_id": _text(record.get("dag_run_id"), "dag_run_id"),
            "run_id": record.get("run_id"),
            "created_ms": _instant(now_ms() if created_ms is None else created_ms, "created_ms"),
            "subject": _text(record.get("subject"), "subject"),
            "body": _text(record.get("body"), "body"),
            "facts_json": _json(dict(record.get("facts") or {}), "facts"),
        }
        names = [_text(c, "channels[]") for c in channels]
        with self._engine.begin() as conn:
            made = self._run(conn, "alert_message", **values).rowcount == 1
            if made:
                for channel in names:
                    self._run(conn, "alert_delivery", message_key=values["message_key"], channel=channel)
        return made

    def alert_history(self, cluster_key: str) -> list[dict[str, Any]]:
        """A cluster's watch alert starts and ends (alert_key, event, seq, created_ms, dag_run_id, run_id,
        facts), oldest first per alert: `alerts.open_alerts` and `alerts.next_seq` read them."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "alert_history", cluster_key=_text(cluster_key, "cluster_key"))
        for row in rows:
            row["facts"] = json.loads(row.pop("facts_json"))
        return rows

    def take_delivery(self, message_key: str, channel: str, lease_ms: int, at_ms: int | None = None) -> bool:
        """Take one unsent delivery for `lease_ms` (True), unless it was sent or another sender holds it."""
        now = _instant(now_ms() if at_ms is None else at_ms, "at_ms")
        with self._engine.begin() as conn:
            taken = self._run(conn, "take_delivery", message_key=message_key, channel=channel, now_ms=now,
                              stale_ms=now - _positive(lease_ms, "lease_ms")).rowcount
        return taken == 1

    def delivery_sent(self, message_key: str, channel: str, at_ms: int | None = None) -> None:
        with self._engine.begin() as conn:
            self._run(conn, "delivery_sent", message_key=message_key, channel=channel,
                      sent_ms=_instant(now_ms() if at_ms is None else at_ms, "at_ms"))

    def delivery_failed(self, message_key: str, channel: str, error: str) -> None:
        """Free a delivery that failed (the next watch run retries it); `error` must hold no URL or token."""
        with self._engine.begin() as conn:
            self._run(conn, "delivery_failed", message_key=message_key, channel=channel,
                      error=_text(error, "error")[:1000])

    def pending_deliveries(self, since_ms: int, lease_ms: int, at_ms: int | None = None) -> list[dict[str, Any]]:
        """Unsent deliveries of messages made since `since_ms` that no live lease holds, oldest first."""
        now = _instant(now_ms() if at_ms is None else at_ms, "at_ms")
        with self._reader.begin() as conn:
            rows = self._rows(conn, "pending_deliveries", since_ms=_instant(since_ms, "since_ms"),
                              stale_ms=now - _positive(lease_ms, "lease_ms"))
        for row in rows:
            row["facts"] = json.loads(row.pop("facts_json"))
        return rows

    def alert_messages(self, since_ms: int = 0) -> list[dict[str, Any]]:
        """Every message made since `since_ms`, oldest first, each with its deliveries."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "alert_messages", since_ms=_instant(since_ms, "since_ms"))
            for row in rows:
                row["facts"] = json.loads(row.pop("facts_json"))
                row["deliveries"] = self._rows(conn, "alert_deliveries_of", message_key=row["message_key"])
        return rows

    def latest_run_of_peer(self, source_key: Any, peer_id: str) -> dict[str, Any] | None:
        """The newest run (the watch's left out) that used `peer_id` on the cluster `source_key`, or None."""
        with self._reader.begin() as conn:
            row = self._run(conn, "latest_run_of_peer", source_key=_text(str(source_key), "source_key"),
                            peer_id=_text(peer_id, "peer_id")).mappings().first()
        return None if row is None else dict(row)

    # -- a run's batches and their slots (hbase_migration/migration/batches.py) -------------------------------

    def record_batches(self, run_id: str, batches: Sequence[Mapping[str, Any]],
                       planned_ms: int | None = None) -> list[dict[str, Any]]:
        """Keep the run's batch plan, unless one is already kept (a retried plan keeps the first: a batch's peer
        never changes under a running migration); returns the plan kept."""
        at = _instant(now_ms() if planned_ms is None else planned_ms, "planned_ms")
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            if not self._rows(conn, "run_batches", run_id=run_id):
                for b in batches:
                    self._run(conn, "batch_insert", run_id=run_id, batch=_text(b["batch"], "batch"),
                              batch_index=_count(b["index"], "index"), peer_id=_text(b["peer_id"], "peer_id"),
                              tables_json=_json(_tables(b["tables"]), "tables"), bytes=_count(b.get("bytes", 0),
                                                                                            "bytes"),
                              planned_ms=at)
        return self.run_batches(run_id)

    def run_batches(self, run_id: str) -> list[dict[str, Any]]:
        """The run's batches in order: index, name, peer, tables, bytes, T0, and the slot held (None: none)."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "run_batches", run_id=_text(run_id, "run_id"))
        return [{"index": r["batch_index"], "batch": r["batch"], "peer_id": r["peer_id"],
                 "tables": json.loads(r["tables_json"]), "bytes": r["bytes"], "t0_ms": r["t0_ms"],
                 "planned_ms": r["planned_ms"], "slot": r["slot"], "slot_taken_ms": r["taken_ms"]} for r in rows]

    def batch_t0(self, run_id: str, batch: str, t0_ms: int) -> None:
        """The batch's T0 (its peer added; the earliest kept) and the run's (its first batch's)."""
        with self._engine.begin() as conn:
            self._run(conn, "batch_t0", run_id=_text(run_id, "run_id"), batch=_text(batch, "batch"),
                      t0_ms=_instant(t0_ms, "t0_ms"))

    def take_batch_slot(self, run_id: str, batch: str, limit: int, at_ms: int | None = None) -> int | None:
        """One of the run's `limit` slots for `batch` (the one it holds already, if any); None when all are taken."""
        _positive(limit, "limit")
        at = _instant(now_ms() if at_ms is None else at_ms, "taken_ms")
        with self._engine.begin() as conn:
            held = self._run(conn, "batch_slot_of", run_id=_text(run_id, "run_id"),
                             batch=_text(batch, "batch")).scalar()
            if held is not None:
                return int(held)
            for slot in range(limit):
                if self._run(conn, "batch_slot_take", run_id=run_id, slot=slot, batch=batch,
                             taken_ms=at).rowcount == 1:
                    return slot
        return None

    def release_batch_slot(self, run_id: str, batch: str) -> None:
        with self._engine.begin() as conn:
            self._run(conn, "batch_slot_release", run_id=_text(run_id, "run_id"), batch=_text(batch, "batch"))

    def batch_slots(self, run_id: str) -> list[dict[str, Any]]:
        with self._reader.begin() as conn:
            return self._rows(conn, "batch_slots_taken", run_id=_text(run_id, "run_id"))

    # -- the oldWALs watchdog's lease, per run and cluster (hbase_migration/migration/quota.py) ----------------

    def watch_take(self, run_id: str, cluster_key: str, owner: str, lease_s: float,
                   now: int | None = None) -> tuple[bool, dict[str, Any]]:
        """Take or renew the lease on `run_id`'s watch of `cluster_key` (free, ours, or expired); returns whether
        `owner` holds it and the row (plan, newest reading) in one transaction."""
        at = _instant(now_ms() if now is None else now, "now_ms")
        keys = {"run_id": _text(run_id, "run_id"), "cluster_key": _text(cluster_key, "cluster_key")}
        with self._engine.begin() as conn:
            self._run(conn, "watch_ensure", now_ms=at, **keys)
            taken = self._run(conn, "watch_take", owner=_text(owner, "owner"), expires_ms=at + int(lease_s * 1000),
                              now_ms=at, **keys).rowcount == 1
            row = self._run(conn, "watch_row", **keys).mappings().first()
        return taken, _watch_dict(row)

    def watch_reading(self, run_id: str, cluster_key: str, owner: str, plan: Mapping[str, Any],
                      reading: Mapping[str, Any], read_ms: int, calls: int) -> bool:
        """Keep the holder's newest reading (and the plan it read by); False when `owner` no longer holds the lease
        (nothing written)."""
        with self._engine.begin() as conn:
            return self._run(conn, "watch_reading", run_id=_text(run_id, "run_id"),
                             cluster_key=_text(cluster_key, "cluster_key"), owner=_text(owner, "owner"),
                             plan_json=_json(plan, "plan"), reading_json=_json(reading, "reading"),
                             read_ms=_instant(read_ms, "read_ms"), calls=_count(calls, "calls"),
                             now_ms=now_ms()).rowcount == 1

    def watch_release(self, run_id: str, cluster_key: str, owner: str) -> None:
        """Give the lease up (a watchdog that stops): another watchdog of the run takes it at its next turn."""
        with self._engine.begin() as conn:
            self._run(conn, "watch_release", run_id=_text(run_id, "run_id"),
                      cluster_key=_text(cluster_key, "cluster_key"), owner=_text(owner, "owner"), now_ms=now_ms())

    def watches(self, run_id: str) -> list[dict[str, Any]]:
        """The run's watch rows, one per watched cluster: readings and NameNode calls so far, the plan."""
        with self._reader.begin() as conn:
            return [_watch_dict(r) for r in self._run(conn, "watch_rows", run_id=_text(run_id, "run_id")).mappings()]

    # -- the source's split/merge and normalizer switches (hbase_migration/data/switches.py) ----------------

    def switch_lock(self, source_key: str, owner: str, lease_s: float, now: int | None = None) -> bool:
        """Take the lease on `source_key`'s switches (free, ours already, or expired); False when another
        holds it."""
        at = _instant(now_ms() if now is None else now, "now_ms")
        with self._engine.begin() as conn:
            self._run(conn, "switch_guard_ensure", source_key=_text(source_key, "source_key"), now_ms=at)
            taken = self._run(conn, "switch_lock", source_key=source_key, owner=_text(owner, "owner"),
                              expires_ms=at + int(lease_s * 1000), now_ms=at).rowcount
        return taken == 1

    def switch_unlock(self, source_key: str, owner: str) -> None:
        with self._engine.begin() as conn:
            self._run(conn, "switch_unlock", source_key=_text(source_key, "source_key"), owner=_text(owner, "owner"),
                      now_ms=now_ms())

    def switch_guard(self, source_key: str) -> dict[str, Any] | None:
        """The guard row: `found` ({split, merge, normalizer} as found before the holds, None: nothing held),
        `found_ms`, and the lease."""
        with self._reader.begin() as conn:
            row = self._run(conn, "switch_guard", source_key=_text(source_key, "source_key")).mappings().first()
        if row is None:
            return None
        found = None if row["split_found"] is None else {
            "split": bool(row["split_found"]), "merge": bool(row["merge_found"]),
            "normalizer": bool(row["normalizer_found"])}
        return {"source_key": row["source_key"], "found": found, "found_ms": row["found_ms"],
                "lock_owner": row["lock_owner"], "lock_expires_ms": row["lock_expires_ms"]}

    def switch_found(self, source_key: str, owner: str, found: Mapping[str, bool] | None,
                     found_ms: int | None = None) -> None:
        """Record (or clear, with None) the state found; only under the lease `owner` holds."""
        values = {"split_found": None, "merge_found": None, "normalizer_found": None, "found_ms": None}
        if found is not None:
            values = {f"{k}_found": int(bool(found[k])) for k in ("split", "merge", "normalizer")}
            values["found_ms"] = _instant(now_ms() if found_ms is None else found_ms, "found_ms")
        with self._engine.begin() as conn:
            changed = self._run(conn, "switch_found", source_key=_text(source_key, "source_key"),
                                owner=_text(owner, "owner"), now_ms=now_ms(), **values).rowcount
        if changed != 1:
            raise LedgerError(f"switch state of {source_key!r} not written: the lease is not {owner!r}'s")

    def switch_hold(self, source_key: str, holder: str, run_id: str | None = None,
                    held_ms: int | None = None) -> None:
        with self._engine.begin() as conn:
            self._run(conn, "switch_hold", source_key=_text(source_key, "source_key"),
                      holder=_text(holder, "holder"), run_id=run_id,
                      held_ms=_instant(now_ms() if held_ms is None else held_ms, "held_ms"))

    def switch_release(self, source_key: str, holder: str) -> list[dict[str, Any]]:
        """Drop `holder`'s hold; returns the holds still there (in one transaction)."""
        with self._engine.begin() as conn:
            self._run(conn, "switch_release", source_key=_text(source_key, "source_key"),
                      holder=_text(holder, "holder"))
            return self._rows(conn, "switch_holds", source_key=source_key)

    def switch_holds(self, source_key: str) -> list[dict[str, Any]]:
        with self._reader.begin() as conn:
            return self._rows(conn, "switch_holds", source_key=_text(source_key, "source_key"))

    def run_switch_holds(self, run_id: str) -> list[dict[str, Any]]:
        """The holds a run's copies still have (a killed copy leaves its own)."""
        with self._reader.begin() as conn:
            return self._rows(conn, "run_switch_holds", run_id=_text(run_id, "run_id"))

    # -- the dry run's sizing ---------------------------------------------------------------------------

    def record_sizing(self, run_id: str, table: str, figures: Mapping[str, Any],
                      sized_ms: int | None = None) -> None:
        """Keep a table's sizing (`ALL_TABLES` for the run's projection); sizing again overwrites it."""
        values = {"table_name": _text(table, "table"), "sizing_json": _json(dict(figures), "figures"),
                  "sized_ms": _instant(now_ms() if sized_ms is None else sized_ms, "sized_ms")}
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "sizing", run_id=run_id, **values)

    def run_sizings(self, run_id: str) -> dict[str, Any]:
        """{table (or '*'): {sized_ms, figures}} of a run, empty when it was not sized."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "run_sizings", run_id=_text(run_id, "run_id"))
        return {r["table_name"]: {"sized_ms": r["sized_ms"], "figures": json.loads(r["sizing_json"])} for r in rows}

    # -- the initial copy by snapshot (hbase_migration/data/snapshot_export.py) ----------------------------

    def initial_copy(self, run_id: str, table: str, method: str, reason: str, decided_ms: int | None = None) -> str:
        """Record how `table`'s initial copy is made (`scan` or `snapshot`) unless the run decided already; the
        method that stands (the first one) is returned."""
        values = {"table_name": _text(table, "table"), "method": _choice(method, INITIAL_COPY_METHODS, "method"),
                  "reason": _text(reason, "reason"),
                  "decided_ms": _instant(now_ms() if decided_ms is None else decided_ms, "decided_ms")}
        with self._engine.begin() as conn:
            self._require_run(conn, run_id)
            self._run(conn, "initial_copy", run_id=run_id, **values)
            rows = self._rows(conn, "initial_copies", run_id=run_id)
        return next(r["method"] for r in rows if r["table_name"] == table)

    def initial_copies(self, run_id: str) -> dict[str, dict[str, Any]]:
        """{table: {method, reason, decided_ms}} of a run (empty before preflight decided)."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "initial_copies", run_id=_text(run_id, "run_id"))
        return {r.pop("table_name"): r for r in rows}

    def snapshot_export_start(self, copy_id: str, table: str, snapshot_name: str, source_key: Any, target_key: Any,
                              now: int | None = None) -> dict[str, Any]:
        """The export's row (created `started` when absent; a resumed export finds its own). Returns it."""
        values = {"copy_id": _text(copy_id, "copy_id"), "table_name": _text(table, "table"),
                  "snapshot_name": _text(snapshot_name, "snapshot_name"),
                  "source_key": _text(str(source_key), "source_key"),
                  "target_key": _text(str(target_key), "target_key"),
                  "now_ms": _instant(now_ms() if now is None else now, "now_ms")}
        with self._engine.begin() as conn:
            self._run(conn, "snapshot_export_start", **values)
            row = self._run(conn, "snapshot_export", copy_id=copy_id, table_name=table).mappings().one()
        return _export_dict(row)

    def snapshot_export_state(self, copy_id: str, table: str, state: str, detail: Mapping[str, Any] | None = None,
                              now: int | None = None) -> None:
        """Move the export to `state` (`SNAPSHOT_EXPORT_STATES`); `detail` (JSON) replaces the last one when given."""
        with self._engine.begin() as conn:
            self._run(conn, "snapshot_export_state", copy_id=_text(copy_id, "copy_id"),
                      table_name=_text(table, "table"),
                      state=_choice(state, SNAPSHOT_EXPORT_STATES, "state"),
                      detail=None if detail is None else _json(dict(detail), "detail"),
                      now_ms=_instant(now_ms() if now is None else now, "now_ms"))

    def snapshot_export_progress(self, copy_id: str, table: str, *, files_total: int, bytes_total: int,
                                 files_done: int, bytes_done: int, bytes_per_s: float | None = None,
                                 eta_s: float | None = None, now: int | None = None) -> None:
        with self._engine.begin() as conn:
            self._run(conn, "snapshot_export_progress", copy_id=_text(copy_id, "copy_id"),
                      table_name=_text(table, "table"), files_total=_count(files_total, "files_total"),
                      bytes_total=_count(bytes_total, "bytes_total"), files_done=_count(files_done, "files_done"),
                      bytes_done=_count(bytes_done, "bytes_done"),
                      bytes_per_s=None if bytes_per_s is None else float(bytes_per_s),
                      eta_s=None if eta_s is None else float(eta_s),
                      now_ms=_instant(now_ms() if now is None else now, "now_ms"))

    def snapshot_export(self, copy_id: str, table: str) -> dict[str, Any] | None:
        with self._reader.begin() as conn:
            row = self._run(conn, "snapshot_export", copy_id=_text(copy_id, "copy_id"),
                            table_name=_text(table, "table")).mappings().first()
        return None if row is None else _export_dict(row)

    def snapshot_exports(self, copy_id: str) -> dict[str, dict[str, Any]]:
        """{table: export} of a copy, each with the totals of its finished files (`files`)."""
        with self._reader.begin() as conn:
            rows = [_export_dict(r) for r in self._run(conn, "snapshot_exports_of_copy",
                                                       copy_id=_text(copy_id, "copy_id")).mappings()]
            totals = {r["table_name"]: r for r in self._rows(conn, "snapshot_files_totals", copy_id=copy_id)}
        return {r["table"]: {**r, "files": {k: v for k, v in totals.get(r["table"], {}).items() if k != "table_name"}}
                for r in rows}

    def snapshot_file_done(self, copy_id: str, table: str, snapshot_name: str, relative_path: str, size: int,
                           status: str, *, found_in: str | None = None, verified_by: str | None = None,
                           checksum: Mapping[str, Any] | None = None, attempts: int = 1, seconds: float | None = None,
                           finished_ms: int | None = None) -> None:
        """Record a file the export finished (copied and verified, or `matched`: already there); idempotent."""
        with self._engine.begin() as conn:
            self._run(conn, "snapshot_file_done", copy_id=_text(copy_id, "copy_id"), table_name=_text(table, "table"),
                      relative_path=_text(relative_path, "relative_path"),
                      snapshot_name=_text(snapshot_name, "snapshot_name"), size=_count(size, "size"),
                      status=_choice(status, ("copied", "matched"), "status"), found_in=found_in,
                      verified_by=verified_by, checksum=None if checksum is None else _json(dict(checksum), "checksum"),
                      attempts=_positive(attempts, "attempts"), seconds=None if seconds is None else float(seconds),
                      finished_ms=_instant(now_ms() if finished_ms is None else finished_ms, "finished_ms"))

    def snapshot_files(self, copy_id: str, table: str) -> dict[str, dict[str, Any]]:
        """{relative path: record} of the files an export finished."""
        with self._reader.begin() as conn:
            rows = self._rows(conn, "snapshot_files", copy_id=_text(copy_id, "copy_id"),
                              table_name=_text(table, "table"))
        for r in rows:
            r["checksum"] = None if r["checksum"] is None else json.loads(r["checksum"])
        return {r.pop("relative_path"): r for r in rows}

    # -- a Spark job's summary, from its driver (wherever it runs) to the task that submitted it ----------

    def put_job_summary(self, key: str, job: str, summary: str, written_ms: int | None = None) -> None:
        """Keep `summary` (the job's JSON summary line) under `key`, which the submitting task chose; a second
        write under one key replaces the first."""
        try:
            json.loads(summary)
        except (TypeError, ValueError):
            raise LedgerError(f"summary must be a JSON text, got {str(summary)[:80]!r}") from None
        with self._engine.begin() as conn:
            self._run(conn, "job_summary_put", summary_key=_text(key, "summary_key"), job=_text(job, "job"),
                      written_ms=_instant(now_ms() if written_ms is None else written_ms, "written_ms"),
                      summary=summary)

    def take_job_summary(self, key: str) -> dict[str, Any] | None:
        """The summary written under `key` (None: none was), removed in the same transaction: each submission
        has its own key, and the task keeps what it needs (XCom, the phase's detail)."""
        with self._engine.begin() as conn:
            row = self._run(conn, "job_summary", summary_key=_text(key, "summary_key")).mappings().first()
            if row is None:
                return None
            self._run(conn, "job_summary_delete", summary_key=key)
        return json.loads(row["summary"])

    def initial_copy_summary(self, run_id: str) -> dict[str, Any]:
        """What the dashboard shows of a run's initial copy: each table's method and, for the snapshot ones, the
        export (state, totals, progress, rate, ETA, what it left)."""
        run = self.find_run(run_id)
        if run is None:
            raise LedgerError(f"run_id {run_id!r} is not in the ledger")
        return {"methods": self.initial_copies(run_id), "exports": self.snapshot_exports(run["copy_id"])}

    # -- reading ----------------------------------------------------------------------------------------

    def run_summary(self, run_id: str) -> dict[str, Any]:
        """Everything a report needs about one run, JSON-serialisable, read in one transaction."""
        with self._reader.begin() as conn:
            run = _run_dict(self._require_run(conn, run_id))
            phases: dict[str, dict[str, Any]] = {}
            rows = self._run(conn, "run_phases", run_id=run_id).mappings()
            for row in sorted(rows, key=lambda r: _phase_order(run["tables"], r["table_name"], r["phase"])):
                phases.setdefault(row["table_name"], {})[row["phase"]] = {
                    "status": row["status"], "started_ms": row["started_ms"], "ended_ms": row["ended_ms"],
                    "duration_ms": _duration(row["started_ms"], row["ended_ms"]), "detail": row["detail"],
                }
            copy_tables = {
                r["table_name"]: {
                    "partitions": r["partitions"], "rows": r["row_count"], "cells": r["cell_count"],
                    "bytes": r["byte_count"], "started_ms": r["started_ms"], "finished_ms": r["finished_ms"],
                }
                for r in self._run(conn, "copy_totals", copy_id=run["copy_id"]).mappings()
            }
            verification: dict[str, list[dict[str, Any]]] = {}
            for row in self._run(conn, "run_verifications", run_id=run_id).mappings():
                entry = {k: v for k, v in row.items() if k not in ("table_name", "sample_keys_json")}
                entry["sample_keys"] = json.loads(row["sample_keys_json"])
                entry["clean"] = row["content_different"] + row["only_in_source"] + row["only_in_target"] == 0
                verification.setdefault(row["table_name"], []).append(entry)
            peaks = self._run(conn, "lag_peaks", run_id=run_id).mappings().one()
            snapshot = [_lag_dict(r) for r in self._rows(conn, "lag_latest_snapshot", run_id=run_id)]
            quota_latest = self._rows(conn, "quota_latest_per_path", run_id=run_id)
            quota_samples = self._run(conn, "quota_count", run_id=run_id).scalar_one()
            notes = self._rows(conn, "run_peer_notes", run_id=run_id)
            sizings = {r["table_name"]: {"sized_ms": r["sized_ms"], "figures": json.loads(r["sizing_json"])}
                       for r in self._rows(conn, "run_sizings", run_id=run_id)}
            batch_rows = self._rows(conn, "run_batches", run_id=run_id)
            watches = [_watch_dict(r) for r in self._run(conn, "watch_rows", run_id=run_id).mappings()]
        peer_state = {n["peer_id"]: n["state"] for n in notes}  # the notes are in time order: the latest wins
        batches = [{"index": r["batch_index"], "batch": r["batch"], "peer_id": r["peer_id"],
                    "tables": json.loads(r["tables_json"]), "bytes": r["bytes"], "t0_ms": r["t0_ms"],
                    "slot": r["slot"], "peer_state": peer_state.get(r["peer_id"])} for r in batch_rows]
        return {
            "run": run,
            "phases": phases,
            "copy": {
                "copy_id": run["copy_id"],
                "tables": copy_tables,
                "total": {k: sum(t[k] for t in copy_tables.values()) for k in COPY_FIGURES},
            },
            "verification": verification,
            "lag": {
                "samples": peaks["samples"],
                "max_age_of_last_shipped_op_ms": peaks["max_age_ms"],
                "max_size_of_log_queue": peaks["max_size_of_log_queue"],
                "latest": {
                    "sampled_ms": snapshot[0]["sampled_ms"],
                    "queues": [{k: v for k, v in q.items() if k != "sampled_ms"} for q in snapshot],
                } if snapshot else None,
            },
            "quota": {"samples": quota_samples, "latest": quota_latest,
                      "watch": [{k: w[k] for k in ("cluster_key", "readings", "namenode_calls", "read_ms")}
                                for w in watches]},
            "peer": {"state": notes[-1]["state"] if notes else None, "notes": notes},
            "sizing": sizings,
            "batches": batches,
        }

    def find_run(self, run_id: str) -> dict[str, Any] | None:
        """The run as `run_summary()["run"]` shows it, or None when the ledger does not hold it."""
        with self._reader.begin() as conn:
            row = self._run(conn, "get_run", run_id=_text(run_id, "run_id")).mappings().first()
        return None if row is None else _run_dict(row)

    def recent_runs(self, limit: int = 20, *, except_plan: str | None = None) -> list[dict[str, Any]]:
        """The newest runs first, each as `run_summary()["run"]` plus the peer's last noted state/reason;
        with `except_plan`, the runs of that plan are left out before the limit applies (the dashboard leaves
        out the watch's runs, plan "watch")."""
        _positive(limit, "limit")
        with self._reader.begin() as conn:
            rows = self._rows(conn, "recent_runs", limit=limit,
                              plan=None if except_plan is None else _text(except_plan, "except_plan"))
        return [{**_run_dict(r), "peer_state": r["peer_state"], "peer_reason": r["peer_reason"]}
                for r in rows]

    def chart_series(self, run_id: str, limit: int = 5000) -> dict[str, Any]:
        """What the dashboard draws, oldest first (the newest `limit` rows of each when there are more):
        `lag`, one point per (sample, region server) with the queues' summed sizeOfLogQueue and worst
        ageOfLastShippedOp; `quota`, every quota sample; `copy`, `copy_progress()` of the run's copy."""
        _positive(limit, "limit")
        with self._reader.begin() as conn:
            run = self._require_run(conn, run_id)
            lag = self._rows(conn, "lag_series", run_id=run_id, limit=limit)
            quota = self._rows(conn, "quota_series", run_id=run_id, limit=limit)
        lag.sort(key=lambda r: (r["sampled_ms"], r["server"]))
        quota.sort(key=lambda r: (r["sampled_ms"], r["path"]))
        return {"lag": lag, "quota": quota, "copy": self.copy_progress(run["copy_id"], limit)}

    def latest_samples(self, run_id: str, limit: int = 100) -> dict[str, list[dict[str, Any]]]:
        """The run's newest lag rows and quota rows (each up to `limit`, newest first) for the dashboard."""
        _positive(limit, "limit")
        with self._reader.begin() as conn:
            self._require_run(conn, run_id)
            lag = [_lag_dict(r) for r in self._rows(conn, "lag_recent", run_id=run_id, limit=limit)]
            quota = self._rows(conn, "quota_recent", run_id=run_id, limit=limit)
        return {"lag": lag, "quota": quota}


def _phase_order(tables: list[str], table: str, phase: str) -> tuple[int, str, int]:
    """Phases sort by the plan's table order (`ALL_TABLES` after it), then in migration order."""
    position = tables.index(table) if table in tables else len(tables)
    return position, table, PHASES.index(phase) if phase in PHASES else len(PHASES)


def _watch_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in ("plan_json", "reading_json"):
        text = out.pop(key)
        out[key[:-5]] = json.loads(text) if text else None
    return out


def _run_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "run_id": row["run_id"],
        "dag_id": row["dag_id"],
        "plan": row["plan_name"],
        "source_key": row["source_key"],
        "target_key": row["target_key"],
        "peer_id": row["peer_id"],
        "copy_id": row["copy_id"],
        "tables": json.loads(row["tables_json"]),
        "params": json.loads(row["params_json"]),
        "status": row["status"],
        "started_ms": row["started_ms"],
        "ended_ms": row["ended_ms"],
        "duration_ms": _duration(row["started_ms"], row["ended_ms"]),
        "t0_ms": row["t0_ms"],
    }


def _export_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: row[k] for k in row.keys() if k not in ("table_name", "detail")}
    out["table"] = row["table_name"]
    out["detail"] = json.loads(row["detail"]) if row["detail"] else None
    return out


def _sqlite_transactions(engine: Any) -> None:
    """Real transactions on SQLite, with the write lock taken at BEGIN.

    Python's sqlite3 driver otherwise skips BEGIN before DDL (the schema would not apply atomically) and
    takes the write lock only at the first write, where two writers can deadlock instead of waiting out the
    busy timeout. WAL lets the dashboard read while a copy writes.
    """

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        read_only = conn.get_execution_options().get("ledger_read_only", False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")
