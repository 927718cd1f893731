"""HBase replication inside minihbase (master-push, one WAL stream per region server, positions in ZooKeeper),
installed in every cluster as HBase 2.x always has it on. `install(cluster)` wires:

- per region server a `ReplicationManager` (peers watched in ZooKeeper, queues, sources, failover, the sink on
  `POST /replicateWALEntry`, the `/jmx` replication bean);
- the master's `ReplicationLogCleaner` (no WAL named in a queue leaves oldWALs);
- `PeerClusters`: ZooKeeper sessions to peer clusters (found through each peer's cluster key) to list their
  live region servers (sinks) and read their cluster ids.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from minihbase.replication.cleaner import ReplicationLogCleaner
from minihbase.replication.codec import iter_fields, strip_metadata
from minihbase.znodes import PB_MAGIC

if TYPE_CHECKING:
    from minihbase.cluster import MiniHBaseCluster

log = logging.getLogger(__name__)
SINKS_TTL_S = 5.0


def parse_cluster_key(key: str) -> tuple[str, str]:
    """`h1,h2:2181:/hbase` -> ("h1:2181,h2:2181", "/hbase") (ZKConfig.transformClusterKey)."""
    parts = key.split(":")
    if len(parts) < 3 or not parts[-2].isdigit() or not parts[-1].startswith("/"):
        raise ValueError(f"Invalid cluster key: {key}")
    quorum, port, parent = ":".join(parts[:-2]), parts[-2], parts[-1]
    hosts = ",".join(h if ":" in h else f"{h}:{port}" for h in quorum.split(",") if h)
    if not hosts:
        raise ValueError(f"Invalid cluster key: {key}")
    return hosts, parent


class PeerClusters:
    """One ZooKeeper session per peer quorum for this cluster process; sink lists cached briefly and refreshed
    when a sink fails (HBase's ReplicationPeer + ReplicationSinkManager)."""

    def __init__(self, new_client=None):
        self.new_client = new_client  # (hosts, timeout) -> a KazooClient: the cluster's own (SASL when secured)
        self.lock = threading.Lock()
        self.clients: dict[str, object] = {}
        self.sink_cache: dict[str, tuple[float, list[tuple[str, int]]]] = {}
        self.ids: dict[str, str] = {}

    def _client(self, hosts: str):
        from kazoo.client import KazooClient

        with self.lock:
            client = self.clients.get(hosts)
            if client is None:
                client = self.new_client(30, hosts) if self.new_client else KazooClient(hosts=hosts, timeout=30)
                client.start(timeout=15)
                self.clients[hosts] = client
            return client

    def sinks(self, cluster_key: str, refresh: bool = False) -> list[tuple[str, int]]:
        cached = self.sink_cache.get(cluster_key)
        if cached and not refresh and time.monotonic() - cached[0] < SINKS_TTL_S:
            return cached[1]
        hosts, parent = parse_cluster_key(cluster_key)
        try:
            children = self._client(hosts).get_children(f"{parent}/rs")
        except Exception as e:
            log.warning("peer cluster %s: cannot list its region servers: %s", cluster_key, e)
            return []
        sinks = []
        for name in children:
            host, _, rest = name.partition(",")
            port = rest.partition(",")[0]
            if port.isdigit():
                sinks.append((host, int(port)))
        self.sink_cache[cluster_key] = (time.monotonic(), sinks)
        return sinks

    def cluster_id(self, cluster_key: str) -> str | None:
        if cluster_key in self.ids:
            return self.ids[cluster_key]
        hosts, parent = parse_cluster_key(cluster_key)
        try:
            data, _ = self._client(hosts).get(f"{parent}/hbaseid")
        except Exception as e:
            log.warning("peer cluster %s: cannot read its cluster id: %s", cluster_key, e)
            return None
        raw = strip_metadata(data)
        value = None
        if raw.startswith(PB_MAGIC):
            for number, _, v in iter_fields(raw[len(PB_MAGIC):]):
                if number == 1:
                    value = v.decode()
        elif raw:
            value = raw.decode()
        if value:
            self.ids[cluster_key] = value
        return value

    def close(self) -> None:
        with self.lock:
            for client in self.clients.values():
                try:
                    client.stop()
                    client.close()
                except Exception:
                    pass
            self.clients.clear()


class ReplicationService:
    def __init__(self, cluster: "MiniHBaseCluster"):
        self.cluster = cluster
        self.peer_clusters = PeerClusters(cluster.new_zk_client)
        self.managers: dict[str, object] = {}

    def on_rs_init(self, rs) -> None:
        from minihbase.replication.manager import ReplicationManager

        rs.replication = ReplicationManager(self, rs)
        self.managers[rs.servername] = rs.replication

    def status(self) -> dict:
        """What `status 'replication'` shows: every live region server's replication load."""
        from minihbase.znodes import HBASE_VERSION

        live = [rs for rs in self.cluster.region_servers if rs is not None and rs.online]
        return {"version": HBASE_VERSION, "live_servers": len(live),
                "servers": [rs.replication.load() for rs in live if getattr(rs, "replication", None)]}


def install(cluster: "MiniHBaseCluster") -> ReplicationService:
    service = ReplicationService(cluster)
    cluster.replication = service
    cluster.rs_init_hooks.append(service.on_rs_init)
    cluster.master.log_cleaner.delegates.append(ReplicationLogCleaner(cluster))
    return service
