"""The peer's state as the source cluster has it now, for the dashboard (the ledger only knows what a task
last noted: after `peer remove`, it would still say DISABLED).

Read through the library (`hbase_migration.clusters.zk` and the peer znodes of `hbase_migration.replication`), one
ZooKeeper session per source cluster, in worker threads with a time budget: a page never waits longer than
`budget_s` for the clusters; one that did not answer in time is shown as unreachable (its read goes on in the
background and fills the cache for the next page). Answers are kept `ttl_s` seconds, so pages that reload
every 30 s, or a list of 50 runs, do not each open sessions.

Which cluster: the run's source connection (`source_conn_id` in its parameters) when Airflow has it and it
still points at the cluster the run used (same cluster key); otherwise the cluster key the ledger recorded,
which is all ZooKeeper needs.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from hbase_migration.ledger.store import NO_PEER

log = logging.getLogger(__name__)

LIVE_STATES = ("ENABLED", "DISABLED", "ABSENT")


@dataclass(frozen=True)
class LivePeer:
    """What the cluster said about one peer: `state` ENABLED, DISABLED or ABSENT (no such peer: removed, or
    never added), or None when the cluster could not be read (`error` says why)."""

    state: str | None
    read_ms: int | None  # when the cluster was read
    where: str  # the cluster key that was read
    error: str | None = None

    @property
    def readable(self) -> bool:
        return self.state is not None


def read_peer_states(target: Any, peer_ids: Iterable[str], timeout_s: float) -> dict[str, str]:
    """The state of each of `peer_ids` on the cluster behind `target` (a `Cluster` or a `ClusterKey`), read from
    its peer znodes: ENABLED, DISABLED, or ABSENT."""
    from hbase_migration.clusters import zk
    from hbase_migration.replication import zk_peers

    parent = target.znode_parent
    with zk.connect(target, timeout=timeout_s) as client:
        found = {p.id: p.state for p in zk_peers.read_peers(client, parent)}
    return {peer_id: found.get(peer_id, "ABSENT") for peer_id in peer_ids}


class PeerStates:
    """Live peer states for the dashboard, cached, bounded in time.

    `cluster_for(run)` gives the `Cluster` (or `ClusterKey`) to read for a run; the default reads the cluster
    key the ledger recorded. `read(target, peer_ids, timeout_s)` is `read_peer_states` (replaceable in tests).
    """

    def __init__(self, cluster_for: Callable[[Mapping[str, Any]], Any] | None = None, *, budget_s: float = 3.0,
                 ttl_s: float = 15.0, read: Callable[..., dict[str, str]] = read_peer_states,
                 clock: Callable[[], float] = time.time, max_workers: int = 4):
        self.cluster_for = cluster_for or key_of_run
        self.budget_s = budget_s
        self.ttl_s = ttl_s
        self.read = read
        self.clock = clock
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="peer-state")
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, dict[str, str] | None, str | None]] = {}
        self._pending: dict[str, Any] = {}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def states(self, runs: Iterable[Mapping[str, Any]]) -> dict[str, LivePeer]:
        """run_id -> LivePeer for every run that has a peer; waits at most `budget_s` in all."""
        runs = list(runs)
        wanted: dict[str, tuple[Any, set[str]]] = {}
        keys: dict[str, str] = {}
        errors: dict[str, LivePeer] = {}
        for run in runs:
            if run.get("peer_id") in (None, NO_PEER):
                continue
            try:
                target = self.cluster_for(run)
            except Exception as exc:  # a key the ledger holds but that does not parse
                errors[run["run_id"]] = LivePeer(None, None, str(run.get("source_key")),
                                                 f"{type(exc).__name__}: {exc}")
                continue
            where = str(getattr(target, "cluster_key", target))
            keys[run["run_id"]] = where
            wanted.setdefault(where, (target, set()))[1].add(run["peer_id"])
        futures = [f for where, (target, peers) in wanted.items()
                   if (f := self._submit(where, target, peers)) is not None]
        if futures:
            wait(futures, timeout=self.budget_s)
        out = dict(errors)
        for run in runs:
            where = keys.get(run["run_id"])
            if where is None:
                continue
            with self._lock:
                cached = self._cache.get(where)
            if cached is None or (cached[1] is not None and run["peer_id"] not in cached[1]):
                out[run["run_id"]] = LivePeer(None, None, where, f"no answer within {self.budget_s:g}s")
            elif cached[1] is None:
                out[run["run_id"]] = LivePeer(None, int(cached[0] * 1000), where, cached[2])
            else:
                out[run["run_id"]] = LivePeer(cached[1][run["peer_id"]], int(cached[0] * 1000), where)
        return out

    def _submit(self, where: str, target: Any, peers: set[str]) -> Any:
        """Start a read of `peers` on one cluster unless a fresh answer holds them or a read is under way."""
        with self._lock:
            cached = self._cache.get(where)
            fresh = cached is not None and self.clock() - cached[0] < self.ttl_s
            if fresh and (cached[1] is None or peers <= set(cached[1])):
                return None
            pending = self._pending.get(where)
            if pending is not None and not pending.done():
                return pending
            future = self._pool.submit(self._read_one, where, target, peers)
            self._pending[where] = future
            return future

    def _read_one(self, where: str, target: Any, peers: set[str]) -> None:
        try:
            states: dict[str, str] | None = self.read(target, sorted(peers), self.budget_s)
            error = None
        except Exception as exc:
            states, error = None, f"{type(exc).__name__}: {exc}"
            log.warning("dashboard: peer states on %s not read: %s", where, error)
        with self._lock:
            self._cache[where] = (self.clock(), states, error)


def key_of_run(run: Mapping[str, Any]) -> Any:
    """The cluster key the ledger recorded for the run's source (what ZooKeeper reads need)."""
    from hbase_migration.clusters.cluster import ClusterKey

    return ClusterKey.parse(run["source_key"])


def connection_or_key(lookup: Callable[[str], Any]) -> Callable[[Mapping[str, Any]], Any]:
    """`cluster_for` reading the run's source connection through `lookup(conn_id)` (an Airflow connection:
    host, port, extra_dejson); the recorded cluster key when the connection is missing, unreadable, or now
    points at another cluster than the one the run used."""
    from hbase_migration.clusters.cluster import Cluster, ClusterKey

    def cluster_for(run: Mapping[str, Any]) -> Any:
        key = ClusterKey.parse(run["source_key"])
        conn_id = (run.get("params") or {}).get("source_conn_id")
        if conn_id:
            try:
                conn = lookup(conn_id)
                cluster = Cluster.from_connection(conn_id, conn.host, conn.port, conn.extra_dejson)
            except Exception as exc:
                log.info("dashboard: connection %s not usable for run %s (%s); reading %s", conn_id,
                         run["run_id"], exc, key)
            else:
                if cluster.cluster_key.normalized() == key.normalized():
                    return cluster
        return key

    return cluster_for
