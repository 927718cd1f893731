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
from typing import TYPE_CHECKING, Any, Mapping, Sequence

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
    """An Admin of the shell's own JRuby (the same configuration and credentials as the shell's), `hm_admin`, its
    asynchronous twin `hm_aadmin` (the ACL fence's changes all at once) and the ACL batch's helpers, made before
    the freeze."""
    return ["hm_conn = org.apache.hadoop.hbase.client.ConnectionFactory.createConnection("
            "org.apache.hadoop.hbase.HBaseConfiguration.create)",
            "hm_admin = hm_conn.getAdmin",
            "hm_aadmin = org.apache.hadoop.hbase.client.ConnectionFactory.createAsyncConnection("
            "hm_conn.getConfiguration).get.getAdmin; nil",
            *ACL_HELPERS]


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
#
# The fence fails closed: whatever it cannot see, read or prove stops the cut-over before the freeze (nothing
# changed), or lifts the fence inside it.
# * `hbase.superuser` (users and @groups, from the servers' /conf) pass every permission check and need not appear
#   in `user_permission`: each must be in `freeze_exempt` (the operator's word that it is no client of the tables).
# * A `user_permission` line the parser does not understand refuses, named (`UnreadablePermissions`).
# * WRITE held on a table's namespace is taken away at namespace level when every table of the namespace is cut
#   over; otherwise it would stop tables that are not, so it is refused, naming them. Global WRITE: refused.
# * Every change is made in one statement, all at once (`AsyncAdmin.grant`/`revoke` futures, then waited for).
# * The fence is proven, not waited for: a canary principal of the toolkit's, granted like the clients, tries a
#   write on every region server holding a region of the tables (a checkAndMutate whose condition never holds, so
#   nothing is ever written: HBase's AccessController checks READ and WRITE before the condition,
#   `preCheckAndPut`); the fence holds once each is refused (`AccessDeniedException`), polled up to a bound.

ACTIONS = {"R": "READ", "W": "WRITE", "X": "EXEC", "C": "CREATE", "A": "ADMIN"}
_PERMISSION_LINE = re.compile(r"^\s*(?P<user>\S+)\s+(?P<scope>\S*?):\s*"
                              r"\[Permission:\s*actions=(?P<actions>[A-Z]+(?:,[A-Z]+)*)?\]\s*$")
_NOT_A_PERMISSION = re.compile(r"^\s*(User\s+Namespace,Table,Family,Qualifier:Permission|\d+ row\(s\)( in .*)?|"
                               r"Took \d+(\.\d+)? seconds|=>.*|hbase(:\d+:\d+|\(main\):\d+:\d+)>.*|nil)\s*$")


class UnreadablePermissions(ValueError):
    """`user_permission` printed a line the parser does not understand: an ACL fence built without it could leave
    a writer unfenced, so it refuses; the message names each line."""


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

    def describe(self) -> str:
        where = {"global": "globally", "namespace": f"on namespace {self.namespace}",
                 "table": f"on {self.table_name}" + (f" family {self.family}" if self.family else "")
                 + (f":{self.qualifier}" if self.qualifier else "")}[self.scope]
        return f"{self.principal} {self.actions or '-'} {where}"

    def with_actions(self, actions: str) -> "Grant":
        return Grant(self.principal, self.namespace, self.table, self.family, self.qualifier, actions)


def _letters(actions: str) -> str:
    names = {a.strip().upper() for a in actions.split(",") if a.strip()}
    unknown = names - set(ACTIONS.values())
    if unknown:
        raise ValueError(f"unknown action(s) {', '.join(sorted(unknown))}")
    return "".join(letter for letter, name in ACTIONS.items() if name in names)


def parse_user_permission(stdout: str) -> list[Grant]:
    """The permissions `user_permission` statements printed (HBase 2.x shell: ` bob  default,t1,,: [Permission:
    actions=READ,WRITE]`; a global entry's scope is `,,,`, 1.x listed it as `hbase,acl,,`). The shell's own lines
    (header, `N row(s)`, `Took`, echoes, return values) are skipped; any other line raises UnreadablePermissions
    naming it: a permission not understood is a writer the fence could miss."""
    grants, unread = [], []
    for line in stdout.splitlines():
        if not line.strip() or _NOT_A_PERMISSION.match(line):
            continue
        match = _PERMISSION_LINE.match(line)
        try:
            if not match:
                raise ValueError("not a permission line")
            actions = _letters(match.group("actions") or "")
        except ValueError:
            unread.append(line.strip())
            continue
        scope = match.group("scope").split(",")
        namespace, table, family, qualifier = scope if len(scope) == 4 else ("?", "", "?", "")
        if ":" in table:  # 2.x prints a namespaced table's full name: `ns,ns:t,,`
            table_ns, _, table = table.partition(":")
            namespace = namespace if table_ns == namespace else "?"
        if namespace == "hbase" and table == "acl":  # how 1.x listed global permissions
            namespace, table = "", ""
        if family and not table or table and not namespace or "?" in (namespace, family):
            unread.append(line.strip())
            continue
        grants.append(Grant(match.group("user"), namespace, table, family, qualifier, actions))
    if unread:
        raise UnreadablePermissions(f"{len(unread)} line(s) of user_permission not understood, so an ACL fence could "
                                    "miss a writer: " + "; ".join(repr(u[:200]) for u in unread[:10])
                                    + " (fix the principal or its grant, or freeze with READONLY)")
    return grants


def user_permission_statement(scope: str | None = None) -> str:
    """`user_permission` (global), `user_permission '@ns'` (a namespace) or `user_permission 't'` (a table)."""
    return "user_permission" if scope is None else f"user_permission {ruby_string(scope)}"


def acl_read_statements(tables: Sequence[str]) -> list[str]:
    """The `user_permission` statements `acl_fence_plan` needs (each line printed names its own scope, so their
    outputs can be read together): global, each namespace of the tables, each table."""
    namespaces = sorted({namespace_of(t) for t in tables})
    return [user_permission_statement(), *(user_permission_statement("@" + ns) for ns in namespaces),
            *(user_permission_statement(t) for t in dict.fromkeys(tables))]


def namespace_of(table: str) -> str:
    return table.split(":", 1)[0] if ":" in table else "default"


NSTABLE_MARK = "hbase_migration_nstable "


def namespace_tables_statement(namespaces: Sequence[str]) -> str:
    """Every table of each namespace, one `hbase_migration_nstable <ns> <table>` line each
    (`parse_namespace_tables`). Needs `jruby_admin_statements()` first."""
    names = "[" + ", ".join(ruby_string(n) for n in namespaces) + "]"
    return (f"{names}.each {{ |n| hm_admin.listTableNamesByNamespace(n).each {{ |t| puts \"{NSTABLE_MARK}\" + n + "
            "\" \" + t.getNameAsString } }; nil")


def parse_namespace_tables(stdout: str, namespaces: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {n: [] for n in namespaces}
    for line in stdout.splitlines():
        text = line.strip()
        if text.startswith(NSTABLE_MARK):
            namespace, _, table = text[len(NSTABLE_MARK):].partition(" ")
            out.setdefault(namespace, []).append(table)
    return out


# The batch: one statement of data for helpers defined with the Admin (`jruby_admin_statements`), so the freeze's
# statement stays short whatever the number of grants (the shell's reader is slow on a long line).
_A = "org.apache.hadoop.hbase.security.access"
ACL_HELPERS = [
    # an entry: [principal, scope (table | namespace | global), name, family, qualifier, actions letters]
    "hm_perm = lambda { |e| a = e[5].chars.map { |c| {'R' => 'READ', 'W' => 'WRITE', 'X' => 'EXEC', "
    f"'C' => 'CREATE', 'A' => 'ADMIN'}}[c] }}.map {{ |n| {_A}.Permission::Action.valueOf(n) }}"
    f".to_java({_A}.Permission::Action); b = e[1] == 'table' ? {_A}.Permission.newBuilder("
    f"org.apache.hadoop.hbase.TableName.valueOf(e[2])) : (e[1] == 'namespace' ? {_A}.Permission.newBuilder(e[2]) "
    f": {_A}.Permission.newBuilder); b = b.withFamily(org.apache.hadoop.hbase.util.Bytes.toBytesBinary(e[3])) "
    "if e[3] != ''; b = b.withQualifier(org.apache.hadoop.hbase.util.Bytes.toBytesBinary(e[4])) if e[4] != ''; "
    f"{_A}.UserPermission.new(e[0], b.withActions(a).build) }}",
    "hm_acl_batch = lambda { |grants, revokes, timeout_s| t0 = java.lang.System.nanoTime; fs = grants.map { |e| "
    "[e, hm_aadmin.grant(hm_perm.call(e), false)] } + revokes.map { |e| [e, hm_aadmin.revoke(hm_perm.call(e))] }; "
    "bad = []; fs.each { |e, f| begin; f.get(timeout_s, java.util.concurrent.TimeUnit::SECONDS); "
    "rescue java.lang.Throwable, Exception => x; bad << (e.inspect + ': ' + x.to_s.gsub(/\\s+/, ' ')[0, 300]); "
    "end }; bad.each { |b| puts 'hbase_migration_acl_failed ' + b }; puts 'hbase_migration_acl changed=' + "
    "(fs.length - bad.length).to_s + ' failed=' + bad.length.to_s + ' ms=' + "
    "((java.lang.System.nanoTime - t0) / 1000000).to_s; nil }",
]
ACL_MARK, ACL_FAILED_MARK = "hbase_migration_acl ", "hbase_migration_acl_failed "


def _entry(g: Grant, actions: str) -> str:
    name = {"table": g.table_name, "namespace": g.namespace, "global": ""}[g.scope]
    return "[" + ", ".join(ruby_string(v) for v in (g.principal, g.scope, name, g.family, g.qualifier, actions)) + "]"


def acl_batch_statement(grants: Sequence[tuple[Grant, str]] = (), revokes: Sequence[Grant] = (),
                        timeout_s: int = 120) -> str:
    """Every change at once: `grants` as (permission, the actions it is to have exactly: `Admin.grant` with
    mergeExistingPermissions=false, one change each), `revokes` removed (`Admin.revoke` of the actions listed),
    through the async Admin, all futures waited for; prints `hbase_migration_acl changed=N failed=M ms=T` and a
    `hbase_migration_acl_failed` line per change that failed (`parse_acl_batch`). (The shell's `grant` merges with
    what a principal holds, HBase 2.x AccessControlClient: it cannot take WRITE away; `revoke` then `grant` would
    leave a moment with no READ.) Needs `jruby_admin_statements()` first."""
    for g, actions in grants:
        if not actions:
            raise ValueError(f"a grant of no action to {g.principal}: revoke instead")
    listed = "[" + ", ".join(_entry(g, a) for g, a in grants) + "]"
    removed = "[" + ", ".join(_entry(g, g.actions) for g in revokes) + "]"
    return f"hm_acl_batch.call({listed}, {removed}, {int(timeout_s)})"


def parse_acl_batch(stdout: str) -> tuple[int, list[str]]:
    """(changes made, the failures named) from `acl_batch_statement`'s output; ValueError when it printed no
    summary (it did not run)."""
    failed = [line.strip()[len(ACL_FAILED_MARK):] for line in stdout.splitlines()
              if line.strip().startswith(ACL_FAILED_MARK)]
    summary = next((line.strip() for line in stdout.splitlines() if line.strip().startswith(ACL_MARK)), None)
    if summary is None:
        raise ValueError(f"the ACL batch printed no summary: {stdout[-300:]!r}")
    fields = dict(part.split("=", 1) for part in summary[len(ACL_MARK):].split())
    return int(fields["changed"]), failed


@dataclass(frozen=True)
class AclFence:
    """What fencing the tables by ACL takes: the statement that takes WRITE away and the one that gives it back
    (exactly the actions found; the canary's own grants are not given back, they are revoked after the window),
    who is fenced, the namespaces fenced as such, and what cannot be fenced (refusals)."""

    fence: tuple[str, ...]
    unfence: tuple[str, ...]
    fenced: tuple[Grant, ...]
    refusals: tuple[str, ...]
    namespaces: tuple[str, ...] = ()
    # the fence again without the canary's grants: what puts back the fence `unfence` lifts (a later window that
    # gave this side its WRITE back before its switch, then aborted)
    refence: tuple[str, ...] = ()


def superuser_refusals(superusers: Mapping[str, Sequence[str]], exempt: Sequence[str]) -> list[str]:
    """Each `hbase.superuser` entry (user or @group) not in `exempt`, with where it was found: the servers whose
    /conf named it, or "run spec" (the operator's attestation, `superusers`)."""
    exempt_set = set(exempt)

    def found(where: Sequence[str]) -> str:
        servers = sorted(w for w in where if w != "run spec")
        said = [f"/conf of {', '.join(servers[:3])}{f' and {len(servers) - 3} more' if len(servers) > 3 else ''}"
                ] if servers else []
        return ", ".join(said + (["the run spec's superusers"] if "run spec" in where else []))

    return [f"{who} is in hbase.superuser ({found(where)}): a superuser passes every permission check, so an ACL "
            f"fence cannot stop it; put {who} in freeze_exempt if it writes to none of these tables (a group: none "
            "of its members), or freeze with READONLY"
            for who, where in sorted(superusers.items()) if who not in exempt_set]


def acl_conf_refusal(confs: Mapping[str, Mapping[str, str]], attested: Sequence[str] | None
                     ) -> tuple[dict[str, list[str]], str | None]:
    """Pure: from every server's /conf (`hbase_conf.read_server_confs`), who passes every permission check
    (`hbase_conf.resolve_superusers`) and why an ACL fence cannot be built (None: it can): a region server without
    HBase's AccessController (authorization on and the coprocessor on its regions) checks no permission at all;
    a superuser list that is unreadable and not attested."""
    from hbase_migration.clusters.hbase_conf import resolve_superusers, runs_access_controller

    without = sorted(s for s, p in confs.items() if not s.startswith("master ") and not runs_access_controller(p))
    if without:
        return {}, (f"an ACL freeze needs HBase's AccessController on every region server, and /conf of "
                    f"{', '.join(without[:3])}{', ...' if len(without) > 3 else ''} shows none "
                    "(hbase.security.authorization=true and org.apache.hadoop.hbase.security.access.AccessController "
                    "in hbase.coprocessor.region.classes): its writes are not checked; freeze with READONLY")
    return resolve_superusers(confs, attested)


def default_freeze(confs: Mapping[str, Mapping[str, str]] | None, attested: Sequence[str] | None,
                   unreadable: str = "") -> tuple[str, str]:
    """Pure: the run spec's `freeze_method: auto` from the source's /conf (`hbase_conf.read_server_confs`; None:
    not read, `unreadable` says why) -> (method, why). `acl` where every region server runs HBase's
    AccessController and hbase.superuser is known (shown, or attested in `superusers`): no region reopens and the
    source stays fenced after the switch while the reverse peer's sink (the HBase superuser) still writes to it.
    Otherwise `readonly`, which works on any cluster but must be lifted after the switch for the reverse peer."""
    if confs is None:
        return "readonly", f"the source's /conf could not be read ({unreadable}): READONLY, which needs no ACL"
    found, why = acl_conf_refusal(confs, attested)
    if why is None:
        return "acl", ("every region server of the source runs HBase's AccessController (/conf) and hbase.superuser "
                       f"is known ({', '.join(sorted(found)) or 'none besides the HBase user'}): ACL, no region "
                       "reopens, and the source stays fenced after the switch while the reverse peer still writes")
    if why.startswith("an ACL freeze needs"):
        return "readonly", ("the source runs no AccessController on some region server (/conf): READONLY (an ACL "
                            "fence would stop nothing there)")
    return "readonly", f"the source runs the AccessController but {why.split(', so ')[0]} and is not attested " \
                       "(the run spec's superusers): READONLY, which stops superusers too"


def acl_fence_plan(tables: Sequence[str], grants: Sequence[Grant], exempt: Sequence[str] = (), *,
                   superusers: Mapping[str, Sequence[str]] | None = None,
                   namespace_tables: Mapping[str, Sequence[str]] | None = None,
                   canary: str | None = None) -> AclFence:
    """Pure: from every permission read (global, the tables' namespaces, the tables), the fence of `tables`.

    Each grant with WRITE (table, family, qualifier; or a namespace of the tables) of a principal not in `exempt`
    is replaced by the same actions without WRITE (a revoke when WRITE was all it had); unfencing grants exactly
    the actions found back, except the `canary`'s (the toolkit's own principal: revoked after the window). Refused,
    each named: a superuser not exempt (`superusers`: principal -> servers whose /conf lists it); WRITE held
    globally; WRITE on a namespace holding tables not cut over (`namespace_tables`: namespace -> its tables; not
    read: refused too, the fence would stop tables nobody listed)."""
    wanted = set(tables)
    namespaces = {namespace_of(t) for t in tables}
    exempt_set = set(exempt)
    changes: list[tuple[Grant, str]] = []
    revokes: list[Grant] = []
    restore: list[tuple[Grant, str]] = []
    again: list[tuple[Grant, str]] = []
    again_revokes: list[Grant] = []
    fenced: list[Grant] = []
    fenced_ns: set[str] = set()
    refusals = superuser_refusals(superusers or {}, exempt)
    for g in grants:
        if not g.writes or g.principal in exempt_set:
            continue
        if g.scope == "global":
            refusals.append(f"{g.principal} holds WRITE globally ({g.actions}): the fence would stop every table of "
                            "the cluster; revoke it globally for the cut-over, exempt it (freeze_exempt), or freeze "
                            "with READONLY")
            continue
        if g.scope == "namespace":
            if g.namespace not in namespaces:
                continue
            members = (namespace_tables or {}).get(g.namespace)
            others = None if members is None else sorted(set(members) - wanted)
            if others is None or others:
                refusals.append(f"{g.principal} holds WRITE on namespace {g.namespace} ({g.actions}): fencing it "
                                "there would also stop "
                                + (f"{', '.join(others[:10])}{', ...' if len(others) > 10 else ''}, not cut over"
                                   if others else "tables not listed (the namespace's tables could not be read)")
                                + "; grant WRITE per table instead, exempt it (freeze_exempt), cut those tables over "
                                "too, or freeze with READONLY")
                continue
            fenced_ns.add(g.namespace)
        elif g.table_name not in wanted:
            continue
        kept = g.actions.replace("W", "")
        if kept:
            changes.append((g, kept))
        else:
            revokes.append(g)
        if g.principal != canary:
            restore.append((g, g.actions))
            if kept:
                again.append((g, kept))
            else:
                again_revokes.append(g)
        fenced.append(g)
    fence = (acl_batch_statement(changes, revokes),) if fenced else ()
    unfence = (acl_batch_statement(restore),) if restore else ()
    refence = (acl_batch_statement(again, again_revokes),) if restore else ()
    return AclFence(fence, unfence, tuple(fenced), tuple(refusals), tuple(sorted(fenced_ns)), refence)


# The canary -------------------------------------------------------------------------------------

CANARY_MARK, CANARY_DONE_MARK = "hbase_migration_canary ", "hbase_migration_canary_done "
CANARY_QUALIFIER = "hbase-migration-fence-canary"


def canary_grants(canary: str, tables: Sequence[str], namespaces: Sequence[str] = ()) -> list[Grant]:
    """The canary's permissions, like a client's: READ and WRITE on each table, and on each namespace whose WRITE
    the fence takes away at namespace level (so its refusal proves both kinds of change reached a server)."""
    return ([Grant(canary, namespace_of(t), t.split(":", 1)[-1], actions="RW") for t in dict.fromkeys(tables)]
            + [Grant(canary, ns, "", actions="RW") for ns in dict.fromkeys(namespaces)])


def canary_statements(principal: str, keytab: str | None = None, timeout_ms: int = 10_000) -> list[str]:
    """A connection of the shell's JRuby as the canary principal (Kerberos: logged in from `keytab`; simple
    authentication: the name alone), with few retries, and the probe `hm_probe.call(tables, want, bound_s, tag)`:
    on every region server holding a region of a table, a checkAndMutate as the canary whose condition never holds
    (nothing is written); polled until each answers `want` (ALLOWED: the check ran, the write was permitted;
    REFUSED: AccessDeniedException) or `bound_s` passed; one `hbase_migration_canary` line per (table, server)
    with its final answer and when it first gave the one wanted, then `hbase_migration_canary_done`
    (`parse_canary`). Needs `jruby_admin_statements()` first (its Admin reads the region locations)."""
    ugi = "org.apache.hadoop.security.UserGroupInformation"
    login = (f"{ugi}.loginUserFromKeytabAndReturnUGI({ruby_string(principal)}, {ruby_string(keytab)})" if keytab
             else f"{ugi}.createRemoteUser({ruby_string(principal)})")
    tn = "org.apache.hadoop.hbase.TableName.valueOf"
    return [
        "hm_cconf = org.apache.hadoop.hbase.HBaseConfiguration.create(hm_conn.getConfiguration); "
        f"hm_cconf.setInt('hbase.client.retries.number', 2); hm_cconf.setInt('hbase.client.operation.timeout', "
        f"{int(timeout_ms)}); hm_cconf.setInt('hbase.rpc.timeout', {int(timeout_ms)}); nil",
        f"hm_cconn = org.apache.hadoop.hbase.client.ConnectionFactory.createAsyncConnection(hm_cconf, "
        f"org.apache.hadoop.hbase.security.User.create({login})).get; nil",
        # pairs: [table, server, row, family] for the first region of each table on each server
        f"hm_pairs = lambda {{ |t| tn = {tn}(t); fam = hm_admin.getDescriptor(tn).getColumnFamilies[0].getName; "
        "seen = {}; out = []; hm_conn.getRegionLocator(tn).getAllRegionLocations.each { |loc| next if loc.nil? || "
        "loc.getServerName.nil?; s = loc.getServerName.toString; next if seen[s]; seen[s] = 1; "
        "row = (loc.getRegion.getStartKey.to_a + [0] + 'hbase-migration-canary'.bytes.to_a).to_java(:byte); "
        "out << [t, s, row, fam] }; out }",
        # the pairs of a table are read once (before the freeze, by the first probe) and again only after one of
        # them answered neither way (a region moved)
        "hm_pcache = {}; nil",
        "hm_probe = lambda { |tables, want, bound_s, tag| t0 = java.lang.System.nanoTime; ms = lambda { "
        "(java.lang.System.nanoTime - t0) / 1000000 }; status = {}; at = {}; polls = 0; pairs = {}; loop { "
        "polls += 1; tables.each { |t| hm_pcache[t] = nil if pairs[t] && pairs[t].any? { |p| "
        "status[p[0] + ' ' + p[1]].to_s.start_with?('ERROR') }; hm_pcache[t] ||= hm_pairs.call(t); pairs[t] = "
        "hm_pcache[t] }; todo = pairs.values.flatten(1).select { |p| status[p[0] + ' ' + "
        f"p[1]] != want }}; fs = todo.map {{ |p| cm = org.apache.hadoop.hbase.client.CheckAndMutate.newBuilder(p[2])"
        f".ifEquals(p[3], {ruby_string(CANARY_QUALIFIER)}.to_java_bytes, tag.to_java_bytes).build("
        f"org.apache.hadoop.hbase.client.Put.new(p[2]).addColumn(p[3], {ruby_string(CANARY_QUALIFIER)}"
        f".to_java_bytes, tag.to_java_bytes)); [p, hm_cconn.getTable({tn}(p[0])).checkAndMutate(cm)] }}; "
        "fs.each { |p, f| k = p[0] + ' ' + p[1]; begin; f.get(30, java.util.concurrent.TimeUnit::SECONDS); "
        "status[k] = 'ALLOWED'; rescue java.lang.Throwable, Exception => x; m = x.to_s; status[k] = "
        "(m.include?('AccessDeniedException') || m.include?('Insufficient permissions')) ? 'REFUSED' : 'ERROR ' + "
        "m.gsub(/\\s+/, ' ')[0, 200]; end; at[k] = ms.call if status[k] == want && at[k].nil? }; "
        "break if pairs.values.flatten(1).all? { |p| status[p[0] + ' ' + p[1]] == want } || ms.call > bound_s * "
        "1000; sleep 0.05 }; pairs.values.flatten(1).each { |p| k = p[0] + ' ' + p[1]; puts "
        f"'{CANARY_MARK}' + k + ' ' + (at[k] || -1).to_s + ' ' + status[k].to_s }}; puts '{CANARY_DONE_MARK}"
        "polls=' + polls.to_s + ' ms=' + ms.call.to_s; nil }",
    ]


def canary_probe_statement(tables: Sequence[str], want: str, bound_s: float, tag: str) -> str:
    """`hm_probe` (`canary_statements`) over `tables` until every server answers `want` (ALLOWED or REFUSED)."""
    if want not in ("ALLOWED", "REFUSED"):
        raise ValueError(f"want must be ALLOWED or REFUSED, got {want!r}")
    names = "[" + ", ".join(ruby_string(t) for t in dict.fromkeys(tables)) + "]"
    return f"hm_probe.call({names}, {ruby_string(want)}, {float(bound_s)!r}, {ruby_string(tag)})"


@dataclass(frozen=True)
class CanaryReport:
    """What the canary's probe found: per (table, server) its last answer and when it first gave the one wanted
    (ms from the probe's start; -1: never), the polls made and the probe's milliseconds."""

    answers: Mapping[tuple[str, str], tuple[int, str]]
    polls: int
    ms: int

    def short_of(self, want: str) -> list[str]:
        """`table on server: answer` for each pair that has not answered `want`."""
        return [f"{t} on {s}: {answer}" for (t, s), (_at, answer) in sorted(self.answers.items()) if answer != want]

    def servers(self) -> list[str]:
        return sorted({s for _t, s in self.answers})


def parse_canary(stdout: str) -> CanaryReport:
    """`hm_probe`'s lines -> CanaryReport; ValueError when it printed no `hbase_migration_canary_done` (it did not
    run to its end) or no pair (no region found: nothing proven)."""
    answers: dict[tuple[str, str], tuple[int, str]] = {}
    done = None
    for line in stdout.splitlines():
        text = line.strip()
        if text.startswith(CANARY_DONE_MARK):
            done = dict(part.split("=", 1) for part in text[len(CANARY_DONE_MARK):].split())
        elif text.startswith(CANARY_MARK):
            table, server, at, answer = text[len(CANARY_MARK):].split(" ", 3)
            answers[(table, server)] = (int(at), answer)
    if done is None:
        raise ValueError(f"the canary's probe did not finish: {stdout[-300:]!r}")
    if not answers:
        raise ValueError("the canary's probe found no region of the tables on any server: nothing proven")
    return CanaryReport(answers, int(done["polls"]), int(done["ms"]))


def read_permissions(run: Any, tables: Sequence[str], exempt: Sequence[str] = ()
                     ) -> tuple[list[Grant], dict[str, list[str]]]:
    """I/O through `run(statements) -> ShellOutput` (a session with `jruby_admin_statements()` run, or a one-shot
    shell with them as its prelude): every permission `acl_fence_plan` needs (UnreadablePermissions on a line not
    understood) and the tables of each namespace of the tables on which a principal not exempt holds WRITE."""
    grants = parse_user_permission(run(acl_read_statements(tables)).stdout)
    namespaces = {namespace_of(t) for t in tables}
    exempt_set = set(exempt)
    wanted = sorted({g.namespace for g in grants if g.scope == "namespace" and g.writes and g.namespace in namespaces
                     and g.principal not in exempt_set})
    members = parse_namespace_tables(run([namespace_tables_statement(wanted)]).stdout, wanted) if wanted else {}
    return grants, members
