"""The drain of a peer once writes are fenced: a WAL roll, then every queue lets go of every WAL from before it.

Why not the `/jmx` drain decision (`metrics.decide_drained`) inside a cut-over's write freeze: its figures are
metrics snapshots (10 s apart by default) and, with no write, HBase 2.x's age gauge keeps the age of the last
shipped edit, so only a long idle window proves an idle source (30 s by default). This proof takes seconds and
needs no metric:

1. Writes to the tables are fenced (READONLY, or write permission revoked): every acknowledged edit is in a WAL
   that exists now.
2. `mark()`: the WALs each region server's queue of the peer holds, read from ZooKeeper (HBase 2.x keeps its
   replication queues there: `<parent>/replication/rs/<server>/<peer>/<wal>`).
3. Every live region server rolls its WAL (`wal_roll`; HBase 2.x rolls asynchronously, the new WAL joins the
   queue within a second).
4. `decide()`: a server's queue has drained when it holds none of the marked WALs any more. HBase drops a WAL
   from a queue only once the shipper has shipped everything in it up to its end and the reader has moved on to
   the next one (`ReplicationSourceShipper` -> `logPositionAndCleanOldLogs`), so a marked WAL gone means every
   edit acknowledged before the fence has reached the peer. A recovered queue of the peer (a dead server's WALs
   being shipped by another) or a queue under a server that is not live keeps the peer undrained.

Measured on realhbase (HBase 2.6.4, `replication.source.sleepforretries` 100 ms): the new WAL is queued 0.4 to
0.7 s after the roll request, the marked one is gone 1.3 to 1.8 s after it. With HBase's default (1 s between
reads of an idle WAL) expect a few seconds.

`mark` and `decide` are pure; `read_queues` and `wait_drained` read ZooKeeper.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hbase_migration.clusters import zk

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster


@dataclass(frozen=True)
class QueuesSeen:
    """The peer's queues and the live region servers, as ZooKeeper showed them at one instant."""

    peer_id: str
    live_servers: tuple[str, ...]
    queues: tuple[zk.QueueInfo, ...]  # only this peer's
    taken_at: float = 0.0


@dataclass(frozen=True)
class WalDrain:
    drained: bool
    reasons: tuple[str, ...] = ()  # why not yet, per server
    waiting_wals: int = 0  # marked WALs still queued
    marked: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"drained": self.drained, "reasons": list(self.reasons), "waiting_wals": self.waiting_wals,
                "marked": {k: list(v) for k, v in self.marked.items()}}


def mark(seen: QueuesSeen) -> dict[str, tuple[str, ...]]:
    """Per region server, the WALs its queues of the peer hold before the roll (normal and recovered)."""
    out: dict[str, list[str]] = {}
    for q in seen.queues:
        out.setdefault(q.server, []).extend(w for w, _ in q.wals)
    return {server: tuple(wals) for server, wals in sorted(out.items())}


def decide(marked: Mapping[str, Sequence[str]], seen: QueuesSeen) -> WalDrain:
    """Drained when no queue of the peer holds a marked WAL, no recovered queue of the peer is left, and no queue
    of the peer sits under a server that is not live (its WALs not claimed yet)."""
    reasons = []
    waiting = 0
    live = set(seen.live_servers)
    marked_sets = {server: set(wals) for server, wals in marked.items()}
    every_marked = set().union(*marked_sets.values()) if marked_sets else set()
    if not seen.live_servers:
        reasons.append("no live region server registered in ZooKeeper")
    for q in seen.queues:
        names = [w for w, _ in q.wals]
        left = [w for w in names if w in every_marked]
        if q.server not in live:
            reasons.append(f"queue {q.queue_id} under {q.server}, which is not live: {len(names)} WAL(s) not claimed "
                           "by a live server yet")
        elif q.recovered:
            reasons.append(f"{q.server}: recovered queue {q.queue_id} for dead server(s) "
                           f"{', '.join(q.dead_servers) or '?'} still holds {len(names)} WAL(s)")
        if left:
            waiting += len(left)
            reasons.append(f"{q.server} queue {q.queue_id}: {len(left)} WAL(s) from before the roll not shipped to "
                           f"their end yet ({', '.join(w.rsplit('.', 1)[-1] for w in left[:3])})")
    return WalDrain(not reasons, tuple(dict.fromkeys(reasons)), waiting,
                    {k: tuple(v) for k, v in marked.items()})


def read_queues(zk_client: Any, znode_parent: str, peer_id: str, clock: Callable[[], float] = time.time) -> QueuesSeen:
    """The peer's queues and the live servers, from ZooKeeper. ValueError when a live server runs HBase 3.x: it
    keeps its queues in the `hbase:replication` table, ZooKeeper would show none and the peer would look drained."""
    servers = zk.live_region_servers(zk_client, znode_parent)
    newer = sorted(s.servername for s in servers if _major(s.version) >= 3)
    if newer:
        raise ValueError(f"region server(s) {', '.join(newer)} run HBase 3.x, which keeps replication queues in the "
                         "hbase:replication table, not in ZooKeeper: this drain cannot see them (use synchronous "
                         "replication's planned switch: python -m hbase_migration sync-replication run)")
    live = tuple(s.servername for s in servers)
    queues = tuple(q for q in zk.replication_queues(zk_client, znode_parent) if q.peer_id == peer_id)
    return QueuesSeen(peer_id, live, queues, clock())


def _major(version: str | None) -> int:
    head = (version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def wait_drained(cluster: "Cluster", zk_client: Any, peer_id: str, marked: Mapping[str, Sequence[str]], *,
                 deadline: float, interval_s: float = 0.1, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> WalDrain:
    """Poll ZooKeeper until `decide` says drained or `deadline` (a `clock()` instant) passes; the last verdict."""
    while True:
        verdict = decide(marked, read_queues(zk_client, cluster.znode_parent, peer_id))
        if verdict.drained or clock() >= deadline:
            return verdict
        sleep(interval_s)
