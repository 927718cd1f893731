"""Target tables exactly like the source's: namespace, every family and table attribute, split keys.

Thrift1's createTable takes no split keys and shows no REPLICATION_SCOPE, so the schema comes from the source
shell's `describe` (`schema.py`), the split keys from the source's regions, and the table is created through
the target's shell, in its namespace (created first, with the source namespace's configuration, when the
target lacks it). Then the new table is described and compared with what was asked.

The run's choices: `codec_map` replaces codecs the target cannot load (`SNAPPY=ZSTD`); `target_coprocessors`
lists the coprocessor (and custom SPLIT_POLICY) classes installed on the target: a table that names another is
refused by name before anything is created. A table that already exists is left alone; preflight compares it
(`compare_tables`: the attributes a reader sees must match, the rest is reported).

`check_create` is preflight's codec check: the table's own `create` statement, under a scratch name in the
default namespace, run on the target and dropped at once. It is HBase's own verdict (the master's sanity checks:
`CompressionTest` of every codec, coprocessor and split policy classes loadable, sizes), the same that would
refuse the real create: a real operator finds out the same way, or with `hbase org.apache.hadoop.hbase.util.
CompressionTest` on each region server, which no remote API offers. (`hbase.regionserver.codecs` in `/conf`
proves a codec only where an operator listed it, and saying nothing proves nothing.)
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hbase_migration.migration.schema import (
    COMPRESSION_KEYS,
    IMPLIED_DEFAULTS,
    READER_VISIBLE,
    TableSchema,
    alter_family_statement,
    canonical,
    coprocessor_class,
    create_namespace_statement,
    create_statement,
    map_codec,
    parse_describe,
    parse_namespace,
    parse_namespaces,
    ruby_string,
)

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

# Split policies in HBase's own jar: every region server loads them.
STOCK_SPLIT_POLICIES = frozenset(f"org.apache.hadoop.hbase.regionserver.{c}" for c in (
    "ConstantSizeRegionSplitPolicy", "IncreasingToUpperBoundRegionSplitPolicy", "SteppingSplitPolicy",
    "KeyPrefixRegionSplitPolicy", "DelimitedKeyPrefixRegionSplitPolicy", "DisabledRegionSplitPolicy",
    "BusyRegionSplitPolicy"))
# Table values that differ between clusters for reasons of their own (not carried, or the target's own).
_NOT_COMPARED_TABLE = frozenset({"READONLY", "IS_META"})


class TableRefused(ValueError):
    """A target table cannot be created as asked; the message names the table, the attribute and the fix, and
    nothing was changed."""


# ---------------------------------------------------------------------------------------------- pure checks
def class_refusals(schema: TableSchema, installed: Sequence[str]) -> list[str]:
    """Each coprocessor (and custom SPLIT_POLICY) of the source table whose class the run does not list as
    installed on the target, with the fix."""
    installed = set(installed)
    out = []
    for key, spec in schema.coprocessors().items():
        cls = coprocessor_class(spec)
        if cls not in installed:
            out.append(f"{schema.name}: coprocessor {cls} ({key} => '{spec}') is not among the classes installed on "
                       f"the target (target_coprocessors): install it on the target's region servers and add "
                       f"{cls} to target_coprocessors, or remove it from the source table (alter "
                       f"{ruby_string(schema.name)}, METHOD => 'table_att_unset', NAME => '{key}')")
    policy = schema.values().get("SPLIT_POLICY")
    if policy and policy not in STOCK_SPLIT_POLICIES and policy not in installed:
        out.append(f"{schema.name}: SPLIT_POLICY {policy} is not one of HBase's own policies nor among the "
                   f"classes installed on the target (target_coprocessors): install it there and list it, or set "
                   f"a stock policy on the source")
    return out


def codecs_used(schema: TableSchema, codec_map: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """codec -> `family.ATTRIBUTE`s using it on the target (mapped), NONE left out."""
    out: dict[str, list[str]] = {}
    for fam in schema.families:
        for key in COMPRESSION_KEYS:
            raw = fam.attributes.get(key, fam.metadata.get(key))
            if raw is None:
                continue
            codec = map_codec(canonical(key, raw), codec_map)
            if codec != "NONE":
                out.setdefault(codec, []).append(f"{fam.name}.{key}")
    return out


def needs_create_check(schema: TableSchema, codec_map: Mapping[str, str] | None = None) -> bool:
    """Whether the target's sanity checks could refuse this table: a codec, a coprocessor or a split policy."""
    return bool(codecs_used(schema, codec_map) or schema.coprocessors() or schema.values().get("SPLIT_POLICY"))


def expected_family_value(source_value: str | None, key: str, codec_map: Mapping[str, str] | None) -> str | None:
    return map_codec(source_value, codec_map) if key in COMPRESSION_KEYS and source_value else source_value


@dataclass(frozen=True)
class Comparison:
    """An existing target table against the source's: `mismatches` change what a reader sees (refused),
    `differences` do not (reported); `fixes` are the statements that would remove the mismatches."""

    mismatches: tuple[str, ...] = ()
    differences: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()


def compare_tables(source: TableSchema, target: TableSchema, codec_map: Mapping[str, str] | None = None
                   ) -> Comparison:
    """Families, VERSIONS, MIN_VERSIONS, TTL and KEEP_DELETED_CELLS must match (values as HBase holds them,
    whatever units the two shells print); every other family and table attribute is compared for the report."""
    mismatches, differences, fixes = [], [], []
    missing = [f.name for f in source.families if target.family(f.name) is None]
    if missing:
        mismatches.append(f"{target.name} on the target lacks families {', '.join(missing)}")
        fixes.append(f"alter {ruby_string(target.name)}, "
                     + ", ".join(f"{{NAME => {ruby_string(f)}}}" for f in missing) + " (then set their attributes)")
    extra = [f.name for f in target.families if source.family(f.name) is None]
    if extra:
        differences.append(f"{target.name}: families only on the target: {', '.join(extra)}")
    for src in source.families:
        dst = target.family(src.name)
        if dst is None:
            continue
        wrong = {k: src.value(k) for k in READER_VISIBLE if src.value(k) != dst.value(k)}
        for key in wrong:
            mismatches.append(f"{target.name}:{src.name} {key}: source {src.value(key)}, target {dst.value(key)}")
        if wrong:
            fixes.append(alter_family_statement(target.name, src.name, wrong))
        src_values, dst_values = src.values(), dst.values()
        for key in sorted(set(src_values) | set(dst_values)):
            if key in READER_VISIBLE or key == "REPLICATION_SCOPE":
                continue
            want = expected_family_value(src_values.get(key, canonical(key, IMPLIED_DEFAULTS.get(key))), key,
                                         codec_map)
            have = dst_values.get(key, canonical(key, IMPLIED_DEFAULTS.get(key)))
            if want != have:
                differences.append(f"{target.name}:{src.name} {key}: source {want or '(unset)'}, "
                                   f"target {have or '(unset)'}")
        if src.configuration != dst.configuration:
            differences.append(f"{target.name}:{src.name} CONFIGURATION: source {src.configuration}, "
                               f"target {dst.configuration}")
    src_table, dst_table = source.values(), target.values()
    for key in sorted((set(src_table) | set(dst_table)) - _NOT_COMPARED_TABLE):
        if src_table.get(key) != dst_table.get(key):
            differences.append(f"{target.name} {key}: source {src_table.get(key, '(unset)')}, "
                               f"target {dst_table.get(key, '(unset)')}")
    return Comparison(tuple(mismatches), tuple(differences), tuple(fixes))


def scratch_name(peer_id: str, table: str) -> str:
    """The scratch table `check_create` creates and drops (default namespace, never a real table's name)."""
    qualifier = re.sub(r"[^A-Za-z0-9_]", "_", table)
    return f"hbase_migration_check_{peer_id}_{qualifier}"[:200]


# ---------------------------------------------------------------------------------------------- I/O
def split_keys(cluster: "Cluster", table: str) -> list[bytes]:
    from hbase_migration.data.datapath import open_data_path

    with open_data_path(cluster) as path:
        return [r.start_key for r in path.regions(table) if r.start_key]


def describe_tables(cluster: "Cluster", tables: Sequence[str]) -> dict[str, TableSchema]:
    """Each table's schema from one `describe` session (every table must exist)."""
    from hbase_migration.migration.freeze import describe_sections
    from hbase_migration.migration.schema import SchemaError

    sections = describe_sections(cluster, tables, SchemaError)
    return {table: parse_describe(text, table) for table, text in sections.items()}


def namespaces(cluster: "Cluster") -> list[str]:
    from hbase_migration.clusters import channels

    out = channels.shell(cluster, ["list_namespace"], timeout_s=max(cluster.shell_timeout_s, 60.0))
    return parse_namespaces(out.stdout)


def namespace_configuration(cluster: "Cluster", namespace: str) -> dict[str, str]:
    from hbase_migration.clusters import channels

    out = channels.shell(cluster, [f"describe_namespace {ruby_string(namespace)}"],
                         timeout_s=max(cluster.shell_timeout_s, 60.0))
    return parse_namespace(out.stdout, namespace)


def check_create(target: "Cluster", schema: TableSchema, peer_id: str,
                 codec_map: Mapping[str, str] | None = None) -> str | None:
    """Create the table's scratch twin on the target and drop it at once; None when the target took it, else
    HBase's refusal. A scratch table left by an earlier check is dropped first. A shell or master that did not
    answer is raised (the check was not made), not returned as a refusal."""
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.reachability import unreachable
    from hbase_migration.clusters.shell import ShellCommandError

    scratch = ruby_string(scratch_name(peer_id, schema.name))
    statement = create_statement(schema, [], name=scratch_name(peer_id, schema.name), codec_map=codec_map)
    timeout = max(target.shell_timeout_s, 120.0)
    for attempt in (1, 2):
        try:
            channels.shell(target, [statement, f"disable {scratch}", f"drop {scratch}"], timeout_s=timeout)
            return None
        except ShellCommandError as e:
            text = str(e)
            if attempt == 1 and "already exists" in text:
                log.warning("a scratch table %s from an earlier check is on %s: dropping it", scratch, target.name)
                channels.shell(target, [f"disable {scratch}", f"drop {scratch}"], timeout_s=timeout)
                continue
            if "Created table" in (e.output or "") or unreachable(e):
                raise  # created but not dropped (a scratch table is left), or not checked: the caller says so
            lines = [line for line in text.splitlines() if line.startswith("ERROR")]
            return "; ".join(lines) if lines else text.splitlines()[-1]
    return None


def _verify(created: TableSchema, source: TableSchema, codec_map: Mapping[str, str] | None) -> list[str]:
    """What the new table shows that was not asked: families, reader-visible values, codecs, coprocessors."""
    comparison = compare_tables(source, created, codec_map)
    problems = list(comparison.mismatches)
    problems += [d for d in comparison.differences if any(f" {k}:" in d for k in COMPRESSION_KEYS)
                 or "coprocessor$" in d]
    return problems


def create_missing_tables(source: "Cluster", target: "Cluster", tables: Sequence[str], dry_run: bool = False,
                          codec_map: Mapping[str, str] | None = None,
                          target_coprocessors: Sequence[str] = ()) -> list[dict[str, Any]]:
    """For each table absent on the target, create it like the source's (namespace first when missing);
    returns what was (or would be) done per table. Every check comes first: a refused coprocessor stops the
    whole call before anything is created."""
    from hbase_migration.clusters import channels
    from hbase_migration.clusters.reachability import unreachable
    from hbase_migration.clusters.shell import ShellCommandError
    from hbase_migration.migration import create_at_once

    tables = list(dict.fromkeys(tables))
    present = existing_tables(target, tables)
    absent = [t for t in tables if t not in present]
    schemas = describe_tables(source, absent)
    refusals = [r for t in absent for r in class_refusals(schemas[t], target_coprocessors)]
    if refusals:
        raise TableRefused("refused, nothing was created: " + "; ".join(refusals))
    have_ns = set(namespaces(target)) if absent else set()
    plans = []
    for table in absent:
        keys = split_keys(source, table)
        plans.append((table, keys, create_statement(schemas[table], keys, codec_map=codec_map)))

    done: list[dict[str, Any]] = [{"table": t, "outcome": "exists", "statement": None} for t in tables
                                  if t in present]
    # One shell session for every namespace and table (each `hbase shell` costs a JVM start, 10-30 s), the tables
    # submitted at once where the shell can (create_at_once.py), one session for reading them all back.
    statements, ns_of = [], {}
    for table, keys, statement in plans:
        namespace = schemas[table].namespace
        if namespace not in have_ns:
            ns_of[table] = create_namespace_statement(namespace, namespace_configuration(source, namespace))
            statements.append(ns_of[table])
            have_ns.add(namespace)
        statements.append(statement)
        log.info("%s %s on %s with %d families, %d split keys: %s", "would create" if dry_run else "creating",
                 table, target.name, len(schemas[table].families), len(keys), statement)
    if dry_run:
        return done + [{"table": table, "outcome": "would_create", "statement": statement, "splits": len(keys),
                        "namespace_statement": ns_of.get(table)} for table, keys, statement in plans]
    at_once = False
    if statements:
        timeout = max(target.shell_timeout_s, 120.0 + 60.0 * len(plans))
        at_once = len(plans) > 1 and create_at_once.supported(target)  # each `create` waits ~1 s; 60 at once: 4 s
        if at_once:
            statements = create_at_once.statements(statements, timeout)
        try:
            channels.shell(target, statements, timeout_s=timeout + 60.0)
        except ShellCommandError as e:
            if unreachable(e):
                raise  # the shell or the master did not answer: nothing refused, the task's retry creates the rest
            made = sorted(existing_tables(target, absent))
            state = f"created before it failed: {', '.join(made)}" if made else "no table was created by this call"
            if at_once:  # the shell exits at the failing statement; creates it had submitted finish on the master
                state += "; tables submitted before the failure may still appear: a retry leaves them alone"
            raise TableRefused(f"creating {', '.join(absent)} on {target.name} failed ({state}): {e}") from e
    shown = describe_tables(target, absent) if plans else {}
    for table, keys, statement in plans:
        problems = _verify(shown[table], schemas[table], codec_map) if table in shown else ["not found after create"]
        if problems:
            raise RuntimeError(f"{table} was created on {target.name} but does not show what was asked: "
                               + "; ".join(problems) + f" (statement: {statement})")
        done.append({"table": table, "outcome": "created", "statement": statement, "splits": len(keys),
                     "namespace_statement": ns_of.get(table), "submitted": "at_once" if at_once else "one_by_one"})
    return done


def create_namespaces(source: "Cluster", target: "Cluster", tables: Sequence[str],
                      dry_run: bool = False) -> list[str]:
    """The namespaces of `tables` the target lacks, created with the source namespace's configuration (one shell
    session): what a table cloned from a snapshot needs before `clone_snapshot`. Returns the statements (run
    unless `dry_run`); none when every namespace exists."""
    from hbase_migration.clusters import channels

    wanted = sorted({t.partition(":")[0] for t in tables if ":" in t} - {"default"})
    if not wanted:
        return []
    have = set(namespaces(target))
    statements = [create_namespace_statement(ns, namespace_configuration(source, ns)) for ns in wanted
                  if ns not in have]
    if statements and not dry_run:
        channels.shell(target, statements, timeout_s=max(target.shell_timeout_s, 120.0))
    for statement in statements:
        log.info("%s on %s: %s", "would run" if dry_run else "ran", target.name, statement)
    return statements


def describe_present(cluster: Cluster, tables: Sequence[str], present: set[str]) -> dict[str, TableSchema | None]:
    """Schemas through the shell (one session) for the tables that exist; None for the others."""
    found = describe_tables(cluster, [t for t in tables if t in present])
    return {t: found.get(t) for t in tables}


def first_rows(cluster: Cluster, tables: Sequence[str]) -> dict[str, bytes | None]:
    """Each table's first row key (None: the table holds no row), read through the data path."""
    from hbase_migration.data.datapath import open_data_path

    out = {}
    with open_data_path(cluster) as path:
        for table in tables:
            scan = path.scan(table, b"", b"", first_key_only=True, batch_rows=1, versions=1)
            try:
                batch = next(scan, [])
            finally:
                scan.close()  # closes the scanner on the server
            out[table] = batch[0][0] if batch else None  # a row is (key, cells)
    return out


def existing_tables(cluster: Cluster, tables: Sequence[str]) -> set[str]:
    """Which of `tables` exist on the cluster (through its data path, Thrift2 or Thrift1)."""
    from hbase_migration.data.datapath import open_data_path

    with open_data_path(cluster) as path:
        return {t for t in tables if path.families(t)}
