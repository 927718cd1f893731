"""What replication does not carry and clients need on the target: the grants of the migrated tables (issue 39).

Grants are read with `user_permission` on each side (global, each namespace of the tables, each table: the
parser of `migration.freeze`, which refuses a line it does not understand) and compared principal by principal,
scope by scope (global, namespace, table, family, qualifier). Principals are mapped across realms by their short
name (`bob/host@DC1.EXAMPLE` and `bob@DC2.EXAMPLE` are `bob`), or by an explicit mapping. `--apply` gives the
target exactly the source's actions in one shell session (`freeze.acl_batch_statement`); a permission only the
target holds is listed, never revoked. Quotas and RS groups are not compared yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from hbase_migration.migration.freeze import Grant, namespace_of
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
    """One thing the target lacks or holds otherwise: kind (`grant`), subject, source's and target's values
    (None: none there)."""

    kind: str
    subject: str
    source: str | None
    target: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "source": self.source, "target": self.target}

    def line(self) -> str:
        return f"{self.kind:<6} {self.subject}: source {self.source or '-'}, target {self.target or '-'}"


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
                                      have.actions if have else None))
        if want is not None:
            fixes.append(Grant(have.principal if have else want.principal, want.namespace, want.table, want.family,
                               want.qualifier, want.actions))
    return differences, fixes


# ------------------------------------------------------------------------------------------------
# I/O: one shell session per read, one for --apply


@dataclass(frozen=True)
class Comparison:
    """Both sides' grants on the tables compared: every difference, the grants that fix them, and the tables the
    target lacks (their table grants cannot be given before they exist)."""

    tables: tuple[str, ...]
    differences: tuple[Difference, ...]
    fixes: tuple[Grant, ...]
    absent_on_target: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"tables": list(self.tables), "differences": [d.to_dict() for d in self.differences],
                "absent_on_target": list(self.absent_on_target)}


def read_grants(cluster: Any, tables: Sequence[str]) -> list[Grant]:
    """Every permission that bears on `tables` (global, their namespaces, the tables), `user_permission` read in
    one shell session; UnreadablePermissions on a line not understood."""
    from hbase_migration.clusters import channels
    from hbase_migration.migration.freeze import acl_read_statements, parse_user_permission

    return relevant(parse_user_permission(channels.shell(cluster, acl_read_statements(tables)).stdout), tables)


def compare(source: Any, target: Any, tables: Sequence[str], mapping: Mapping[str, str] | None = None,
            absent_on_target: Sequence[str] = ()) -> Comparison:
    """The grants of both sides compared (the target's tables in `absent_on_target` are not read there)."""
    on_target = [t for t in tables if t not in set(absent_on_target)]
    differences, fixes = grant_differences(read_grants(source, tables), read_grants(target, on_target), tables,
                                           mapping)
    missing = {normalize_table(t) for t in absent_on_target}
    differences = [Difference("table", t, "exists", None) for t in absent_on_target] + differences
    fixes = [g for g in fixes if not (g.scope == "table" and normalize_table(g.table_name) in missing)]
    return Comparison(tuple(tables), tuple(differences), tuple(fixes), tuple(absent_on_target))


def apply(target: Any, fixes: Sequence[Grant]) -> tuple[int, list[str]]:
    """Give the target each grant's actions exactly, all in one shell session (the async Admin's futures waited
    for): (changes made, the failures named)."""
    from hbase_migration.clusters import channels
    from hbase_migration.migration.freeze import acl_batch_statement, jruby_admin_statements, parse_acl_batch

    if not fixes:
        return 0, []
    out = channels.shell(target, [*jruby_admin_statements(), acl_batch_statement([(g, g.actions) for g in fixes])],
                         timeout_s=max(target.shell_timeout_s, 300.0))
    return parse_acl_batch(out.stdout)
