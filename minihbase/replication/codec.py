"""Replication znode payloads, byte for byte as HBase writes them (reference §1.2-§1.4), and their readers.

- `replication/peers/<id>`: PBUF + `ReplicationPeer` (bandwidth, replicate_all and serial always written);
- `.../peer-state`: PBUF + `ReplicationState` (ENABLED = `PBUF 08 00`, DISABLED = `PBUF 08 01`);
- `replication/rs/<server>/<queue>/<wal>`: empty (position 0) or PBUF + `ReplicationHLogPosition`;
- `replication/rs/<server>/lock`: PBUF + `ReplicationLock{lock_owner}` (1.x failover lock).

Readers accept payloads with or without the ZKMetadata header (`FF` + id + salt), as HBase's do.
Written independently of the toolkit's codec: this is the other side of the wire.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from minihbase.znodes import PB_MAGIC, _varint, pb_bytes, pb_varint

ENABLED_BYTES = PB_MAGIC + b"\x08\x00"
DISABLED_BYTES = PB_MAGIC + b"\x08\x01"


class CodecError(ValueError):
    """A znode payload is not what HBase writes."""


def strip_metadata(data: bytes) -> bytes:
    """`ZKMetadata.removeMetaData`: drop the `FF <len> <id+salt>` header when present."""
    if data and data[0] == 0xFF and len(data) >= 5:
        length = int.from_bytes(data[1:5], "big")
        return data[5 + length:]
    return data


# ---------------------------------------------------------------------------------------------- protobuf
def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise CodecError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise CodecError("varint too long")


def iter_fields(buf: bytes):
    """(field number, wire type, value) of a protobuf message; value is an int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            if pos + length > len(buf):
                raise CodecError(f"field {number}: truncated length-delimited value")
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise CodecError(f"field {number}: unsupported wire type {wire}")
        yield number, wire, value


def _pb_payload(data: bytes, what: str) -> bytes:
    data = strip_metadata(data)
    if not data.startswith(PB_MAGIC):
        raise CodecError(f"{what}: missing PBUF magic")
    return data[len(PB_MAGIC):]


# ---------------------------------------------------------------------------------------------- table names
def split_table(name: str) -> tuple[str, str]:
    """`ns:t` -> (ns, t); `t` -> ("default", t)."""
    ns, sep, qualifier = name.partition(":")
    return (ns, qualifier) if sep else ("default", name)


def table_text(namespace: str, qualifier: str) -> str:
    return qualifier if namespace == "default" else f"{namespace}:{qualifier}"


# ---------------------------------------------------------------------------------------------- peer config
@dataclass
class PeerConfig:
    """HBase's ReplicationPeerConfig. Table names are `ns:t` or `t` (default namespace); in a table-CFs map
    an empty family list means every family. Insertion order of maps is kept (it is the znode's order)."""

    cluster_key: str = ""
    endpoint_impl: str | None = None
    data: dict[bytes, bytes] = field(default_factory=dict)
    configuration: dict[str, str] = field(default_factory=dict)
    table_cfs: dict[str, list[str]] | None = None
    namespaces: list[str] | None = None
    bandwidth: int = 0
    replicate_all: bool = True
    exclude_table_cfs: dict[str, list[str]] | None = None
    exclude_namespaces: list[str] | None = None
    serial: bool = False

    # -- what it replicates (NamespaceTableCfWALEntryFilter / ReplicationPeerConfig.needToReplicate)
    def replicates(self, table: str, family: str) -> bool:
        namespace = split_table(table)[0]
        if namespace == "hbase":
            return False  # system tables never replicate
        table = table_text(*split_table(table))
        if self.replicate_all:
            if self.exclude_namespaces and namespace in self.exclude_namespaces:
                return False
            excluded = (self.exclude_table_cfs or {}).get(table)
            if excluded is None:
                return True
            return bool(excluded) and family not in excluded
        if self.namespaces and namespace in self.namespaces:
            return True
        cfs = (self.table_cfs or {}).get(table)
        if cfs is None:
            return False
        return not cfs or family in cfs

    def replicates_table(self, table: str) -> bool:
        """Whether any family of `table` may replicate (the peer-level table check)."""
        namespace = split_table(table)[0]
        if namespace == "hbase":
            return False
        table = table_text(*split_table(table))
        if self.replicate_all:
            if self.exclude_namespaces and namespace in self.exclude_namespaces:
                return False
            excluded = (self.exclude_table_cfs or {}).get(table)
            return excluded is None or bool(excluded)
        if self.namespaces and namespace in self.namespaces:
            return True
        return table in (self.table_cfs or {})


def _table_cf(table: str, families: list[str]) -> bytes:
    ns, qualifier = split_table(table)
    out = pb_bytes(1, pb_bytes(1, ns) + pb_bytes(2, qualifier))
    for f in families:
        out += pb_bytes(2, f)
    return out


def encode_peer(config: PeerConfig) -> bytes:
    """`ReplicationPeerConfigUtil.toByteArray`: PBUF + ReplicationPeer (2.1+ field set)."""
    out = bytearray(PB_MAGIC)
    if config.cluster_key is not None:
        out += pb_bytes(1, config.cluster_key)
    if config.endpoint_impl is not None:
        out += pb_bytes(2, config.endpoint_impl)
    for k, v in config.data.items():
        out += pb_bytes(3, pb_bytes(1, k) + pb_bytes(2, v))
    for k, v in config.configuration.items():
        out += pb_bytes(4, pb_bytes(1, k) + pb_bytes(2, v))
    for table, families in (config.table_cfs or {}).items():
        out += pb_bytes(5, _table_cf(table, families))
    for ns in config.namespaces or ():
        out += pb_bytes(6, ns)
    out += pb_varint(7, config.bandwidth) + pb_varint(8, int(config.replicate_all))
    for table, families in (config.exclude_table_cfs or {}).items():
        out += pb_bytes(9, _table_cf(table, families))
    for ns in config.exclude_namespaces or ():
        out += pb_bytes(10, ns)
    out += pb_varint(11, int(config.serial))
    return bytes(out)


def _decode_table_cf(buf: bytes) -> tuple[str, list[str]]:
    ns = qualifier = None
    families = []
    for number, _, value in iter_fields(buf):
        if number == 1:
            for n, _, v in iter_fields(value):
                if n == 1:
                    ns = v.decode()
                elif n == 2:
                    qualifier = v.decode()
        elif number == 2:
            families.append(value.decode())
    if ns is None or qualifier is None:
        raise CodecError("TableCF without a complete table_name")
    return table_text(ns, qualifier), families


def _signed64(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def decode_peer(data: bytes) -> PeerConfig:
    """`ReplicationPeerConfigUtil.parsePeerFrom` (2.x): PBUF message, or a legacy bare cluster key."""
    raw = strip_metadata(data)
    if not raw.startswith(PB_MAGIC):
        if not raw:
            raise CodecError("Bytes to deserialize should not be empty.")
        return PeerConfig(cluster_key=raw.decode())
    config = PeerConfig(cluster_key="")
    table_cfs: dict[str, list[str]] = {}
    exclude: dict[str, list[str]] = {}
    namespaces: list[str] = []
    exclude_ns: list[str] = []
    for number, _, value in iter_fields(raw[len(PB_MAGIC):]):
        if number == 1:
            config.cluster_key = value.decode()
        elif number == 2:
            config.endpoint_impl = value.decode()
        elif number in (3, 4):
            pair = {n: v for n, _, v in iter_fields(value)}
            if number == 3:
                config.data[pair.get(1, b"")] = pair.get(2, b"")
            else:
                config.configuration[pair.get(1, b"").decode()] = pair.get(2, b"").decode()
        elif number in (5, 9):
            table, families = _decode_table_cf(value)
            (table_cfs if number == 5 else exclude).setdefault(table, []).extend(families)
        elif number == 6:
            namespaces.append(value.decode())
        elif number == 10:
            exclude_ns.append(value.decode())
        elif number == 7:
            config.bandwidth = _signed64(value)
        elif number == 8:
            config.replicate_all = bool(value)
        elif number == 11:
            config.serial = bool(value)
    config.table_cfs = table_cfs or None
    config.exclude_table_cfs = exclude or None
    config.namespaces = namespaces or None
    config.exclude_namespaces = exclude_ns or None
    return config


def peer_enabled(data: bytes) -> bool:
    """`ZKReplicationPeerStorage.isPeerEnabled`: byte-for-byte ENABLED after metadata stripping."""
    return strip_metadata(data) == ENABLED_BYTES


def state_bytes(enabled: bool) -> bytes:
    return ENABLED_BYTES if enabled else DISABLED_BYTES


# ---------------------------------------------------------------------------------------------- queues
def encode_position(position: int) -> bytes:
    """`ZKUtil.positionToByteArray`: PBUF + ReplicationHLogPosition{position = 1}."""
    return PB_MAGIC + b"\x08" + _varint(position)


def decode_position(data: bytes | None) -> int:
    """`ZKUtil.parseWALPositionFrom`: PBUF message, a legacy 8-byte long, or empty = 0."""
    if data is None:
        raise CodecError("null WAL position")
    raw = strip_metadata(data)
    if raw.startswith(PB_MAGIC):
        for number, wire, value in iter_fields(raw[len(PB_MAGIC):]):
            if number == 1 and wire == 0:
                return _signed64(value)
        return 0
    if raw:
        return int.from_bytes(raw[:8], "big", signed=True)
    return 0


def encode_lock(owner: str) -> bytes:
    """1.x `ReplicationLock{required string lock_owner = 1}` with the PBUF magic."""
    return PB_MAGIC + pb_bytes(1, owner)


def decode_lock(data: bytes) -> str | None:
    try:
        for number, _, value in iter_fields(_pb_payload(data, "lock")):
            if number == 1:
                return value.decode()
    except CodecError:
        return None
    return None


@dataclass(frozen=True)
class QueueId:
    """`ReplicationQueueInfo`: `<peer>` or `<peer>-<dead server>[-<dead server>...]`."""

    queue_id: str
    peer_id: str
    dead_servers: tuple[str, ...]

    @property
    def recovered(self) -> bool:
        return bool(self.dead_servers)


def parse_queue_id(queue_id: str) -> QueueId:
    peer, sep, rest = queue_id.partition("-")
    if not sep:
        return QueueId(queue_id, peer, ())
    # Server names (host,port,startcode) are joined by '-', but host names may hold '-' too: a '-' ends a
    # server name only once that name has its two commas (as HBase's extractDeadServersFromZNodeString).
    servers = []
    current = []
    commas = 0
    for ch in rest:
        if ch == "-" and commas >= 2:
            servers.append("".join(current))
            current, commas = [], 0
            continue
        if ch == ",":
            commas += 1
        current.append(ch)
    if current:
        servers.append("".join(current))
    return QueueId(queue_id, peer, tuple(servers))
