"""Freezing tables: the table attribute READONLY, set and read back through the cluster's HBase shell.

`alter 't', READONLY => 'true'` (HBase's `TableDescriptorBuilder.setReadOnly`, an online schema change: the
regions reopen, the shell waits for them) makes every region server refuse every mutation of the table
(`HRegion.checkReadOnly`: `DoNotRetryIOException: region is read only`) while reads and scans go on. Replicated
edits go through the same check: a READONLY table refuses a peer's edits too, which then wait in the sending
cluster's WALs (the sink fails, the source retries) until the table is writable again.

The shell path is the same for HBase 1.x and 2.x (both shells take the statement and print the attribute in
`describe`), whatever the cluster's peer-admin backend. Statement builders and the `describe` parser are pure;
`set_readonly` checks every table first (one `describe` session: a missing table fails it and nothing is
changed), alters only the tables not yet in the wanted state, and reads every table back.
"""
from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Sequence

from hbase_migration.migration.schema import describe_statement, ruby_string

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

_TABLE_STATE = re.compile(r"^\s*Table (\S+) is (ENABLED|DISABLED)\s*$")
_READONLY = re.compile(r"\bREADONLY\s*=>\s*'?(true|false)'?", re.IGNORECASE)


class FreezeError(RuntimeError):
    """A READONLY change did not take (or the state could not be read); the message says each table's state."""


def readonly_statement(table: str, readonly: bool) -> str:
    """`alter 't', READONLY => 'true'` (or 'false')."""
    if not isinstance(readonly, bool):
        raise TypeError(f"readonly must be a bool, got {readonly!r}")
    return f"alter {ruby_string(table)}, READONLY => '{'true' if readonly else 'false'}'"


def wal_roll_statement(servername: str) -> str:
    """`wal_roll 'host,port,startcode'`: the server starts a new WAL (HBase 1.x+; `hlog_roll` is its old name)."""
    return f"wal_roll {ruby_string(servername)}"


def split_describes(output: str) -> dict[str, str]:
    """One shell session's output of several `describe`s, split per table (at each `Table X is ...` line)."""
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        match = _TABLE_STATE.match(line)
        if match:
            current = parts.setdefault(match.group(1), [])
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in parts.items()}


def _quoted_name_forms(table: str) -> tuple[str, ...]:
    return (table, f"'{table}'", f'"{table}"')


def parse_readonly(describe_output: str, table: str) -> bool:
    """Whether `describe 'table'` shows READONLY => 'true' among its table attributes.

    HBase prints the attributes on the line after `Table t is ENABLED`: `t, {TABLE_ATTRIBUTES => {READONLY =>
    'true'}}` (2.x; 1.x quotes the name), and nothing there before READONLY was ever set (not read-only);
    after an unfreeze it keeps `READONLY => 'false'`. Raises FreezeError when the output is not this table's.
    """
    lines = describe_output.splitlines()
    header = next((i for i, line in enumerate(lines) if (m := _TABLE_STATE.match(line)) and m.group(1) == table),
                  None)
    if header is None:
        raise FreezeError(f"`describe` output for table {table!r} not found: {describe_output[:300]!r}")
    for line in lines[header + 1:]:
        text = line.strip()
        if _TABLE_STATE.match(line) or text.startswith("COLUMN FAMILIES DESCRIPTION") or text.startswith("{NAME"):
            break
        if any(text.startswith(form + ", {") for form in _quoted_name_forms(table)) and "TABLE_ATTRIBUTES" in text:
            match = _READONLY.search(text)
            return bool(match and match.group(1).lower() == "true")
    return False


# --------------------------------------------------------------------------------------------------
# I/O through the shell


def readonly_states(cluster: "Cluster", tables: Sequence[str]) -> dict[str, bool]:
    """Each table's READONLY attribute, from one `describe` session (a missing table fails it: ShellCommandError
    with the shell's `ERROR: Unknown table t!`)."""
    sections = describe_sections(cluster, tables, FreezeError)
    return {table: parse_readonly(text, table) for table, text in sections.items()}


def describe_sections(cluster: "Cluster", tables: Sequence[str], error: type[Exception]) -> dict[str, str]:
    """Each table's `describe` output, from one shell session (tables.py's schemas and the READONLY states read
    it alike); `error` names a table the shell printed nothing for."""
    from hbase_migration.clusters import channels

    tables = list(dict.fromkeys(tables))
    if not tables:
        return {}
    out = channels.shell(cluster, [describe_statement(t) for t in tables],
                         timeout_s=max(cluster.shell_timeout_s, 60.0 + 5 * len(tables)))
    sections = split_describes(out.stdout)
    for table in tables:
        if table not in sections:
            raise error(f"cluster {cluster.name!r}: `describe` printed nothing for table {table!r}")
    return {table: sections[table] for table in tables}


def set_readonly(cluster: "Cluster", tables: Sequence[str], readonly: bool, *,
                 dry_run: bool = False) -> list[dict[str, Any]]:
    """Make every table READONLY (or writable), idempotently, and read it back.

    Tables already in the wanted state are left alone (`unchanged`). All tables are described first, so a
    missing one fails before anything is altered. The alters run in one shell session; if it fails midway, the
    error says which tables are READONLY afterwards. Returns one dict per table: table, readonly (now),
    outcome (frozen | unfrozen | unchanged | would_freeze | would_unfreeze), statement (None when unchanged).
    """
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.shell import ShellCommandError

    tables = list(dict.fromkeys(tables))
    if not tables:
        raise ValueError("no tables to alter")
    verb = "freeze" if readonly else "unfreeze"
    before = readonly_states(cluster, tables)
    todo = [t for t in tables if before[t] is not readonly]
    statements = [readonly_statement(t, readonly) for t in todo]
    if dry_run or not todo:
        return [{"table": t, "readonly": before[t], "statement": readonly_statement(t, readonly) if t in todo else None,
                 "outcome": (f"would_{verb}" if t in todo else "unchanged")} for t in tables]
    log.info("%s on %s: %s", verb, cluster.name, "; ".join(statements))
    try:
        channels.shell(cluster, statements, timeout_s=max(cluster.shell_timeout_s, 300.0))
    except ShellCommandError as exc:
        try:
            shown = ", ".join(f"{t}: {'READONLY' if ro else 'writable'}"
                              for t, ro in readonly_states(cluster, tables).items())
        except Exception as read_error:  # the report must not hide the original failure
            shown = f"unreadable ({read_error})"
        raise FreezeError(f"{verb} of {', '.join(todo)} on cluster {cluster.name!r} failed: {exc}\n"
                          f"state afterwards: {shown}") from exc
    after = readonly_states(cluster, tables)
    wrong = [t for t in tables if after[t] is not readonly]
    if wrong:
        raise FreezeError(f"{verb} on cluster {cluster.name!r}: `describe` still shows READONLY="
                          f"{str(not readonly).lower()} for {', '.join(wrong)} after the alter; state: "
                          + ", ".join(f"{t}: {'READONLY' if ro else 'writable'}" for t, ro in after.items()))
    outcome = "frozen" if readonly else "unfrozen"
    return [{"table": t, "readonly": after[t], "statement": readonly_statement(t, readonly) if t in todo else None,
             "outcome": outcome if t in todo else "unchanged"} for t in tables]


def roll_wals(cluster: "Cluster", zk_client: Any = None) -> list[str]:
    """Roll the WAL of every live region server (`wal_roll`); returns the servers rolled.

    Why the cut-over needs it: a new peer's queue starts at the beginning of each server's current WAL (HBase
    enqueues the current WAL and reads it from offset 0), so every edit already in it would ship through the new
    peer. After a roll only the edits made from then on are in the new peer's queues."""
    from hbase_migration.clusters import channels, zk

    if zk_client is None:
        with zk.connect(cluster, timeout=cluster.timeout_s) as client:
            servers = [s.servername for s in zk.live_region_servers(client, cluster.znode_parent)]
    else:
        servers = [s.servername for s in zk.live_region_servers(zk_client, cluster.znode_parent)]
    if servers:
        channels.shell(cluster, [wal_roll_statement(s) for s in servers], timeout_s=max(cluster.shell_timeout_s, 60.0))
    return servers
