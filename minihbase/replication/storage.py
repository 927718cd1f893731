"""Replication state in ZooKeeper, laid out as HBase's ZKReplicationPeerStorage / ZKReplicationQueueStorage:

    <parent>/replication/peers/<id>                   PBUF ReplicationPeer
    <parent>/replication/peers/<id>/peer-state        PBUF ReplicationState (exact ENABLED/DISABLED bytes)
    <parent>/replication/rs/<server>/<queueId>/<wal>  empty (= 0) or PBUF ReplicationHLogPosition
    <parent>/replication/rs/<server>/lock             PBUF ReplicationLock (1.x failover lock)

Peers are written the 1.x way (ReplicationAdmin writes ZooKeeper, region servers watch), so both a ZooKeeper
admin and the shell work. Every non-empty payload carries the ZKMetadata header, as RecoverableZooKeeper's.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from minihbase.replication import codec
from minihbase.znodes import with_metadata

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Paths:
    parent: str

    @property
    def replication(self) -> str:
        return f"{self.parent}/replication"

    @property
    def peers(self) -> str:
        return f"{self.parent}/replication/peers"

    @property
    def queues(self) -> str:
        return f"{self.parent}/replication/rs"

    @property
    def live_servers(self) -> str:
        return f"{self.parent}/rs"

    def peer(self, peer_id: str) -> str:
        return f"{self.peers}/{peer_id}"

    def peer_state(self, peer_id: str) -> str:
        return f"{self.peers}/{peer_id}/peer-state"

    def replicator(self, server: str) -> str:
        return f"{self.queues}/{server}"

    def queue(self, server: str, queue_id: str) -> str:
        return f"{self.queues}/{server}/{queue_id}"

    def wal(self, server: str, queue_id: str, wal: str) -> str:
        return f"{self.queues}/{server}/{queue_id}/{wal}"

    def lock(self, server: str) -> str:
        return f"{self.queues}/{server}/lock"


@dataclass(frozen=True)
class PeerDescription:
    peer_id: str
    config: codec.PeerConfig
    enabled: bool


class PeerError(Exception):
    """A peer operation HBase refuses; the message is HBase's (e.g. `Replication peer 1 does not exist`)."""

    java_class = "org.apache.hadoop.hbase.DoNotRetryIOException"

    def java_text(self) -> str:
        return f"{self.java_class}: {self}"


class PeerStorage:
    """Read and change peers (the shell's ReplicationAdmin side, and the region servers' reads)."""

    def __init__(self, zk, parent: str, ident: str | None = None):
        self.zk = zk
        self.paths = Paths(parent)
        self.ident = ident

    def _wrap(self, payload: bytes) -> bytes:
        return with_metadata(payload, ident=self.ident)

    def list_ids(self, watch=None) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return sorted(self.zk.get_children(self.paths.peers, watch=watch))
        except NoNodeError:
            if watch is not None:
                self.zk.exists(self.paths.peers, watch=watch)
            return []

    def get(self, peer_id: str, watch=None) -> PeerDescription | None:
        """The peer, or None if absent (or half-created without peer-state, which HBase treats as absent
        until the second write lands)."""
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self.zk.get(self.paths.peer(peer_id), watch=watch)
            state, _ = self.zk.get(self.paths.peer_state(peer_id), watch=watch)
        except NoNodeError:
            return None
        return PeerDescription(peer_id, codec.decode_peer(data), codec.peer_enabled(state))

    def list(self) -> list[PeerDescription]:
        return [p for p in (self.get(i) for i in self.list_ids()) if p is not None]

    def require(self, peer_id: str) -> PeerDescription:
        found = self.get(peer_id)
        if found is None:
            raise PeerError(f"Replication peer {peer_id} does not exist")
        return found

    def add(self, peer_id: str, config: codec.PeerConfig, enabled: bool) -> None:
        """One ZooKeeper multi: the peer node and its state (ZKReplicationPeerStorage.addPeer)."""
        from kazoo.exceptions import NodeExistsError

        self.zk.ensure_path(self.paths.peers)
        tx = self.zk.transaction()
        tx.create(self.paths.peer(peer_id), self._wrap(codec.encode_peer(config)))
        tx.create(self.paths.peer_state(peer_id), self._wrap(codec.state_bytes(enabled)))
        results = tx.commit()
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            if any(isinstance(r, NodeExistsError) for r in failed):
                raise PeerError(f"Replication peer {peer_id} already exists")
            raise failed[0]

    def remove(self, peer_id: str) -> None:
        self.require(peer_id)
        self.zk.delete(self.paths.peer(peer_id), recursive=True)

    def set_state(self, peer_id: str, enabled: bool) -> None:
        self.zk.set(self.paths.peer_state(peer_id), self._wrap(codec.state_bytes(enabled)))

    def update(self, peer_id: str, config: codec.PeerConfig) -> None:
        self.zk.set(self.paths.peer(peer_id), self._wrap(codec.encode_peer(config)))


class QueueStorage:
    """One region server's view of the queues (ZKReplicationQueueStorage), plus the failover claim."""

    def __init__(self, zk, parent: str, ident: str | None = None):
        self.zk = zk
        self.paths = Paths(parent)
        self.ident = ident

    def replicators(self) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return self.zk.get_children(self.paths.queues)
        except NoNodeError:
            return []

    def queues(self, server: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return [q for q in self.zk.get_children(self.paths.replicator(server)) if q != "lock"]
        except NoNodeError:
            return []

    def wals(self, server: str, queue_id: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return self.zk.get_children(self.paths.queue(server, queue_id))
        except NoNodeError:
            return []

    def position(self, server: str, queue_id: str, wal: str) -> int:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self.zk.get(self.paths.wal(server, queue_id, wal))
        except NoNodeError:
            return 0
        try:
            return codec.decode_position(data)
        except codec.CodecError:
            log.warning("unreadable position of %s/%s/%s: reading from 0", server, queue_id, wal)
            return 0

    def ensure_queue(self, server: str, queue_id: str) -> None:
        self.zk.ensure_path(self.paths.queue(server, queue_id))

    def add_wal(self, server: str, queue_id: str, wal: str) -> None:
        """The WAL node is created with empty data (= position 0), as `addWAL` does."""
        from kazoo.exceptions import NodeExistsError

        try:
            self.zk.create(self.paths.wal(server, queue_id, wal), b"", makepath=True)
        except NodeExistsError:
            pass

    def set_position(self, server: str, queue_id: str, wal: str, position: int) -> None:
        self.zk.set(self.paths.wal(server, queue_id, wal),
                    with_metadata(codec.encode_position(position), ident=self.ident))

    def remove_wal(self, server: str, queue_id: str, wal: str) -> None:
        from kazoo.exceptions import NoNodeError

        try:
            self.zk.delete(self.paths.wal(server, queue_id, wal))
        except NoNodeError:
            pass

    def remove_queue(self, server: str, queue_id: str) -> None:
        """The queue and its WALs; then the server's node if no queue is left (HBase 2.6 leaves no empty
        `replication/rs/<server>` behind: seen by the conformance suite)."""
        from kazoo.exceptions import NoNodeError, NotEmptyError

        try:
            self.zk.delete(self.paths.queue(server, queue_id), recursive=True)
        except NoNodeError:
            pass
        try:
            self.zk.delete(self.paths.replicator(server))
        except (NoNodeError, NotEmptyError):
            pass

    def all_wals(self) -> set[str]:
        """Every WAL name in every queue of every replicator (ReplicationLogCleaner's preClean)."""
        out: set[str] = set()
        for server in self.replicators():
            for queue_id in self.queues(server):
                out.update(self.wals(server, queue_id))
        return out

    # -------------------------------------------------------------------------------------- failover
    def lock_replicator(self, dead: str, me: str, live: set[str]) -> bool:
        """Take the 1.x failover lock on a dead server's queues. A lock left by a server that died meanwhile
        is stale: it is removed (version-checked) and taken again."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        path = self.paths.lock(dead)
        for _ in range(3):
            try:
                self.zk.create(path, with_metadata(codec.encode_lock(me), ident=self.ident))
                return True
            except NoNodeError:
                return False  # the dead server's node is gone: someone claimed it already
            except NodeExistsError:
                try:
                    data, stat = self.zk.get(path)
                except NoNodeError:
                    continue
                owner = codec.decode_lock(data)
                if owner in live and owner != me:
                    return False
                try:
                    self.zk.delete(path, version=stat.version)
                except (NoNodeError, BadVersionError):
                    pass
        return False

    def claim_all(self, dead: str, me: str, keep_peer) -> dict[str, dict[str, int]]:
        """Move every queue of `dead` under `me` as `<queueId>-<dead>` in one multi, dropping queues whose
        peer `keep_peer(peer_id)` says is gone; the dead server's node (and lock) go in the same multi.
        Returns {new queue id: {wal: position}}; {} if nothing was claimed (another server won)."""
        from kazoo.exceptions import NoNodeError

        base = self.paths.replicator(dead)
        try:
            children = self.zk.get_children(base)
        except NoNodeError:
            return {}
        tx = self.zk.transaction()
        claimed: dict[str, dict[str, int]] = {}
        for queue_id in children:
            if queue_id == "lock":
                continue
            qpath = f"{base}/{queue_id}"
            wals = self.zk.get_children(qpath)
            peer_id = codec.parse_queue_id(queue_id).peer_id
            keep = keep_peer(peer_id)
            new_id = f"{queue_id}-{dead}"
            if keep:
                tx.create(self.paths.queue(me, new_id), b"")
                claimed[new_id] = {}
            for wal in wals:
                data, _ = self.zk.get(f"{qpath}/{wal}")
                if keep:
                    tx.create(self.paths.wal(me, new_id, wal), data)
                    try:
                        claimed[new_id][wal] = codec.decode_position(data)
                    except codec.CodecError:
                        claimed[new_id][wal] = 0
                tx.delete(f"{qpath}/{wal}")
            tx.delete(qpath)
        tx.delete(self.paths.lock(dead))
        tx.delete(base)
        self.zk.ensure_path(self.paths.replicator(me))
        results = tx.commit()
        if any(isinstance(r, Exception) for r in results):
            log.info("claim of %s's queues by %s failed (another server took them): %s", dead, me,
                     [type(r).__name__ for r in results if isinstance(r, Exception)])
            return {}
        return claimed
