"""Replication: peers and their administration, lag and the drain decision (imports clusters/ only).

Peers: the model (`model`, `errors`, `result`), one interface (`admin.PeerAdmin`) with two backends
(`shell_backend` for HBase 2.x+, `zookeeper_backend` for 1.x), the shell's statements and parsers (`shell`,
`shell_parsers`) and the peer znodes (`zk_peers`). Lag: the region servers' `/jmx` beans and the decision "has
the peer drained?" (`metrics`), one poll of it as the sensor takes it (`lag`).

Entry point: `peer_admin(cluster, zk_client=None)`. Importing this package opens nothing and imports neither
kazoo nor a shell.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from hbase_migration.clusters.cluster import Cluster
    from hbase_migration.replication.admin import PeerAdmin


def peer_admin(cluster: "Cluster", zk_client: "KazooClient | None" = None, **options: Any) -> "PeerAdmin":
    """The PeerAdmin for `cluster.peer_admin`: "shell" (HBase 2.x+) or "zookeeper" (HBase 1.x).

    options: owner, confirm_timeout_s; for the shell backend shell_timeout_s;
    for the ZooKeeper backend legacy_table_cfs_znode.
    """
    if cluster.peer_admin == "shell":
        from hbase_migration.replication.shell_backend import ShellPeerAdmin

        return ShellPeerAdmin(cluster, zk_client, **options)
    if cluster.peer_admin == "zookeeper":
        from hbase_migration.replication.zookeeper_backend import ZooKeeperPeerAdmin

        return ZooKeeperPeerAdmin(cluster, zk_client, **options)
    from hbase_migration.replication.model import InvalidPeerConfig

    raise InvalidPeerConfig(f"cluster {cluster.name!r}: unknown peer_admin backend {cluster.peer_admin!r}")
