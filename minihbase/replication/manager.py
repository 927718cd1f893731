"""Per region server replication (HBase's ReplicationSourceManager, 1.x-style peer tracking):

- watches `replication/peers` (children, each peer node and its peer-state) and reacts to add, remove, state
  and config changes: a new peer gets a queue `replication/rs/<me>/<peer>` holding the current WAL and every
  later one; a removed peer's sources stop and their queues are deleted (which frees their WALs);
- on every WAL roll, adds the new WAL to each normal queue before any edit is written to it;
- watches `rs/` (live region servers): a replicator node of a server that is gone is locked, claimed in one
  multi as recovered queues `<queueId>-<dead server>`, shipped to the end and deleted (failover);
- serves the sink (`POST /replicateWALEntry`) and the replication bean of `/jmx`.
"""
from __future__ import annotations

import logging
import posixpath
import random
import threading
import time
from typing import TYPE_CHECKING

from minihbase.jmx import REPLICATION_BEAN
from minihbase.replication import codec
from minihbase.replication.metrics import GlobalSourceMetrics
from minihbase.replication.sink import PATH as SINK_PATH
from minihbase.replication.sink import ReplicationSink
from minihbase.replication.source import ReplicationSource
from minihbase.replication.storage import PeerDescription, PeerStorage, QueueStorage

if TYPE_CHECKING:
    from minihbase.regionserver import RegionServer
    from minihbase.replication import ReplicationService

log = logging.getLogger(__name__)
RECONCILE_EVERY_S = 2.0


class ReplicationManager:
    def __init__(self, service: "ReplicationService", rs: "RegionServer"):
        self.service = service
        self.rs = rs
        self.cluster = rs.cluster
        self.global_metrics = GlobalSourceMetrics()
        self.sink = ReplicationSink(rs)
        self.sources: dict[str, ReplicationSource] = {}
        self.peers: dict[str, PeerDescription] = {}
        self.lock = threading.RLock()
        self.active = False
        self.current_wal: str | None = None
        self.wake = threading.Event()
        self.peer_storage: PeerStorage | None = None
        self.queue_storage: QueueStorage | None = None
        self._thread: threading.Thread | None = None
        self._dead_seen: dict[str, float] = {}
        self._stopped = False
        rs.wal.roll_listeners.append(self.on_roll)
        rs.rpc.route("POST", SINK_PATH, self.sink.handle)
        rs.info.route("GET", "/replication-load", lambda r: self._load_response())
        rs.jmx.register(REPLICATION_BEAN, self.jmx)
        rs.abort_listeners.append(lambda _rs, _reason: self.stop(join=False))
        rs.start_listeners.append(lambda _rs: self.start())
        rs.stop_listeners.append(lambda _rs: self.stop())

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        ident = self.cluster.master.zk_ident
        parent = self.rs.config.znode_parent
        self.peer_storage = PeerStorage(self.rs.zk, parent, ident)
        self.queue_storage = QueueStorage(self.rs.zk, parent, ident)
        self.rs.zk.ensure_path(self.queue_storage.paths.replicator(self.rs.servername))
        self.rs.zk.ensure_path(self.peer_storage.paths.peers)  # as HBase's ReplicationPeers.init
        with self.lock:
            self.active = True
            self._reconcile_peers()
        self._thread = threading.Thread(target=self._loop, name=f"rs{self.rs.slot}-replication", daemon=True)
        self._thread.start()

    def stop(self, join: bool = True) -> None:
        """Stop every source (a region server that stops or dies ships nothing more). Queues stay in
        ZooKeeper: another region server claims them."""
        with self.lock:
            self._stopped = True
            self.active = False
            sources = list(self.sources.values())
        self.wake.set()
        for s in sources:
            s.stop(join=join)

    def _loop(self) -> None:
        while not self._stopped and self.rs.online:
            self.wake.wait(RECONCILE_EVERY_S / 4)
            self.wake.clear()
            if self._stopped or not self.rs.online:
                return
            try:
                with self.lock:
                    if not self.active:
                        return
                    self._reconcile_peers()
                self._failover()
            except Exception as e:
                if self.rs.online and not self._stopped:
                    log.warning("replication manager of %s: %s: %s", self.rs.servername, type(e).__name__, e)
                    time.sleep(0.2)

    def _watch(self, *_args) -> None:
        self.wake.set()

    # ------------------------------------------------------------------------------------------ peers
    def peer(self, peer_id: str) -> PeerDescription | None:
        return self.peers.get(peer_id)

    def _reconcile_peers(self) -> None:
        """Bring sources in line with the peers in ZooKeeper (call with the lock held). Idempotent."""
        storage = self.peer_storage
        found: dict[str, PeerDescription] = {}
        for peer_id in storage.list_ids(watch=self._watch):
            desc = storage.get(peer_id, watch=self._watch)
            if desc is not None:
                found[peer_id] = desc
        old = self.peers
        self.peers = found
        for peer_id in old.keys() - found.keys():
            self._remove_peer(peer_id)
        for peer_id in found.keys() - old.keys():
            self._add_peer(peer_id)
        changed = [p for p in found.keys() & old.keys() if found[p] != old[p]]
        for peer_id in changed:
            log.info("peer %s on %s is now %s", peer_id, self.rs.servername,
                     "ENABLED" if found[peer_id].enabled else "DISABLED")
            for s in self.sources.values():
                if s.peer_id == peer_id:
                    s.wake.set()

    def _add_peer(self, peer_id: str) -> None:
        if peer_id in self.sources:
            return
        me = self.rs.servername
        wal = posixpath.basename(self.rs.wal.current_path) if self.rs.wal.current_path else None
        self.queue_storage.ensure_queue(me, peer_id)
        if wal is not None:
            self.queue_storage.add_wal(me, peer_id, wal)
        source = ReplicationSource(self, peer_id, peer_id, [wal] if wal else [])
        self.sources[peer_id] = source.start()
        log.info("peer %s added on %s: queue starts at WAL %s", peer_id, me, wal)

    def _remove_peer(self, peer_id: str) -> None:
        me = self.rs.servername
        for queue_id, source in list(self.sources.items()):
            if source.peer_id == peer_id:
                source.stop(join=False)
                del self.sources[queue_id]
        for queue_id in self.queue_storage.queues(me):
            if codec.parse_queue_id(queue_id).peer_id == peer_id:
                self.queue_storage.remove_queue(me, queue_id)
        log.info("peer %s removed on %s: its sources stopped and its queues deleted", peer_id, me)

    def on_roll(self, old_path: str | None, new_path: str) -> None:
        """Called under the WAL's lock right after a roll: the new WAL joins every normal queue before any
        edit is appended to it (HBase's preLogRoll)."""
        wal = posixpath.basename(new_path)
        with self.lock:
            self.current_wal = wal
            if not self.active:
                return
            me = self.rs.servername
            for peer_id in self.peers:
                source = self.sources.get(peer_id)
                if source is None:
                    continue
                try:
                    self.queue_storage.add_wal(me, peer_id, wal)
                except Exception as e:  # the session is gone: this server is dying anyway
                    log.warning("adding WAL %s to queue %s on %s failed: %s", wal, peer_id, me, e)
                    continue
                source.enqueue(wal)

    def source_finished(self, source: ReplicationSource) -> None:
        with self.lock:
            if self.sources.get(source.queue_id) is source:
                del self.sources[source.queue_id]

    # ------------------------------------------------------------------------------------------ failover
    def _failover(self) -> None:
        storage = self.queue_storage
        me = self.rs.servername
        replicators = storage.replicators()  # before the live list: a new server appears in rs/ first
        live = set(self.rs.zk.get_children(storage.paths.live_servers, watch=self._watch))
        now = time.monotonic()
        dead = [r for r in replicators if r != me and r not in live]
        self._dead_seen = {r: self._dead_seen.get(r, now + random.uniform(0.5, 1.5)
                                                  * self.rs.config.replication_failover_delay_s)
                           for r in dead}
        for server in dead:
            if now < self._dead_seen[server] or self._stopped:
                continue
            self._claim(server, live)

    def _claim(self, dead: str, live: set[str]) -> None:
        me = self.rs.servername
        storage = self.queue_storage
        if not storage.lock_replicator(dead, me, live):
            return
        with self.lock:
            if not self.active:
                return
            claimed = storage.claim_all(dead, me, keep_peer=lambda p: p in self.peers)
            for queue_id, wals in claimed.items():
                peer_id = codec.parse_queue_id(queue_id).peer_id
                if not wals:
                    storage.remove_queue(me, queue_id)
                    continue
                source = ReplicationSource(self, queue_id, peer_id, list(wals), wals, recovered=True)
                self.sources[queue_id] = source.start()
        self._dead_seen.pop(dead, None)
        if claimed:
            log.info("%s claimed the replication queues of dead server %s: %s", me, dead, sorted(claimed))

    # ------------------------------------------------------------------------------------------ peer cluster
    def peer_sinks(self, peer: PeerDescription) -> list[tuple[str, int]]:
        return self.service.peer_clusters.sinks(peer.config.cluster_key)

    def sink_auth(self, peer: PeerDescription, host: str) -> dict[str, str]:
        """Headers authenticating a shipment to a sink at `host` (none for an unsecured cluster)."""
        security = self.cluster.security
        return {} if security is None else security.replication_auth(peer.config.configuration, host)

    def sink_auth_note(self, peer: PeerDescription, host: str) -> str:
        security = self.cluster.security
        return "" if security is None else security.replication_auth_note(peer.config.configuration, host)

    def peer_cluster_id(self, peer: PeerDescription) -> str | None:
        return self.service.peer_clusters.cluster_id(peer.config.cluster_key)

    def scopes(self, table: bytes) -> dict[bytes, int] | None:
        """The table's family scopes now (None if the table is gone)."""
        state = self.cluster.master.tables.get(table)
        if state is None:
            return None
        return {name: fam.replication_scope for name, fam in state.desc.families.items()}

    # ------------------------------------------------------------------------------------------ views
    def _source_list(self) -> list:
        with self.lock:
            return [s for s in self.sources.values() if not s.finished]

    def jmx(self) -> dict:
        sources = self._source_list()
        out = {"modelerType": "RegionServer,sub=Replication", "tag.Context": "regionserver",
               "tag.Hostname": self.rs.host}
        out.update(self.global_metrics.jmx([s.metrics for s in sources]))
        for s in sorted(sources, key=lambda s: s.queue_id):
            out.update(s.metrics.jmx())
        out.update(self.sink.metrics.jmx())
        return out

    def load(self) -> dict:
        """ReplicationLoad as the master gathers it for `status 'replication'`."""
        sources = self._source_list()
        return {"servername": self.rs.servername, "hostname": self.rs.host,
                "sources": [s.metrics.load() for s in sorted(sources, key=lambda s: (s.recovered, s.queue_id))],
                "sink": self.sink.metrics.load()}

    def _load_response(self):
        from minihbase.httpserver import Response

        return Response(200, self.load())
