"""Whether a part of the bed answers, and what ZooKeeper says of a cluster: plain probes (a secured bed's go through
its security object, realhbase/security.py, which authenticates the same calls).

HBase's znode payloads start with RecoverableZooKeeper's header; the cluster id is `<parent>/hbaseid`, the live
region servers `<parent>/rs`'s children (servernames `host,port,startcode`).
"""
from __future__ import annotations

import json
import socket
import urllib.request

from realhbase.config import HOST


def http_json(url: str, timeout: float = 5.0, headers: dict[str, str] | None = None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        body = resp.read()
    return json.loads(body) if body else None


def answers(url: str) -> bool:
    try:
        http_json(url, timeout=3)
        return True
    except (OSError, ValueError):
        return False


def zk_ruok(hosts: str, timeout: float = 2.0) -> bool:
    for part in hosts.split(","):
        host, _, port = part.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout) as s:
                s.sendall(b"ruok")
                if s.recv(16) == b"imok":
                    return True
        except (OSError, ValueError):
            continue
    return False


def thrift_call(client, kind: str) -> None:
    """The readiness call: Thrift1 getTableNames / Thrift2 getTableNamesByPattern answer only once the gateway,
    the master and hbase:meta are all up."""
    if kind == "thrift":
        client.getTableNames()
    else:
        client.getTableNamesByPattern(".*", True)  # HBase 3.x's Admin refuses a null pattern


def thrift_answers(port: int, kind: str, modules, host: str = HOST) -> bool:
    from thriftpy2.rpc import make_client

    hbase1, hbase2 = modules
    try:
        client = make_client(hbase1.Hbase if kind == "thrift" else hbase2.THBaseService, host, port, timeout=3000)
        try:
            thrift_call(client, kind)
        finally:
            client.close()
        return True
    except Exception:  # refused, reset, or HBase's TIOError while the master initializes
        return False


def strip_zk_metadata(data: bytes) -> bytes:
    """HBase's znode payload without RecoverableZooKeeper's header (0xFF, int32 id length, id+salt)."""
    if data[:1] == b"\xff":
        id_len = int.from_bytes(data[1:5], "big")
        return data[5 + id_len:]
    return data


def cluster_id_of(data: bytes) -> str:
    """The cluster id in `<parent>/hbaseid`'s payload ("PBUF", ClusterId{1: string})."""
    payload = strip_zk_metadata(data)
    if payload.startswith(b"PBUF") and payload[4:5] == b"\x0a":
        return payload[6:6 + payload[5]].decode()
    return payload.decode(errors="replace")


def _fields(data: bytes) -> dict[int, bytes | int]:
    """A protobuf message's top-level fields (varints and length-delimited ones; the last of a repeated one)."""
    out, i = {}, 0

    def varint():
        nonlocal i
        value, shift = 0, 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value
    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out[number] = varint()
        elif wire == 2:
            n = varint()
            out[number] = data[i:i + n]
            i += n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"protobuf wire type {wire} not expected")
    return out


def master_port_of(data: bytes) -> int | None:
    """The active master's RPC port in `<parent>/master`'s payload ("PBUF", Master{1: ServerName{1: host,
    2: port, 3: start code}}); None when the znode holds no master."""
    payload = strip_zk_metadata(data)
    if not payload.startswith(b"PBUF"):
        return None
    try:
        server = _fields(payload[4:]).get(1)
        return _fields(server).get(2) if isinstance(server, bytes) else None
    except (IndexError, ValueError):
        return None


def active_master_port(hosts: str, parent: str) -> int | None:
    from kazoo.exceptions import KazooException, NoNodeError

    client = zk_client(hosts)
    try:
        data, _ = client.get(f"{parent}/master")
    except (NoNodeError, KazooException):
        return None
    finally:
        client.stop()
        client.close()
    return master_port_of(data)


def newest_on_port(servernames, port: int) -> str | None:
    """The newest servername (by start code) registered on `port`: a slot restarted on its port replaces its old
    self, which the master expires."""
    mine = [s for s in servernames if s.split(",")[1:2] == [str(port)]]
    return max(mine, key=lambda s: int(s.rsplit(",", 1)[1])) if mine else None


def zk_client(hosts: str):
    import logging

    from kazoo.client import KazooClient

    logging.getLogger("kazoo.client").setLevel(logging.ERROR)  # "Connection dropped" while a server starts
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=60)  # a ZooKeeper just started on a machine at load 50 took more than 10 s to answer
    return client


def registered(hosts: str, parent: str) -> list[str]:
    """Servernames under <parent>/rs (the live region servers), as ZooKeeper lists them; none when ZooKeeper does
    not answer in time."""
    from kazoo.exceptions import KazooException, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError

    try:
        client = zk_client(hosts)
    except KazooTimeoutError:
        return []
    try:
        return client.get_children(f"{parent}/rs")
    except (NoNodeError, KazooException):
        return []
    finally:
        client.stop()
        client.close()


def cluster_id(hosts: str, parent: str) -> str | None:
    from kazoo.exceptions import NoNodeError

    client = zk_client(hosts)
    try:
        data, _ = client.get(f"{parent}/hbaseid")
    except NoNodeError:
        return None
    finally:
        client.stop()
        client.close()
    return cluster_id_of(data)
