"""How many WALs a caught-up replication queue holds: one per WAL group of its region server.

HBase 2.x and later keep the WAL being written in every replication queue (the reader peeks; a WAL leaves the queue
once it is rolled and shipped), and a region server writes one WAL per *WAL group*, so a caught-up queue's
`sizeOfLogQueue` is its server's number of WAL groups:

* HBase 1.x: 0 (its shipper takes the WAL it reads out of the queue);
* the default provider (`hbase.wal.provider` unset, `defaultProvider`, `filesystem`, `asyncfs`): 1;
* `multiwal` (RegionGroupingProvider) with the `bounded` strategy (its default): at most
  `hbase.wal.regiongrouping.numgroups` (default 2; a group gets a WAL once a region of it writes); the `identity`
  and `namespace` strategies give one group per region or per namespace: no fixed number;
* HBase 3.x: one more per synchronous replication peer (a peer with a remote WAL dir) that is ACTIVE on this
  cluster (or DOWNGRADE_ACTIVE on its way to ACTIVE: HBase's `SyncReplicationPeerInfoProviderImpl`): the regions of
  its tables write a WAL group of their own, `<server>-<time>-<peer>.syncrep` (real 3.0.0-alpha-4: a caught-up
  queue of an asynchronous peer held 2 WALs beside one ACTIVE sync peer). A sync peer in DOWNGRADE_ACTIVE or
  STANDBY writes none.

What the layout cannot say: a server that holds no region of a sync peer's tables (or of some multiwal group) has
fewer WALs than the layout's number, and there a queue one WAL behind can look drained at that number (the drain's
other rules still hold it back while its age grows or its counters stall).

The drain decision's `caught_up_queue_size` must not exceed that: a larger value lets a queue that is still one WAL
behind look drained. `wal_groups` (one server) and `caught_up_bound` (a cluster) are pure; `read_bound` reads the
facts (the live region servers' `/conf` and versions, the peers in ZooKeeper) and says "unknown" rather than guess.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

PROVIDER = "hbase.wal.provider"
STRATEGY = "hbase.wal.regiongrouping.strategy"
NUMGROUPS = "hbase.wal.regiongrouping.numgroups"
DEFAULT_NUMGROUPS = 2  # BoundedGroupingStrategy.DEFAULT_NUM_REGION_GROUPS
ONE_GROUP = frozenset({"", "defaultprovider", "filesystem", "asyncfs",
                       "org.apache.hadoop.hbase.wal.fshlogprovider", "org.apache.hadoop.hbase.wal.asyncfswalprovider"})
MULTIWAL = frozenset({"multiwal", "org.apache.hadoop.hbase.wal.regiongroupingprovider"})
BOUNDED = frozenset({"", "bounded", "org.apache.hadoop.hbase.wal.boundedgroupingstrategy"})
MAX_CAUGHT_UP_QUEUE_SIZE = 16  # the run spec's upper bound (numgroups beyond a handful is rare)


def major_version(version: str | None) -> int | None:
    match = re.match(r"\s*(\d+)\.", version or "")
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Groups:
    """One region server's WAL groups: `count` (None: no fixed number) and how it was worked out."""

    count: int | None
    why: str


def wal_groups(conf: Mapping[str, str], major: int | None, sync_peers: Sequence[str] = ()) -> Groups:
    """The WALs a caught-up queue holds on a region server with configuration `conf`, HBase major version
    `major` (None: taken as 2.x or later), beside the synchronous replication peers `sync_peers`."""
    if major is not None and major < 2:
        return Groups(0, f"HBase {major}.x: the shipper takes the WAL it reads out of the queue")
    provider = (conf.get(PROVIDER) or "").strip()
    key = provider.lower()
    if key in ONE_GROUP:
        count, why = 1, f"{PROVIDER}={provider or 'unset (default)'}: 1 WAL group"
    elif key in MULTIWAL:
        strategy = (conf.get(STRATEGY) or "").strip()
        if strategy.lower() not in BOUNDED:
            return Groups(None, f"{PROVIDER}={provider} with {STRATEGY}={strategy}: one WAL group per region or "
                                "namespace, no fixed number")
        raw = (conf.get(NUMGROUPS) or "").strip()
        try:
            count = int(raw) if raw else DEFAULT_NUMGROUPS
        except ValueError:
            return Groups(None, f"{NUMGROUPS}={raw!r} is not a number")
        if count < 1:
            return Groups(None, f"{NUMGROUPS}={raw!r} is not a number of groups")
        why = f"{PROVIDER}={provider}, {NUMGROUPS}={raw or f'unset (default {DEFAULT_NUMGROUPS})'}: {count} WAL groups"
    else:
        return Groups(None, f"{PROVIDER}={provider}: a provider whose WAL groups are not known here")
    if sync_peers and (major is None or major >= 3):
        count += len(sync_peers)
        why += (f", {len(sync_peers)} synchronous replication peer(s) ACTIVE here ({', '.join(sync_peers)}): "
                f"+{len(sync_peers)} (a .syncrep WAL group each)")
    return Groups(count, why)


@dataclass(frozen=True)
class Bound:
    """The largest `caught_up_queue_size` a cluster's WAL layout allows (None: not known), and why."""

    cluster: str
    largest: int | None
    why: str

    def refusal(self, value: int) -> str | None:
        """Why `value` is too large here (one line, no fix), or None."""
        if self.largest is None or value <= self.largest:
            return None
        return (f"caught_up_queue_size {value} is above what {self.cluster}'s WAL layout allows: a caught-up "
                f"replication queue there holds at most {self.largest} WAL(s) ({self.why}); a larger value lets a "
                "queue one WAL behind look drained")


def caught_up_bound(cluster: str, servers: Mapping[str, Groups], unread: Sequence[str] = ()) -> Bound:
    """A cluster's bound from its servers' groups: the smallest known count (one value serves every queue, and
    it must not exceed any server's); None when no server's count is known."""
    known = {s: g for s, g in servers.items() if g.count is not None}
    if not known:
        reasons = [f"{s}: {g.why}" for s, g in sorted(servers.items())] + [f"{s}: /conf unread" for s in unread]
        return Bound(cluster, None, "; ".join(reasons) or "no live region server")
    counts = sorted({g.count for g in known.values()})  # type: ignore[misc]
    server, groups = min(known.items(), key=lambda kv: (kv[1].count, kv[0]))
    why = groups.why if len(counts) == 1 else f"{server}: {groups.why}; the servers differ ({counts})"
    if len(known) < len(servers) + len(unread):
        why += f"; {len(servers) + len(unread) - len(known)} server(s) not known"
    return Bound(cluster, groups.count, why)


SYNC_STATES = {0: "NONE", 1: "ACTIVE", 2: "DOWNGRADE_ACTIVE", 3: "STANDBY"}  # Replication.proto SyncReplicationState


def writes_syncrep(state: str | None, new_state: str | None) -> bool:
    """Whether a sync peer in `state` (transiting to `new_state`; None: not transiting) makes the region servers
    write its tables to a .syncrep WAL group: ACTIVE, or DOWNGRADE_ACTIVE on its way to ACTIVE."""
    new_state = new_state or "NONE"
    return (state, new_state) in (("ACTIVE", "NONE"), ("DOWNGRADE_ACTIVE", "ACTIVE"))


def decode_sync_state(data: bytes | None) -> str | None:
    """A `sync-rep-state` / `new-sync-rep-state` znode (`PBUF` + SyncReplicationState{state = 1}) -> its name; None
    when absent or unreadable."""
    from hbase_migration.clusters import zk

    try:
        payload = zk.strip_metadata(data)
        if not zk.has_pb_magic(payload):
            return None
        values = [v for n, w, v in zk.decode_fields(payload[4:]) if n == 1 and isinstance(v, int)]
    except zk.ZnodeFormatError:
        return None
    return SYNC_STATES.get(values[-1]) if values else "NONE"


def sync_peer_ids(peers: Sequence[Any], states: Mapping[str, tuple[str | None, str | None]] | None = None
                  ) -> tuple[str, ...]:
    """The ids of the synchronous peers (a remote WAL dir in their config) that write a .syncrep WAL group here:
    with `states` (peer id -> (state, new state) read from ZooKeeper), only those `writes_syncrep` says so; a
    sync peer whose state was not read is not counted (the smaller bound is the safe one)."""
    sync = [p.id for p in peers if getattr(p.config, "remote_wal_dir", None)]
    if states is not None:
        sync = [i for i in sync if writes_syncrep(*states.get(i, (None, None)))]
    return tuple(sorted(sync))


def read_bound(cluster: "Cluster", zk_client: Any, peer_id: str | None = None, *, conf: bool = True) -> Bound:
    """The bound from what the cluster shows: its live region servers' versions (`rs/` znodes; a server that wrote
    none is taken as 2.x or later) and `/conf`, and the peers in ZooKeeper. Unknown (largest None) when the facts
    cannot be read, or the peers list does not show `peer_id` (peers kept elsewhere: sync peers not counted).
    `conf=False`: the versions only (enough to tell 1.x's 0 from the rest; the rest is then unknown)."""
    from hbase_migration.clusters import zk
    from hbase_migration.clusters.hbase_conf import read_region_server_confs
    from hbase_migration.replication import zk_peers

    try:
        servers = zk.live_region_servers(zk_client, cluster.znode_parent)
        versions = {s.servername: major_version(s.version) for s in servers}
        if servers and all(v is not None and v < 2 for v in versions.values()):
            return caught_up_bound(cluster.name, {s: wal_groups({}, v) for s, v in versions.items()})
        if not conf:
            return Bound(cluster.name, None, "HBase 2.x or later: the WAL layout was not read")
        peers = zk_peers.read_peers(zk_client, cluster.znode_parent)
        if peer_id is not None and peer_id not in {p.id for p in peers}:
            return Bound(cluster.name, None, f"peer {peer_id} is not in ZooKeeper's peers list: sync peers not "
                                             "counted")
        confs = read_region_server_confs(cluster, zk_client)
    except Exception as e:  # noqa: BLE001 - unknown, said in the bound
        log.info("WAL layout of %s not read: %s", cluster.name, e)
        return Bound(cluster.name, None, f"not read: {type(e).__name__}: {e}")
    sync = sync_peer_ids(peers, {p.id: _sync_states(zk_client, cluster.znode_parent, p.id) for p in peers
                                 if p.config.remote_wal_dir})
    groups = {c.servername: wal_groups(c.properties, versions.get(c.servername), sync)
              for c in confs if c.properties is not None}
    return caught_up_bound(cluster.name, groups, [c.servername for c in confs if c.properties is None])


def _sync_states(zk_client: Any, znode_parent: str, peer_id: str) -> tuple[str | None, str | None]:
    """(state, new state) of a sync peer from its `sync-rep-state` and `new-sync-rep-state` znodes (None: not
    read; an absent new state: not transiting)."""
    from hbase_migration.clusters import zk

    out: list[str | None] = []
    for child in ("sync-rep-state", "new-sync-rep-state"):
        try:
            data, _ = zk_client.get(zk.join(zk.peer_path(znode_parent, peer_id), child))
        except Exception:  # noqa: BLE001 - absent or unreadable: said as None
            out.append(None if child == "sync-rep-state" else "NONE")
            continue
        out.append(decode_sync_state(data))
    return out[0], out[1]
