"""Partition planning: one task per source region (as CopyTable's TableInputFormat maps), big regions split.

Partition ids depend only on the table, the key range and the content options (`TableScope.fingerprint`), so a
resumed run with the same options recognises the partitions it finished. Pure, except `sample_region`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hbase_migration.data.datapath import open_data_path
from hbase_migration.data.datapath.base import Region
from hbase_migration.data.scope import CopyConfigError, TableScope, to_string_binary

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster


@dataclass(frozen=True)
class RegionSample:
    """What a key-only scan of one region found: its row count and evenly spaced row keys."""

    rows: int
    keys: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Partition:
    """One task's key range `[start_row, stop_row)` (b"" stop = to the end of the table)."""

    table: str
    index: int
    start_row: bytes
    stop_row: bytes
    region: str
    partition_id: str
    est_rows: int | None = None
    host: str = ""  # the host of the region server holding it, when known
    gateway: str = ""  # the source gateway (host:port) its reads go through; "" = the cluster's first

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start_row"] = self.start_row.hex()
        d["stop_row"] = self.stop_row.hex()
        return d

    def describe(self) -> str:
        stop = to_string_binary(self.stop_row) or "<end>"
        return f"#{self.index} [{to_string_binary(self.start_row)}, {stop})"


def partition_id(table: str, start_row: bytes, stop_row: bytes, fingerprint: str) -> str:
    """Stable id of a key range under given options: a re-run recognises a finished partition."""
    h = hashlib.sha1()
    for part in (table.encode("utf-8"), start_row, stop_row, fingerprint.encode("ascii")):
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    return h.hexdigest()[:20]


def _clip(lo: bytes, hi: bytes, start: bytes, stop: bytes) -> tuple[bytes, bytes] | None:
    """Intersect [lo, hi) with [start, stop); b"" as an upper bound means +infinity."""
    a = max(lo, start)
    if not hi:
        b = stop
    elif not stop:
        b = hi
    else:
        b = min(hi, stop)
    if b and a >= b:
        return None
    return a, b


def split_points(keys: Sequence[bytes], pieces: int, lo: bytes, hi: bytes) -> list[bytes]:
    """`pieces - 1` keys spread evenly over the sampled `keys`, strictly inside (lo, hi)."""
    inside = [k for k in keys if k > lo and (not hi or k < hi)]
    if pieces <= 1 or not inside:
        return []
    chosen: list[bytes] = []
    for i in range(1, pieces):
        k = inside[min(len(inside) - 1, (i * len(inside)) // pieces)]
        if not chosen or k > chosen[-1]:
            chosen.append(k)
    return chosen


def plan_partitions(
    regions: Sequence[Region], options: TableScope, samples: Mapping[bytes, RegionSample] | None = None,
    gateways: Sequence[str] = (),
) -> list[Partition]:
    """One partition per region, clipped to the row range; big regions split at sampled keys.

    `samples` maps a region name to its `RegionSample`; a region whose sampled row
    count exceeds `options.rows_per_partition` is cut into ceil(rows / that)
    partitions at evenly spaced sampled keys. Partition ids depend only on the
    table, the key range and the content options, so a resumed run with the same
    options recognises what it finished.
    """
    if not regions:
        raise CopyConfigError(f"table {options.table!r} has no regions on the source (does it exist?)")
    ordered = sorted(regions, key=lambda r: r.start_key)
    for prev, cur in zip(ordered, ordered[1:]):
        if not prev.end_key or prev.end_key > cur.start_key:
            raise CopyConfigError(
                f"regions of {options.table!r} overlap: {prev.name!r} ends at {prev.end_key!r} "
                f"after {cur.name!r} starts at {cur.start_key!r}"
            )
    fp = options.fingerprint()
    out: list[Partition] = []
    for region in ordered:
        clipped = _clip(region.start_key, region.end_key, options.start_row, options.stop_row)
        if clipped is None:
            continue
        lo, hi = clipped
        sample = (samples or {}).get(region.name)
        bounds = [lo]
        est = None
        if sample is not None:
            est = sample.rows
            if options.rows_per_partition and sample.rows > options.rows_per_partition:
                pieces = math.ceil(sample.rows / options.rows_per_partition)
                bounds += split_points(sample.keys, pieces, lo, hi)
        bounds.append(hi)
        name = region.name.decode("utf-8", "backslashreplace")
        n = len(bounds) - 1
        for a, b in zip(bounds, bounds[1:]):
            out.append(Partition(
                table=options.table, index=len(out), start_row=a, stop_row=b, region=name,
                partition_id=partition_id(options.table, a, b, fp),
                est_rows=None if est is None else max(1, est // n) if est else 0, host=region.host,
            ))
    if gateways:
        chosen = assign_gateways([p.host for p in out], gateways)
        out = [dataclasses.replace(p, gateway=g) for p, g in zip(out, chosen)]
    return out


def assign_gateways(hosts: Sequence[str], gateways: Sequence[str]) -> list[str]:
    """The gateway each partition reads through: one on the host of its region's server when there is one (as
    deployments that run a Thrift server beside each region server do: the scan stays on that host), taken in
    turn among those; otherwise the gateways in turn, so partitions spread evenly over them."""
    by_host: dict[str, list[str]] = {}
    for g in gateways:
        by_host.setdefault(g.rpartition(":")[0], []).append(g)
    local_turn: dict[str, int] = {}
    out = []
    for i, host in enumerate(hosts):
        local = by_host.get(host)
        if local:
            out.append(local[local_turn.get(host, 0) % len(local)])
            local_turn[host] = local_turn.get(host, 0) + 1
        else:
            out.append(gateways[i % len(gateways)])
    return out


def sample_region(cluster: "Cluster", options: TableScope, region: Region, max_keys: int = 1024) -> RegionSample:
    """Row count and evenly spaced keys of one region (a key-only scan, RowCounter's filters).

    Keeps every `stride`-th key and doubles the stride whenever `max_keys` is reached, so memory is bounded
    whatever the region's size.
    """
    clipped = _clip(region.start_key, region.end_key, options.start_row, options.stop_row)
    if clipped is None:
        return RegionSample(0, ())
    lo, hi = clipped
    keys: list[bytes] = []
    stride = 1
    rows = 0
    with open_data_path(cluster) as path:
        # first_key_only: one piece per row (over Thrift1 with a start time, a wide row's keys come in slices)
        for batch in path.scan(options.table, lo, hi, columns=options.source_columns, start_ms=options.start_time_ms,
                               end_ms=options.end_time_ms, batch_rows=2000, batch_cells=options.scan_batch_cells,
                               first_key_only=True):
            for row, _cells in batch:
                if rows % stride == 0:
                    keys.append(row)
                    if len(keys) >= max_keys:
                        keys = keys[::2]
                        stride *= 2
                rows += 1
    return RegionSample(rows, tuple(keys))
