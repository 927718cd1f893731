"""How each table's initial copy is made: `scan` (the Thrift copy) or `snapshot` (exported over WebHDFS, cloned on
the target). Pure: the run's `initial_copy` (`scan`, `snapshot` or `auto`), the table's store file bytes, the
threshold, and what would keep the snapshot path from taking the table.

`auto` picks the snapshot for a table whose store files reach `snapshot_threshold_bytes` (default 1 GiB, see
`DEFAULT_THRESHOLD`), when nothing keeps it from that path; else the scan. Why 1 GiB: the scan copy moves 10-20k
rows/s per table through the Thrift gateways (a few MB/s to a few tens of MB/s with rows of a few hundred bytes),
so a gigabyte costs it minutes to an hour; the snapshot path pays a fixed price (the flush snapshot, three shell
sessions of 10-60 s each, the clone: one to three minutes) and then moves files at HDFS speed (bench/
bench_snapshot.py). Below about a gigabyte the fixed price dominates and the scan is as quick and simpler; above, the
file copy wins by a growing factor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from hbase_migration.data.snapshot_manifest import encryption_refusal

SCAN, SNAPSHOT, AUTO = "scan", "snapshot", "auto"
MODES = (SCAN, SNAPSHOT, AUTO)
METHODS = (SCAN, SNAPSHOT)
DEFAULT_THRESHOLD = 1 << 30


@dataclass(frozen=True)
class Decision:
    table: str
    method: str  # scan | snapshot
    reason: str
    blockers: tuple[str, ...] = ()  # why the snapshot path cannot take the table (a refusal when it was asked)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "method": self.method, "reason": self.reason, "blockers": list(self.blockers)}


def _gib(n: int) -> str:
    from hbase_migration.data.progress import human_bytes

    return human_bytes(n)


def decide(mode: str, table: str, *, store_file_bytes: int | None, threshold: int = DEFAULT_THRESHOLD,
           blockers: Sequence[str] = (), recorded: str | None = None, measured_by: str = "sizing") -> Decision:
    """The table's method. `recorded`: what this run decided before (a retried preflight keeps it: the two paths
    leave different states behind). `blockers`: why the snapshot path cannot take the table; with `snapshot` asked
    they stay on the decision for preflight to refuse, with `auto` they send the table to the scan."""
    if mode not in MODES:
        raise ValueError(f"initial_copy must be one of {', '.join(MODES)}, got {mode!r}")
    if recorded is not None:
        if recorded not in METHODS:
            raise ValueError(f"recorded method must be one of {', '.join(METHODS)}, got {recorded!r}")
        return Decision(table, recorded, f"decided earlier in this run ({recorded})",
                        tuple(blockers) if recorded == SNAPSHOT else ())
    if mode == SCAN:
        return Decision(table, SCAN, "initial_copy scan")
    if mode == SNAPSHOT:
        return Decision(table, SNAPSHOT, "initial_copy snapshot", tuple(blockers))
    if blockers:
        return Decision(table, SCAN, "auto: the snapshot path cannot take it (" + "; ".join(blockers) + ")")
    if store_file_bytes is None:
        return Decision(table, SCAN, "auto: its store files' size is unknown (not sized): the scan copy")
    size = f"{_gib(store_file_bytes)} of store files ({measured_by})"
    if store_file_bytes >= threshold:
        return Decision(table, SNAPSHOT, f"auto: {size} >= snapshot_threshold_bytes {_gib(threshold)}")
    return Decision(table, SCAN, f"auto: {size} < snapshot_threshold_bytes {_gib(threshold)}")


def blockers(table: str, *, source_webhdfs: bool, target_webhdfs: bool, codecs_mapped: Sequence[str] = (),
             class_refusals: Sequence[str] = (), target_table_exists: bool = False, resumed: bool = False,
             encrypted: Mapping[str, str] | None = None, same_master_key: bool = False) -> list[str]:
    """Why the snapshot path cannot take `table` (pure): WebHDFS missing on a cluster, a codec the run maps (the
    clone takes the snapshot's schema as it is), a coprocessor the target does not have, the target table there
    already (the clone creates it) unless this run's own export published or cloned it, encrypted families
    (`encrypted`: family -> cipher) unless the operator attests that the target has the source's master key."""
    out = []
    if encrypted and not same_master_key:
        out.append(encryption_refusal(table, encrypted))
    for which, has in (("source", source_webhdfs), ("target", target_webhdfs)):
        if not has:
            out.append(f"the {which} connection has no webhdfs_url")
    if codecs_mapped:
        out.append(f"codec_map maps {', '.join(codecs_mapped)}, which it uses, and a clone keeps the snapshot's "
                   "schema as it is")
    out += list(class_refusals)
    if target_table_exists and not resumed:
        out.append(f"{table} already exists on the target (clone_snapshot creates it)")
    return out


def lists(decisions: Mapping[str, Decision], tables: Sequence[str]) -> dict[str, Any]:
    """What the DAG maps its two copy tasks over, in the run's table order."""
    return {"scan": [{"table": t} for t in tables if decisions[t].method == SCAN],
            "snapshot": [{"table": t} for t in tables if decisions[t].method == SNAPSHOT],
            "scan_tables": [t for t in tables if decisions[t].method == SCAN],
            "snapshot_tables": [t for t in tables if decisions[t].method == SNAPSHOT]}
