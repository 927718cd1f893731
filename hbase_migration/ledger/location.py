"""Where the run ledger lives: one rule for the operators, the dashboard and the CLI.

Resolution, first match wins: an Airflow connection named by `[hbase_migration] ledger_conn_id` (so a
database password lives in Airflow's connections or secrets backend, not in airflow.cfg), then the Airflow
option `[hbase_migration] ledger_url` (airflow.cfg, or the environment variable
AIRFLOW__HBASE_MIGRATION__LEDGER_URL), then the output of `[hbase_migration] ledger_url_cmd` (a command, as
Airflow's own `sql_alchemy_conn_cmd`: `cat` of a file only Airflow's user reads), then the toolkit's own variable
HBASE_MIGRATION_LEDGER_URL (what the CLI reads outside Airflow), then the ledger's default
`sqlite:///.state/ledger.db`. A relative SQLite path is taken relative to AIRFLOW_HOME (the repository root
here), never to the API server's working directory, which differs between `airflow standalone`, a systemd
unit and a container.
"""
from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_URL = "sqlite:///.state/ledger.db"  # hbase_migration.ledger.store.DEFAULT_URL, which a unit test compares
ENV_VAR = "HBASE_MIGRATION_LEDGER_URL"
CONFIG_SECTION, CONFIG_OPTION, CONN_OPTION = "hbase_migration", "ledger_url", "ledger_conn_id"
CMD_OPTION = "ledger_url_cmd"
# Airflow connection types -> SQLAlchemy dialects; extra `sqlalchemy_scheme` names another (e.g. a driver).
DIALECTS = {"postgres": "postgresql", "postgresql": "postgresql", "mysql": "mysql", "sqlite": "sqlite"}
# libpq settings a PostgreSQL connection's extra may carry (Airflow's postgres extras mix them with hook-only
# keys such as `cursor`, which the driver would refuse): passed on in the URL's query.
LIBPQ_EXTRAS = ("sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout", "application_name", "options",
                "target_session_attrs")


class LedgerUrlError(ValueError):
    """A configured ledger URL that cannot be used; the message names where it came from."""


@dataclass(frozen=True)
class LedgerLocation:
    url: str  # what Ledger.open() gets (may hold a password: never log or show it)
    shown: str  # the URL with its password masked, for logs and the page footer
    source: str  # where it was configured, e.g. "[hbase_migration] ledger_url"
    sqlite_file: Path | None  # the database file when the ledger is SQLite (its absence means "no runs yet")


def connection_url(conn_id: str, conn: Any) -> str:
    """The SQLAlchemy URL of an Airflow connection (an object with conn_type, host, port, login, password,
    schema, extra_dejson), password included: for `Ledger.open`, never for a log."""
    extra = getattr(conn, "extra_dejson", None) or {}
    scheme = extra.get("sqlalchemy_scheme") or DIALECTS.get((conn.conn_type or "").lower())
    if not scheme:
        raise LedgerUrlError(
            f"ledger connection {conn_id!r} has type {conn.conn_type!r}; use one of {', '.join(sorted(DIALECTS))} "
            "or set extra sqlalchemy_scheme (like 'postgresql+psycopg2' or 'mysql+pymysql')")
    if scheme.startswith("sqlite"):
        # Airflow keeps a SQLite connection's file in `host` (sqlite:////path -> host '/path').
        url = URL.create(scheme, database=conn.host or conn.schema or None)
    else:
        query = ({k: str(extra[k]) for k in LIBPQ_EXTRAS if extra.get(k) not in (None, "")}
                 if scheme.startswith("postgresql") else {})
        url = URL.create(scheme, username=conn.login or None, password=conn.password or None,
                         host=conn.host or None, port=conn.port or None, database=conn.schema or None, query=query)
    return _render(url, hide_password=False)


def configured_connection(conn_id: str | None, lookup: Callable[[str], Any]) -> tuple[str, str] | None:
    """(conn id, its `connection_url`) when `ledger_conn_id` is set (blank = unset); `lookup(conn_id)` fetches
    the connection as the caller's Airflow process can (task SDK in tasks, the metastore in the API server)."""
    conn_id = (conn_id or "").strip()
    return (conn_id, connection_url(conn_id, lookup(conn_id))) if conn_id else None


def option_cmd_output(cmd: str) -> str:
    """What `[hbase_migration] ledger_url_cmd` prints, stripped: run as Airflow runs its own `*_cmd` options
    (split as a shell would, no shell). Its output is a secret: never echoed, also not when it fails."""
    what = f"[{CONFIG_SECTION}] {CMD_OPTION}"
    try:
        proc = subprocess.run(shlex.split(cmd), capture_output=True, text=True, timeout=60)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise LedgerUrlError(f"{what} could not run ({type(exc).__name__}): fix the command") from None
    if proc.returncode != 0:
        raise LedgerUrlError(f"{what} exited with {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip()


def resolve_ledger_url(airflow_option: str | None, env_value: str | None, airflow_home: str | os.PathLike,
                       connection: tuple[str, str] | None = None, option_cmd: str | None = None) -> LedgerLocation:
    """Choose the ledger URL (see the module docstring); anchor a relative SQLite path at `airflow_home`.
    `connection` is (conn id, its `connection_url`) when `ledger_conn_id` is set; `option_cmd` is
    `ledger_url_cmd`, run only when neither the connection nor `ledger_url` is set."""
    conn_id, conn_url = connection or (None, None)
    cmd_output = None
    if option_cmd and option_cmd.strip() and not any(v and v.strip() for v in (conn_url, airflow_option)):
        cmd_output = option_cmd_output(option_cmd)
    candidates = (
        (conn_url, f"[{CONFIG_SECTION}] {CONN_OPTION} (connection {conn_id})"),
        (airflow_option, f"[{CONFIG_SECTION}] {CONFIG_OPTION}"),
        (cmd_output, f"[{CONFIG_SECTION}] {CMD_OPTION}"),
        (env_value, ENV_VAR),
        (DEFAULT_URL, "default"),
    )
    text, source = next((v.strip(), s) for v, s in candidates if v is not None and v.strip())
    try:
        parsed = make_url(text)
    except (ArgumentError, ValueError):
        # The text is not echoed: a URL that does not parse may still hold a password.
        raise LedgerUrlError(
            f"ledger url from {source} is not a SQLAlchemy URL (like 'sqlite:///path')"
        ) from None
    sqlite_file = None
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if not database or database == ":memory:" or database.startswith("file:"):
            raise LedgerUrlError(
                f"ledger url from {source} must name a SQLite database file, got {database!r}"
            )
        path = Path(database).expanduser()
        if not path.is_absolute():
            path = Path(airflow_home).expanduser() / path
        sqlite_file = path.resolve()
        parsed = parsed.set(database=str(sqlite_file))
    return LedgerLocation(
        url=_render(parsed, hide_password=False),
        shown=_render(parsed, hide_password=True),
        source=source,
        sqlite_file=sqlite_file,
    )


def has_password(text: str) -> bool:
    """Whether a ledger URL carries a password (`user:PASSWORD@host`, or a `password=` query parameter the driver
    passes on): such a URL must not go on a command line. A text that does not parse says no; `Ledger.open`
    refuses it later without echoing it."""
    try:
        parsed = make_url(text)
    except (ArgumentError, TypeError, ValueError):
        return False
    return bool(parsed.password) or any("password" in key.lower() for key in parsed.query)


def _render(url: URL, *, hide_password: bool) -> str:
    return url.render_as_string(hide_password=hide_password)


def cli_ledger_url() -> str:
    """The ledger a command outside Airflow uses when none is named: HBASE_MIGRATION_LEDGER_URL, else the default
    (relative to AIRFLOW_HOME, else the working directory), its folder created."""
    home = os.environ.get("AIRFLOW_HOME") or os.getcwd()
    location = resolve_ledger_url(None, os.environ.get(ENV_VAR), home)
    if location.sqlite_file is not None:
        location.sqlite_file.parent.mkdir(parents=True, exist_ok=True)
    return location.url
