"""Resolve an Airflow connection id to a `Cluster` without importing Airflow.

The CLI names clusters by Airflow connection id, as the DAGs do. Airflow itself is not imported here (the
library stays Airflow-free); connections are resolved the way Airflow resolves them first, from
`AIRFLOW_CONN_<ID>` environment variables in JSON or URI form, and otherwise by asking the `airflow` command.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Any, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

from hbase_migration.clusters.cluster import Cluster, ClusterConfigError

CONN_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,250}$")  # what Airflow accepts as a connection id


class ConnectionNotFound(LookupError):
    pass


def env_var_name(conn_id: str) -> str:
    return "AIRFLOW_CONN_" + conn_id.upper()


def parse_extra(extra: Any, where: str = "extra") -> dict[str, Any]:
    """A connection's extra: a mapping, or its JSON text (Airflow stores it as text); errors name `where`."""
    if extra is None or (isinstance(extra, str) and not extra.strip()):
        return {}
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except json.JSONDecodeError as e:
            raise ClusterConfigError(f"{where} is not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                                     "it must be a JSON object of the hbase extras") from None
    if not isinstance(extra, Mapping):
        raise ClusterConfigError(f"{where} must be a JSON object of the hbase extras, got {type(extra).__name__}")
    return dict(extra)


def parse_connection(text: str) -> dict[str, Any]:
    """An `AIRFLOW_CONN_*` value (JSON object or URI) as {conn_type, host, port, extra}."""
    text = text.strip()
    if text.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ClusterConfigError(f"connection JSON is malformed ({e.msg} at line {e.lineno} column "
                                     f"{e.colno})") from None
        if not isinstance(data, dict):
            raise ClusterConfigError(f"connection JSON must be an object, got {type(data).__name__}")
        return {
            "conn_type": data.get("conn_type"),
            "host": data.get("host"),
            "port": data.get("port"),
            "extra": parse_extra(data.get("extra")),
        }
    parts = urlsplit(text)
    if not parts.scheme:
        raise ClusterConfigError(f"connection URI has no scheme: {text[:40]!r}")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    extra = parse_extra(query["__extra__"], "the URI's __extra__") if "__extra__" in query else query
    try:
        port = parts.port
    except ValueError:
        raise ClusterConfigError(f"connection URI's port is not a number: {parts.netloc!r}") from None
    return {
        "conn_type": parts.scheme.replace("-", "_"),
        "host": unquote(parts.hostname or "") or None,
        "port": port,
        "extra": extra,
    }


def cluster_from_connection_text(conn_id: str, text: str) -> Cluster:
    fields = parse_connection(text)
    return Cluster.from_connection(conn_id, fields["host"], fields["port"], fields["extra"])


def _invalid(conn_id: str, where: str, error: ClusterConfigError) -> ClusterConfigError:
    """The error of a connection that exists but does not describe a cluster: which connection, where it is
    defined, what is wrong, and where to fix it (one line)."""
    reason = str(error).removeprefix(f"cluster {conn_id!r}: ").replace("\n", " ")
    return ClusterConfigError(f"connection {conn_id!r} ({where}): {reason} — fix it in {where}")


def cli_json(stdout: str) -> Any:
    """The JSON document in an `airflow ... -o json` output. Airflow may print warnings (a deprecated setting, a
    provider's notice) on stdout before it, so the document starts at the first line opening with `[` or `{`."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("[", "{")):
            try:
                return json.loads("\n".join(lines[i:]))
            except json.JSONDecodeError:
                continue
    raise ClusterConfigError(f"no JSON in the output of `airflow connections get`: {stdout[:200]!r}")


def resolve_cluster(
    conn_id: str, environ: Mapping[str, str] | None = None, airflow_cli: bool = True
) -> Cluster:
    """The `Cluster` behind a connection id: the environment first, then `airflow connections get`."""
    environ = os.environ if environ is None else environ
    name = env_var_name(conn_id)
    text = environ.get(name)
    if text:
        try:
            return cluster_from_connection_text(conn_id, text)
        except ClusterConfigError as e:
            raise _invalid(conn_id, name, e) from None
    if airflow_cli and shutil.which("airflow"):
        proc = subprocess.run(
            ["airflow", "connections", "get", conn_id, "-o", "json"],
            capture_output=True, text=True, timeout=120,
        )
        if proc.returncode == 0 and proc.stdout.strip():
            where = f"the Airflow connection (`airflow connections get {conn_id}`)"
            try:
                rows = cli_json(proc.stdout)
                row = rows[0] if isinstance(rows, list) else rows
                extra = parse_extra(row.get("extra_dejson") or row.get("extra"))
                return Cluster.from_connection(conn_id, row.get("host"), row.get("port"), extra)
            except ClusterConfigError as e:
                raise _invalid(conn_id, where, e) from None
    raise ConnectionNotFound(
        f"connection {conn_id!r} not found — set {name} (JSON or URI) "
        f"or create it with `airflow connections add {conn_id}`"
    )
