"""Replication peer administration (shell backend for HBase 2.x+, ZooKeeper backend for 1.x).

Entry point: `peer_admin(cluster, zk_client=None)`; see `admin.PeerAdmin`.
Importing this package opens nothing and imports neither kazoo nor a shell.
"""
from hbase_migration.replication.admin import PeerAdmin, peer_admin
from hbase_migration.replication.errors import (
    PeerAdminError,
    PeerConflict,
    PeerNotFound,
    PeerNotOurs,
    PeerStateMismatch,
    ShellCommandError,
)
from hbase_migration.replication.model import (
    DEFAULT_OWNER,
    OWNER_KEY,
    InvalidPeerConfig,
    Peer,
    PeerConfig,
    is_ours,
    validate_peer_id,
)
from hbase_migration.replication.result import PeerOpResult

__all__ = [
    "DEFAULT_OWNER", "OWNER_KEY", "InvalidPeerConfig", "Peer", "PeerAdmin", "PeerAdminError", "PeerConfig",
    "PeerConflict", "PeerNotFound", "PeerNotOurs", "PeerOpResult", "PeerStateMismatch", "ShellCommandError",
    "is_ours", "peer_admin", "validate_peer_id",
]
