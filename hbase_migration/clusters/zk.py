"""ZooKeeper access and HBase's znode byte formats (HBase's `ZKMetadata`, `ProtobufUtil`, the replication
znodes of `ZKReplicationPeerStorage` and `ZKReplicationQueueStorage`).

HBase wraps every non-empty znode payload in a ZKMetadata header
(`FF | int32 idLength | id | 8-byte salt | payload`) and most payloads are
`PBUF` + a protobuf message. The codecs below are pure functions over bytes,
written against the field numbers of HBase's .proto files with a small
protobuf wire-format reader/writer of our own: the toolkit needs five tiny
messages, not the protobuf runtime, and the exact bytes are unit-tested.

The I/O helpers take a started `KazooClient` so the caller owns the session
(and its chroot); `connect()` opens one with an error that names the quorum.
"""
from __future__ import annotations

import contextlib
import enum
import logging
import os
import re
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # kazoo is imported lazily: importing this module opens nothing
    from kazoo.client import KazooClient

    from hbase_migration.clusters.cluster import Cluster, ClusterKey

log = logging.getLogger(__name__)


class ZnodeFormatError(ValueError):
    """A znode's bytes are not what HBase would have written there."""


class ZnodeMissing(LookupError):
    """A znode HBase always creates is absent (usually a wrong znode parent)."""


# --------------------------------------------------------------------------------------------------
# Protobuf wire format (only what HBase's znode messages use: varint and length-delimited fields)

WIRE_VARINT, WIRE_FIXED64, WIRE_LEN, WIRE_FIXED32 = 0, 1, 2, 5
_U64 = (1 << 64) - 1


def encode_varint(value: int) -> bytes:
    """Base-128 varint; negative numbers as protobuf writes int64 (10 bytes, two's complement)."""
    if value < 0:
        if value < -(1 << 63):
            raise ValueError(f"varint {value} does not fit in int64")
        value &= _U64
    elif value > _U64:
        raise ValueError(f"varint {value} does not fit in 64 bits")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """(unsigned value, position after it). Raises ZnodeFormatError on truncation or >10 bytes."""
    result = shift = 0
    for i in range(pos, min(len(data), pos + 10)):
        byte = data[i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _U64, i + 1
        shift += 7
    raise ZnodeFormatError(f"truncated or overlong varint at byte {pos}")


def as_int64(value: int) -> int:
    """An unsigned varint read back as a signed int64."""
    return value - (1 << 64) if value >= 1 << 63 else value


def pb_varint(field_no: int, value: int) -> bytes:
    return encode_varint(field_no << 3 | WIRE_VARINT) + encode_varint(value)


def pb_bytes(field_no: int, value: bytes | str) -> bytes:
    raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return encode_varint(field_no << 3 | WIRE_LEN) + encode_varint(len(raw)) + raw


def decode_fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """Every field of one message, in wire order: (field number, wire type, int or bytes).

    Unknown field numbers are returned too (callers ignore them), so a newer
    HBase's additions never break the reader; fixed32/64 come back as raw bytes.
    """
    fields: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = decode_varint(data, pos)
        field_no, wire = key >> 3, key & 7
        if field_no == 0:
            raise ZnodeFormatError(f"protobuf field number 0 at byte {pos}")
        if wire == WIRE_VARINT:
            value, pos = decode_varint(data, pos)
            fields.append((field_no, wire, value))
        elif wire == WIRE_LEN:
            length, pos = decode_varint(data, pos)
            if pos + length > len(data):
                raise ZnodeFormatError(f"field {field_no} claims {length} bytes, only {len(data) - pos} left")
            fields.append((field_no, wire, bytes(data[pos:pos + length])))
            pos += length
        elif wire in (WIRE_FIXED64, WIRE_FIXED32):
            size = 8 if wire == WIRE_FIXED64 else 4
            if pos + size > len(data):
                raise ZnodeFormatError(f"field {field_no} truncated")
            fields.append((field_no, wire, bytes(data[pos:pos + size])))
            pos += size
        else:
            raise ZnodeFormatError(f"unsupported protobuf wire type {wire} for field {field_no}")
    return fields


def _expect(field_no: int, wire: int, value: int | bytes, want_wire: int, message: str):
    if wire != want_wire:
        raise ZnodeFormatError(f"{message}: field {field_no} has wire type {wire}, expected {want_wire}")
    return value


def _text(value: bytes, what: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ZnodeFormatError(f"{what} is not UTF-8: {value!r}") from None


# --------------------------------------------------------------------------------------------------
# Framing: ZKMetadata header (§0.1) and the PBUF magic (§0.2)

METADATA_MAGIC = 0xFF
PB_MAGIC = b"PBUF"


def default_metadata_id() -> str:
    """What RecoverableZooKeeper uses as its identifier: the JVM's `pid@host`."""
    return f"{os.getpid()}@{socket.gethostname()}"


def add_metadata(payload: bytes, identifier: str | None = None, salt: bytes | None = None) -> bytes:
    """Wrap a payload as RecoverableZooKeeper does; empty payloads are never wrapped."""
    if not payload:
        return b""
    ident = (identifier if identifier is not None else default_metadata_id()).encode("utf-8")
    salt = os.urandom(8) if salt is None else salt
    if len(salt) != 8:
        raise ValueError(f"ZKMetadata salt must be 8 bytes, got {len(salt)}")
    return bytes([METADATA_MAGIC]) + (len(ident) + 8).to_bytes(4, "big") + ident + salt + payload


def strip_metadata(data: bytes | None) -> bytes:
    """ZKMetadata.removeMetaData: strip the header only when data[0] == 0xFF."""
    if not data:
        return b""
    if data[0] != METADATA_MAGIC:
        return bytes(data)
    if len(data) < 5:
        raise ZnodeFormatError(f"ZKMetadata header truncated: {len(data)} bytes")
    id_length = int.from_bytes(data[1:5], "big", signed=True)
    if id_length < 0 or 5 + id_length > len(data):
        raise ZnodeFormatError(f"ZKMetadata id length {id_length} does not fit in {len(data)} bytes")
    return bytes(data[5 + id_length:])


def has_pb_magic(payload: bytes) -> bool:
    return payload[:4] == PB_MAGIC


def _pb_body(data: bytes, what: str) -> bytes:
    payload = strip_metadata(data)
    if not has_pb_magic(payload):
        raise ZnodeFormatError(f"{what}: expected the PBUF magic, got {payload[:8]!r}")
    return payload[4:]


# --------------------------------------------------------------------------------------------------
# ReplicationPeer (§1.2)

@dataclass(frozen=True)
class TableCF:
    """One `TableCF`: a table (namespace, qualifier) and its families; no families = all of them."""

    namespace: str
    qualifier: str
    families: tuple[str, ...] = ()

    @property
    def table(self) -> str:
        """The name HBase prints: `ns:t`, or just `t` in the default namespace."""
        return self.qualifier if self.namespace == "default" else f"{self.namespace}:{self.qualifier}"


@dataclass(frozen=True)
class ReplicationPeer:
    """`hbase.pb.ReplicationPeer`, fields 1..12, as stored in `replication/peers/<id>`."""

    clusterkey: str = ""
    replication_endpoint_impl: str | None = None
    data: tuple[tuple[bytes, bytes], ...] = ()
    configuration: tuple[tuple[str, str], ...] = ()
    table_cfs: tuple[TableCF, ...] = ()
    namespaces: tuple[str, ...] = ()
    bandwidth: int = 0
    replicate_all: bool = True
    exclude_table_cfs: tuple[TableCF, ...] = ()
    exclude_namespaces: tuple[str, ...] = ()
    serial: bool = False
    remote_wal_dir: str | None = None
    legacy: bool = field(default=False, compare=False)  # read from a pre-PB raw cluster key


def _encode_table_cf(cf: TableCF) -> bytes:
    table = pb_bytes(1, cf.namespace) + pb_bytes(2, cf.qualifier)
    return pb_bytes(1, table) + b"".join(pb_bytes(2, f) for f in cf.families)


def _decode_table_cf(body: bytes) -> TableCF:
    namespace = qualifier = None
    families: list[str] = []
    for no, wire, value in decode_fields(body):
        if no == 1:
            for tno, twire, tvalue in decode_fields(_expect(no, wire, value, WIRE_LEN, "TableCF")):
                if tno == 1:
                    namespace = _text(_expect(tno, twire, tvalue, WIRE_LEN, "TableName"), "namespace")
                elif tno == 2:
                    qualifier = _text(_expect(tno, twire, tvalue, WIRE_LEN, "TableName"), "qualifier")
        elif no == 2:
            families.append(_text(_expect(no, wire, value, WIRE_LEN, "TableCF"), "family"))
    if namespace is None or qualifier is None:
        raise ZnodeFormatError("TableCF without a complete table_name (namespace and qualifier are required)")
    return TableCF(namespace, qualifier, tuple(families))


def encode_replication_peer(peer: ReplicationPeer) -> bytes:
    """`PBUF` + ReplicationPeer, field order and presence as HBase 2.1+'s `convert()` writes them.

    bandwidth, replicate_all and serial are always written, even at their defaults.
    """
    out = bytearray(PB_MAGIC)
    if peer.clusterkey:
        out += pb_bytes(1, peer.clusterkey)
    if peer.replication_endpoint_impl is not None:
        out += pb_bytes(2, peer.replication_endpoint_impl)
    for first, second in peer.data:
        out += pb_bytes(3, pb_bytes(1, first) + pb_bytes(2, second))
    for name, value in peer.configuration:
        out += pb_bytes(4, pb_bytes(1, name) + pb_bytes(2, value))
    for cf in peer.table_cfs:
        out += pb_bytes(5, _encode_table_cf(cf))
    for ns in peer.namespaces:
        out += pb_bytes(6, ns)
    out += pb_varint(7, peer.bandwidth)
    out += pb_varint(8, int(peer.replicate_all))
    for cf in peer.exclude_table_cfs:
        out += pb_bytes(9, _encode_table_cf(cf))
    for ns in peer.exclude_namespaces:
        out += pb_bytes(10, ns)
    out += pb_varint(11, int(peer.serial))
    if peer.remote_wal_dir is not None:
        out += pb_bytes(12, peer.remote_wal_dir)
    return bytes(out)


def _pair(body: bytes, what: str) -> tuple[bytes, bytes]:
    first = second = b""
    for no, wire, value in decode_fields(body):
        if no in (1, 2):
            value = _expect(no, wire, value, WIRE_LEN, what)
            first, second = (value, second) if no == 1 else (first, value)
    return first, second


def decode_replication_peer(data: bytes) -> ReplicationPeer:
    """Parse a peer znode (with or without the ZKMetadata header).

    Without the PBUF magic the payload is a legacy raw cluster key (as 2.x's
    `parsePeerFrom`), which must not be empty. Fields absent on the wire take
    protobuf's defaults (so a 1.x/2.0 peer without `replicate_all` reads true,
    as the 2.x Java reader's `hasReplicateAll()` fallback does).
    """
    payload = strip_metadata(data)
    if not payload:
        raise ZnodeFormatError("peer znode is empty: expected PBUF ReplicationPeer or a cluster key")
    if not has_pb_magic(payload):
        return ReplicationPeer(clusterkey=_text(payload, "legacy cluster key"), legacy=True)
    values: dict[str, object] = {}
    lists: dict[int, list] = {3: [], 4: [], 5: [], 6: [], 9: [], 10: []}
    for no, wire, value in decode_fields(payload[4:]):
        if no == 1:
            values["clusterkey"] = _text(_expect(no, wire, value, WIRE_LEN, "ReplicationPeer"), "clusterkey")
        elif no == 2:
            values["replication_endpoint_impl"] = _text(
                _expect(no, wire, value, WIRE_LEN, "ReplicationPeer"), "replicationEndpointImpl")
        elif no == 3:
            lists[3].append(_pair(_expect(no, wire, value, WIRE_LEN, "ReplicationPeer"), "BytesBytesPair"))
        elif no == 4:
            name, val = _pair(_expect(no, wire, value, WIRE_LEN, "ReplicationPeer"), "NameStringPair")
            lists[4].append((_text(name, "configuration name"), _text(val, "configuration value")))
        elif no in (5, 9):
            lists[no].append(_decode_table_cf(_expect(no, wire, value, WIRE_LEN, "ReplicationPeer")))
        elif no in (6, 10):
            lists[no].append(_text(_expect(no, wire, value, WIRE_LEN, "ReplicationPeer"), "namespace"))
        elif no == 7:
            values["bandwidth"] = as_int64(_expect(no, wire, value, WIRE_VARINT, "ReplicationPeer"))
        elif no == 8:
            values["replicate_all"] = bool(_expect(no, wire, value, WIRE_VARINT, "ReplicationPeer"))
        elif no == 11:
            values["serial"] = bool(_expect(no, wire, value, WIRE_VARINT, "ReplicationPeer"))
        elif no == 12:
            values["remote_wal_dir"] = _text(
                _expect(no, wire, value, WIRE_LEN, "ReplicationPeer"), "remoteWALDir")
    return ReplicationPeer(
        data=tuple(lists[3]), configuration=tuple(lists[4]), table_cfs=tuple(lists[5]),
        namespaces=tuple(lists[6]), exclude_table_cfs=tuple(lists[9]), exclude_namespaces=tuple(lists[10]),
        **values,  # type: ignore[arg-type]
    )


# --------------------------------------------------------------------------------------------------
# ReplicationState (§1.3)

class PeerState(enum.Enum):
    ENABLED = 0
    DISABLED = 1


PEER_STATE_BYTES = {PeerState.ENABLED: PB_MAGIC + b"\x08\x00", PeerState.DISABLED: PB_MAGIC + b"\x08\x01"}


def encode_peer_state(state: PeerState | bool) -> bytes:
    """Exactly `PBUF 08 00` (ENABLED) or `PBUF 08 01` (DISABLED); `True` means enabled."""
    if isinstance(state, bool):
        state = PeerState.ENABLED if state else PeerState.DISABLED
    return PEER_STATE_BYTES[state]


def decode_peer_state(data: bytes) -> PeerState:
    """The state in a peer-state znode; raises on anything HBase would not have written.

    HBase itself only asks "equal to the ENABLED bytes?" (so garbage reads as
    disabled); read-back checks here want to know exactly, hence the strictness.
    The pre-PB string forms "ENABLED"/"DISABLED" (0.94) are accepted.
    """
    payload = strip_metadata(data)
    if payload in (b"ENABLED", b"DISABLED"):
        return PeerState[payload.decode()]
    if not has_pb_magic(payload):
        raise ZnodeFormatError(f"peer-state: expected PBUF ReplicationState, got {payload!r}")
    state = None
    for no, wire, value in decode_fields(payload[4:]):
        if no == 1:
            state = _expect(no, wire, value, WIRE_VARINT, "ReplicationState")
    if state not in (0, 1):
        raise ZnodeFormatError(f"peer-state: ReplicationState.state is {state!r}, expected 0 or 1")
    return PeerState(state)


def hbase_sees_enabled(data: bytes) -> bool:
    """ZKReplicationPeerStorage.isPeerEnabled: a byte compare after stripping the header."""
    return strip_metadata(data) == PEER_STATE_BYTES[PeerState.ENABLED]


# --------------------------------------------------------------------------------------------------
# WAL position (§1.4), ClusterId and RegionServerInfo (§1.5)

def encode_wal_position(position: int) -> bytes:
    """ZKUtil.positionToByteArray: `PBUF` + ReplicationHLogPosition{int64 position = 1}."""
    return PB_MAGIC + pb_varint(1, position)


def decode_wal_position(data: bytes | None) -> int:
    """ZKUtil.parseWALPositionFrom: PBUF message, else a legacy 8-byte big-endian long, empty = 0."""
    payload = strip_metadata(data)
    if not payload:
        return 0
    if has_pb_magic(payload):
        position = None
        for no, wire, value in decode_fields(payload[4:]):
            if no == 1:
                position = as_int64(_expect(no, wire, value, WIRE_VARINT, "ReplicationHLogPosition"))
        if position is None:
            raise ZnodeFormatError("ReplicationHLogPosition without its required position")
        return position
    if len(payload) < 8:
        raise ZnodeFormatError(f"WAL position: {len(payload)} bytes is neither PBUF nor an 8-byte long")
    return int.from_bytes(payload[:8], "big", signed=True)


def encode_cluster_id(cluster_id: str) -> bytes:
    return PB_MAGIC + pb_bytes(1, cluster_id)


def decode_cluster_id(data: bytes) -> str:
    """`PBUF` + ClusterId{string cluster_id = 1}; a legacy raw string is accepted."""
    payload = strip_metadata(data)
    if not payload:
        raise ZnodeFormatError("hbaseid znode is empty")
    if not has_pb_magic(payload):
        return _text(payload, "legacy cluster id")
    for no, wire, value in decode_fields(payload[4:]):
        if no == 1:
            return _text(_expect(no, wire, value, WIRE_LEN, "ClusterId"), "cluster_id")
    raise ZnodeFormatError("ClusterId without its required cluster_id")


@dataclass(frozen=True)
class RegionServerInfo:
    info_port: int | None = None
    version: str | None = None  # VersionInfo.version when the server wrote one


def encode_region_server_info(info_port: int | None, version: str | None = None) -> bytes:
    """`PBUF` + RegionServerInfo{int32 infoPort = 1; VersionInfo version_info = 2 (version only)}."""
    body = b"" if info_port is None else pb_varint(1, info_port)
    if version is not None:
        body += pb_bytes(2, pb_bytes(1, version))
    return PB_MAGIC + body


def decode_region_server_info(data: bytes) -> RegionServerInfo:
    """Parse an `rs/<servername>` znode; empty data (old servers) gives an empty info."""
    payload = strip_metadata(data)
    if not payload:
        return RegionServerInfo()
    body = _pb_body(payload, "RegionServerInfo")
    info_port = version = None
    for no, wire, value in decode_fields(body):
        if no == 1:
            info_port = as_int64(_expect(no, wire, value, WIRE_VARINT, "RegionServerInfo"))
        elif no == 2 and wire == WIRE_LEN:
            for vno, vwire, vvalue in decode_fields(value):  # type: ignore[arg-type]
                if vno == 1 and vwire == WIRE_LEN:
                    version = _text(vvalue, "VersionInfo.version")  # type: ignore[arg-type]
    return RegionServerInfo(info_port, version)


# --------------------------------------------------------------------------------------------------
# Server names and replication queue ids (§1.4)

_SERVERNAME = re.compile(r"^([^,]+),(\d+),(\d+)$")


def parse_servername(name: str) -> tuple[str, int, int]:
    """`host,port,startcode` -> (host, port, startcode); raises ValueError naming the text."""
    match = _SERVERNAME.match(name)
    if not match:
        raise ValueError(f"server name {name!r} is not 'host,port,startcode'")
    return match.group(1), int(match.group(2)), int(match.group(3))


def is_full_servername(name: str) -> bool:
    return bool(_SERVERNAME.match(name))


@dataclass(frozen=True)
class QueueId:
    queue_id: str
    peer_id: str
    recovered: bool
    dead_servers: tuple[str, ...]


def parse_queue_id(queue_id: str) -> QueueId:
    """ReplicationQueueInfo's parse: `<peer>` or `<peer>-<dead1>[-<dead2>...]`.

    `split("-", 2)` gives the peer id; dead server names are cut at a '-' only
    once two commas of the current name were seen, because host names may
    contain '-'. Pieces that are not full server names are skipped, as HBase
    logs and skips them.
    """
    peer_id, sep, rest = queue_id.partition("-")
    dead: list[str] = []
    commas = start = 0
    for i, char in enumerate(rest):
        if char == ",":
            commas += 1
        elif char == "-" and commas >= 2:
            if i > start:
                _add_dead_server(rest[start:i], queue_id, dead)
                start = i + 1
            commas = 0
    if start < len(rest) - 1:  # HBase's own bound: a one-character tail is never a server name
        _add_dead_server(rest[start:], queue_id, dead)
    return QueueId(queue_id, peer_id, bool(sep), tuple(dead))


def _add_dead_server(name: str, queue_id: str, into: list[str]) -> None:
    if is_full_servername(name):
        into.append(name)
    else:
        log.warning("replication queue %r names an invalid dead server %r; ignored as HBase does",
                    queue_id, name)


_WAL_NAME = re.compile(r"^(.+)\.(\d+)(\.[0-9A-Za-z]+)?$")


def wal_sort_key(name: str) -> tuple[int, str]:
    """Order WALs by their creation timestamp (`<prefix>.<ts>[.suffix]`), unknown forms last."""
    match = _WAL_NAME.match(name)
    return (int(match.group(2)), name) if match else (1 << 63, name)


# --------------------------------------------------------------------------------------------------
# Paths

def join(*parts: str) -> str:
    """Join znode path parts: join('/hbase', 'rs') == '/hbase/rs'."""
    path = "/".join(p.strip("/") for p in parts if p.strip("/"))
    return "/" + path


def replication_paths(znode_parent: str) -> dict[str, str]:
    root = join(znode_parent, "replication")
    return {"root": root, "peers": join(root, "peers"), "rs": join(root, "rs")}


def peer_path(znode_parent: str, peer_id: str) -> str:
    return join(znode_parent, "replication", "peers", peer_id)


def peer_state_path(znode_parent: str, peer_id: str) -> str:
    return join(peer_path(znode_parent, peer_id), "peer-state")


# --------------------------------------------------------------------------------------------------
# I/O helpers

@contextlib.contextmanager
def connect(cluster_or_hosts: "Cluster | ClusterKey | str", timeout: float = 10.0) -> Iterator["KazooClient"]:
    """A started KazooClient for a cluster's quorum, stopped and closed on exit.

    `cluster_or_hosts` is a `Cluster` (its security applied: SASL GSSAPI on a secured ZooKeeper), a
    `ClusterKey` or a connect string (`h1:2181,h2:2181[/chroot]`). Opened by `channels.zookeeper`. When no
    server answers within `timeout` seconds, raises channels.ZooKeeperUnreachable naming the quorum.
    """
    from hbase_migration.clusters import channels

    client = channels.zookeeper(cluster_or_hosts, timeout)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _require(client: "KazooClient", path: str, what: str) -> None:
    if client.exists(path) is None:
        raise ZnodeMissing(f"{path} does not exist: {what}")


@dataclass(frozen=True)
class RegionServer:
    """A live region server, from its ephemeral `rs/<servername>` znode."""

    servername: str
    host: str
    port: int
    startcode: int
    info_port: int | None
    version: str | None = None


def live_region_servers(client: "KazooClient", znode_parent: str) -> list[RegionServer]:
    """Live region servers of a cluster, sorted by server name.

    Info ports come from each znode's RegionServerInfo (None when absent or
    undecodable). A server whose znode vanishes while we read is not live and
    is left out. Raises ZnodeMissing when `<parent>/rs` does not exist.
    """
    from kazoo.exceptions import NoNodeError

    rs_path = join(znode_parent, "rs")
    _require(client, rs_path, f"no HBase region servers registry under znode parent {znode_parent!r} "
                              "(wrong znode_parent, or the cluster was never started)")
    servers = []
    for name in sorted(client.get_children(rs_path)):
        try:
            host, port, startcode = parse_servername(name)
        except ValueError:
            log.warning("ignoring %s/%s: not a region server name (host,port,startcode)", rs_path, name)
            continue
        try:
            data, _ = client.get(join(rs_path, name))
        except NoNodeError:
            continue
        try:
            info = decode_region_server_info(data)
        except ZnodeFormatError as exc:
            log.warning("region server %s: unreadable RegionServerInfo (%s); info port unknown", name, exc)
            info = RegionServerInfo()
        servers.append(RegionServer(name, host, port, startcode, info.info_port, info.version))
    return servers


def read_cluster_id(client: "KazooClient", znode_parent: str) -> str:
    """The cluster's UUID from `<parent>/hbaseid`."""
    from kazoo.exceptions import NoNodeError

    path = join(znode_parent, "hbaseid")
    try:
        data, _ = client.get(path)
    except NoNodeError:
        raise ZnodeMissing(
            f"{path} does not exist: wrong znode_parent, or the master never started") from None
    return decode_cluster_id(data)


@dataclass(frozen=True)
class QueueInfo:
    """One replication queue of one region server, with its WALs and positions."""

    server: str
    queue_id: str
    peer_id: str
    recovered: bool
    dead_servers: list[str]
    wals: list[tuple[str, int]]


def replication_queues(client: "KazooClient", znode_parent: str) -> list[QueueInfo]:
    """Every queue under `<parent>/replication/rs/<server>/<queueId>/<wal>`.

    Sorted by server then queue id; WALs by creation time. No `replication/rs`
    znode means no queue. A 1.x failover `lock` znode is not a queue. Nodes
    deleted while we walk (a shipped WAL, a claimed queue) are skipped; an
    undecodable position reads as 0 with a warning, as HBase's storage does.
    """
    from kazoo.exceptions import NoNodeError

    rs_root = replication_paths(znode_parent)["rs"]
    try:
        servers = sorted(client.get_children(rs_root))
    except NoNodeError:
        return []
    queues = []
    for server in servers:
        try:
            queue_ids = sorted(client.get_children(join(rs_root, server)))
        except NoNodeError:
            continue
        for queue_id in queue_ids:
            if queue_id == "lock":
                continue
            queue_path = join(rs_root, server, queue_id)
            try:
                wal_names = client.get_children(queue_path)
            except NoNodeError:
                continue
            wals = []
            for wal in sorted(wal_names, key=wal_sort_key):
                try:
                    data, _ = client.get(join(queue_path, wal))
                except NoNodeError:
                    continue
                try:
                    position = decode_wal_position(data)
                except ZnodeFormatError as exc:
                    log.warning("queue %s WAL %s: unreadable position (%s); taken as 0", queue_path, wal, exc)
                    position = 0
                wals.append((wal, position))
            parsed = parse_queue_id(queue_id)
            queues.append(QueueInfo(server, queue_id, parsed.peer_id, parsed.recovered,
                                    list(parsed.dead_servers), wals))
    return queues
