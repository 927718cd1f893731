"""The HBase 2.x+ path: peers changed through `hbase shell -n`, confirmed in ZooKeeper.

On 2.x the master runs a procedure for each peer change and region servers are
refreshed by it, so the shell (Admin API) is the only correct writer. The
shell's exit code and `ERROR` lines are checked by the runner; then the peer
znode and peer-state bytes are read back (see PeerAdmin) because a shell that
silently ignored an option (an old shell without STATE) must not pass.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from hbase_migration.clusters.cluster import Cluster
from hbase_migration.clusters.shell import ShellOutput
from hbase_migration.replication import shell, zk_peers
from hbase_migration.replication.admin import PeerAdmin
from hbase_migration.replication.model import DEFAULT_OWNER, PeerConfig
from hbase_migration.replication.shell_parsers import (
    ListedPeer,
    ReplicationStatus,
    parse_list_peers,
    parse_replication_status,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient



class ShellPeerAdmin(PeerAdmin):
    backend = "shell"

    def __init__(self, cluster: Cluster, zk_client: "KazooClient | None" = None, owner: str = DEFAULT_OWNER,
                 confirm_timeout_s: float | None = None, shell_timeout_s: float | None = None):
        super().__init__(cluster, zk_client, owner, confirm_timeout_s)
        if shell_timeout_s is None:
            shell_timeout_s = cluster.shell_timeout_s
        if shell_timeout_s <= 0:
            raise ValueError(f"shell_timeout_s must be positive, got {shell_timeout_s!r}")
        self.shell_timeout_s = shell_timeout_s

    def run(self, statements: list[str]) -> ShellOutput:
        from hbase_migration.clusters import channels

        return channels.shell(self.cluster, statements, self.shell_timeout_s)

    def _run(self, statements: list[str], execute: bool) -> list[str]:
        if execute:
            self.run(statements)
        return statements

    def _add(self, peer_id: str, config: PeerConfig, enabled: bool, execute: bool) -> list[str]:
        return self._run(shell.add_peer(peer_id, config, enabled), execute)

    def _set_state(self, peer_id: str, enabled: bool, current: zk_peers.PeerZnodes,
                   execute: bool) -> list[str]:
        return self._run([shell.enable_peer(peer_id) if enabled else shell.disable_peer(peer_id)], execute)

    def _remove(self, peer_id: str, execute: bool) -> list[str]:
        return self._run([shell.remove_peer(peer_id)], execute)

    def _set_table_cfs(self, peer_id: str, config: PeerConfig, current: zk_peers.PeerZnodes,
                       execute: bool) -> list[str]:
        return self._run([shell.set_peer_table_cfs(peer_id, config.table_cfs)], execute)

    # -- what the shell itself reports (a second opinion next to ZooKeeper) --------------------

    def shell_list_peers(self) -> list[ListedPeer]:
        return parse_list_peers(self.run([shell.list_peers()]).stdout)

    def replication_status(self) -> ReplicationStatus:
        return parse_replication_status(self.run([shell.status_replication()]).stdout)
