"""The HBase 1.x path: peers written straight into ZooKeeper, as 1.x's ReplicationAdmin did.

SERIAL is refused (1.x has no serial peers); BANDWIDTH is the message's field 7
(1.3+ honour it).

In 1.x the client itself wrote `replication/peers/<id>` and `peer-state`, and
region servers watched those znodes. Writes carry the ZKMetadata header, as
RecoverableZooKeeper adds it. A new peer is one transaction (peer + state
[+ tableCFs]), so no region server ever sees a peer without its state, and it
is created DISABLED from the first instant instead of 1.x's add-then-disable.
State and config changes are version-checked setData; removal is a recursive
delete (HBase's deleteNodeRecursively is not atomic either).

Do not use this backend on HBase 2.x+: the master caches peers and region
servers only learn of them through procedures (HBase 2's `ReplicationPeerManager`).

`legacy_table_cfs_znode=True` also writes table-CFs as a string in the
`tableCFs` child, which HBase 1.0-1.2 read instead of the peer message
(1.3+ read the message); that string form cannot name a namespace in 1.0-1.2.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hbase_migration.clusters import zk
from hbase_migration.clusters.cluster import Cluster
from hbase_migration.replication import zk_peers
from hbase_migration.replication.admin import PeerAdmin
from hbase_migration.replication.errors import PeerAdminError, PeerConflict
from hbase_migration.replication.model import (
    DEFAULT_OWNER,
    InvalidPeerConfig,
    PeerConfig,
    table_cfs_to_string,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient


def _state_name(enabled: bool) -> str:
    return "ENABLED" if enabled else "DISABLED"


class ZooKeeperPeerAdmin(PeerAdmin):
    backend = "zookeeper"

    def __init__(self, cluster: Cluster, zk_client: "KazooClient | None" = None, owner: str = DEFAULT_OWNER,
                 confirm_timeout_s: float | None = None, legacy_table_cfs_znode: bool | None = None,
                 metadata_id: str | None = None):
        super().__init__(cluster, zk_client, owner, confirm_timeout_s)
        if legacy_table_cfs_znode is None:
            legacy_table_cfs_znode = cluster.zk_legacy_table_cfs
        self.legacy_table_cfs_znode = bool(legacy_table_cfs_znode)
        self.metadata_id = metadata_id or f"hbase_migration:{zk.default_metadata_id()}"

    def _wrap(self, payload: bytes) -> bytes:
        return zk.add_metadata(payload, self.metadata_id)

    def _acl(self, path: str) -> Any:
        """On a secured ZooKeeper, the ACL secure HBase gives replication znodes: the SASL entries (`sasl:hbase`
        and each hbase.superuser, ALL) of the nearest existing ancestor of `path`, without its world READ (the
        base znode has one; replication znodes have none). So the region servers can read and change what the
        toolkit creates, and nobody else. None (kazoo's default, open) on an open cluster."""
        security = self.cluster.security
        if security is None or not security.zookeeper_sasl:
            return None
        parent = path
        while parent not in ("", "/"):
            parent = parent.rsplit("/", 1)[0] or "/"
            if self.zk.exists(parent) is not None:
                return [a for a in self.zk.get_acls(parent)[0] if a.id.scheme != "world"] or None
        return None

    def _legacy_table_cfs(self, config: PeerConfig) -> str:
        namespaced = [t for t in config.table_cfs if ":" in t]
        if namespaced:
            raise InvalidPeerConfig(
                f"table_cfs {namespaced} are in a namespace, which HBase 1.0-1.2's tableCFs znode cannot "
                "express; on HBase 1.3+ set the cluster extra zk_legacy_table_cfs=false")
        return table_cfs_to_string(config.table_cfs)

    @staticmethod
    def _commit(transaction: Any, commands: list[str]) -> None:
        """Commit a kazoo transaction; any failed op fails it all (ZooKeeper multi is atomic)."""
        results = transaction.commit()
        failures = [f"{command}: {type(result).__name__}" for command, result in zip(commands, results)
                    if isinstance(result, Exception) and type(result).__name__ != "RolledBackError"]
        if failures:
            concurrent = any("NodeExists" in f or "BadVersion" in f for f in failures)
            error = PeerConflict if concurrent else PeerAdminError
            raise error("ZooKeeper refused the transaction, so nothing was written (a concurrent change?): "
                        + "; ".join(failures))

    def _add(self, peer_id: str, config: PeerConfig, enabled: bool, execute: bool) -> list[str]:
        if config.serial:
            # HBase 1.x has no serial peers: its region servers would ignore field 11 and ship out of order.
            raise InvalidPeerConfig(
                f"peer {peer_id!r}: serial replication needs HBase 2.1+ (SERIAL => true); the ZooKeeper peer-admin "
                f"backend of {self._where()} is for HBase 1.x, which has no serial peers. Nothing was changed: use "
                "the shell backend (connection extra peer_admin=shell) on HBase 2.1+, or run without serial")
        peers = zk_peers.peers_path(self.parent)
        path = zk.peer_path(self.parent, peer_id)
        state_path = zk.peer_state_path(self.parent, peer_id)
        peer_bytes = self._wrap(zk.encode_replication_peer(config.to_replication_peer()))
        state_bytes = self._wrap(zk.encode_peer_state(enabled))
        legacy = self._legacy_table_cfs(config) if self.legacy_table_cfs_znode else None
        ops = [
            (path, peer_bytes, f"create {path} <- ReplicationPeer ({len(peer_bytes)} bytes) "
                               f"cluster_key={config.cluster_key} table_cfs={config.table_cfs}"),
            (state_path, state_bytes, f"create {state_path} <- ReplicationState {_state_name(enabled)} "
                                      f"({zk.encode_peer_state(enabled).hex(' ')})"),
        ]
        if legacy is not None:
            ops.append((zk.join(path, zk_peers.LEGACY_TABLE_CFS), self._wrap(legacy.encode()),
                        f"create {path}/{zk_peers.LEGACY_TABLE_CFS} <- {legacy!r}"))
        commands = [] if self.zk.exists(peers) else [f"ensure {peers}"]
        commands += [f"transaction: {text}" for _, _, text in ops]
        if execute:
            self.zk.ensure_path(peers, acl=self._acl(peers))
            acl = self._acl(path)
            transaction = self.zk.transaction()
            for znode, data, _ in ops:
                transaction.create(znode, data, acl=acl)
            self._commit(transaction, [text for _, _, text in ops])
        return commands

    def _set_state(self, peer_id: str, enabled: bool, current: zk_peers.PeerZnodes,
                   execute: bool) -> list[str]:
        from kazoo.exceptions import BadVersionError, NoNodeError

        state_path = zk.peer_state_path(self.parent, peer_id)
        version = current.state_stat.version if current.state_stat is not None else -1
        command = (f"set {state_path} <- ReplicationState {_state_name(enabled)} "
                   f"({zk.encode_peer_state(enabled).hex(' ')}) if version == {version}")
        if execute:
            try:
                self.zk.set(state_path, self._wrap(zk.encode_peer_state(enabled)), version=version)
            except (BadVersionError, NoNodeError) as exc:
                raise PeerConflict(f"{state_path} changed while we were changing it ({type(exc).__name__}); "
                                   "nothing was written: re-run to see the current state") from None
        return [command]

    def _remove(self, peer_id: str, execute: bool) -> list[str]:
        path = zk.peer_path(self.parent, peer_id)
        if execute:
            self.zk.delete(path, recursive=True)
        return [f"delete recursively {path}"]

    def _set_table_cfs(self, peer_id: str, config: PeerConfig, current: zk_peers.PeerZnodes,
                       execute: bool) -> list[str]:
        path = zk.peer_path(self.parent, peer_id)
        peer_bytes = self._wrap(zk.encode_replication_peer(config.to_replication_peer()))
        ops = [(path, peer_bytes, current.stat.version,
                f"set {path} <- ReplicationPeer ({len(peer_bytes)} bytes) table_cfs={config.table_cfs} "
                f"if version == {current.stat.version}")]
        legacy_path = zk.join(path, zk_peers.LEGACY_TABLE_CFS)
        if self.legacy_table_cfs_znode or current.table_cfs_data is not None:
            legacy = self._legacy_table_cfs(config)
            verb = "set" if current.table_cfs_data is not None else "create"
            ops.append((legacy_path, self._wrap(legacy.encode()), None,
                        f"{verb} {legacy_path} <- {legacy!r}"))
        if execute:
            transaction = self.zk.transaction()
            for znode, data, version, text in ops:
                if version is not None:
                    transaction.set_data(znode, data, version=version)
                elif current.table_cfs_data is not None:
                    transaction.set_data(znode, data)
                else:
                    transaction.create(znode, data, acl=self._acl(znode))
            self._commit(transaction, [text for *_, text in ops])
        return [f"transaction: {text}" for *_, text in ops]
