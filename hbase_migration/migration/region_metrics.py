"""Per-region figures from the region servers' `/jmx`: how big each table is, as HBase itself counts it.

Bean `Hadoop:service=HBase,name=RegionServer,sub=Regions` (HBase's `MetricsRegionAggregateSourceImpl`, one
`MetricsRegionSourceImpl` per open region): keys `Namespace_<ns>_table_<qualifier>_region_<encoded name>_metric_
<name>` with `storeCount`, `storeFileCount`, `storeFileSize` (bytes on HDFS, compressed and encoded as stored,
one copy: not x replication), `memStoreSize` (bytes not flushed yet), `readRequestCount`, `writeRequestCount`,
`replicaid`, ...; and `numRegions`. HBase refreshes the sizes every 45 s (`MetricsRegionWrapperImpl.PERIOD`), so
a region flushed a moment ago may still show its old figures. Region replicas (replicaid > 0) hold the same
data again and are left out. `parse_regions_bean` is pure; `fetch_region_metrics` reads every live server.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

REGIONS_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Regions"
FIGURES = {"storeCount": "store_count", "storeFileCount": "store_file_count", "storeFileSize": "store_file_size",
           "memStoreSize": "memstore_size", "readRequestCount": "read_requests",
           "writeRequestCount": "write_requests", "replicaid": "replica_id"}
_REST = re.compile(r"^(?P<region>[0-9a-f]+)_metric_(?P<metric>[A-Za-z]+)$")


@dataclass(frozen=True)
class RegionMetrics:
    """One region as its server reports it (a figure the bean lacks is 0)."""

    table: str
    encoded_name: str
    server: str = ""
    store_count: int = 0
    store_file_count: int = 0
    store_file_size: int = 0
    memstore_size: int = 0
    read_requests: int = 0
    write_requests: int = 0
    replica_id: int = 0

    @property
    def data_bytes(self) -> int:
        """What a scan of the region reads, as HBase sizes it: its store files plus what is not flushed yet."""
        return self.store_file_size + self.memstore_size

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("table", "encoded_name", "server", *FIGURES.values())}


def metric_prefix(table: str) -> str:
    """`Namespace_<ns>_table_<qualifier>_region_` of a table name (`ns:qualifier`, or the default namespace)."""
    namespace, _, qualifier = table.rpartition(":")
    return f"Namespace_{namespace or 'default'}_table_{qualifier}_region_"


def parse_regions_bean(payload: Mapping[str, Any], tables: Sequence[str], server: str = "") -> list[RegionMetrics]:
    """The primary regions of `tables` in one `/jmx?qry=...sub=Regions` body (none when the bean is absent).

    Keys are matched by each table's own prefix, so a namespace or qualifier holding `_table_` or `_region_`
    cannot be misread; the per-store keys (`..._region_<r>_store_<cf>_metric_...`) are not region figures."""
    beans = payload.get("beans") if isinstance(payload, Mapping) else None
    if not isinstance(beans, list):
        raise ValueError(f"/jmx body without a beans list: {str(payload)[:200]!r}")
    bean = next((b for b in beans if isinstance(b, Mapping) and b.get("name") == REGIONS_BEAN), None)
    if bean is None:
        return []
    found: dict[tuple[str, str], dict[str, int]] = {}
    for table in tables:
        prefix = metric_prefix(table)
        for key, value in bean.items():
            if not key.startswith(prefix):
                continue
            match = _REST.match(key[len(prefix):])
            if match is None or match.group("metric") not in FIGURES:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"/jmx {REGIONS_BEAN} key {key!r} must be a number, got {value!r}")
            found.setdefault((table, match.group("region")), {})[FIGURES[match.group("metric")]] = int(value)
    out = [RegionMetrics(table, region, server, **figures) for (table, region), figures in sorted(found.items())]
    return [r for r in out if r.replica_id == 0]


def fetch_region_metrics(cluster: "Cluster", tables: Sequence[str], zk_client: Any = None,
                         max_workers: int = 8) -> tuple[list[RegionMetrics], dict[str, str]]:
    """Every live region server's regions of `tables`, and the servers that could not be read (name -> why)."""
    from hbase_migration.clusters import channels, zk
    from hbase_migration.replication.metrics import JmxFormatError, JmxUnavailable, fetch_jmx

    if zk_client is None:
        with zk.connect(cluster, timeout=cluster.timeout_s) as client:
            servers = zk.live_region_servers(client, cluster.znode_parent)
    else:
        servers = zk.live_region_servers(zk_client, cluster.znode_parent)

    def read(server: Any) -> tuple[str, list[RegionMetrics] | None, str | None]:
        port = cluster.info_port or server.info_port
        if port is None:
            return server.servername, None, "info port unknown"
        try:
            body = fetch_jmx(server.host, port, cluster.timeout_s, 2, bean=REGIONS_BEAN,
                             session=channels.http(cluster))  # per thread; SPNEGO when Kerberized
            return server.servername, parse_regions_bean(body, tables, server.servername), None
        except (JmxUnavailable, JmxFormatError, ValueError) as e:
            return server.servername, None, str(e)

    if not servers:
        return [], {}
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(servers))), thread_name_prefix="regions") as pool:
        results = list(pool.map(read, servers))
    metrics = [m for _, found, _ in results for m in found or ()]
    return metrics, {name: error for name, found, error in results if found is None}


def table_region_bytes(cluster: "Cluster", table: str) -> dict[str, int] | None:
    """Encoded region name -> bytes (store files plus memstore) of `table`'s primary regions, as a verification by
    hashes sizes its leaves and "auto" picks its method; None when a region server could not be read (a part
    would understate the table), said in the log."""
    import logging

    try:
        metrics, errors = fetch_region_metrics(cluster, [table])
    except Exception as e:  # ZooKeeper or every server unreachable: the caller goes on without sizes
        logging.getLogger(__name__).warning("sizes of %s on %s unknown: %s: %s", table, cluster.name,
                                            type(e).__name__, e)
        return None
    if errors:
        logging.getLogger(__name__).warning("sizes of %s on %s unknown: region server(s) not read: %s", table,
                                            cluster.name, "; ".join(f"{k}: {v}" for k, v in sorted(errors.items())))
        return None
    return {m.encoded_name: m.data_bytes for m in metrics}
