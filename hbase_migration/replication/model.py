"""Replication peers as the toolkit sees them: configuration, identity, ownership.

`PeerConfig` is canonical on construction (table names without the `default:`
namespace, CF lists sorted and de-duplicated, namespaces sorted), so "is this
the same peer config?" is plain equality. Decisions an HBase operator should
know about:

- Cluster keys compare by `ClusterKey.normalized()`: `ZK1,zk2:2181:/hbase` and
  `zk2:2181,zk1:2181:/hbase` are the same cluster.
- TABLE_CFS compare as sets: `{"t": ["b", "a", "a"]}` == `{"default:t": ["a", "b"]}`;
  an empty CF list means every family of the table and differs from any list.
- `replicate_all` defaults the way the shell sets it: false as soon as
  TABLE_CFS or NAMESPACES is given, true otherwise; true together with
  TABLE_CFS/NAMESPACES is refused (HBase 2 refuses it too).
- The ownership mark (`CONFIG => {"hbase_migration.owner" => ...}`) is NOT
  part of equality: it says who manages a peer, not what it replicates.
  Ownership is checked separately (`is_ours`) and add_peer demands both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from hbase_migration.clusters import zk
from hbase_migration.clusters.cluster import ClusterConfigError, ClusterKey

OWNER_KEY = "hbase_migration.owner"
DEFAULT_OWNER = "hbase_migration"

# No '-' (queue ids are `<peer>-<dead servers>`, HBASE-11394) and no '.' (JMX keys are
# `source.<peer>.<metric>`); 'lock' is the 1.x failover znode under a replicator.
_PEER_ID = re.compile(r"^[A-Za-z0-9_]{1,64}$")
_RESERVED_PEER_IDS = {"lock"}
# The same rule as one JSON-schema pattern (the trigger form checks it as the user types).
PEER_ID_PATTERN = "^(?!lock$)[A-Za-z0-9_]{1,64}$"
# HBase's TableName rules: namespace [A-Za-z0-9_]+, qualifier [A-Za-z0-9_.-]+ not starting with '.' or '-'.
_NAMESPACE = re.compile(r"^[A-Za-z0-9_]+$")
_QUALIFIER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class InvalidPeerConfig(ValueError):
    """A peer id or peer configuration is not acceptable; the message names the field."""


def validate_peer_id(peer_id: Any) -> str:
    """Return the id if HBase-safe, else raise InvalidPeerConfig saying why."""
    if not isinstance(peer_id, str) or not peer_id:
        raise InvalidPeerConfig(f"peer id must be a non-empty string, got {peer_id!r}")
    if "-" in peer_id:
        raise InvalidPeerConfig(
            f"peer id {peer_id!r} contains '-': HBase names recovered queues '<peer>-<dead server>' "
            "and could not tell them apart (HBASE-11394)")
    if peer_id in _RESERVED_PEER_IDS:
        raise InvalidPeerConfig(f"peer id {peer_id!r} is reserved by HBase (replication queue lock znode)")
    if not _PEER_ID.match(peer_id):
        raise InvalidPeerConfig(
            f"peer id {peer_id!r} must be 1-64 characters of A-Z, a-z, 0-9 and '_' "
            "(a '.' would break the source.<peer>.<metric> JMX keys)")
    return peer_id


def normalize_table(name: Any) -> str:
    """`default:t` -> `t`; `ns:t` stays; invalid names raise InvalidPeerConfig."""
    if not isinstance(name, str) or not name:
        raise InvalidPeerConfig(f"table name must be a non-empty string, got {name!r}")
    namespace, sep, qualifier = name.rpartition(":")
    if not sep:
        namespace = "default"
    if not _NAMESPACE.match(namespace) or not _QUALIFIER.match(qualifier):
        raise InvalidPeerConfig(
            f"table name {name!r} is not a valid HBase table name ('[namespace:]qualifier', namespace "
            "A-Za-z0-9_, qualifier A-Za-z0-9_.- not starting with '.' or '-')")
    return qualifier if namespace == "default" else f"{namespace}:{qualifier}"


def _family(table: str, family: Any) -> str:
    if not isinstance(family, str) or not family or ":" in family or family.startswith("."):
        raise InvalidPeerConfig(
            f"column family {family!r} of table {table!r} must be a non-empty name without ':' "
            "that does not start with '.'")
    return family


def _canonical_table_cfs(value: Any, what: str) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidPeerConfig(f"{what} must be a mapping of table -> list of families, got {value!r}")
    out: dict[str, set[str]] = {}
    for table, families in value.items():
        name = normalize_table(table)
        if families is None:
            families = []
        if isinstance(families, str) or not isinstance(families, Iterable):
            raise InvalidPeerConfig(
                f"{what}[{table!r}] must be a list of column families ([] = all), got {families!r}")
        cfs = {_family(name, f) for f in families}
        if name in out and (not out[name]) != (not cfs):
            raise InvalidPeerConfig(f"{what} names table {name!r} twice, once with all families")
        out.setdefault(name, set()).update(cfs)
    return {t: sorted(out[t]) for t in sorted(out)}


def _canonical_names(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidPeerConfig(f"{what} must be a list of names, got {value!r}")
    names = set()
    for item in value:
        if not isinstance(item, str) or not _NAMESPACE.match(item):
            raise InvalidPeerConfig(f"{what} entry {item!r} is not a valid namespace name (A-Za-z0-9_)")
        names.add(item)
    return sorted(names)


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidPeerConfig(f"{what} must be a mapping of string -> string, got {value!r}")
    for k, v in value.items():
        if not isinstance(k, str) or not k or not isinstance(v, str):
            raise InvalidPeerConfig(f"{what} entry {k!r} => {v!r} must map a non-empty string to a string")
    return {k: value[k] for k in sorted(value)}


@dataclass(frozen=True, eq=False)
class PeerConfig:
    """What a replication peer replicates, and where to. Canonical once built.

    `table_cfs` maps table -> families (`[]` = all families); `data` and
    `configuration` are the peer's string maps (the owner mark lives in
    `configuration`). `endpoint_class`, the exclude lists and `remote_wal_dir`
    are read from existing peers so that foreign configs compare faithfully.
    """

    cluster_key: ClusterKey
    table_cfs: dict[str, list[str]] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    replicate_all: bool | None = None
    bandwidth: int = 0
    serial: bool = False
    data: dict[str, str] = field(default_factory=dict)
    configuration: dict[str, str] = field(default_factory=dict)
    endpoint_class: str | None = None
    exclude_table_cfs: dict[str, list[str]] = field(default_factory=dict)
    exclude_namespaces: list[str] = field(default_factory=list)
    remote_wal_dir: str | None = None

    def __post_init__(self) -> None:
        key = self.cluster_key
        if isinstance(key, str):
            try:
                key = ClusterKey.parse(key)
            except ClusterConfigError as exc:
                raise InvalidPeerConfig(f"cluster_key: {exc}") from None
        if not isinstance(key, ClusterKey):
            raise InvalidPeerConfig(f"cluster_key must be a ClusterKey or 'quorum:port:/parent', got {key!r}")
        set_ = object.__setattr__
        set_(self, "cluster_key", key)
        set_(self, "table_cfs", _canonical_table_cfs(self.table_cfs, "table_cfs"))
        set_(self, "namespaces", _canonical_names(self.namespaces, "namespaces"))
        set_(self, "exclude_table_cfs", _canonical_table_cfs(self.exclude_table_cfs, "exclude_table_cfs"))
        set_(self, "exclude_namespaces", _canonical_names(self.exclude_namespaces, "exclude_namespaces"))
        set_(self, "data", _string_map(self.data, "data"))
        set_(self, "configuration", _string_map(self.configuration, "configuration"))
        scoped = bool(self.table_cfs or self.namespaces)
        if self.replicate_all is None:
            set_(self, "replicate_all", not scoped)
        elif not isinstance(self.replicate_all, bool):
            raise InvalidPeerConfig(f"replicate_all must be true or false, got {self.replicate_all!r}")
        if self.replicate_all and scoped:
            raise InvalidPeerConfig(
                "replicate_all=true cannot be combined with table_cfs or namespaces (HBase refuses it): "
                "leave replicate_all unset to scope the peer to the given tables")
        if not self.replicate_all and (self.exclude_table_cfs or self.exclude_namespaces):
            raise InvalidPeerConfig("exclude_table_cfs/exclude_namespaces only apply when replicate_all=true")
        if isinstance(self.bandwidth, bool) or not isinstance(self.bandwidth, int) or self.bandwidth < 0:
            raise InvalidPeerConfig(f"bandwidth must be a non-negative integer (bytes/s, 0 = unlimited), "
                                    f"got {self.bandwidth!r}")
        if not isinstance(self.serial, bool):
            raise InvalidPeerConfig(f"serial must be true or false, got {self.serial!r}")
        for name in ("endpoint_class", "remote_wal_dir"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidPeerConfig(f"{name} must be a non-empty string or None, got {value!r}")

    # -- identity ------------------------------------------------------------------------------

    def _comparable(self) -> tuple:
        config = {k: v for k, v in self.configuration.items() if k != OWNER_KEY}
        return (
            str(self.cluster_key.normalized()), self.table_cfs, self.namespaces, self.replicate_all,
            self.bandwidth, self.serial, self.data, config, self.endpoint_class,
            self.exclude_table_cfs, self.exclude_namespaces, self.remote_wal_dir,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PeerConfig):
            return NotImplemented
        return self._comparable() == other._comparable()

    def __hash__(self) -> int:
        return hash(repr(self._comparable()))

    def differences(self, other: "PeerConfig") -> list[str]:
        """Human lines naming each field that differs (owner mark excluded), `field: self != other`."""
        names = ("cluster_key", "table_cfs", "namespaces", "replicate_all", "bandwidth", "serial", "data",
                 "configuration", "endpoint_class", "exclude_table_cfs", "exclude_namespaces",
                 "remote_wal_dir")
        pairs = zip(names, self._comparable(), other._comparable())
        return [f"{name}: {a!r} != {b!r}" for name, a, b in pairs if a != b]

    # -- ownership -----------------------------------------------------------------------------

    @property
    def owner(self) -> str | None:
        return self.configuration.get(OWNER_KEY)

    def with_owner(self, owner: str) -> "PeerConfig":
        """This config carrying the ownership mark `owner`."""
        if not isinstance(owner, str) or not owner.strip():
            raise InvalidPeerConfig(f"owner must be a non-empty string, got {owner!r}")
        return self.replace(configuration={**self.configuration, OWNER_KEY: owner})

    def replace(self, **changes: Any) -> "PeerConfig":
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values.update(changes)
        if ("table_cfs" in changes or "namespaces" in changes) and "replicate_all" not in changes:
            values["replicate_all"] = None  # re-derive, as the shell does when TABLE_CFS changes
        return PeerConfig(**values)

    def describe(self) -> dict[str, Any]:
        """JSON-friendly view for results, logs and error messages."""
        return {
            "cluster_key": str(self.cluster_key), "table_cfs": self.table_cfs, "namespaces": self.namespaces,
            "replicate_all": self.replicate_all, "bandwidth": self.bandwidth, "serial": self.serial,
            "data": self.data, "configuration": self.configuration, "endpoint_class": self.endpoint_class,
            "exclude_table_cfs": self.exclude_table_cfs, "exclude_namespaces": self.exclude_namespaces,
            "remote_wal_dir": self.remote_wal_dir,
        }

    # -- ZooKeeper form ------------------------------------------------------------------------

    def to_replication_peer(self) -> zk.ReplicationPeer:
        return zk.ReplicationPeer(
            clusterkey=str(self.cluster_key),
            replication_endpoint_impl=self.endpoint_class,
            data=tuple((k.encode("utf-8", "surrogateescape"), v.encode("utf-8", "surrogateescape"))
                       for k, v in self.data.items()),
            configuration=tuple(self.configuration.items()),
            table_cfs=_to_table_cfs(self.table_cfs),
            namespaces=tuple(self.namespaces),
            bandwidth=self.bandwidth,
            replicate_all=bool(self.replicate_all),
            exclude_table_cfs=_to_table_cfs(self.exclude_table_cfs),
            exclude_namespaces=tuple(self.exclude_namespaces),
            serial=self.serial,
            remote_wal_dir=self.remote_wal_dir,
        )

    @classmethod
    def from_replication_peer(cls, peer: zk.ReplicationPeer) -> "PeerConfig":
        """From a decoded peer znode.

        A peer written by HBase 1.x/2.0 carries no `replicate_all`, which reads
        as true; with table-CFs or namespaces present it means false (what
        HBase 2's peer-config upgrader concludes), so it is taken as such.
        """
        scoped = bool(peer.table_cfs or peer.namespaces)
        replicate_all = peer.replicate_all and not scoped
        return cls(
            cluster_key=peer.clusterkey,
            table_cfs=_from_table_cfs(peer.table_cfs),
            namespaces=list(peer.namespaces),
            replicate_all=replicate_all,
            bandwidth=peer.bandwidth,
            serial=peer.serial,
            data={k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape")
                  for k, v in peer.data},
            configuration=dict(peer.configuration),
            endpoint_class=peer.replication_endpoint_impl or None,
            exclude_table_cfs=_from_table_cfs(peer.exclude_table_cfs) if replicate_all else {},
            exclude_namespaces=list(peer.exclude_namespaces) if replicate_all else [],
            remote_wal_dir=peer.remote_wal_dir,
        )


def _to_table_cfs(table_cfs: Mapping[str, list[str]]) -> tuple[zk.TableCF, ...]:
    out = []
    for table, families in table_cfs.items():
        namespace, _, qualifier = table.rpartition(":")
        out.append(zk.TableCF(namespace or "default", qualifier, tuple(families)))
    return tuple(out)


def _from_table_cfs(cfs: Iterable[zk.TableCF]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for cf in cfs:
        out.setdefault(cf.table, []).extend(cf.families)
    return out


def table_cfs_to_string(table_cfs: Mapping[str, list[str]]) -> str:
    """ReplicationPeerConfigUtil.convertToString: `t1;ns.t2:cf1,cf2` (the 1.x `tableCFs` znode form)."""
    parts = []
    for table, families in table_cfs.items():
        namespace, _, qualifier = normalize_table(table).rpartition(":")
        name = f"{namespace}.{qualifier}" if namespace else qualifier
        parts.append(f"{name}:{','.join(families)}" if families else name)
    return ";".join(parts)


def parse_table_cfs_string(text: str) -> dict[str, list[str]]:
    """The 1.x `tableCFs` string (`table1; ns.table2:cf1,cf3`) as a table_cfs mapping.

    Malformed entries raise (HBase logs and skips them; a migration must not
    silently replicate less than asked).
    """
    out: dict[str, list[str]] = {}
    for entry in (e.strip() for e in text.split(";")):
        if not entry:
            continue
        pair = entry.split(":")
        if len(pair) > 2 or not pair[0].strip():
            raise InvalidPeerConfig(f"tableCFs entry {entry!r} is not 'table[:cf1,cf2]'")
        table = pair[0].strip()
        dotted = table.split(".")
        if len(dotted) == 2:
            table = f"{dotted[0]}:{dotted[1]}"
        families = [f.strip() for f in pair[1].split(",") if f.strip()] if len(pair) == 2 else []
        out.setdefault(normalize_table(table), []).extend(families)
    return _canonical_table_cfs(out, "tableCFs")


@dataclass(frozen=True)
class Peer:
    """A replication peer as found: id, config and state (None when peer-state is missing)."""

    id: str
    config: PeerConfig
    enabled: bool | None

    @property
    def state(self) -> str:
        return {True: "ENABLED", False: "DISABLED", None: "MISSING"}[self.enabled]

    @property
    def owner(self) -> str | None:
        return self.config.owner

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "owner": self.owner, "config": self.config.describe()}


# HBase 2.x's own peer for region replicas: with hbase.region.replica.replication.enabled=true, the master adds it
# when a table with REGION_REPLICATION > 1 is created (ServerRegionReplicaUtil), endpoint
# RegionReplicaReplicationEndpoint. It ships a table's edits to its secondary replicas, not to another cluster.
REGION_REPLICA_PEER = "region_replica_replication"
REGION_REPLICA_ENDPOINT = "org.apache.hadoop.hbase.replication.regionserver.RegionReplicaReplicationEndpoint"


def is_internal(peer: Peer | str) -> bool:
    """HBase's own peer (region replicas): the toolkit never touches it, and it is nobody's migration backlog."""
    if isinstance(peer, str):
        return peer == REGION_REPLICA_PEER
    return peer.id == REGION_REPLICA_PEER or (peer.config.endpoint_class or "") == REGION_REPLICA_ENDPOINT


def is_ours(peer: Peer | PeerConfig | None, owner: str | None = None) -> bool:
    """Whether the toolkit created this peer: it carries the owner mark (equal to `owner` when given)."""
    if peer is None:
        return False
    mark = peer.owner
    return mark is not None and (owner is None or mark == owner)
