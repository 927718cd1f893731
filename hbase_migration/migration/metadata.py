"""What replication does not carry and clients need on the target: the grants, quotas and RS groups of the migrated
tables (issue 39). Which of the three a cluster has is read from its servers' /conf (`features_of`); a cluster
without one is not asked, and everything is read in one shell session per cluster (`read_statements`).

Grants are read with `user_permission` on each side (global, each namespace of the tables, each table: the
parser of `migration.freeze`, which refuses a line it does not understand) and compared principal by principal,
scope by scope (global, namespace, table, family, qualifier). Principals are mapped across realms by their short
name (`bob/host@DC1.EXAMPLE` and `bob@DC2.EXAMPLE` are `bob`), or by an explicit mapping. `--apply` gives the
target exactly the source's actions in one shell session (`freeze.acl_batch_statement`); a permission only the
target holds is listed, never revoked.

Quotas are read with `list_quotas` (its exact format pinned against HBase 2.6.4: `parse_list_quotas`, which refuses a
line it does not understand): throttles and bypasses of users (globally, on the tables, on their namespaces), of the
tables and of their namespaces, and the space quotas of the tables and namespaces; `--apply` sets the source's with
`set_quota` in the same session as the grants. RS groups (`list_rsgroups`): a table whose group the target has is
moved there by `--apply`; a group the target lacks is listed with its fix, never created.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from hbase_migration.migration.freeze import Grant, namespace_of
from hbase_migration.migration.schema import ruby_string
from hbase_migration.replication.model import normalize_table


def short_name(principal: str) -> str:
    """`bob/host@REALM` -> `bob`; a `@group` stays as it is."""
    if principal.startswith("@"):
        return principal
    return principal.split("@", 1)[0].split("/", 1)[0]


def parse_principal_map(value: str) -> dict[str, str]:
    """`src=dst,...` (source principal = target principal); ValueError naming what is wrong."""
    out: dict[str, str] = {}
    for item in (i.strip() for i in (value or "").split(",")):
        if not item:
            continue
        source, sep, target = (part.strip() for part in item.partition("="))
        if not sep or not source or not target or any(c.isspace() or c in "'\"\\" for c in source + target):
            raise ValueError(f"{item!r} is not SOURCE=TARGET (e.g. svc/app@DC1.EXAMPLE=svc-dc2)")
        if source in out:
            raise ValueError(f"{source} is mapped twice")
        out[source] = target
    return out


def mapped(principal: str, mapping: Mapping[str, str]) -> str:
    """The target's name for a source principal: the mapping's, else its short name."""
    return mapping.get(principal) or short_name(principal)


@dataclass(frozen=True)
class Difference:
    """One thing the target lacks or holds otherwise: kind (`table`, `grant`, `quota`, `rsgroup`), subject,
    source's and target's values (None: none there); whether `--apply` makes it (`applies`) and, when it does not,
    what the operator does (`fix`)."""

    kind: str
    subject: str
    source: str | None
    target: str | None
    applies: bool = field(default=False, compare=False)
    fix: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "source": self.source, "target": self.target,
                "applies": self.applies, "fix": self.fix}

    def line(self) -> str:
        return (f"{self.kind:<7} {self.subject}: source {self.source or '-'}, target {self.target or '-'}"
                + (f"  (fix: {self.fix})" if self.fix else ""))


def relevant(grants: Iterable[Grant], tables: Sequence[str]) -> list[Grant]:
    """The grants that bear on the tables: global ones, those of their namespaces, those of the tables."""
    names = {normalize_table(t) for t in tables}
    namespaces = {namespace_of(t) for t in names}
    return [g for g in grants if g.scope == "global" or (g.scope == "namespace" and g.namespace in namespaces)
            or (g.scope == "table" and normalize_table(g.table_name) in names)]


def _key(g: Grant, principal: str) -> tuple[str, str, str, str, str]:
    return principal, g.namespace, g.table, g.family, g.qualifier


def grant_differences(source: Iterable[Grant], target: Iterable[Grant], tables: Sequence[str],
                      mapping: Mapping[str, str] | None = None) -> tuple[list[Difference], list[Grant]]:
    """(every difference, the grants that make the target hold the source's actions): source principals mapped,
    target principals by their short name (so `bob@DC2` is `bob`)."""
    mapping = dict(mapping or {})
    wanted: dict[tuple, Grant] = {}
    for g in relevant(source, tables):
        name = mapped(g.principal, mapping)
        key = _key(g, name)
        prior = wanted.get(key)  # two source principals mapped to one: the union of their actions
        actions = "".join(a for a in "RWXCA" if a in g.actions + (prior.actions if prior else ""))
        wanted[key] = Grant(name, g.namespace, g.table, g.family, g.qualifier, actions)
    held: dict[tuple, Grant] = {}
    for g in relevant(target, tables):
        held[_key(g, short_name(g.principal))] = g
    differences, fixes = [], []
    for key in sorted(set(wanted) | set(held)):
        want, have = wanted.get(key), held.get(key)
        if want is not None and have is not None and set(want.actions) == set(have.actions):
            continue
        shown = want or have
        subject = shown.describe().replace(f" {shown.actions or '-'} ", " ", 1)
        differences.append(Difference("grant", subject, want.actions if want else None,
                                      have.actions if have else None, applies=want is not None,
                                      fix="" if want else "target-only: revoke it by hand if unwanted"))
        if want is not None:
            fixes.append(Grant(have.principal if have else want.principal, want.namespace, want.table, want.family,
                               want.qualifier, want.actions))
    return differences, fixes


# ------------------------------------------------------------------------------------------------
# Quotas (`list_quotas`)
#
# The shell prints one row per setting, owner and setting separated by one space (no wrapping: the shell's width
# is 0 when stdout is not a terminal), e.g. (HBase 2.6.4, captured on the bed; tests/unit/migration/test_metadata.py):
#   OWNER  QUOTAS
#    USER => app, TABLE => t1 TYPE => THROTTLE, THROTTLE_TYPE => WRITE_SIZE, LIMIT => 10.00M/sec, SCOPE => MACHINE
#    TABLE => t1 TYPE => SPACE, TABLE => t1, LIMIT => 1073741824, VIOLATION_POLICY => NO_INSERTS
#    USER => app GLOBAL_BYPASS => true
# The owner is `QuotaSettings`' user, table, namespace and region server (`USER => u, TABLE => t`...); a throttle's
# limit is `<n>req`, `<n>CU` or a size printed with two decimals in its largest binary unit (`sizeToString`:
# 10485760 is `10.00M`, 1000000 `976.56K`), then `/<sec|min|hour|day>`; a space limit too (`1.00G`; HBase's
# branch-2 source once printed it in bytes, which is read as well). A rounded figure cannot be set back exactly.

THROTTLE_TYPES = tuple(f"{what}_{unit}" for what in ("REQUEST", "READ", "WRITE")
                       for unit in ("NUMBER", "SIZE", "CAPACITY_UNIT"))
SPACE_POLICIES = ("NO_INSERTS", "NO_WRITES", "NO_WRITES_COMPACTIONS", "DISABLE")
_OWNER_KEYS = ("USER", "TABLE", "NAMESPACE", "REGIONSERVER")
_QUOTA_ROW = re.compile(r"^ (?P<owner>(?:USER|TABLE|NAMESPACE|REGIONSERVER) => .*?) "
                        r"(?P<setting>(?:TYPE => |GLOBAL_BYPASS => ).*)$")
_THROTTLE = re.compile(r"^TYPE => THROTTLE, THROTTLE_TYPE => (?P<type>[A-Z_]+), LIMIT => "
                       r"(?P<limit>\d+req|\d+CU|\d+\.\d\d[BKMGTP]|\d+\.\d\d%)/(?P<unit>nsec|usec|msec|sec|min|hour|day)"
                       r"(?:, SCOPE => (?P<scope>MACHINE|CLUSTER))?$")
_SPACE = re.compile(r"^TYPE => SPACE(?:, TABLE => (?P<table>\S+?))?(?:, NAMESPACE => (?P<namespace>\S+?))?, "
                    r"LIMIT => (?P<limit>\d+\.\d\d[BKMGTP]|\d+), VIOLATION_POLICY => (?P<policy>[A-Z_]+)$")
_BYPASS = re.compile(r"^GLOBAL_BYPASS => (?P<value>true|false)$")
_NOT_A_QUOTA = re.compile(r"^\s*(OWNER\s+QUOTAS|\d+ row\(s\)( in .*)?|Took \d+(\.\d+)? seconds|=>.*|"
                          r"hbase(:\d+:\d+|\(main\):\d+:\d+)>.*|nil)\s*$")


class UnreadableQuotas(ValueError):
    """`list_quotas` printed a line the parser does not understand: a quota not read is one not migrated, so the
    comparison refuses; the message names each line."""


@dataclass(frozen=True)
class Quota:
    """One quota setting as `list_quotas` shows it: its owner (user, table as `ns:t` or `t`, namespace, region
    server; empty where absent), what it limits (`THROTTLE WRITE_SIZE`, `SPACE`, `GLOBAL_BYPASS`) and its value
    (`10.00M/sec MACHINE`, `1073741824 NO_INSERTS`, `true`)."""

    user: str
    table: str
    namespace: str
    regionserver: str
    setting: str
    value: str

    def owner(self) -> str:
        parts = [f"user {self.user}" if self.user else "", f"table {self.table}" if self.table else "",
                 f"namespace {self.namespace}" if self.namespace else "",
                 f"region servers {self.regionserver}" if self.regionserver else ""]
        return " on ".join(p for p in parts if p)

    def subject(self) -> str:
        return f"{self.owner()}: {self.setting.lower().replace('_', ' ')}"

    def with_user(self, user: str) -> "Quota":
        return Quota(user, self.table, self.namespace, self.regionserver, self.setting, self.value)


def _owner(text: str) -> dict[str, str] | None:
    owner: dict[str, str] = {}
    for part in text.split(", "):
        key, sep, value = part.partition(" => ")
        if not sep or key not in _OWNER_KEYS or key in owner or not value or " " in value:
            return None
        owner[key] = value
    return owner


def parse_list_quotas(stdout: str) -> list[Quota]:
    """Every setting `list_quotas` printed; the shell's own lines (header, `N row(s)`, `Took`, echoes) skipped, any
    other line raises UnreadableQuotas naming it."""
    quotas, unread = [], []
    for line in stdout.splitlines():
        if not line.strip() or _NOT_A_QUOTA.match(line):
            continue
        row = _QUOTA_ROW.match(line.rstrip())
        owner = _owner(row.group("owner")) if row else None
        setting = row.group("setting") if row else ""
        quota = None
        if owner is not None:
            who = (owner.get("USER", ""), normalize_table(owner["TABLE"]) if "TABLE" in owner else "",
                   owner.get("NAMESPACE", ""), owner.get("REGIONSERVER", ""))
            if (m := _THROTTLE.match(setting)) and m.group("type") in THROTTLE_TYPES:
                value = f"{m.group('limit')}/{m.group('unit')}" + (f" {m.group('scope')}" if m.group("scope") else "")
                quota = Quota(*who, f"THROTTLE {m.group('type')}", value)
            elif ((m := _SPACE.match(setting)) and m.group("policy") in SPACE_POLICIES and not who[0]
                  and (m.group("table") or m.group("namespace"))):
                quota = Quota(*who, "SPACE", f"{m.group('limit')} {m.group('policy')}")
            elif (m := _BYPASS.match(setting)) and who[0] and not any(who[1:]):
                quota = Quota(*who, "GLOBAL_BYPASS", m.group("value"))
        if quota is None:
            unread.append(line.strip())
        else:
            quotas.append(quota)
    if unread:
        raise UnreadableQuotas(f"{len(unread)} line(s) of list_quotas not understood, so a quota could be left "
                               "behind: " + "; ".join(repr(u[:200]) for u in unread[:10])
                               + " (read it with list_quotas and set it on the target by hand)")
    return quotas


def relevant_quotas(quotas: Iterable[Quota], tables: Sequence[str]) -> list[Quota]:
    """The quotas that bear on the tables: those of the tables and their namespaces (a user's there too), and a
    user's own (throttle or bypass over every table). Region server quotas (`REGIONSERVER => all`) are the
    cluster's, not the tables': left out."""
    names = {normalize_table(t) for t in tables}
    namespaces = {namespace_of(t) for t in names}
    return [q for q in quotas if not q.regionserver and (
        (q.table and q.table in names) or (q.namespace and q.namespace in namespaces)
        or (q.user and not q.table and not q.namespace))]


_SIZE_EXACT = re.compile(r"^(?P<n>\d+)\.00(?P<unit>[BKMGTP])$")


def set_quota_statement(q: Quota) -> str | None:
    """The `set_quota` that gives the target this setting exactly, or None when `list_quotas` printed it rounded
    (a size like `976.56K`, a share `%`: only the operator knows the exact figure)."""
    owner = ", ".join(f"{key} => {ruby_string(value)}" for key, value in
                      (("USER", q.user), ("TABLE", q.table), ("NAMESPACE", q.namespace),
                       ("REGIONSERVER", q.regionserver)) if value)
    if q.setting == "GLOBAL_BYPASS":
        return f"set_quota {owner}, GLOBAL_BYPASS => {q.value}"
    if q.setting == "SPACE":
        limit, policy = q.value.split(" ")
        if m := _SIZE_EXACT.match(limit):
            limit = m.group("n") + m.group("unit")
        elif not limit.isdigit():
            return None
        return f"set_quota TYPE => SPACE, {owner}, LIMIT => {ruby_string(limit)}, POLICY => {policy}"
    kind = q.setting.split(" ", 1)[1]
    what = kind.split("_", 1)[0]
    limit, _, scope = q.value.partition(" ")
    amount, _, unit = limit.partition("/")
    if amount.endswith("req") or amount.endswith("CU"):
        pass
    elif m := _SIZE_EXACT.match(amount):
        amount = m.group("n") + m.group("unit")
    else:
        return None
    if unit not in ("sec", "min", "hour", "day"):
        return None
    return (f"set_quota TYPE => THROTTLE, {owner}, THROTTLE_TYPE => {what}, LIMIT => {ruby_string(amount + '/' + unit)}"
            + (f", SCOPE => {scope}" if scope else ""))


def quota_differences(source: Iterable[Quota], target: Iterable[Quota], tables: Sequence[str],
                      mapping: Mapping[str, str] | None = None) -> tuple[list[Difference], list[Quota]]:
    """(every difference, the settings to give the target): users mapped as grants' principals are (the source's
    by the mapping or short name, the target's by short name), compared setting by setting; a setting only the
    target holds is listed, never removed."""
    mapping = dict(mapping or {})

    def key(q: Quota) -> tuple[str, ...]:
        return q.user, q.table, q.namespace, q.regionserver, q.setting

    wanted = {key(m): m for m in (q.with_user(mapped(q.user, mapping)) if q.user else q
                                  for q in relevant_quotas(source, tables))}
    held = {key(h): h for h in (q.with_user(short_name(q.user)) if q.user else q
                                for q in relevant_quotas(target, tables))}
    differences, fixes = [], []
    for k in sorted(set(wanted) | set(held)):
        want, have = wanted.get(k), held.get(k)
        if want is not None and have is not None and want.value == have.value:
            continue
        statement = set_quota_statement(want) if want is not None else None
        differences.append(Difference(
            "quota", (want or have).subject(), want.value if want else None, have.value if have else None,
            applies=statement is not None,
            fix="" if statement else ("target-only: remove it by hand if unwanted" if want is None else
                                      "list_quotas prints it rounded: set the exact figure by hand")))
        if want is not None:
            fixes.append(want)
    return differences, fixes


# ------------------------------------------------------------------------------------------------
# RS groups (`list_rsgroups`, HBase 2.x shell)
#
# One row per server and table of each group, the group's name on its first row only (a group with neither prints
# its name alone), e.g.:
#   NAME  SERVER / TABLE
#    default server host1:16020
#     table t1
#    batch table ns1:t2
# HBase 2.x needs the hbase-rsgroup module's coprocessor and balancer for this (3.x: hbase.balancer.rsgroup.enabled):
# `features_of` reads from /conf whether a cluster has them, as the AccessController and quotas.

_RSGROUP_ROW = re.compile(r"^ (?P<group>\S*) (?P<kind>server|table) (?P<name>\S+)$")
_RSGROUP_ALONE = re.compile(r"^ (?P<group>\S+) ?$")
_NOT_AN_RSGROUP = re.compile(r"^\s*(NAME\s+SERVER / TABLE|\d+ row\(s\)( in .*)?|Took \d+(\.\d+)? seconds|=>.*|"
                             r"hbase(:\d+:\d+|\(main\):\d+:\d+)>.*|nil)\s*$")


def parse_list_rsgroups(stdout: str) -> dict[str, list[str]]:
    """{group: its tables} from `list_rsgroups` (every group, those without tables too); ValueError naming a line
    not understood."""
    groups: dict[str, list[str]] = {}
    current = None
    unread = []
    for line in stdout.splitlines():
        if not line.strip() or _NOT_AN_RSGROUP.match(line):
            continue
        if m := _RSGROUP_ALONE.match(line):
            current = m.group("group")
            groups.setdefault(current, [])
            continue
        m = _RSGROUP_ROW.match(line)
        if not m or not (m.group("group") or current):
            unread.append(line.strip())
            continue
        current = m.group("group") or current
        tables = groups.setdefault(current, [])
        if m.group("kind") == "table":
            tables.append(normalize_table(m.group("name")))
    if unread:
        raise ValueError(f"{len(unread)} line(s) of list_rsgroups not understood: "
                         + "; ".join(repr(u[:200]) for u in unread[:10]))
    return groups


def group_of(groups: Mapping[str, Sequence[str]], table: str) -> str:
    """A table's group: the one listing it, else `default` (where HBase keeps a table no group names)."""
    name = normalize_table(table)
    return next((g for g, tables in groups.items() if name in tables), "default")


def rsgroup_differences(source: Mapping[str, Sequence[str]] | None, target: Mapping[str, Sequence[str]] | None,
                        tables: Sequence[str]) -> tuple[list[Difference], list[tuple[str, str]]]:
    """(every difference, the (group, table) moves `--apply` makes): a table whose source group is not `default`
    goes to the target's group of that name; a group the target lacks (or a target without RS groups) is a
    difference with no move, listed with its fix. A source without RS groups: nothing to compare."""
    if source is None:
        return [], []
    differences, moves = [], []
    for table in tables:
        want = group_of(source, table)
        have = group_of(target, table) if target is not None else None
        if want == have or (want == "default" and have is None):
            continue
        if target is None or want not in target:
            differences.append(Difference(
                "rsgroup", normalize_table(table), want, have,
                fix=(f"the target has no RS group {want}: add_rsgroup '{want}', move_servers_rsgroup its servers "
                     "there, then --apply" if target is not None else
                     "the target has no RS groups (the hbase-rsgroup coprocessor and balancer)")))
            continue
        differences.append(Difference("rsgroup", normalize_table(table), want, have, applies=True))
        moves.append((want, normalize_table(table)))
    return differences, moves


# ------------------------------------------------------------------------------------------------
# I/O: one shell session per read, one for --apply


SECTION_MARK = "hbase_migration_section "


@dataclass(frozen=True)
class Metadata:
    """What one cluster holds for the tables: grants, quotas, RS groups ({group: tables}; None: no RS groups)."""

    grants: tuple[Grant, ...] | None  # None: no AccessController there
    quotas: tuple[Quota, ...] | None  # None: quotas off (hbase.quota.enabled)
    rsgroups: Mapping[str, Sequence[str]] | None  # None: no RS groups


@dataclass(frozen=True)
class Comparison:
    """Both sides' metadata of the tables compared: every difference, what fixes them (grants, `set_quota`
    statements, RS group moves), the tables the target lacks (their table grants cannot be given before they exist)
    and the target's grants as read (the cut-over's check of who can write there)."""

    tables: tuple[str, ...]
    differences: tuple[Difference, ...]
    fixes: tuple[Grant, ...]
    absent_on_target: tuple[str, ...] = ()
    quota_fixes: tuple[Quota, ...] = ()
    rsgroup_moves: tuple[tuple[str, str], ...] = ()
    target_grants: tuple[Grant, ...] | None = ()
    source_metadata: "Metadata | None" = field(default=None, compare=False, repr=False)  # as read (re-compared)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"tables": list(self.tables), "differences": [d.to_dict() for d in self.differences],
                "absent_on_target": list(self.absent_on_target), "notes": list(self.notes)}

    @property
    def changes(self) -> int:
        """How many changes `apply` would make."""
        return len(self.fixes) + len(self.quota_fixes) + len(self.rsgroup_moves)


FEATURES = ("grants", "quotas", "rsgroups")
RSGROUP_ENDPOINT = "org.apache.hadoop.hbase.rsgroup.RSGroupAdminEndpoint"


def features_of(confs: Mapping[str, Mapping[str, str]]) -> frozenset[str]:
    """Pure: which of grants, quotas, RS groups a cluster has, from its servers' /conf (`hbase_conf.
    read_server_confs`): the AccessController (authorization on, the coprocessor on the regions or the master),
    hbase.quota.enabled, the RS group endpoint (2.x: RSGroupAdminEndpoint on the master) or
    hbase.balancer.rsgroup.enabled (3.x). A cluster without one refuses its shell commands, so it is not asked."""
    from hbase_migration.clusters.hbase_conf import AUTHORIZATION, runs_access_controller

    found = set()
    for props in confs.values():
        master = [c.strip() for c in props.get("hbase.coprocessor.master.classes", "").split(",")]
        if runs_access_controller(props) or (props.get(AUTHORIZATION, "").strip().lower() == "true" and any(
                c.endswith(".AccessController") for c in master)):
            found.add("grants")
        if props.get("hbase.quota.enabled", "").strip().lower() == "true":
            found.add("quotas")
        if RSGROUP_ENDPOINT in master or props.get("hbase.balancer.rsgroup.enabled", "").strip().lower() == "true":
            found.add("rsgroups")
    return frozenset(found)


def read_statements(tables: Sequence[str], features: Iterable[str] = FEATURES) -> list[str]:
    """One session's statements reading what `compare` needs of the features the cluster has, each part after its
    own section mark (a `user_permission` line and a `list_quotas` row must each go to their own parser)."""
    from hbase_migration.migration.freeze import acl_read_statements

    parts = {"grants": acl_read_statements(tables), "quotas": ["list_quotas"], "rsgroups": ["list_rsgroups"]}
    return [statement for name in FEATURES if name in set(features)
            for statement in (f"puts {ruby_string(SECTION_MARK + name)}", *parts[name])]


def split_sections(stdout: str) -> dict[str, str]:
    """stdout -> {section: its lines} at each section mark (an echo of the `puts` statement is not a mark)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        if line.startswith(SECTION_MARK):
            current = sections.setdefault(line[len(SECTION_MARK):].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def parse_metadata(stdout: str, tables: Sequence[str], features: Iterable[str] = FEATURES) -> Metadata:
    """`read_statements`' output -> Metadata, None for a feature the cluster lacks (UnreadablePermissions,
    UnreadableQuotas or ValueError on a line not understood; ValueError when a section is missing: the session did
    not run to its end)."""
    from hbase_migration.migration.freeze import parse_user_permission

    wanted = [f for f in FEATURES if f in set(features)]
    sections = split_sections(stdout)
    missing = [s for s in wanted if s not in sections]
    if missing:
        raise ValueError(f"the metadata session printed no {', '.join(missing)} section: {stdout[-300:]!r}")
    return Metadata(
        tuple(relevant(parse_user_permission(sections["grants"]), tables)) if "grants" in wanted else None,
        tuple(parse_list_quotas(sections["quotas"])) if "quotas" in wanted else None,
        parse_list_rsgroups(sections["rsgroups"]) if "rsgroups" in wanted else None)


def read_metadata(cluster: Any, tables: Sequence[str]) -> Metadata:
    """The grants, quotas and RS groups bearing on `tables`, of the features the cluster's /conf shows, read in one
    shell session (none when it has none of them). ConfUnreadable when a server's /conf cannot be read."""
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.hbase_conf import read_server_confs

    features = features_of(read_server_confs(cluster))
    if not features:
        return Metadata(None, None, None)
    out = channels.shell(cluster, read_statements(tables, features), timeout_s=max(cluster.shell_timeout_s, 120.0))
    return parse_metadata(out.stdout, tables, features)


def read_grants(cluster: Any, tables: Sequence[str]) -> list[Grant]:
    """Every permission that bears on `tables` (global, their namespaces, the tables), `user_permission` read in
    one shell session; UnreadablePermissions on a line not understood."""
    from hbase_migration.clusters import channels
    from hbase_migration.migration.freeze import acl_read_statements, parse_user_permission

    return relevant(parse_user_permission(channels.shell(cluster, acl_read_statements(tables)).stdout), tables)


def compare_metadata(source: Metadata, target: Metadata, tables: Sequence[str],
                     mapping: Mapping[str, str] | None = None, absent_on_target: Sequence[str] = ()) -> Comparison:
    """Pure: both sides' metadata compared (the target's tables in `absent_on_target` were not read there: only
    their absence is a difference, their table-level fixes wait until they exist)."""
    missing = {normalize_table(t) for t in absent_on_target}
    present = [t for t in tables if normalize_table(t) not in missing]
    differences: list[Difference] = [Difference("table", t, "exists", None, fix="create it (create-tables), then "
                                                 "compare again: its grants and quotas wait for it")
                                     for t in absent_on_target]
    fixes: list[Grant] = []
    if source.grants is not None:
        grants = [g for g in source.grants if not (g.scope == "table" and normalize_table(g.table_name) in missing)]
        if target.grants is None:
            wanted = relevant(grants, present)
            differences += [Difference("grant", "every grant (the target runs no AccessController)",
                                       f"{len(wanted)} grant(s)", None,
                                       fix="without it everyone may write there; enable it to keep the grants")
                            ] if wanted else []
        else:
            found, fixes = grant_differences(grants, target.grants, present, mapping)
            differences += found
    quota_fixes: list[Quota] = []
    if source.quotas is not None:
        quotas = [q for q in source.quotas if q.table not in missing]
        if target.quotas is None:
            wanted_quotas = relevant_quotas(quotas, present)
            differences += [Difference("quota", "every quota (quotas are off on the target)",
                                       f"{len(wanted_quotas)} quota(s)", None,
                                       fix="set hbase.quota.enabled=true on the target's masters and region "
                                           "servers, restart them, then --apply")] if wanted_quotas else []
        else:
            found_quotas, quota_fixes = quota_differences(quotas, target.quotas, present, mapping)
            differences += found_quotas
            quota_fixes = [q for q in quota_fixes if set_quota_statement(q) is not None]
    group_diffs, moves = rsgroup_differences(source.rsgroups, target.rsgroups, present)
    return Comparison(tuple(tables), tuple(differences + group_diffs), tuple(fixes), tuple(absent_on_target),
                      tuple(quota_fixes), tuple(moves), target.grants)


NOTHING = Metadata(None, None, None)


def compare(source: Any, target: Any, tables: Sequence[str], mapping: Mapping[str, str] | None = None,
            absent_on_target: Sequence[str] = (), source_metadata: Metadata | None = None) -> Comparison:
    """Grants, quotas and RS groups of both sides compared: one shell session on each (the source's not read again
    when given as `source_metadata`; the target not read when the source has none of them)."""
    on_target = [t for t in tables if t not in set(absent_on_target)]
    found = read_metadata(source, tables) if source_metadata is None else source_metadata
    if found == NOTHING:
        return replace(compare_metadata(found, found, tables, mapping, absent_on_target), source_metadata=found,
                       notes=(f"{getattr(source, 'name', 'the source')}'s /conf shows no AccessController, no "
                              "hbase.quota.enabled and no RS groups: no grant, quota or group to carry",))
    return replace(compare_metadata(found, read_metadata(target, on_target), tables, mapping, absent_on_target),
                   source_metadata=found)


QUOTA_DONE_MARK, QUOTA_FAILED_MARK = "hbase_migration_quota_set ", "hbase_migration_quota_failed "


def apply_statements(found: Comparison) -> tuple[list[str], list[str]]:
    """(the statements of one session giving the target the source's grants, quotas and RS group membership, the
    quota settings that cannot be set exactly and are left to the operator). Each `set_quota` and move is
    rescued and marked, so one refused change does not stop the others (`parse_apply`)."""
    from hbase_migration.migration.freeze import acl_batch_statement, jruby_admin_statements

    statements: list[str] = []
    if found.fixes:
        statements += [*jruby_admin_statements(), acl_batch_statement([(g, g.actions) for g in found.fixes])]
    by_hand = []
    changes = [(q.subject(), set_quota_statement(q)) for q in found.quota_fixes]
    changes += [(f"rsgroup {table}", f"move_tables_rsgroup {ruby_string(group)}, [{ruby_string(table)}]")
                for group, table in found.rsgroup_moves]
    for subject, statement in changes:
        if statement is None:
            by_hand.append(subject)
            continue
        tag = ruby_string(subject)
        statements.append(f"begin; {statement}; puts {ruby_string(QUOTA_DONE_MARK)} + {tag}; "
                          "rescue java.lang.Throwable, Exception => e; "
                          f"puts {ruby_string(QUOTA_FAILED_MARK)} + {tag} + ': ' + "
                          "e.to_s.gsub(/\\s+/, ' ')[0, 300]; end")
    return statements, by_hand


def parse_apply(stdout: str, granted: bool) -> tuple[int, list[str]]:
    """(changes made, the failures named) from `apply_statements`' session."""
    from hbase_migration.migration.freeze import parse_acl_batch

    changed, failed = parse_acl_batch(stdout) if granted else (0, [])
    for line in stdout.splitlines():
        text = line.strip()
        if text.startswith(QUOTA_DONE_MARK):
            changed += 1
        elif text.startswith(QUOTA_FAILED_MARK):
            failed.append(text[len(QUOTA_FAILED_MARK):])
    return changed, failed


def apply(target: Any, found: Comparison) -> tuple[int, list[str]]:
    """Give the target the source's grants (each principal's actions exactly, async Admin futures waited for),
    quotas (`set_quota`) and RS group membership (`move_tables_rsgroup`), all in one shell session: (changes made,
    the failures named, with the settings left to the operator)."""
    from hbase_migration.clusters import channels

    statements, by_hand = apply_statements(found)
    left = [f"{s}: printed rounded by list_quotas, set it by hand" for s in by_hand]
    if not statements:
        return 0, left
    out = channels.shell(target, statements, timeout_s=max(target.shell_timeout_s, 300.0))
    changed, failed = parse_apply(out.stdout, bool(found.fixes))
    return changed, failed + left


# ------------------------------------------------------------------------------------------------
# The migration's step (each batch, before its verification) and the cut-over's check


def fixable(found: Comparison) -> list[Difference]:
    """The differences `apply` changes (the others are listed with their fix: a target-only grant or quota, a group
    the target lacks, a quota printed rounded, a table absent, a side without the feature)."""
    return [d for d in found.differences if d.applies]


def step_outcome(mode: str, before: Comparison, after: Comparison | None, failed: Sequence[str]
                 ) -> tuple[str, list[str]]:
    """Pure: the migration step's verdict -> (ledger status `success` | `failed`, what to say). `apply` fails when
    a change was refused or a difference it makes is still there after (re-read); what it cannot make (listed by
    `fixable`'s complement) is said, not failed on; `check` only says."""
    said = [f"{len(before.differences)} difference(s) before"]
    if mode == "check" or after is None:
        return "success", said + [d.line() for d in before.differences]
    left = fixable(after)
    said += [f"{len(after.differences)} after"] + [f"left: {d.line()}" for d in after.differences]
    said += [f"refused: {f}" for f in failed]
    return ("failed" if failed or left else "success"), said


def unwritable_on_target(fenced: Iterable[Grant], target: Sequence[Grant] | None,
                         mapping: Mapping[str, str] | None = None) -> list[str]:
    """Pure: each principal the fence will stop on the source (each grant with WRITE it takes away) that cannot
    write the same tables on the target, named: the target must hold WRITE for its mapped name (or short name)
    globally, on the namespace, on the table, or on the same family. A target without the AccessController
    (`target` None) checks no permission: everyone writes there."""
    if target is None:
        return []
    mapping = dict(mapping or {})
    writes = [t for t in target if t.writes]
    reasons = []
    for g in fenced:
        if not g.writes:
            continue
        name = mapped(g.principal, mapping)

        def holds(t: Grant) -> bool:
            if short_name(t.principal) != name:
                return False
            if t.scope == "global":
                return True
            if t.scope == "namespace":
                return t.namespace == g.namespace
            return (g.scope == "table" and t.table_name == g.table_name
                    and (not t.family or t.family == g.family) and (not t.qualifier or t.qualifier == g.qualifier))

        if not any(holds(t) for t in writes):
            where = {"namespace": f"namespace {g.namespace}", "global": "every table"}.get(g.scope, g.table_name)
            reasons.append(f"{g.principal} writes {where} on the source (the fence stops it) but {name} holds no "
                           f"WRITE for it on the target (globally, on namespace {g.namespace} or on the table): "
                           "after the switch it could write nowhere; run `python -m hbase_migration metadata "
                           "--apply` (or grant it), or map it (principal_map)")
    return list(dict.fromkeys(reasons))


def approval_text(differences: Sequence[Mapping[str, Any]] | None, limit: int = 20) -> str:
    """The cut-over approval's line on metadata: none, or the differences (kind, subject, both values)."""
    if differences is None:
        return "not compared"
    if not differences:
        return "none (grants, quotas, RS groups alike on both sides)"
    shown = [f"{d['kind']} {d['subject']}: source {d['source'] or '-'}, target {d['target'] or '-'}"
             for d in differences[:limit]]
    more = f"; and {len(differences) - limit} more" if len(differences) > limit else ""
    return f"{len(differences)} difference(s): " + "; ".join(shown) + more


def fenced_writers(grants: Iterable[Grant], tables: Sequence[str], freeze_method: str,
                   exempt: Sequence[str] = ()) -> list[Grant]:
    """Pure: the source's grants whose WRITE the cut-over's fence stops on `tables`: READONLY stops every writer;
    ACL every one not in `freeze_exempt` (`freeze.acl_fence_plan` refuses a global writer not exempt)."""
    left = set(exempt) if freeze_method == "acl" else set()
    return [g for g in relevant(grants, tables) if g.writes and g.principal not in left]


@dataclass(frozen=True)
class CutoverMetadata:
    """What the cut-over's check found: the differences (dicts, for the approval) and each fenced writer that could
    not write on the target (reasons to refuse)."""

    differences: tuple[Mapping[str, Any], ...]
    unwritable: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"differences": [dict(d) for d in self.differences], "unwritable": list(self.unwritable),
                "text": approval_text(list(self.differences))}


def cutover_metadata(source: Metadata, target: Metadata, tables: Sequence[str], freeze_method: str,
                     exempt: Sequence[str] = (), mapping: Mapping[str, str] | None = None) -> CutoverMetadata:
    """Pure: both sides' metadata -> what the cut-over's approval shows and refuses on."""
    found = compare_metadata(source, target, tables, mapping)
    fenced = fenced_writers(source.grants or (), tables, freeze_method, exempt)
    return CutoverMetadata(tuple(d.to_dict() for d in found.differences),
                           tuple(unwritable_on_target(fenced, target.grants, mapping)))


def read_for_cutover(source: Any, target: Any, tables: Sequence[str], freeze_method: str,
                     exempt: Sequence[str] = (), mapping: Mapping[str, str] | None = None) -> CutoverMetadata:
    """`cutover_metadata` of both clusters as they are (one shell session each; none on a cluster without the
    features, the target not read when the source has none)."""
    src = read_metadata(source, tables)
    tgt = src if src == NOTHING else read_metadata(target, tables)
    return cutover_metadata(src, tgt, tables, freeze_method, exempt, mapping)
