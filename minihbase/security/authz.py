"""Authorization of a secured cluster, as HBase's AccessController decides it with no grants made: superusers
(the service user `hbase` and `hbase.superuser`) may do everything, anyone else nothing; the refusals carry
AccessChecker's messages (`AuthResult.toContextString`) exactly, since operators and tools match on them.

Early-out is HBase's default (`hbase.security.access.early_out` = true), so a read without grants is refused,
not filtered.
"""
from __future__ import annotations

import json

from minihbase.httpserver import Request

ACCESS_DENIED = "org.apache.hadoop.hbase.security.AccessDeniedException"
SERVICE_USER = "hbase"


def full_table(table: str) -> str:
    """`TableName.getNameWithNamespaceInclAsString()`: `default:t` for `t`."""
    return table if ":" in table else f"default:{table}"


def short_table(table: str) -> str:
    """`TableName.toString()`: the default namespace left out."""
    return table[len("default:"):] if table.startswith("default:") else table


def global_denied(short_user: str, action: str) -> str:
    return f"{ACCESS_DENIED}: Insufficient permissions for user '{short_user}' (global, action={action})"


def namespace_denied(user: str, table: str, families: list[str], action: str) -> str:
    """`requireNamespacePermission(..., tableName, familyMap, ADMIN, CREATE)` (createTable)."""
    name = full_table(table)
    namespace = name.split(":", 1)[0]
    params = [f"namespace={namespace}", f"table={name}"] + ([f"family={'|'.join(sorted(families))}"]
                                                            if families else [])
    return f"{ACCESS_DENIED}: Insufficient permissions (user={user}, scope={namespace}, " \
           f"params=[{','.join(params)}],action={action})"


def table_denied(user: str, table: str, action: str, family: str | None = None,
                 filter_user: bool = False) -> str:
    """`AuthResult.deny(request, reason, user, action, table, family, qualifier)`; `filter_user`: the
    requirePermission overload that adds the (null) `filterUser` extra parameter, which leaves a trailing comma
    in `params`."""
    name = full_table(table)
    text = f"(user={user}, scope={name}, " + (f"family={family}, " if family else "")
    params = [f"table={name}"] + ([f"family={family}"] if family else [])
    joined = ",".join(params) + ("," if filter_user else "")
    return f"{ACCESS_DENIED}: Insufficient permissions {text}params=[{joined}],action={action})"


def read_denied(short_user: str, table: str) -> str:
    """`AccessController.internalPreRead` with early-out."""
    return f"{ACCESS_DENIED}: Insufficient permissions for user '{short_user}' (table={short_table(table)}, " \
           "action=READ)"


class Authorizer:
    def __init__(self, superusers: list[str]):
        self.superusers = {SERVICE_USER, *superusers}

    def is_superuser(self, short_user: str | None) -> bool:
        return short_user is not None and short_user in self.superusers

    # Control API routes that are table DDL, by the AccessController hook they stand for.
    TABLE_ROUTES = {"/control/disable-table", "/control/enable-table", "/control/delete-table",
                    "/control/truncate-table", "/control/alter-table", "/control/alter-family"}

    def control_policy(self, request: Request) -> str | None:
        """The master's control API: reads for any authenticated user, every change for superusers only. The
        data routes (`/control/data/...`) check per table in their handlers."""
        if request.method in ("GET", "HEAD") or self.is_superuser(request.short_user):
            return None
        if request.path.startswith("/control/data/"):
            return None
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            body = {}
        table = body.get("table") if isinstance(body, dict) else None
        if request.path == "/control/create-table" and isinstance(table, str):
            families = list(body.get("families") or {})
            return namespace_denied(request.user, table, families, "CREATE")
        if request.path in self.TABLE_ROUTES and isinstance(table, str):
            return table_denied(request.user, table, "CREATE", filter_user=True)
        return global_denied(request.short_user, "ADMIN")

    def replication_policy(self, request: Request) -> str | None:
        """A region server's RPC port: `replicateWALEntry` needs global WRITE (preReplicateLogEntries); in
        practice the peer's region servers, whose principals map to `hbase`."""
        if self.is_superuser(request.short_user):
            return None
        return global_denied(request.short_user, "WRITE")
