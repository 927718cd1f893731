"""Copy and verify on the native data path: the same plan, resume, ledger and progress as the Thrift paths
(`hbase_migration.data.runner`), with each partition run by the JVM side's tasks in Spark's executors
(`hbase_migration.data.datapath.native`) instead of a Python task. What comes back is the Python paths' own
`PartitionResult` and `PartitionVerdict`, so the summaries, the ledger and the dashboard read them unchanged.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.data.copy import PartitionResult
from hbase_migration.data.partitions import Partition, RegionSample
from hbase_migration.data.scope import CopyConfigError
from hbase_migration.data.verify import PartitionVerdict, renames_reorder

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)


def refused(repair: bool) -> str | None:
    """What a run asks that the native path refuses (None: nothing): `uses_native` refuses it, `data_path: auto`
    stays on Thrift for it."""
    return "repair is asked, which the native path has not (its deletes would write markers the source lacks)" \
        if repair else None


# Java's krb5.conf where no java.security.krb5.conf names one (Linux); a Kerberized connection without krb5_conf
DEFAULT_KRB5_CONF = "/etc/krb5.conf"


def krb5_conf(cluster: "Cluster") -> str | None:
    """The krb5.conf the native path's JVM logs in to a Kerberized cluster with (None: not Kerberized): its
    connection's `krb5_conf` (the JVM's `java.security.krb5.conf`, set by jvm/ `Connections` before the keytab
    login), else Java's default."""
    security = cluster.security
    if security is None or not security.kerberos:
        return None
    return security.krb5_conf or DEFAULT_KRB5_CONF


def _krb5_text(path: str) -> bytes | None:
    from hbase_migration.clusters.security import _resolve

    found = _resolve(path)
    try:
        return None if found is None else Path(found).read_bytes()
    except OSError:
        return None


def krb5_conflict(source: "Cluster", target: "Cluster") -> str | None:
    """Why the pair cannot share the native path's JVMs over Kerberos (None: they can): one JVM holds one krb5.conf
    (`java.security.krb5.conf`), and both clusters' logins run in the same JVMs, so two Kerberized connections must
    name the same krb5.conf, or two files of the same content (one file listing both realms)."""
    named = [(c, krb5_conf(c)) for c in (source, target)]
    if any(path is None for _c, path in named):
        return None
    (a, a_path), (b, b_path) = named
    if a_path == b_path:
        return None
    a_text, b_text = _krb5_text(a_path), _krb5_text(b_path)
    if a_text is not None and a_text == b_text:
        return None
    return (f"{a.name}'s krb5.conf ({a_path}) and {b.name}'s ({b_path}) differ, and the native path logs in to both "
            "clusters in the same JVMs, which hold one krb5.conf (java.security.krb5.conf)")


def uses_native(source: "Cluster", target: "Cluster", options: Any = None) -> bool:
    """Whether a copy or verification between these clusters runs on the native path; a refusal (exit 2, nothing
    read) when only one of them is native, when a repair is asked of it, or when their Kerberos logins need
    different krb5.conf files (`krb5_conflict`)."""
    if source.uses_native != target.uses_native:
        native, other = (source, target) if source.uses_native else (target, source)
        raise CopyConfigError(
            f"data_path: {native.name!r} is native and {other.name!r} is {other.describe()['data_path']} — the native "
            "path reads and writes both clusters with HBase's client in Spark's JVMs: set data_path native on "
            "both connections, or the same Thrift path on both")
    if source.uses_native and refused(getattr(options, "repair", False)):
        raise CopyConfigError(
            "repair: the native data path compares delete markers, and a repair's deletes would write markers the "
            "source does not have — verify without --repair (a raw copy carries the source's markers, so the "
            "interplays repair was for do not arise), or repair through a Thrift2 connection (data_path thrift2)")
    conflict = krb5_conflict(source, target) if source.uses_native else None
    if conflict:
        raise CopyConfigError(f"data_path native: {conflict} — name one krb5.conf listing both realms on both "
                              "connections (krb5_conf), or a Thrift path on both")
    return source.uses_native


def metadata(cluster: "Cluster", timeout_s: float = 60.0) -> Any:
    """The families and regions of a native cluster, through the driver's JVM; a `ConnectionError` when HBase's
    client cannot reach it."""
    from hbase_migration.data.datapath.native import NativeMeta

    return NativeMeta(cluster, timeout_s)


def _executor_sc(executor: Any) -> Any:
    sc = getattr(executor, "sc", None)
    if sc is None:
        raise CopyConfigError("data_path native: the native path runs in Spark's executors — run the Spark job "
                              "(jobs/copy_table.py, jobs/verify_table.py) or the CLI with --master local[N]")
    return sc


def _run(executor: Any, kind: str, spec: dict, items: list[dict], on_done: Callable[[list[dict]], None] | None,
         on_heartbeat: Callable[[], None] | None, tasks_per_slot: int | None = None) -> list[dict]:
    from hbase_migration.data.datapath.native import run_tasks

    sc = _executor_sc(executor)
    slices = tasks_per_slot * sc.defaultParallelism if tasks_per_slot else None
    return run_tasks(sc, kind, spec, items, on_done, slices=slices, on_heartbeat=on_heartbeat,
                     heartbeat_s=getattr(executor, "heartbeat_s", 30.0), places=getattr(executor, "places", None))


def result_of(d: dict) -> PartitionResult:
    """A copy task's JSON as the Python paths' `PartitionResult`."""
    return PartitionResult(
        partition_id=d["partition_id"], index=int(d["index"]), table=d.get("table", ""),
        start_row=bytes.fromhex(d.get("start_row") or ""), stop_row=bytes.fromhex(d.get("stop_row") or ""),
        status=d["status"], rows=int(d.get("rows", 0)), cells=int(d.get("cells", 0)),
        delete_markers=int(d.get("delete_markers", 0)), bytes=int(d.get("bytes", 0)),
        scanned_rows=int(d.get("scanned_rows", 0)), write_calls=int(d.get("write_calls", 0)),
        retries=int(d.get("retries", 0)), throttled_s=float(d.get("throttled_s", 0.0)),
        elapsed_s=float(d.get("elapsed_s", 0.0)), error=d.get("error"))


def verdict_of(d: dict) -> PartitionVerdict:
    """A verify task's JSON as the Python paths' `PartitionVerdict`."""
    return PartitionVerdict(
        partition_id=d["partition_id"], index=int(d["index"]), start_row=bytes.fromhex(d.get("start_row") or ""),
        stop_row=bytes.fromhex(d.get("stop_row") or ""), status=d["status"], counts=dict(d.get("counts") or {}),
        source_rows=int(d.get("source_rows", 0)), target_rows=int(d.get("target_rows", 0)),
        source_cells=int(d.get("source_cells", 0)), target_cells=int(d.get("target_cells", 0)),
        differing=[(bytes.fromhex(r), s) for r, s in d.get("differing") or ()],
        versions=[(bytes.fromhex(r), bytes.fromhex(c), int(ts), kind, *([t] if t else []))
                  for r, c, ts, kind, t in d.get("versions") or ()],
        truncated=bool(d.get("truncated")), recompared=int(d.get("recompared", 0)),
        recompare_changed=int(d.get("recompare_changed", 0)), wide_rows=int(d.get("wide_rows", 0)),
        elapsed_s=float(d.get("elapsed_s", 0.0)), error=d.get("error"))


def copy_partitions(source: "Cluster", target: "Cluster", options: Any, todo: Sequence[Partition], executor: Any,
                    on_done: Callable[[list[PartitionResult]], None] | None = None,
                    on_heartbeat: Callable[[], None] | None = None) -> list[PartitionResult]:
    """Copy `todo` on the native path: one Spark task per partition, preferring its region server's host."""
    from hbase_migration.data.datapath.native import copy_spec

    meta = metadata(source, options.timeout_s)
    spec = copy_spec(source, target, options, meta.family_rules(options.table), meta.cluster_id())
    done = (lambda fresh: on_done([result_of(d) for d in fresh])) if on_done else None
    return [result_of(d) for d in _run(executor, "copy", spec, [p.to_dict() for p in todo], done, on_heartbeat)]


def verify_partitions(source: "Cluster", target: "Cluster", options: Any, partitions: Sequence[Partition],
                      executor: Any, on_done: Callable[[list[PartitionVerdict]], None] | None = None,
                      tasks_per_slot: int | None = None) -> list[PartitionVerdict]:
    """Verify `partitions` on the native path, raw on both sides."""
    from hbase_migration.data.datapath.native import verify_spec

    spec = verify_spec(source, target, options, metadata(source, options.timeout_s).family_rules(options.table),
                       metadata(target, options.timeout_s).family_rules(options.target_table),
                       per_family=bool(options.renames) and renames_reorder(options.families))
    done = (lambda fresh: on_done([verdict_of(d) for d in fresh])) if on_done else None
    return [verdict_of(d) for d in _run(executor, "verify", spec, [p.to_dict() for p in partitions], done, None,
                                        tasks_per_slot)]


def hash_partitions(cluster: "Cluster", side: str, options: Any, partitions: Sequence[Mapping[str, Any]],
                    executor: Any, on_done: Callable[[list[dict]], None] | None = None,
                    tasks_per_slot: int | None = None) -> list[dict]:
    """One side's leaf digests of `partitions` (`leafhash.HashPartition.to_dict()`s) on the native path (a raw read,
    markers included, what each family keeps): the JVM tasks' JSON, `leafhash.LeafDigests`' own."""
    from hbase_migration.data.datapath.native import hash_spec

    table = options.table if side == "source" else options.target_table
    spec = hash_spec(cluster, side, options, metadata(cluster, options.timeout_s).family_rules(table),
                     per_family=side == "source" and bool(options.renames) and renames_reorder(options.families))
    return _run(executor, "hash", spec, list(partitions), on_done, None, tasks_per_slot)


def sample_regions(source: "Cluster", options: Any, regions: Sequence[Any], executor: Any,
                   max_keys: int = 1024) -> dict[bytes, RegionSample]:
    """Row counts and keys of each region (key-only scans in Spark's executors), to split the big ones."""
    from hbase_migration.data.datapath.native import cluster_json
    from hbase_migration.data.partitions import _clip

    spec = {"source": cluster_json(source, options.timeout_s), "table": options.table,
            "families": [[s.decode(), d.decode()] for s, d in options.families], "start_ms": options.start_time_ms,
            "end_ms": options.end_time_ms, "max_keys": max_keys}
    items, names = [], []
    for region in regions:
        clipped = _clip(region.start_key, region.end_key, options.start_row, options.stop_row)
        if clipped is None:
            continue
        items.append({"index": len(items), "name": region.name.hex(), "start_row": clipped[0].hex(),
                      "stop_row": clipped[1].hex(), "host": region.host})
        names.append(region.name)
    out = {}
    for name, d in zip(names, _run(executor, "sample", spec, items, None, None)):
        if d.get("status") == "failed":
            raise ConnectionError(f"sampling region {name!r} of {options.table!r} failed: {d.get('error')}")
        out[name] = RegionSample(int(d["rows"]), tuple(bytes.fromhex(k) for k in d["keys"]))
    return out
