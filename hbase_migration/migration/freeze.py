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
from dataclasses import dataclass
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


# --------------------------------------------------------------------------------------------------
# The cut-over's fences, as statements for a shell session opened before the freeze (`channels.shell_session`)
#
# Two ways to stop client writes to the cut-over tables (`cutover_plan.FREEZE_METHODS`):
#
# * READONLY (any cluster): the table attribute; every region of the table is closed and opened again with it
#   (HBase 2.x `ModifyTableProcedure` -> `ReopenTableRegionsProcedure`): a memstore flush and a region open per
#   region, reads blip too, and a READONLY table refuses the reverse peer's edits as well (the source has to be made
#   writable again after the switch). The shell's `alter` waits table after table and sleeps a second polling
#   each; here all tables are altered at once through the Admin API of the shell's own JRuby
#   (`modifyTableAsync`, futures waited for), which the measured figures in docs/cutover.md compare.
# * ACL (a cluster with HBase's AccessController): every principal holding WRITE on the tables is given the same
#   actions without WRITE (`Admin.grant` with mergeExistingPermissions=false: one change), restored afterwards. A
#   permission change reopens no region: it is written to hbase:acl and reaches the region servers through
#   ZooKeeper (`<parent>/acl/<table>`) in milliseconds. The replication sink writes as the HBase service user (a
#   superuser), so a fenced source still takes the reverse peer's edits. A principal holding WRITE on the
#   table's namespace or globally cannot be fenced per table: refused, named.

READONLY_MARK = "hbase_migration_readonly "


def jruby_admin_statements() -> list[str]:
    """An Admin of the shell's own JRuby (the same configuration and credentials as the shell's), `hm_admin`,
    made before the freeze."""
    return ["hm_conn = org.apache.hadoop.hbase.client.ConnectionFactory.createConnection("
            "org.apache.hadoop.hbase.HBaseConfiguration.create)",
            "hm_admin = hm_conn.getAdmin"]


def readonly_parallel_statement(tables: Sequence[str], readonly: bool, timeout_s: int = 600) -> str:
    """Every table's READONLY changed at once (`modifyTableAsync` of each, then every future waited for: each
    returns once its regions reopened), then each table's attribute printed as `hbase_migration_readonly
    <table>=<true|false>` (`parse_readonly_marks`). Needs `jruby_admin_statements()` first; HBase 2.0+ (1.x's
    Admin has no modifyTableAsync: use `readonly_statement`, one `alter` after the other)."""
    if not isinstance(readonly, bool):
        raise TypeError(f"readonly must be a bool, got {readonly!r}")
    if not tables:
        raise ValueError("no tables to alter")
    names = "[" + ", ".join(ruby_string(t) for t in tables) + "]"
    flag = "true" if readonly else "false"
    return (f"hm_f = {names}.map {{ |t| d = hm_admin.getDescriptor(org.apache.hadoop.hbase.TableName.valueOf(t)); "
            f"hm_admin.modifyTableAsync(org.apache.hadoop.hbase.client.TableDescriptorBuilder.newBuilder(d)"
            f".setReadOnly({flag}).build) }}; hm_f.each {{ |f| f.get({int(timeout_s)}, "
            f"java.util.concurrent.TimeUnit::SECONDS) }}; {names}.each {{ |t| puts \"{READONLY_MARK}\" + t + \"=\" + "
            "hm_admin.getDescriptor(org.apache.hadoop.hbase.TableName.valueOf(t)).isReadOnly.to_s }; nil")


def parse_readonly_marks(stdout: str) -> dict[str, bool]:
    """`hbase_migration_readonly t=true` lines -> {t: True}."""
    out = {}
    for line in stdout.splitlines():
        text = line.strip()
        if text.startswith(READONLY_MARK) and "=" in text:
            table, _, value = text[len(READONLY_MARK):].rpartition("=")
            out[table] = value == "true"
    return out


def flush_statements(tables: Sequence[str]) -> list[str]:
    """`flush 't'` per table: before a READONLY freeze, so closing the regions has little left to flush."""
    return [f"flush {ruby_string(t)}" for t in tables]


# ACL ---------------------------------------------------------------------------------------------

ACTIONS = {"R": "READ", "W": "WRITE", "X": "EXEC", "C": "CREATE", "A": "ADMIN"}
_ACTION_LETTER = {v: k for k, v in ACTIONS.items()}
_PERMISSION_LINE = re.compile(r"^\s*(?P<user>\S+)\s+(?P<scope>[^\s:]*(?:,[^\s:]*)*)\s*:\s*\[?(?P<rest>.*)$")
_ACTIONS_FIELD = re.compile(r"actions=(?P<actions>[A-Z,]*)")


@dataclass(frozen=True)
class Grant:
    """One permission as `user_permission` lists it: a user or `@group`, its scope and its actions (letters in
    RWXCA order). `namespace`, `table`, `family`, `qualifier` empty where the scope is wider."""

    principal: str
    namespace: str
    table: str
    family: str = ""
    qualifier: str = ""
    actions: str = ""

    @property
    def writes(self) -> bool:
        return "W" in self.actions

    @property
    def scope(self) -> str:
        if self.table:
            return "table"
        return "namespace" if self.namespace else "global"

    @property
    def table_name(self) -> str:
        return self.table if self.namespace in ("", "default") else f"{self.namespace}:{self.table}"


def _letters(actions: str) -> str:
    names = {a.strip().upper() for a in actions.split(",") if a.strip()}
    return "".join(letter for letter, name in ACTIONS.items() if name in names or letter in names)


def parse_user_permission(stdout: str) -> list[Grant]:
    """The permissions a `user_permission` statement printed (HBase 2.x shell: `bob  default,t1,,:
    [Permission: actions=READ,WRITE]`; global entries have an empty scope or `hbase:acl`). Header, `N row(s)`,
    `Took` and echo lines are skipped."""
    grants = []
    for line in stdout.splitlines():
        text = line.rstrip()
        if not text.strip() or text.lstrip().startswith(("User ", "Took ", "=>", "hbase:", "hbase(")) \
                or re.match(r"^\s*\d+ row\(s\)", text):
            continue
        match = _PERMISSION_LINE.match(text)
        actions = _ACTIONS_FIELD.search(text)
        if not match or not actions:
            continue
        parts = (match.group("scope").split(",") + ["", "", "", ""])[:4]
        namespace, table, family, qualifier = parts
        if namespace == "hbase" and table == "acl":  # how 1.x listed global permissions
            namespace, table = "", ""
        grants.append(Grant(match.group("user"), namespace, table, family, qualifier,
                            _letters(actions.group("actions"))))
    return grants


def user_permission_statement(scope: str | None = None) -> str:
    """`user_permission` (global), `user_permission '@ns'` (a namespace) or `user_permission 't'` (a table)."""
    return "user_permission" if scope is None else f"user_permission {ruby_string(scope)}"


_ACL = "org.apache.hadoop.hbase.security.access"


def _permission(g: Grant, actions: str) -> str:
    """A Ruby expression building the Java `Permission` of `g`'s table (family, qualifier) with `actions`."""
    to_bytes = "org.apache.hadoop.hbase.util.Bytes.toBytesBinary"
    out = (f"{_ACL}.Permission.newBuilder(org.apache.hadoop.hbase.TableName.valueOf({ruby_string(g.table_name)}))")
    if g.family:
        out += f".withFamily({to_bytes}({ruby_string(g.family)}))"
        if g.qualifier:
            out += f".withQualifier({to_bytes}({ruby_string(g.qualifier)}))"
    listed = ", ".join(f"{_ACL}.Permission::Action::{ACTIONS[letter]}" for letter in actions)
    return out + f".withActions([{listed}].to_java({_ACL}.Permission::Action)).build"


def replace_grant_statement(g: Grant, actions: str) -> str:
    """`Admin.grant(UserPermission, mergeExistingPermissions=false)`: the principal's actions on that scope become
    exactly `actions`, in one change. (The shell's `grant` merges with what the principal has, HBase 2.x
    AccessControlClient: it cannot take WRITE away; `revoke` then `grant` would leave a moment with no READ.)
    Needs `jruby_admin_statements()` first."""
    if not actions:
        raise ValueError("replace_grant_statement needs at least one action: revoke instead")
    return f"hm_admin.grant({_ACL}.UserPermission.new({ruby_string(g.principal)}, {_permission(g, actions)}), false)"


def revoke_statement(g: Grant) -> str:
    """`Admin.revoke` of the principal's permission on that scope (used when WRITE was all it held)."""
    return f"hm_admin.revoke({_ACL}.UserPermission.new({ruby_string(g.principal)}, {_permission(g, g.actions)}))"


@dataclass(frozen=True)
class AclFence:
    """What fencing the tables by ACL takes: the statements that take WRITE away, those that give it back
    (exactly the actions found), who is fenced, and what cannot be fenced per table (a refusal)."""

    fence: tuple[str, ...]
    unfence: tuple[str, ...]
    fenced: tuple[Grant, ...]
    refusals: tuple[str, ...]


def acl_fence_plan(tables: Sequence[str], grants: Sequence[Grant], exempt: Sequence[str] = ()) -> AclFence:
    """Pure: from every permission read (global, the tables' namespaces, the tables), the fence of `tables`.

    Each table-level grant with WRITE (whole table, family or qualifier) of a principal not in `exempt` is
    replaced by the same actions without WRITE (a revoke when WRITE was all it had); unfencing grants exactly the
    actions found back. The statements use the session's `hm_admin` (`jruby_admin_statements()`). WRITE held
    globally or on a table's namespace by a principal not exempt is a refusal: a table-level change cannot take it
    away."""
    wanted = set(tables)
    namespaces = {t.split(":", 1)[0] if ":" in t else "default" for t in tables}
    exempt_set = set(exempt)
    fence, unfence, fenced, refusals = [], [], [], []
    for g in grants:
        if not g.writes or g.principal in exempt_set:
            continue
        if g.scope == "global":
            refusals.append(f"{g.principal} holds WRITE globally ({g.actions}): a table-level revoke cannot fence "
                            "it; revoke it globally for the cut-over, exempt it (freeze_exempt), or freeze with "
                            "READONLY")
        elif g.scope == "namespace" and g.namespace in namespaces:
            refusals.append(f"{g.principal} holds WRITE on namespace {g.namespace} ({g.actions}): a table-level "
                            "revoke cannot fence it; revoke it there, exempt it (freeze_exempt), or freeze with "
                            "READONLY")
        elif g.scope == "table" and g.table_name in wanted:
            kept = g.actions.replace("W", "")
            fence.append(replace_grant_statement(g, kept) if kept else revoke_statement(g))
            unfence.append(replace_grant_statement(g, g.actions))
            fenced.append(g)
    return AclFence(tuple(fence), tuple(unfence), tuple(fenced), tuple(refusals))


def acl_read_statements(tables: Sequence[str]) -> list[str]:
    """The `user_permission` statements `acl_fence_plan` needs, one per scope (run each as its own batch, so
    each output is its own): global, each namespace of the tables, each table."""
    namespaces = sorted({t.split(":", 1)[0] if ":" in t else "default" for t in tables})
    return [user_permission_statement(), *(user_permission_statement("@" + ns) for ns in namespaces),
            *(user_permission_statement(t) for t in dict.fromkeys(tables))]
