"""Preflight: every check a migration needs before it changes anything, each a named result with a reason.

Checks read only, with one exception said here: to know whether the target can create a table with the
source's codecs, coprocessors and split policy, its `create` runs on the target under a scratch name and the
scratch table is dropped at once (`tables.check_create`; only for tables to be created that use any of them).
`run_preflight` gathers facts from both clusters (Thrift, ZooKeeper, the shell's `describe`, WebHDFS, the
source's `/conf`) into a `Facts` value, and `evaluate` turns facts into results: a pure function, unit-tested
as a table. Nothing here adds a peer or alters a table; each failure says its fix.
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from hbase_migration.clusters import hdfs
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.hbase_conf import (
    BULKLOAD_ENABLED,
    DROP_ON_DELETED_TABLE,
    REPLICATION_CLUSTER_ID,
    ServerConf,
    bulkload_findings,
    true_on,
)
from hbase_migration.migration.checks import (
    ERROR,
    SKIPPED,
    WARNING,
    CheckResult,
    PreflightReport,
    Unlearned,
    transient,
)
from hbase_migration.migration.schema import TableSchema, alter_scope_statement, ruby_string
from hbase_migration.migration.tables import (
    class_refusals,
    codecs_used,
    compare_tables,
    describe_present,
    existing_tables,
    first_rows,
    needs_create_check,
)
from hbase_migration.replication.model import (
    InvalidPeerConfig,
    Peer,
    PeerConfig,
    is_internal,
    is_ours,
    validate_peer_id,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterFacts:
    """What one cluster showed; `error` set when it could not be reached. Every `*_error` of the facts is an
    `Unlearned` (plain text in tests): whether the endpoint did not answer decides if a retry may help."""

    name: str
    cluster_key: str
    cluster_id: str | None = None
    tables: Mapping[str, TableSchema | None] = field(default_factory=dict)  # None: table absent
    error: str | Unlearned | None = None


@dataclass(frozen=True)
class Facts:
    source: ClusterFacts
    target: ClusterFacts
    tables: tuple[str, ...]
    peer_id: str
    wanted_peer: PeerConfig | None
    peers: tuple[Peer, ...] = ()
    peers_error: str | Unlearned | None = None
    queued_wals: Mapping[str, int] = field(default_factory=dict)  # peer id -> most WALs in one of its queues
    recovered_queues: Mapping[str, int] = field(default_factory=dict)
    headroom: Any = None  # hdfs.HeadroomDecision, or None when not checked
    headroom_error: str | Unlearned | None = None
    create_missing: bool = True
    owner: str | None = None
    lag_wal_threshold: int = 2  # more WALs than this in one queue of another peer: it lags
    codec_map: Mapping[str, str] = field(default_factory=dict)
    target_coprocessors: tuple[str, ...] = ()
    allow_target_data: bool = False
    target_first_rows: Mapping[str, bytes | None] = field(default_factory=dict)  # existing target table -> a row
    target_rows_error: str | Unlearned | None = None
    create_checks: Mapping[str, str | None] = field(default_factory=dict)  # table to create -> None ok / refusal
    source_confs: tuple[ServerConf, ...] | None = None  # None: not read
    source_conf_error: str | Unlearned | None = None
    peer_backend: str = "shell"
    sizing: Any = None  # sizing_probe.SizingReport, None when not sized
    sizing_error: str | Unlearned | None = None
    snapshot_tables: tuple[str, ...] = ()  # tables whose initial copy is a snapshot: the clone creates them
    marker_retention_s: float = 86400.0  # how long the source's delete markers must survive its major compactions
    bulk_loads: str = "replicated"  # the run spec's: "none" is the operator's attestation that none are made
    target_confs: tuple[ServerConf, ...] | None = None  # the target's region servers' /conf (None: not read)
    target_conf_error: str | Unlearned | None = None


# ------------------------------------------------------------------------------------------------
# Pure evaluation


def _reachable(which: str, facts: ClusterFacts) -> CheckResult:
    if facts.error:
        return CheckResult(f"{which}_reachable", False, f"{facts.name} ({facts.cluster_key}): {facts.error}",
                           transient=transient(facts.error))
    return CheckResult(f"{which}_reachable", True,
                       f"{facts.name} ({facts.cluster_key}) answers; cluster id {facts.cluster_id}")


def _distinct(source: ClusterFacts, target: ClusterFacts, same_key: bool) -> CheckResult:
    if same_key:
        return CheckResult("distinct_clusters", False,
                           f"source and target are the same cluster ({source.cluster_key})")
    if source.cluster_id and source.cluster_id == target.cluster_id:
        return CheckResult("distinct_clusters", False,
                           f"source and target report the same cluster id {source.cluster_id}: "
                           "two keys reach one cluster")
    return CheckResult("distinct_clusters", True, f"{source.cluster_key} -> {target.cluster_key}")


def _source_tables(facts: Facts) -> CheckResult:
    missing = [t for t in facts.tables if facts.source.tables.get(t) is None]
    if missing:
        return CheckResult("source_tables", False, f"not found on the source: {', '.join(missing)}")
    fams = "; ".join(f"{t}: {','.join(f.name for f in facts.source.tables[t].families)}" for t in facts.tables)
    return CheckResult("source_tables", True, f"all {len(facts.tables)} exist ({fams})")


def _not_on_source(facts: Facts) -> list[str]:
    return [t for t in facts.tables if facts.source.tables.get(t) is None]


def _skipped(name: str, facts: Facts) -> CheckResult | None:
    """The result of a check over the source's tables when none of them exists there (source_tables fails)."""
    absent = _not_on_source(facts)
    if len(absent) < len(facts.tables):
        return None
    return CheckResult(name, False, f"not checked: {', '.join(absent)} not found on the source", severity=SKIPPED)


def _unchecked(facts: Facts) -> str:
    """What a check over the source's tables could not look at, for its reason."""
    absent = _not_on_source(facts)
    return f" (not checked: {', '.join(absent)}, not found on the source)" if absent else ""


def _target_tables(facts: Facts) -> CheckResult:
    """Absent tables will be created; an existing one must have the source's families and the values a reader
    sees (VERSIONS, MIN_VERSIONS, TTL, KEEP_DELETED_CELLS), and be enabled."""
    skipped = _skipped("target_tables", facts)
    if skipped:
        return skipped
    problems, to_create, fixes = [], [], []
    for t in facts.tables:
        src, dst = facts.source.tables.get(t), facts.target.tables.get(t)
        if src is None or t in facts.snapshot_tables:  # snapshot_target_tables checks these
            continue
        if dst is None:
            to_create.append(t)
            continue
        comparison = compare_tables(src, dst, facts.codec_map)
        problems += comparison.mismatches
        fixes += comparison.fixes
        if not dst.enabled:
            problems.append(f"{t} on the target is disabled")
            fixes.append(f"enable {ruby_string(t)}")
    if to_create and not facts.create_missing:
        problems.append(f"absent on the target: {', '.join(to_create)} (allow creating them, or create them "
                        "with the source's families and split keys)")
    if problems:
        return CheckResult("target_tables", False, "; ".join(problems), fix="; ".join(fixes) or None)
    if facts.snapshot_tables and len(facts.snapshot_tables) == len(facts.tables):
        return CheckResult("target_tables", True, "every table is cloned from its snapshot (snapshot_target_tables)")
    if to_create:
        return CheckResult("target_tables", True, "will be created with the source's namespace, families, table "
                           f"attributes and split keys: {', '.join(to_create)}{_unchecked(facts)}")
    return CheckResult("target_tables", True, "all exist with the source's families, VERSIONS, MIN_VERSIONS, TTL "
                       f"and KEEP_DELETED_CELLS{_unchecked(facts)}")


def _target_attributes(facts: Facts) -> CheckResult:
    """The other attributes of existing target tables (compression, encoding, block size, table attributes):
    reported, not refused: they change how the target stores the cells, not what a reader sees."""
    differences = []
    for t in facts.tables:
        src, dst = facts.source.tables.get(t), facts.target.tables.get(t)
        if src is not None and dst is not None and t not in facts.snapshot_tables:
            differences += compare_tables(src, dst, facts.codec_map).differences
    if differences:
        return CheckResult("target_table_attributes", False, "existing target tables differ from the source "
                           "(storage, not content): " + "; ".join(differences), severity=WARNING)
    return CheckResult("target_table_attributes", True, "existing target tables have the source's other attributes "
                       "too (or there is none)")


def _own_peer_exists(facts: Facts) -> bool:
    """This migration's peer (same id, ours, same config) exists: the run is a resumed or repeated one."""
    existing = next((p for p in facts.peers if p.id == facts.peer_id), None)
    return (existing is not None and is_ours(existing, facts.owner) and facts.wanted_peer is not None
            and existing.config == facts.wanted_peer)


def _target_data(facts: Facts) -> CheckResult:
    if facts.target_rows_error:
        return CheckResult("target_data", False, f"cannot tell whether the target tables hold rows: "
                                                 f"{facts.target_rows_error}",
                           transient=transient(facts.target_rows_error))
    holding = {t: row for t, row in facts.target_first_rows.items() if row is not None}
    if not holding:
        return CheckResult("target_data", True, "existing target tables hold no row (or there is none)")
    shown = ", ".join(f"{t} (first row {row!r})" for t, row in sorted(holding.items()))
    if facts.allow_target_data:
        return CheckResult("target_data", True, f"target tables already hold rows, accepted by allow_target_data: "
                                                f"{shown}")
    if _own_peer_exists(facts):
        return CheckResult("target_data", True, f"target tables hold rows written by this migration (its peer "
                                                f"{facts.peer_id!r} already exists: a resumed or repeated run): "
                                                f"{shown}")
    return CheckResult("target_data", False,
                       f"target tables already hold rows, which would mix with the copy's cells and fail "
                       f"verification: {shown}",
                       fix="; ".join([*(f"truncate {ruby_string(t)}" for t in sorted(holding)),
                                      "or set allow_target_data (form) / [tables] allow_target_data (plan) / "
                                      "--allow-target-data (CLI) if those rows are meant to stay"]))


def _classes(facts: Facts) -> CheckResult:
    refusals = [r for t in facts.tables if (s := facts.source.tables.get(t)) is not None
                and facts.target.tables.get(t) is None for r in class_refusals(s, facts.target_coprocessors)]
    if refusals:
        return CheckResult("coprocessors", False, "; ".join(refusals),
                           fix="install the classes on the target's region servers and list them in "
                               "target_coprocessors, or remove them from the source tables")
    carried = sorted({spec.split("|")[1] for t in facts.tables if (s := facts.source.tables.get(t)) is not None
                      for spec in s.coprocessors().values() if "|" in spec})
    return CheckResult("coprocessors", True, f"carried (installed on the target): {', '.join(carried)}" if carried
                       else "no coprocessor on the tables to create")


def _codecs(facts: Facts) -> CheckResult:
    refused, checked = [], []
    for t in facts.tables:
        src = facts.source.tables.get(t)
        if src is None or facts.target.tables.get(t) is not None or t not in facts.create_checks:
            continue
        used = codecs_used(src, facts.codec_map)
        where = ", ".join(f"{codec} ({', '.join(fams)})" for codec, fams in sorted(used.items())) or "no codec"
        error = facts.create_checks[t]
        if error is None:
            checked.append(f"{t}: {where}")
        else:
            refused.append(f"{t} ({where}): the target refuses its create: {error}")
    if refused:
        return CheckResult("target_create_check", False, "; ".join(refused),
                           fix="install the codec on the target's region servers (hbase.regionserver.codecs lists "
                               "the ones they must load at start), or map it: codec_map SNAPPY=ZSTD (form/plan "
                               "[tables] codec_map, CLI --codec-map); for a class, see the coprocessors check")
    if checked:
        return CheckResult("target_create_check", True, "the target created and dropped a scratch twin of each "
                           "table (its codecs load there): " + "; ".join(checked))
    return CheckResult("target_create_check", True, "nothing to check: no table to create uses a codec, a "
                       "coprocessor or a split policy")


BULK_LOAD_FIX = (f"set {BULKLOAD_ENABLED}=true and a unique {REPLICATION_CLUSTER_ID} on the source's region servers "
                 "(and hbase.replication.conf.dir on the target's), rolling restart; or, if nothing is bulk loaded "
                 "into these tables until the cut-over, say so: bulk_loads none (form, plan [peer] bulk_loads, CLI "
                 "--bulk-loads none)")


def _bulk_load(facts: Facts) -> CheckResult:
    """A bulk-loaded HFile is not in the WALs: without bulk load replication it never reaches the target, and no
    bounded check can see its cells (their timestamps may be old). Refused unless the source's /conf shows it
    replicates or the run spec attests `bulk_loads: none`."""
    if facts.source_confs is None:
        ok, reason = None, f"the source's /conf not read: {facts.source_conf_error}"
    else:
        ok, reason = bulkload_findings(facts.source_confs)
    if ok:
        return CheckResult("bulk_load_replication", True, f"bulk-loaded HFiles replicate: {reason}")
    if facts.bulk_loads == "none":
        return CheckResult("bulk_load_replication", True, "bulk_loads none: the operator attests nothing is bulk "
                           f"loaded into these tables until the cut-over (bulk loads would not replicate: {reason})")
    if ok is None:
        return CheckResult("bulk_load_replication", False, f"unknown whether bulk-loaded HFiles replicate ({reason}): "
                           "a bulk load into a migrated table after T0 would be missing on the target",
                           fix=BULK_LOAD_FIX, transient=facts.source_confs is None
                           and transient(facts.source_conf_error))
    return CheckResult("bulk_load_replication", False,
                       f"bulk-loaded HFiles would not replicate ({reason}): a bulk load into a migrated table after "
                       "T0 is not in the WALs and would be missing on the target", fix=BULK_LOAD_FIX)


def _drop_on_deleted(facts: Facts) -> CheckResult:
    """`hbase.replication.drop.on.deleted.table` is read by the SENDING cluster's region servers (HBase's
    HBaseInterClusterReplicationEndpoint): the source's for the forward peer, the target's for the cut-over's
    reverse peer. True, a batch the sink refuses with TableNotFoundException is dropped, not retried, for the tables
    the sender lacks too; false (HBase's default), it waits for the table. The toolkit enables no peer before its
    tables exist on the target (enable_gate), but a table dropped and re-created meanwhile loses its edits."""
    sides = (("source", facts.source_confs, facts.source_conf_error),
             ("target", facts.target_confs, facts.target_conf_error))
    dropping = [f"{side}: {', '.join(servers)}" for side, confs, _ in sides if confs
                and (servers := true_on(confs, DROP_ON_DELETED_TABLE))]
    if dropping:
        return CheckResult(
            "drop_on_deleted_table", False,
            f"{DROP_ON_DELETED_TABLE}=true on {'; '.join(dropping)}: these region servers drop, instead of retrying, "
            "the replicated edits of a table the receiving cluster lacks when their own cluster lacks it too (a "
            "migrated table dropped and re-created during the migration, or after the cut-over, loses the edits "
            "in flight silently); the toolkit enables no peer before its tables exist on the target",
            severity=WARNING, fix=f"set {DROP_ON_DELETED_TABLE}=false (HBase's default) on those region servers "
                                  "for the migration and the cut-over, and drop no migrated table meanwhile")
    unread = [f"{side}'s /conf not read ({error or 'no live region server'})" for side, confs, error in sides
              if not confs]
    if unread:
        return CheckResult("drop_on_deleted_table", False, f"{DROP_ON_DELETED_TABLE} not known: {'; '.join(unread)}",
                           severity=WARNING)
    return CheckResult("drop_on_deleted_table", True,
                       f"{DROP_ON_DELETED_TABLE} false on every region server of both clusters: an edit a sink cannot "
                       "apply waits for its table, never dropped")


def _deleted_cells(facts: Facts) -> CheckResult:
    keeping = [f"{t}:{f.name} (KEEP_DELETED_CELLS => {f.value('KEEP_DELETED_CELLS')})" for t in facts.tables
               if (s := facts.source.tables.get(t)) is not None and t not in facts.snapshot_tables
               for f in s.families if f.keeps_deleted_cells]
    if keeping:
        return CheckResult("keep_deleted_cells", False,
                           "deleted cells these families keep are not copied (a Thrift scan cannot return delete "
                           "markers or the cells they hide; only a raw scan can): the target keeps what a reader "
                           "sees, and the deletes made after T0 replicate: " + ", ".join(keeping),
                           severity=WARNING, fix="initial_copy snapshot copies them exactly (the HFiles themselves)")
    snapshotted = [t for t in facts.snapshot_tables if (s := facts.source.tables.get(t)) is not None
                   and any(f.keeps_deleted_cells for f in s.families)]
    if snapshotted:
        return CheckResult("keep_deleted_cells", True, "families keeping deleted cells are copied by snapshot, "
                           f"delete markers and hidden cells included: {', '.join(snapshotted)}")
    return CheckResult("keep_deleted_cells", True, "no family keeps deleted cells")


def _peer_options(facts: Facts) -> CheckResult:
    wanted = facts.wanted_peer
    if wanted is None:
        return CheckResult("peer_options", True, "no peer to add")
    if wanted.serial and facts.peer_backend == "zookeeper":
        return CheckResult("peer_options", False,
                           "serial replication needs HBase 2.1+ (SERIAL => true); the source's peer-admin backend "
                           "is zookeeper (HBase 1.x, which has no serial peers)",
                           fix="set the source connection's extra peer_admin=shell (HBase 2.1+), or run with "
                               "serial off")
    bandwidth = f"{wanted.bandwidth} bytes/s per region server" if wanted.bandwidth else "unlimited"
    return CheckResult("peer_options", True, f"SERIAL {'true' if wanted.serial else 'false'}, BANDWIDTH {bandwidth}")


def _replication_scope(facts: Facts) -> CheckResult:
    skipped = _skipped("replication_scope", facts)
    if skipped:
        return skipped
    bad, zero, fixes = [], [], []
    for t in facts.tables:
        schema = facts.source.tables.get(t)
        if schema is None:
            continue
        for fam in schema.families:
            scope = fam.replication_scope
            if scope not in (0, 1):
                bad.append(f"{t}:{fam.name}={fam.attributes.get('REPLICATION_SCOPE')}")
            elif scope == 0:
                zero.append(f"{t}:{fam.name}")
                fixes.append(alter_scope_statement(t, fam.name, 1))
    if bad:
        return CheckResult(
            "replication_scope", False,
            f"REPLICATION_SCOPE must be 0 or 1; refusing {', '.join(bad)} (other values crashed region "
            "servers in HBase 1.0): set them to 1 before migrating",
            fix="; ".join(alter_scope_statement(*b.split("=")[0].split(":", 1), 1) for b in bad))
    if zero:
        return CheckResult(
            "replication_scope", False,
            f"REPLICATION_SCOPE is 0 on {', '.join(zero)}: edits after the peer is added would not replicate",
            fix="; ".join(fixes))
    return CheckResult("replication_scope", True,
                       f"every family of the migrated tables has REPLICATION_SCOPE 1{_unchecked(facts)}")


def _peer_id(facts: Facts) -> CheckResult:
    try:
        validate_peer_id(facts.peer_id)
    except InvalidPeerConfig as e:
        return CheckResult("peer_id", False, str(e))
    if facts.peers_error:
        return CheckResult("peer_id", False, f"cannot list peers on the source: {facts.peers_error}",
                           transient=transient(facts.peers_error))
    existing = next((p for p in facts.peers if p.id == facts.peer_id), None)
    if existing is None:
        return CheckResult("peer_id", True, f"peer {facts.peer_id!r} is free")
    if not is_ours(existing, facts.owner):
        return CheckResult("peer_id", False,
                           f"peer {facts.peer_id!r} exists and was not created by this toolkit "
                           f"({existing.describe()}): choose another id")
    if facts.wanted_peer is not None and existing.config != facts.wanted_peer:
        diff = "; ".join(existing.config.differences(facts.wanted_peer))
        return CheckResult("peer_id", False,
                           f"peer {facts.peer_id!r} is ours but replicates something else ({diff}): "
                           "finish or remove that migration first")
    return CheckResult("peer_id", True,
                       f"peer {facts.peer_id!r} already exists with this config ({existing.state}): "
                       "add_peer will leave it as it is")


def own_batch_peer(peer: Peer, facts: Facts) -> bool:
    """One of this run's own batch peers (`hbase_migration.migration.batches`): `<peer_id>` or `<peer_id>_b<k>`,
    created by the toolkit, replicating only tables of this run. Its WALs are the run's own backlog (a retried or
    resumed run finds the peers of its batches that started), not another's."""
    from hbase_migration.migration.batches import is_batch_peer
    from hbase_migration.replication.model import normalize_table

    tables = {normalize_table(t) for t in facts.tables}
    return (is_batch_peer(peer.id, facts.peer_id) and is_ours(peer, facts.owner)
            and bool(peer.config.table_cfs) and set(peer.config.table_cfs) <= tables)


def _pinning_peers(facts: Facts) -> CheckResult:
    if facts.peers_error:
        return CheckResult("pinning_peers", False, f"cannot list peers on the source: {facts.peers_error}",
                           transient=transient(facts.peers_error))
    internal = [p.id for p in facts.peers if is_internal(p)]  # HBase's region replica peer: not a backlog
    own = {p.id for p in facts.peers if p.id == facts.peer_id or own_batch_peer(p, facts)}
    others = [p for p in facts.peers if p.id not in own and not is_internal(p)]
    disabled = [p.id for p in others if p.enabled is False]
    recovered = {k: v for k, v in facts.recovered_queues.items() if k not in own and not is_internal(k) and v}
    if disabled:
        return CheckResult("pinning_peers", False,
                           f"disabled peer(s) {', '.join(disabled)} already pin WALs in oldWALs: a second "
                           "pinned backlog doubles the quota risk; enable or remove them first",
                           fix="; ".join(f"enable_peer '{p}'  (or remove_peer '{p}')" for p in disabled))
    # A caught-up 2.x queue holds the WAL being written, maybe one just rolled; more means backlog.
    lagging = {k: v for k, v in facts.queued_wals.items()
               if k not in own and not is_internal(k) and v > facts.lag_wal_threshold}
    notes = []
    if lagging:
        worst = ", ".join(f"{k}={v}" for k, v in sorted(lagging.items()))
        notes.append(f"most WALs in one queue, per other peer: {worst}")
    if recovered:
        notes.append("recovered queues of other peers: " + ", ".join(f"{k}={v}" for k, v in recovered.items()))
    if notes:
        return CheckResult("pinning_peers", False, "other peers are lagging and pin WALs: " + "; ".join(notes),
                           severity=WARNING)
    own_batches = sorted(own - {facts.peer_id})
    return CheckResult("pinning_peers", True,
                       f"no other peer pins WALs ({len(others)} other peer(s), all enabled and caught up"
                       + (f"; HBase's own {', '.join(internal)} left alone" if internal else "")
                       + (f"; this run's own batch peers {', '.join(own_batches)} are its backlog" if own_batches
                          else "") + ")")


def _projected(facts: Facts) -> bool:
    """The sizing projected the copy and measured oldWALs' growth: the copy_projection check judges the quota
    over the copy; oldwals_headroom keeps to the marks as they are now."""
    p = facts.sizing.projection if facts.sizing is not None else None
    return p is not None and p.copy_s is not None and p.pinned_bytes is not None


def _headroom(facts: Facts) -> CheckResult:
    if facts.headroom_error:
        return CheckResult("oldwals_headroom", False, str(facts.headroom_error),
                           transient=transient(facts.headroom_error))
    if facts.headroom is None:
        return CheckResult("oldwals_headroom", False, "not checked: the source has no webhdfs_url",
                           severity=WARNING)
    d = facts.headroom
    if not d.ok:
        return CheckResult("oldwals_headroom", False, "; ".join(d.reasons))
    if _projected(facts):
        return CheckResult("oldwals_headroom", True, "no quota at or above its mark now; over the copy: see "
                                                     "copy_projection")
    extra = f"; {'; '.join(d.notes)}" if d.notes else ""
    proj = "no exhaustion projected" if d.projected_exhaustion_s is None \
        else f"exhaustion projected in {d.projected_exhaustion_s:.0f}s"
    return CheckResult("oldwals_headroom", True, f"{proj}, need {d.needed_s:.0f}s{extra}")


def _copy_projection(facts: Facts) -> CheckResult:
    """The sizing's projection: the copy's duration and the oldWALs it pins, against quotas and free space."""
    if facts.sizing_error:
        return CheckResult("copy_projection", False, f"the run could not be sized: {facts.sizing_error}",
                           severity=WARNING, fix="check the error; expected_copy_s is used by oldwals_headroom")
    if facts.sizing is None:
        return CheckResult("copy_projection", True, "not sized (sizing off): oldwals_headroom trusts expected_copy_s")
    v = facts.sizing.verdict
    errors = [f"{e}" for e in facts.sizing.errors]
    reason = v.reason + (f"; not read: {'; '.join(errors)}" if errors else "")
    if not v.ok:
        return CheckResult("copy_projection", False, reason, fix=v.fix)
    if v.severity == "warning" or errors:
        return CheckResult("copy_projection", False, reason, severity=WARNING, fix=v.fix)
    return CheckResult("copy_projection", True, reason)


def evaluate(facts: Facts, same_key: bool) -> PreflightReport:
    results = [_reachable("source", facts.source), _reachable("target", facts.target),
               _distinct(facts.source, facts.target, same_key)]
    if not facts.source.error:
        results.append(_source_tables(facts))
    if not facts.source.error and not facts.target.error:
        results += [_target_tables(facts), _target_attributes(facts), _target_data(facts), _classes(facts),
                    _codecs(facts)]
    if not facts.source.error:
        results += [_replication_scope(facts), _peer_id(facts), _peer_options(facts), _pinning_peers(facts),
                    _headroom(facts), _copy_projection(facts), _bulk_load(facts), _drop_on_deleted(facts),
                    _deleted_cells(facts),
                    _delete_marker_retention(facts)]
    return PreflightReport(tuple(results), facts.sizing)


PURGE_DELETES = "hbase.hstore.time.to.purge.deletes"


def _purge_delay_ms(facts: Facts, table: str, family: Any) -> tuple[int, str]:
    """The source's effective delay before a major compaction may drop a delete marker, and where it is set: the
    family's CONFIGURATION, the table's, else the region servers' (the smallest one found)."""
    schema = facts.source.tables.get(table)
    for value, where in ((family.configuration.get(PURGE_DELETES), f"{table}:{family.name} CONFIGURATION"),
                         (schema.metadata.get(PURGE_DELETES) if schema else None, f"{table} CONFIGURATION")):
        if value is not None:
            return int(float(value)), where
    servers = [int(float(c.properties.get(PURGE_DELETES, "0") or 0)) for c in facts.source_confs or ()
               if c.properties is not None]
    return (min(servers), "the region servers' hbase-site") if servers else (0, "HBase's default")


def _delete_marker_retention(facts: Facts) -> CheckResult:
    """A delete marker a major compaction drops on the source but not on the target (each cluster compacts on
    its own) lets a later put with an OLDER timestamp than the delete show on the source and stay hidden on the
    target: replication then diverges, whatever the toolkit does (shown on real HBase). Families keeping deleted
    cells keep their markers too."""
    need_ms = int(facts.marker_retention_s * 1000)
    short = []
    for t in facts.tables:
        schema = facts.source.tables.get(t)
        for f in (schema.families if schema else ()):
            if f.keeps_deleted_cells:
                continue
            delay, where = _purge_delay_ms(facts, t, f)
            if delay < need_ms:
                short.append(f"{t}:{f.name} ({delay / 1000:g}s, {where})")
    if not short:
        return CheckResult("delete_marker_retention", True, f"the source keeps delete markers for at least "
                                                            f"{need_ms / 1000:g}s ({PURGE_DELETES})")
    return CheckResult(
        "delete_marker_retention", False,
        f"delete markers of {', '.join(short)} may be purged by a major compaction on the source sooner than "
        f"{need_ms / 1000:g}s: a put written after a delete with an older timestamp than the delete would then show "
        "on the source and stay hidden on the target (verify reports it missing_on_target)", severity=WARNING,
        fix=f"set {PURGE_DELETES}={need_ms} on the source's region servers (or the tables' CONFIGURATION) for the "
            "migration, or make sure no client writes timestamps older than its own deletes")


# ------------------------------------------------------------------------------------------------
# Gathering facts (I/O)


def _cluster_facts(cluster: Cluster, tables: Sequence[str], zk_client: Any) -> ClusterFacts:
    from hbase_migration.clusters import zk

    key = str(cluster.cluster_key)
    try:
        cluster_id = zk.read_cluster_id(zk_client, cluster.znode_parent)
        present = existing_tables(cluster, tables)
        schemas = describe_present(cluster, tables, present)
    except Exception as e:  # any failure to reach is reported as the check's reason
        return ClusterFacts(cluster.name, key, error=Unlearned.of(e))
    return ClusterFacts(cluster.name, key, cluster_id, schemas)


def gather_facts(cluster: Cluster, tables: Sequence[str], stack: contextlib.ExitStack) -> tuple[ClusterFacts, Any]:
    """What `cluster` shows about `tables`, and its ZooKeeper client (kept open on `stack`; None when it could
    not be reached: the facts then carry the error)."""
    from hbase_migration.clusters import zk

    try:
        client = stack.enter_context(zk.connect(cluster, timeout=cluster.timeout_s))
    except Exception as e:
        return ClusterFacts(cluster.name, str(cluster.cluster_key), error=Unlearned.of(e)), None
    return _cluster_facts(cluster, tables, client), client


def ensure_distinct(source: Cluster, target: Cluster) -> None:
    """Refuse a peer from a cluster to itself (HBase refuses it too, after the fact)."""
    from hbase_migration.clusters.cluster import ClusterConfigError

    if source.cluster_key.normalized() == target.cluster_key.normalized():
        raise ClusterConfigError(f"source and target are the same cluster ({source.cluster_key}): "
                                 "a peer to itself would replicate every edit back into its own tables")


def migration_peer_config(target: Cluster, tables: Sequence[str], serial: bool = False,
                          bandwidth: int = 0, *, source: Cluster | None = None) -> PeerConfig:
    """The peer a migration adds: to the target's cluster key, scoped by TABLE_CFS to the tables (all CFs),
    SERIAL and BANDWIDTH as the run asks (an existing peer with other values is another config); towards a
    Kerberized target in another realm, with the target's region server principal in its CONFIG (HBASE-15294)."""
    from hbase_migration.clusters.security import peer_principal_config

    configuration = peer_principal_config(source.security if source is not None else None, target.security)
    return PeerConfig(cluster_key=target.cluster_key, table_cfs={t: [] for t in tables}, serial=serial,
                      bandwidth=bandwidth, configuration=configuration)


def _headroom_facts(cluster: Cluster, expected_copy_s: float, safety_factor: float, quota_mark: float,
                    sample_gap_s: float, clock: Callable[[], float]) -> tuple[Any, Unlearned | None]:
    if not cluster.webhdfs_url:
        return None, None
    try:
        from hbase_migration.migration.quota import webhdfs

        client = webhdfs(cluster)
        first = hdfs.quota_usage(client, cluster.rootdir)
        t0 = clock()
        rate = None
        if sample_gap_s > 0:
            time.sleep(sample_gap_s)
            second = hdfs.quota_usage(client, cluster.rootdir)
            rate = hdfs.growth_rate([(t0, first.oldwals.space_consumed),
                                     (clock(), second.oldwals.space_consumed)])
            first = second
        return hdfs.headroom_decision(first, rate, expected_copy_s, safety_factor, quota_mark), None
    except Exception as e:
        why = Unlearned.of(e)
        return None, Unlearned(f"cannot read oldWALs usage through {cluster.webhdfs_url}: {why}", why.transient)


def _target_facts(source: Cluster, target: Cluster, src: ClusterFacts, tgt: ClusterFacts, peer_id: str,
                  create_missing: bool, codec_map: Mapping[str, str], installed: Sequence[str]
                  ) -> tuple[dict[str, bytes | None], str | None, dict[str, str | None]]:
    """The target's side of the table checks: a row of each existing table (or why none could be read), and
    the scratch create of each table to be created whose codecs, coprocessors or split policy the target could
    refuse."""
    from hbase_migration.migration.tables import check_create

    if src.error or tgt.error:
        return {}, None, {}
    existing = [t for t, s in tgt.tables.items() if s is not None]
    rows, rows_error = {}, None
    try:
        rows = first_rows(target, existing)
    except Exception as e:  # reported by the target_data check
        rows_error = Unlearned.of(e)
    checks: dict[str, str | None] = {}
    for table, schema in src.tables.items():
        if schema is None or tgt.tables.get(table) is not None or not create_missing:
            continue
        if class_refusals(schema, installed) or not needs_create_check(schema, codec_map):
            continue  # refused by name already, or nothing the target could refuse
        checks[table] = check_create(target, schema, peer_id, codec_map)
    return rows, rows_error, checks


def _initial_copy(source: Cluster, target: Cluster, tables: Sequence[str], src: ClusterFacts, tgt: ClusterFacts,
                  sized: Any, mode: str, threshold: int | None, codec_map: Mapping[str, str],
                  installed: Sequence[str], recorded: Mapping[str, str], resumed: Sequence[str], tasks: int,
                  same_master_key: bool = False) -> tuple[dict[str, Any], list[CheckResult]]:
    """Each table's initial copy (initial_copy.decide) and, for the snapshot ones, the snapshot path's checks."""
    from hbase_migration.clusters import zk
    from hbase_migration.migration import initial_copy as ic
    from hbase_migration.migration import snapshot_checks

    present = [t for t in tables if src.tables.get(t) is not None]
    if mode == ic.SCAN and not any(m == ic.SNAPSHOT for m in recorded.values()):
        return {t: ic.decide(ic.SCAN, t, store_file_bytes=None, recorded=recorded.get(t)) for t in present}, []
    sizes: dict[str, tuple[int, int]] = {}
    sizes_error = None
    if source.webhdfs_url:
        try:
            sizes = snapshot_checks.table_bytes(source, present)
        except Exception as e:
            sizes_error = Unlearned.of(e)
    by_sizing = {t.table: t for t in (sized.tables if sized is not None else ())}
    decisions = {}
    for t in present:
        schema = src.tables[t]
        used = set(codecs_used(schema))
        blockers = ic.blockers(t, source_webhdfs=bool(source.webhdfs_url), target_webhdfs=bool(target.webhdfs_url),
                               codecs_mapped=sorted(used & set(codec_map)),
                               class_refusals=class_refusals(schema, installed),
                               target_table_exists=tgt.tables.get(t) is not None, resumed=t in resumed,
                               encrypted=schema.encrypted_families(), same_master_key=same_master_key)
        if t in by_sizing:
            measured, how = by_sizing[t].store_file_bytes, "the sizing's region metrics"
        else:
            measured, how = (sizes[t][0], "HDFS") if t in sizes else (None, "")
        decisions[t] = ic.decide(mode, t, store_file_bytes=measured, threshold=threshold or ic.DEFAULT_THRESHOLD,
                                 blockers=blockers, recorded=recorded.get(t), measured_by=how)
    results = [snapshot_checks.decisions_check(decisions, mode)]
    chosen = [t for t, d in decisions.items() if d.method == ic.SNAPSHOT and not d.blockers]
    if not chosen:
        return decisions, results
    if sizes_error is not None:
        return decisions, results + [CheckResult("snapshot_space", False, f"the source tables' sizes not read: "
                                                 f"{sizes_error}", transient=transient(sizes_error))]
    memstores = {t: by_sizing[t].memstore_bytes for t in chosen if t in by_sizing}
    unsized = [t for t in chosen if t not in by_sizing]
    if unsized:  # what the FLUSH snapshot adds to the store files: the memstores, from the region servers' /jmx
        from hbase_migration.migration.region_metrics import fetch_region_metrics

        try:
            for region in fetch_region_metrics(source, unsized)[0]:
                memstores[region.table] = memstores.get(region.table, 0) + region.memstore_size
        except Exception as e:  # the store files alone are then counted, and said
            log.warning("the memstores of %s not read (%s): the snapshot's space counts their store files only",
                        ", ".join(unsized), e)
    with contextlib.ExitStack() as stack:
        zks = []
        for cluster in (source, target):
            try:
                zks.append(stack.enter_context(zk.connect(cluster, timeout=cluster.timeout_s)))
            except Exception:  # the conf check says it did not answer
                zks.append(None)
        facts = snapshot_checks.gather(source, target, chosen, source_zk=zks[0], target_zk=zks[1],
                                       target_tables={t: tgt.tables.get(t) is not None for t in chosen},
                                       resumed=resumed, memstores=memstores, sizes=sizes, tasks=tasks)
    return decisions, results + snapshot_checks.evaluate(facts)


def run_preflight(source: Cluster, target: Cluster, tables: Sequence[str], peer_id: str, *,
                  create_missing: bool = True, expected_copy_s: float = 3600.0, safety_factor: float = 2.0,
                  quota_mark: float = hdfs.DEFAULT_QUOTA_MARK, sample_gap_s: float = 2.0, owner: str | None = None,
                  clock: Callable[[], float] = time.time, codec_map: Mapping[str, str] | None = None,
                  target_coprocessors: Sequence[str] = (), allow_target_data: bool = False, serial: bool = False,
                  bandwidth: int = 0, sizing: Any = None, initial_copy: str = "scan",
                  snapshot_threshold_bytes: int | None = None, recorded: Mapping[str, str] | None = None,
                  resumed_exports: Sequence[str] = (), same_master_key: bool = False,
                  bulk_loads: str = "replicated") -> PreflightReport:
    """Every check, against both clusters; changes nothing (but the scratch tables of the create check and of
    the sizing, dropped at once). `sizing` (a `sizing_probe.SizingRequest`) sizes the run and projects the copy;
    None: not sized, `expected_copy_s` is trusted. `initial_copy` (`scan`, `snapshot`, `auto` with
    `snapshot_threshold_bytes`) decides how each table is copied (`recorded`: what this run decided before, kept;
    `resumed_exports`: tables this run's snapshot export already published or cloned; `same_master_key`: the
    operator attests the target holds the source's master key, so encrypted families may go by snapshot) and adds
    the snapshot path's checks (`snapshot_checks`). `bulk_loads` `none` (the operator's attestation that nothing is
    bulk loaded into the tables until the cut-over) lets a source that does not replicate bulk loads pass."""
    from hbase_migration.clusters import zk
    from hbase_migration.replication import peer_admin

    tables = tuple(dict.fromkeys(t.strip() for t in tables if t and t.strip()))
    if not tables:
        raise ValueError("tables: at least one table is required")
    if bulk_loads not in ("replicated", "none"):
        raise ValueError(f"bulk_loads: must be 'replicated' or 'none', got {bulk_loads!r}")
    same_key = source.cluster_key.normalized() == target.cluster_key.normalized()
    from hbase_migration.migration import preflight_security  # Kerberos, QOP, clock skew: first, they explain the rest

    security = preflight_security.check(source, target)
    if not PreflightReport(tuple(security)).ok:
        # Nothing else runs: every other check would fail for the same reason, and the create check and the
        # sizing write scratch tables, which an unauthenticated or mismatched channel must not attempt.
        report = PreflightReport((*security, CheckResult(
            "other_checks", False, "not run: the security checks above failed (fix them first)", severity=SKIPPED)))
        for r in report.failures:
            log.error("preflight %s: %s", r.name, r.reason)
        return report

    with contextlib.ExitStack() as stack:
        src_facts, src_zk = gather_facts(source, tables, stack)
        tgt_facts, tgt_zk = gather_facts(target, tables, stack)
        peers, peers_error, queued, recovered = (), None, {}, {}
        if src_zk is not None and not src_facts.error:
            try:
                with peer_admin(source, zk_client=src_zk) as admin:
                    peers = tuple(admin.list_peers())
                for q in zk.replication_queues(src_zk, source.znode_parent):
                    queued[q.peer_id] = max(queued.get(q.peer_id, 0), len(q.wals))
                    if q.recovered:
                        recovered[q.peer_id] = recovered.get(q.peer_id, 0) + 1
            except Exception as e:
                peers_error = Unlearned.of(e)
        source_confs, source_conf_error = None, None
        if src_zk is not None and not src_facts.error:
            from hbase_migration.clusters.hbase_conf import read_region_server_confs

            try:
                source_confs = read_region_server_confs(source, src_zk)
            except Exception as e:
                source_conf_error = Unlearned.of(e)
        target_confs, target_conf_error = None, None
        if tgt_zk is not None and not tgt_facts.error:
            from hbase_migration.clusters.hbase_conf import read_region_server_confs

            try:
                target_confs = read_region_server_confs(target, tgt_zk)
            except Exception as e:
                target_conf_error = Unlearned.of(e)
    rows, rows_error, checks = _target_facts(source, target, src_facts, tgt_facts, peer_id, create_missing,
                                             codec_map or {}, target_coprocessors)
    report, sizing_error = None, None
    if sizing is not None and not src_facts.error and not tgt_facts.error:
        from hbase_migration.migration.sizing_probe import size_migration

        try:
            report = size_migration(source, target, tables, src_facts.tables, peer_id, sizing,
                                    codec_map=codec_map, quota_mark=quota_mark, safety_factor=safety_factor)
        except Exception as e:  # reported by the copy_projection check
            sizing_error = Unlearned.of(e)
    headroom, headroom_error = (None, None)
    if not src_facts.error:
        projected = report is not None and report.projection.copy_s is not None \
            and report.projection.pinned_bytes is not None
        # Sized: the marks as they are now (copy_projection judges the copy); else expected_copy_s's projection.
        headroom, headroom_error = _headroom_facts(source, 0.0 if projected else expected_copy_s, safety_factor,
                                                   quota_mark, 0.0 if projected else sample_gap_s, clock)
    decisions, snapshot_results = None, []
    if not src_facts.error and not tgt_facts.error:
        decisions, snapshot_results = _initial_copy(
            source, target, tables, src_facts, tgt_facts, report, initial_copy, snapshot_threshold_bytes,
            codec_map or {}, target_coprocessors, recorded or {}, resumed_exports,
            sizing.copy_tasks if sizing is not None else 4, same_master_key)
    snapshot_tables = tuple(t for t, d in (decisions or {}).items() if d.method == "snapshot")
    wanted = migration_peer_config(target, tables, serial, bandwidth, source=source)
    facts = Facts(src_facts, tgt_facts, tables, peer_id, wanted, peers, peers_error, queued, recovered, headroom,
                  headroom_error, create_missing, owner, codec_map=dict(codec_map or {}),
                  target_coprocessors=tuple(target_coprocessors),
                  allow_target_data=allow_target_data, target_first_rows=rows, target_rows_error=rows_error,
                  create_checks=checks,
                  source_confs=source_confs, source_conf_error=source_conf_error, peer_backend=source.peer_admin,
                  sizing=report, sizing_error=sizing_error, snapshot_tables=snapshot_tables,
                  # markers must outlive the copy and catch-up, and a day at least (until the cut-over)
                  marker_retention_s=max(86400.0, expected_copy_s * safety_factor), bulk_loads=bulk_loads,
                  target_confs=target_confs, target_conf_error=target_conf_error)
    evaluated = evaluate(facts, same_key)
    report = PreflightReport(tuple(security) + evaluated.results + tuple(snapshot_results), evaluated.sizing,
                             decisions)
    for r in report.results:
        (log.info if r.ok or r.severity != ERROR else log.error)("preflight %s: %s", r.name, r.reason)
    return report
