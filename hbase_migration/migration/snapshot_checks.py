"""Preflight for the tables whose initial copy is a snapshot: facts gathered first (`gather`), judged by pure
functions (`evaluate`), each refusal naming the cluster, the key and the fix, and changing nothing.

Checks (names as the report shows them):
- `snapshots_enabled`: `hbase.snapshot.enabled` on both clusters (the master's `/conf`, else a region server's);
- `snapshot_target_tables`: each table absent on the target (`clone_snapshot` creates it), unless this run's own
  export published or cloned it already (a resumed run);
- `snapshot_space`: the snapshot's bytes (the source table's directory as HDFS sums it, plus what the flush adds:
  the memstores the sizing saw) times the target's replication, against the target's free space (the NameNode's
  CapacityRemaining) and every space and namespace quota on `<rootdir>/archive/data/<ns>` or an ancestor (with one
  block per task in flight, which HDFS reserves against a space quota while a file is written);
- `snapshot_write_access`: WebHDFS CHECKACCESS `-wx` on the deepest existing directory of the target's
  `archive/data/<ns>/<table>`, `.hbase-snapshot/.tmp` and the exports' staging directory, as the user the export
  writes as; and when that user is not the target's HBase user, the right to give files to HBase (SETOWNER of the
  rootdir to the owner and group it already has: a superuser's right in HDFS, and a change of nothing);
- `snapshot_settings` (notes, a warning for a snapshot TTL): the source's `hbase.master.hfilecleaner.ttl`,
  `hbase.snapshot.master.timeout.millis`, `hbase.snapshot.region.timeout` and `hbase.master.snapshot.ttl`, the
  target's cleaner TTL.

A fact that could not be learned because an endpoint did not answer is an `Unlearned` with `transient` set: the
check then fails as "not checked now", and preflight's retry makes it again (migration/checks.py).
"""
from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hbase_migration.clusters import hdfs
from hbase_migration.data.progress import human_bytes
from hbase_migration.data.snapshot_manifest import (
    SNAPSHOT_DIR,
    STAGING_DIR,
    WORKING_DIR,
    encryption_refusal,
    split_table,
)
from hbase_migration.migration.checks import ERROR, WARNING, CheckResult, Unlearned, transient

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

ENABLED = "hbase.snapshot.enabled"
NOTED_SOURCE = (("hbase.master.hfilecleaner.ttl", "300000"), ("hbase.snapshot.master.timeout.millis", "300000"),
                ("hbase.snapshot.region.timeout", "300000"), ("hbase.master.snapshot.ttl", "0"))
NOTED_TARGET = (("hbase.master.hfilecleaner.ttl", "300000"),)
UNLIMITED = 1 << 62


@dataclass(frozen=True)
class ConfFact:
    cluster: str
    properties: Mapping[str, str] | None = None
    whose: str = ""
    error: str | Unlearned | None = None


@dataclass(frozen=True)
class SpaceFact:
    """What the snapshots need and what the target has room for."""

    bytes_needed: Mapping[str, int] = field(default_factory=dict)  # table -> logical bytes
    files_needed: Mapping[str, int] = field(default_factory=dict)  # table -> files (+ directories)
    replication: int = 1
    block_size: int = 128 << 20
    tasks: int = 1
    capacity_remaining: int | None = None  # raw bytes; None: not read
    quotas: tuple[hdfs.QuotaConstraint, ...] = ()
    error: str | Unlearned | None = None


@dataclass(frozen=True)
class AccessFact:
    caller: str | None = None
    hbase_owner: str | None = None
    hbase_group: str | None = None
    refused: Mapping[str, str] = field(default_factory=dict)  # path -> HDFS's refusal
    checked: tuple[str, ...] = ()
    chown: str | None = None  # None: allowed or not needed; else HDFS's refusal
    chown_needed: bool = False
    error: str | Unlearned | None = None


@dataclass(frozen=True)
class SnapshotFacts:
    tables: tuple[str, ...]
    source: ConfFact
    target: ConfFact
    target_tables: Mapping[str, bool] = field(default_factory=dict)  # table -> exists on the target
    resumed: frozenset[str] = frozenset()
    space: SpaceFact = SpaceFact()
    access: AccessFact = AccessFact()
    target_key: str = "target"


# --------------------------------------------------------------------------------------------------
# Pure evaluation


def _enabled(facts: SnapshotFacts) -> CheckResult:
    problems, fixes, notes = [], [], []
    for which, conf in (("source", facts.source), ("target", facts.target)):
        if conf.error is not None:
            return CheckResult("snapshots_enabled", False, f"the {which} {conf.cluster}'s /conf not read: {conf.error}",
                               transient=transient(conf.error))
        value = (conf.properties or {}).get(ENABLED, "true").strip().lower()
        notes.append(f"{which} {conf.cluster}: {ENABLED}={value} ({conf.whose})")
        if value != "true":
            problems.append(f"{ENABLED} is {value} on the {which} {conf.cluster} ({conf.whose})")
            fixes.append(f"set {ENABLED}=true in the {which} cluster's hbase-site.xml and restart its masters and "
                         "region servers (or use initial_copy scan)")
    if problems:
        return CheckResult("snapshots_enabled", False, "; ".join(problems), fix="; ".join(fixes))
    return CheckResult("snapshots_enabled", True, "; ".join(notes))


def _target_tables(facts: SnapshotFacts) -> CheckResult:
    present = [t for t in facts.tables if facts.target_tables.get(t) and t not in facts.resumed]
    if present:
        return CheckResult(
            "snapshot_target_tables", False,
            f"already on the target {facts.target_key}: {', '.join(present)}; clone_snapshot creates the table",
            fix="; ".join(f"disable '{t}'; drop '{t}' (on the target, if its rows may go)" for t in present)
            + "; or run these tables with initial_copy scan")
    resumed = [t for t in facts.tables if t in facts.resumed]
    return CheckResult("snapshot_target_tables", True, "absent on the target (the clone creates them)"
                       + (f"; exported by this run already: {', '.join(resumed)}" if resumed else ""))


def space_need(space: SpaceFact) -> tuple[int, int]:
    """(raw bytes, names) the snapshots need on the target: their bytes times the replication plus one block per
    task in flight (HDFS reserves a whole block against a space quota while a file is written); their files."""
    raw = sum(space.bytes_needed.values()) * space.replication + space.tasks * space.block_size * space.replication
    return raw, sum(space.files_needed.values())


def _space(facts: SnapshotFacts) -> CheckResult:
    space = facts.space
    if space.error is not None:
        return CheckResult("snapshot_space", False, f"the target's room for the snapshots not read: {space.error}",
                           transient=transient(space.error))
    raw, names = space_need(space)
    logical = sum(space.bytes_needed.values())
    shown = ", ".join(f"{t} {human_bytes(b)}" for t, b in sorted(space.bytes_needed.items()))
    problems, fixes = [], []
    if space.capacity_remaining is not None and space.capacity_remaining < raw:
        problems.append(f"the target's HDFS has {human_bytes(space.capacity_remaining)} free, the snapshots need "
                        f"{human_bytes(raw)} ({human_bytes(logical)} x replication {space.replication}, and a block "
                        f"per task in flight)")
        fixes.append("free or add DataNode capacity on the target")
    for c in space.quotas:
        need = names if c.unit == "names" else raw
        if c.headroom < need:
            shown_need = f"{need} names" if c.unit == "names" else human_bytes(need)
            shown_room = f"{c.headroom} names" if c.unit == "names" else human_bytes(max(c.headroom, 0))
            problems.append(f"the {c.kind} quota on {c.path} leaves {shown_room}, the snapshots need {shown_need}")
            flag = "-setQuota" if c.unit == "names" else "-setSpaceQuota"
            wanted = c.used + need
            fixes.append(f"hdfs dfsadmin {flag} {wanted} {c.path} (on the target)")
    if problems:
        return CheckResult("snapshot_space", False,
                           f"not enough room on the target for {shown}: " + "; ".join(problems),
                           fix="; ".join(fixes) + "; or fewer tables by snapshot (initial_copy scan for some)")
    quotas = ", ".join(f"{c.kind} quota on {c.path}: "
                       + (f"{c.headroom} names" if c.unit == "names" else human_bytes(c.headroom)) + " left"
                       for c in space.quotas) or "no quota"
    free = "free space not read" if space.capacity_remaining is None else \
        f"{human_bytes(space.capacity_remaining)} free"
    return CheckResult("snapshot_space", True,
                       f"{shown} (x{space.replication}: {human_bytes(raw)}, {names} files) fit: {free}; {quotas}")


def _access(facts: SnapshotFacts) -> CheckResult:
    access = facts.access
    if access.error is not None:
        return CheckResult("snapshot_write_access", False, f"the target's permissions not read: {access.error}",
                           transient=transient(access.error))
    who = access.caller or "?"
    if access.refused:
        paths = "; ".join(f"{p}: {why}" for p, why in sorted(access.refused.items()))
        return CheckResult("snapshot_write_access", False, f"{who} cannot write where the export writes on the target: "
                           f"{paths}",
                           fix=f"run the export as the target's HBase user {access.hbase_owner} (the target "
                               "connection's webhdfs_user, or its Kerberos principal), or grant it write access "
                               "(hdfs dfs -setfacl -m user:<user>:rwx on those directories)")
    if access.chown_needed and access.chown is not None:
        return CheckResult("snapshot_write_access", False,
                           f"{who} is not the target's HBase user {access.hbase_owner} and cannot give it the files "
                           f"(SETOWNER refused: {access.chown})",
                           fix=f"run the export as {access.hbase_owner} (the target connection's webhdfs_user, or "
                               "its principal), or as an HDFS superuser (dfs.permissions.superusergroup)")
    owner = (f"; files are given to {access.hbase_owner}:{access.hbase_group}" if access.chown_needed
             else " (HBase's own user)")
    return CheckResult("snapshot_write_access", True, f"{who} may write {', '.join(access.checked)}{owner}")


def _settings(facts: SnapshotFacts) -> CheckResult:
    notes, warnings = [], []
    for which, conf, keys in (("source", facts.source, NOTED_SOURCE), ("target", facts.target, NOTED_TARGET)):
        if conf.properties is None:
            continue
        values = ", ".join(f"{k}={conf.properties.get(k, default)}" for k, default in keys)
        notes.append(f"{which} {conf.cluster}: {values}")
    ttl = (facts.source.properties or {}).get("hbase.master.snapshot.ttl", "0").strip()
    if ttl not in ("0", "-1", ""):
        warnings.append(f"the source gives snapshots a TTL of {ttl}s (hbase.master.snapshot.ttl): an export longer "
                        "than that loses its snapshot to the cleaner chore and stops")
    if warnings:
        return CheckResult("snapshot_settings", False, "; ".join(warnings + notes), severity=WARNING,
                           fix="set hbase.master.snapshot.ttl=0 on the source (or above the export's duration)")
    return CheckResult("snapshot_settings", True, "; ".join(notes) or "not read")


def evaluate(facts: SnapshotFacts) -> list[CheckResult]:
    """Every check of the snapshot path (none when no table takes it)."""
    if not facts.tables:
        return []
    return [_enabled(facts), _target_tables(facts), _space(facts), _access(facts), _settings(facts)]


def decisions_check(decisions: Mapping[str, Any], mode: str) -> CheckResult:
    """`initial_copy`: each table's method and why; a table asked for the snapshot path that cannot take it is
    refused with its reasons."""
    refused = {t: d for t, d in decisions.items() if d.method == "snapshot" and d.blockers}
    if refused:
        return CheckResult("initial_copy", False, "the snapshot path cannot take "
                           + "; ".join(f"{t}: {', '.join(d.blockers)}" for t, d in refused.items()),
                           severity=ERROR, fix="fix what is named, or run these tables with initial_copy scan (auto "
                                               "chooses the scan for them by itself)")
    shown = "; ".join(f"{t}: {d.method} ({d.reason})" for t, d in decisions.items())
    return CheckResult("initial_copy", True, f"initial_copy {mode}: {shown}")


# --------------------------------------------------------------------------------------------------
# Gathering facts (I/O)


def _conf(cluster: "Cluster", zk_client: Any) -> ConfFact:
    from hbase_migration.clusters.hbase_conf import read_cluster_conf

    try:
        properties, whose = read_cluster_conf(cluster, zk_client)
    except Exception as e:
        return ConfFact(cluster.name, error=Unlearned.of(e))
    return ConfFact(cluster.name, properties, whose)


def table_bytes(source: "Cluster", tables: Sequence[str]) -> dict[str, tuple[int, int]]:
    """{table: (bytes, files)} of each table's directory on the source's HDFS (its store files, mostly)."""
    from hbase_migration.data.snapshot_copy import webhdfs_of

    client = webhdfs_of(source)
    out = {}
    for table in tables:
        summary = client.content_summary(posixpath.join(source.rootdir, "data", *split_table(table)))
        out[table] = (summary.length, summary.file_count + summary.directory_count)
    return out


def _deepest_existing(client: hdfs.WebHdfs, path: str) -> tuple[str, hdfs.FileStatus]:
    for candidate in hdfs.ancestors(path):
        status = client.status_or_none(candidate)
        if status is not None:
            return candidate, status
    raise hdfs.WebHdfsError(f"no ancestor of {path} exists")


def _space_fact(target: "Cluster", tables: Sequence[str], sizes: Mapping[str, tuple[int, int]],
                memstores: Mapping[str, int], tasks: int) -> SpaceFact:
    from hbase_migration.data.snapshot_copy import webhdfs_of

    try:
        client = webhdfs_of(target)
        marker = client.status_or_none(posixpath.join(target.rootdir, "hbase.id")) or client.file_status(
            target.rootdir)
        namespaces = sorted({split_table(t)[0] for t in tables})
        summaries: dict[str, hdfs.ContentSummary] = {}
        for ns in namespaces:
            deepest, _ = _deepest_existing(client, posixpath.join(target.rootdir, "archive", "data", ns))
            for path in hdfs.ancestors(deepest):
                if path not in summaries:
                    summaries[path] = client.content_summary(path)
        quotas = tuple(c for path in sorted(summaries, key=len, reverse=True)
                       for c in hdfs.constraints_of(path, summaries[path])
                       if c.limit < UNLIMITED)  # HDFS's root has a namespace quota of Long.MAX_VALUE
        try:
            remaining: int | None = client.capacity().remaining
        except hdfs.WebHdfsRemoteError:
            remaining = None
    except Exception as e:
        return SpaceFact(error=Unlearned.of(e))
    return SpaceFact({t: sizes[t][0] + int(memstores.get(t, 0)) for t in tables}, {t: sizes[t][1] for t in tables},
                     max(marker.replication, 1), marker.block_size or 128 << 20, max(1, tasks), remaining, quotas)


def _access_fact(target: "Cluster", tables: Sequence[str]) -> AccessFact:
    from hbase_migration.data.snapshot_copy import webhdfs_of
    from hbase_migration.data.snapshot_export import ownership

    try:
        client = webhdfs_of(target)
        caller = client.caller()
        root = target.rootdir
        marker = client.status_or_none(posixpath.join(root, "hbase.id")) or client.file_status(root)
        wanted = [posixpath.join(root, SNAPSHOT_DIR, WORKING_DIR), posixpath.join(root, STAGING_DIR)] + \
            [posixpath.join(root, "archive", "data", *split_table(t)) for t in tables]
        refused, checked = {}, []
        for path in dict.fromkeys(_deepest_existing(client, p)[0] for p in wanted):
            checked.append(path)
            try:
                client.check_access(path, "-wx")
            except hdfs.WebHdfsRemoteError as e:
                if e.exception != "AccessControlException":
                    raise
                refused[path] = str(e).split(": ", 2)[-1]
        owner, group = ownership(caller, marker.owner, marker.group)
        chown = None
        if owner is not None:
            root_status = client.file_status(root)
            try:  # the rootdir's owner and group as they are: only HDFS's superusers may, and nothing changes
                client.set_owner(root, root_status.owner, root_status.group)
            except hdfs.WebHdfsRemoteError as e:
                if e.exception != "AccessControlException":
                    raise
                chown = str(e).split(": ", 2)[-1]
    except Exception as e:
        return AccessFact(error=Unlearned.of(e))
    return AccessFact(caller, marker.owner, marker.group, refused, tuple(checked), chown, owner is not None)


def gather(source: "Cluster", target: "Cluster", tables: Sequence[str], *, source_zk: Any, target_zk: Any,
           target_tables: Mapping[str, bool], resumed: Sequence[str] = (), memstores: Mapping[str, int] | None = None,
           sizes: Mapping[str, tuple[int, int]] | None = None, tasks: int = 4) -> SnapshotFacts:
    """The facts of the snapshot path for `tables` (read only, but for the SETOWNER of the rootdir to what it is)."""
    tables = tuple(tables)
    if not tables:
        return SnapshotFacts((), ConfFact(source.name), ConfFact(target.name))
    src_conf = _conf(source, source_zk) if source_zk is not None else ConfFact(source.name, error="no ZooKeeper")
    tgt_conf = _conf(target, target_zk) if target_zk is not None else ConfFact(target.name, error="no ZooKeeper")
    try:
        sizes = dict(sizes) if sizes is not None else table_bytes(source, tables)
        space = _space_fact(target, tables, sizes, memstores or {}, tasks)
    except Exception as e:
        space = SpaceFact(error=Unlearned.of(e))
    return SnapshotFacts(tables, src_conf, tgt_conf, dict(target_tables), frozenset(resumed), space,
                         _access_fact(target, tables), str(target.cluster_key))


def encryption_check(table: str, encrypted: Mapping[str, str], same_master_key: bool) -> CheckResult:
    """`initial_copy` for one table asked for the snapshot path (the CLI's): refused when it has encrypted families
    and the operator did not attest the target's master key (pure)."""
    if encrypted and not same_master_key:
        return CheckResult("initial_copy", False, encryption_refusal(table, encrypted),
                           fix="the scan copy (the CLI's copy), or --same-master-key once the target's key provider "
                               "holds the source's master key")
    shown = f"encrypted families {', '.join(sorted(encrypted))}: the target holds the source's master key (attested)" \
        if encrypted else "no encrypted family"
    return CheckResult("initial_copy", True, f"{table} by snapshot: {shown}")


def check_table(source: "Cluster", target: "Cluster", table: str, *, resumed: bool = False,
                tasks: int = 4, same_master_key: bool = False) -> list[CheckResult]:
    """The snapshot path's checks for one table, before its snapshot is taken (the CLI's snapshot-export; the DAG's
    preflight runs them for every table): its encrypted families (from `describe`), then what `evaluate` says of
    the facts gathered now."""
    import contextlib

    from hbase_migration.clusters import zk
    from hbase_migration.data.snapshot_copy import webhdfs_of
    from hbase_migration.migration.region_metrics import fetch_region_metrics
    from hbase_migration.migration.tables import existing_tables

    webhdfs_of(source), webhdfs_of(target)  # both have WebHDFS, or ValueError naming the connection
    from hbase_migration.migration.tables import describe_tables

    encrypted = {} if resumed else describe_tables(source, [table])[table].encrypted_families()
    memstores: dict[str, int] = {}
    try:
        for region in fetch_region_metrics(source, [table])[0]:
            memstores[table] = memstores.get(table, 0) + region.memstore_size
    except Exception as e:  # the store files alone are counted
        log.warning("the memstores of %s not read (%s): counting its store files only", table, e)
    with contextlib.ExitStack() as stack:
        zks = []
        for cluster in (source, target):
            try:
                zks.append(stack.enter_context(zk.connect(cluster, timeout=cluster.timeout_s)))
            except Exception:  # snapshots_enabled says it did not answer
                zks.append(None)
        present = table in existing_tables(target, [table])
        facts = gather(source, target, [table], source_zk=zks[0], target_zk=zks[1], target_tables={table: present},
                       resumed=[table] if resumed else [], memstores=memstores, tasks=tasks)
    return [encryption_check(table, encrypted, same_master_key), *evaluate(facts)]
