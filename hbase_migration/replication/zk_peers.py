"""Reading replication peers from ZooKeeper (both backends confirm every change here).

In HBase 1.x and 2.x (ZKReplicationPeerStorage) a peer is
`<parent>/replication/peers/<id>` (PBUF ReplicationPeer) with a `peer-state`
child (PBUF ReplicationState); HBase 1.0-1.2 also kept table-CFs as a string
in a `tableCFs` child. HBase 3 can store peers on the filesystem instead
(`hbase.replication.peer.storage.impl`): such clusters are not readable here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hbase_migration.clusters import zk
from hbase_migration.replication.errors import PeerAdminError
from hbase_migration.replication.model import InvalidPeerConfig, Peer, PeerConfig, parse_table_cfs_string

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.protocol.states import ZnodeStat

LEGACY_TABLE_CFS = "tableCFs"


@dataclass(frozen=True)
class PeerZnodes:
    """The raw znodes of one peer, with their stats (for version-checked writes and tests)."""

    peer_id: str
    data: bytes
    stat: "ZnodeStat"
    state_data: bytes | None
    state_stat: "ZnodeStat | None"
    table_cfs_data: bytes | None  # the 1.0-1.2 `tableCFs` child, when present


def peers_path(znode_parent: str) -> str:
    return zk.replication_paths(znode_parent)["peers"]


def read_peer_znodes(client: "KazooClient", znode_parent: str, peer_id: str) -> PeerZnodes | None:
    from kazoo.exceptions import NoNodeError

    path = zk.peer_path(znode_parent, peer_id)
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None
    try:
        state_data, state_stat = client.get(zk.join(path, "peer-state"))
    except NoNodeError:
        state_data, state_stat = None, None
    try:
        table_cfs_data, _ = client.get(zk.join(path, LEGACY_TABLE_CFS))
    except NoNodeError:
        table_cfs_data = None
    return PeerZnodes(peer_id, data, stat, state_data, state_stat, table_cfs_data)


def decode_peer(znodes: PeerZnodes, znode_parent: str) -> Peer:
    """A Peer from its znodes; undecodable bytes raise PeerAdminError naming the znode."""
    path = zk.peer_path(znode_parent, znodes.peer_id)
    try:
        message = zk.decode_replication_peer(znodes.data)
        config = PeerConfig.from_replication_peer(message)
    except (zk.ZnodeFormatError, InvalidPeerConfig) as exc:
        raise PeerAdminError(f"peer znode {path} is not a readable ReplicationPeer: {exc}") from None
    legacy = zk.strip_metadata(znodes.table_cfs_data) if znodes.table_cfs_data else b""
    if legacy.strip() and not config.table_cfs:
        try:
            config = config.replace(table_cfs=parse_table_cfs_string(legacy.decode("utf-8")))
        except (UnicodeDecodeError, InvalidPeerConfig) as exc:
            raise PeerAdminError(
                f"{path}/{LEGACY_TABLE_CFS} is not a readable table-CFs string: {exc}") from None
    enabled = None
    if znodes.state_data is not None:
        try:
            enabled = zk.decode_peer_state(znodes.state_data) is zk.PeerState.ENABLED
        except zk.ZnodeFormatError as exc:
            raise PeerAdminError(f"{path}/peer-state is not a readable ReplicationState: {exc}") from None
        if enabled and not zk.hbase_sees_enabled(znodes.state_data):
            # HBase compares the bytes with `PBUF 08 00`; anything else is a disabled peer to it.
            raise PeerAdminError(
                f"{path}/peer-state reads ENABLED but is not the exact bytes PBUF 08 00 HBase compares with "
                f"({zk.strip_metadata(znodes.state_data)!r}): HBase treats this peer as DISABLED")
    return Peer(znodes.peer_id, config, enabled)


def read_peer(client: "KazooClient", znode_parent: str, peer_id: str) -> Peer | None:
    znodes = read_peer_znodes(client, znode_parent, peer_id)
    return None if znodes is None else decode_peer(znodes, znode_parent)


def read_peers(client: "KazooClient", znode_parent: str) -> list[Peer]:
    """Every peer, sorted by id; peers removed while we read are left out."""
    from kazoo.exceptions import NoNodeError

    try:
        ids = sorted(client.get_children(peers_path(znode_parent)))
    except NoNodeError:
        return []
    peers = []
    for peer_id in ids:
        peer = read_peer(client, znode_parent, peer_id)
        if peer is not None:
            peers.append(peer)
    return peers


def leftover_queues(client: "KazooClient", znode_parent: str, peer_id: str) -> list[str]:
    """`replicator/queueId` of every queue (normal or recovered) that belongs to `peer_id`.

    HBase refuses to add a peer while such queues remain (checkQueuesDeleted):
    the new peer would inherit the old peer's WAL positions. A leftover
    `hfile-refs/<peer>` (bulk-load replication) counts too, as `hfile-refs/<peer>`.
    """
    left = [f"{q.server}/{q.queue_id}" for q in zk.replication_queues(client, znode_parent)
            if q.peer_id == peer_id]
    if client.exists(zk.join(znode_parent, "replication", "hfile-refs", peer_id)) is not None:
        left.append(f"hfile-refs/{peer_id}")
    return left
