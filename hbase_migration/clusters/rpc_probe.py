"""Does every region server of a cluster answer as HBase's RPC server from this host? (`data_path: auto`)

A TCP connect proves nothing: any listener accepts one, and minihbase registers region servers in ZooKeeper
whose ports are HTTP. So the probe speaks first. HBase's RPC server reads a 6-byte connection preamble, `HBas`, a
version byte (0 since HBase 0.96) and an auth byte (80: SIMPLE); given a version it does not speak it answers at
once with one fatal-connection frame and closes (`ServerRpcConnection.processPreamble` -> `doBadPreambleHandling`):
a big-endian int32 length, then a varint-delimited `ResponseHeader` {call_id -1, exception: `ExceptionResponse`
{exception_class_name `org.apache.hadoop.hbase.ipc.WrongVersionException`, stack_trace "serverVersion=0,
clientVersion=127, authMethod=80, ...", do_not_retry}}. That check precedes authentication (a Kerberized server
answers the same) and opens no session: the server logs one WARN line. HBase 2.6.4 on the bed answered 158 bytes
in 2 ms; a Thrift gateway closes without a byte, an HTTP server answers a page.

`parse_answer` and `ClusterProbe.reason` are pure; `probe_server` / `probe_cluster` do the I/O (the socket opens in
`channels.tcp`), every failure a reason string, never an exception.
"""
from __future__ import annotations

import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hbase_migration.clusters.zk import WIRE_LEN, ZnodeFormatError, decode_fields, decode_varint

if TYPE_CHECKING:
    from hbase_migration.clusters.cluster import Cluster

log = logging.getLogger(__name__)

PROBE_VERSION = 127  # RpcServer.CURRENT_VERSION is 0; any other byte draws WrongVersionException
AUTH_SIMPLE = 0x50
PREAMBLE = b"HBas" + bytes([PROBE_VERSION, AUTH_SIMPLE])
MAX_FRAME = 1 << 16  # HBase's answer is ~160 bytes; a bigger "length" is another protocol's bytes
HBASE_EXCEPTIONS = "org.apache.hadoop.hbase."
PROBE_TIMEOUT_S = 3.0  # per server (connect and answer); the servers are probed in parallel
# Waited for an answer before the probe half-closes its side: HBase answers the preamble alone, whereas a
# line- or request-reading server (HTTP: minihbase's region servers) waits for more bytes and only answers (or
# closes) once it sees the end of them, so the probe costs it milliseconds, not the whole timeout.
HALF_CLOSE_AFTER_S = 0.3
_QUIET_KAZOO = logging.getLogger(__name__ + ".kazoo")
_QUIET_KAZOO.setLevel(logging.WARNING)


@dataclass(frozen=True)
class Answer:
    """What one port answered the preamble: HBase's RPC server or not, and in one line what it said."""

    hbase: bool
    what: str
    exception: str | None = None  # the exception class HBase named


def _show(data: bytes) -> str:
    return repr(data[:48]) + ("..." if len(data) > 48 else "") + f" ({len(data)} bytes)"


def frame_size(data: bytes) -> int | None:
    """Bytes of the whole answer once its length prefix is in (None: fewer than 4 bytes yet)."""
    return None if len(data) < 4 else 4 + int.from_bytes(data[:4], "big")


def _complete(data: bytes) -> bool:
    """The answer is all in: its frame, or enough to see it is none of HBase's."""
    size = frame_size(data)
    return size is not None and (len(data) >= size or size > MAX_FRAME + 4)


def parse_answer(data: bytes, ended: str = "closed the connection") -> Answer:
    """Read what a port answered `PREAMBLE` (`ended`: how the read ended, for an answer cut short)."""
    if not data:
        return Answer(False, f"{ended} without a byte (HBase's RPC server answers a wrong preamble at once)")
    size = frame_size(data)
    if size is None or not 4 < size <= MAX_FRAME + 4:
        return Answer(False, f"answered {_show(data)}: not an HBase RPC frame")
    if len(data) < size:
        return Answer(False, f"{ended} after {len(data)} of the {size} bytes its frame announced: {_show(data)}")
    try:
        length, pos = decode_varint(data, 4)
        if pos + length > size:
            raise ZnodeFormatError(f"a header of {length} bytes overruns the frame")
        header = decode_fields(data[pos:pos + length])
        exception = next((v for f, w, v in header if f == 2 and w == WIRE_LEN), None)
        if not isinstance(exception, bytes):
            return Answer(False, f"answered an RPC frame without an exception: {_show(data)}")
        fields = {f: v for f, w, v in decode_fields(exception) if w == WIRE_LEN}
        name = fields.get(1, b"").decode("utf-8", "replace")
        message = fields.get(2, b"").decode("utf-8", "replace").splitlines()[:1]
    except ZnodeFormatError as e:
        return Answer(False, f"answered {_show(data)}: not an HBase RPC response header ({e})")
    if not name.startswith(HBASE_EXCEPTIONS):
        return Answer(False, f"answered an exception {name!r}, not one of HBase's")
    return Answer(True, f"HBase RPC: {name.rsplit('.', 1)[-1]}: {message[0] if message else ''}".rstrip(": "), name)


@dataclass(frozen=True)
class ServerProbe:
    server: str  # host:port
    hbase: bool
    what: str


@dataclass(frozen=True)
class ClusterProbe:
    """Every live region server of one cluster, probed; `error`: they could not be listed."""

    cluster: str
    servers: tuple[ServerProbe, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.servers) and all(s.hbase for s in self.servers)

    def reason(self) -> str:
        """One line: why the cluster passed or not (the first failing server, and how many more)."""
        if self.error is not None:
            return f"{self.cluster}: region servers not listed ({self.error})"
        if not self.servers:
            return f"{self.cluster}: no live region server registered in ZooKeeper"
        bad = [s for s in self.servers if not s.hbase]
        if bad:
            more = f" (and {len(bad) - 1} more of {len(self.servers)})" if len(bad) > 1 else ""
            return f"{self.cluster}: region server {bad[0].server} {bad[0].what}{more}"
        return f"{self.cluster}: {len(self.servers)} region server(s) answer as HBase RPC"


def probe_server(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S,
                 bind_address: str | None = None) -> ServerProbe:
    """Send `PREAMBLE` to one RPC port and read the answer, for at most `timeout_s` in all."""
    from hbase_migration.clusters import channels

    server = f"{host}:{port}"
    deadline = time.monotonic() + timeout_s
    try:
        sock = channels.tcp(host, port, timeout_s, bind_address)
    except OSError as e:
        return ServerProbe(server, False, f"refused a TCP connection: {type(e).__name__}: {e}")
    data, ended, half_closed = b"", "closed the connection", False
    with sock:
        try:
            sock.sendall(PREAMBLE)
            while not _complete(data):
                left = deadline - time.monotonic()
                if left <= 0:
                    ended = f"gave no answer within {timeout_s:g}s"
                    break
                sock.settimeout(left if half_closed else min(left, HALF_CLOSE_AFTER_S))
                try:
                    chunk = sock.recv(4096)
                except socket.timeout:
                    if not half_closed:
                        sock.shutdown(socket.SHUT_WR)
                        half_closed = True
                    continue
                if not chunk:
                    break
                data += chunk
        except OSError as e:
            ended = f"reset the connection ({type(e).__name__}: {e})"
    answer = parse_answer(data, ended)
    return ServerProbe(server, answer.hbase, answer.what)


def probe_cluster(cluster: "Cluster", timeout_s: float = PROBE_TIMEOUT_S) -> ClusterProbe:
    """Every live region server of `cluster` (its `rs/` znodes) probed in parallel from this host, leaving from
    the connection's `client_bind_address` as the native path's client does."""
    from hbase_migration.clusters import channels, zk

    try:  # kazoo's connection lines kept out of the log: the CLI's bad input stays one line on stderr
        client = channels.zookeeper(cluster, min(cluster.timeout_s, timeout_s), logger=_QUIET_KAZOO)
        try:
            servers = zk.live_region_servers(client, cluster.znode_parent)
        finally:
            client.stop()
            client.close()
    except Exception as e:  # ZooKeeper down, a wrong parent, a refused SASL login: all a reason to keep Thrift
        return ClusterProbe(cluster.name, error=f"{type(e).__name__}: {e}")
    if not servers:
        return ClusterProbe(cluster.name)
    with ThreadPoolExecutor(max_workers=min(32, len(servers)), thread_name_prefix="rpc-probe") as pool:
        probes = pool.map(lambda s: probe_server(s.host, s.port, timeout_s, cluster.client_bind_address), servers)
        return ClusterProbe(cluster.name, tuple(probes))
