"""ZooKeeper sessions held by given processes, and their expiry on the server side.

Which toolkit process holds a session changes by phase (preflight and add_peer's peer admin, the copy's oldWALs
watchdog and load governor in the Spark driver, the drained trigger's polls in the triggerer): each opens one for
a call and closes it. To find one, the harness asks ZooKeeper for its connections (`cons`: client address and
session id), maps each client port to the process holding that socket (/proc/net/tcp and /proc/<pid>/fd) and
keeps those of the processes it was asked about.

Expiry is what tests/conftest.py's `expire_session` does: a second client presents the session's id and
password and closes, which ends the session on the server (its ephemeral nodes go; its owner sees it expired).
The password is not secret from the server's point of view: ZooKeeperServer.generatePasswd derives it from the
session id (`new java.util.Random(id ^ 0xB3415C00L).nextBytes(new byte[16])`), so the harness computes it
instead of reading it out of the victim's memory.
"""
from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import Iterable

SUPER_SECRET = 0xB3415C00  # ZooKeeperServer.superSecret
_MASK48 = (1 << 48) - 1
_CONS_LINE = re.compile(r"^\s*/(?P<ip>[0-9.]+):(?P<port>\d+)\[\d+\]\((?P<fields>.*)\)\s*$")


def session_password(session_id: int) -> bytes:
    """ZooKeeperServer.generatePasswd(id): 16 bytes of java.util.Random seeded with id ^ superSecret."""
    seed = ((session_id ^ SUPER_SECRET) ^ 0x5DEECE66D) & _MASK48  # Random(long) scrambles its seed so

    out = bytearray()
    while len(out) < 16:
        seed = (seed * 0x5DEECE66D + 0xB) & _MASK48
        value = seed >> 16  # next(32), as an unsigned 32-bit int
        for _ in range(min(4, 16 - len(out))):  # nextBytes: low byte first
            out.append(value & 0xFF)
            value >>= 8
    return bytes(out)


@dataclass(frozen=True)
class ZkConnection:
    client_ip: str
    client_port: int
    session_id: int | None  # None: connected, no session established yet


def parse_cons(text: str) -> list[ZkConnection]:
    """ZooKeeper's `cons` answer: one line per connection, `/ip:port[n](key=value,...)`."""
    out = []
    for line in text.splitlines():
        m = _CONS_LINE.match(line)
        if not m:
            continue
        fields = dict(kv.split("=", 1) for kv in m.group("fields").split(",") if "=" in kv)
        sid = fields.get("sid")
        out.append(ZkConnection(m.group("ip"), int(m.group("port")), int(sid, 16) if sid else None))
    return out


def four_letter_word(host: str, port: int, word: str, timeout: float = 5.0) -> str:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data.decode(errors="replace")


def parse_proc_net_tcp(text: str, remote_port: int) -> dict[int, int]:
    """{local port: socket inode} of the established connections to `remote_port` in /proc/net/tcp's text."""
    out = {}
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 10:
            continue
        local, remote, state, inode = parts[1], parts[2], parts[3], parts[9]
        if state != "01" or int(remote.rsplit(":", 1)[1], 16) != remote_port:
            continue
        out[int(local.rsplit(":", 1)[1], 16)] = int(inode)
    return out


def socket_owners(inodes: set[int], pids: Iterable[int]) -> dict[int, int]:
    """{inode: pid} for the sockets among `inodes` that one of `pids` holds open."""
    found: dict[int, int] = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and int(link[8:-1]) in inodes:
                found[int(link[8:-1])] = pid
    return found


def zk_sockets(zk_port: int) -> dict[int, int]:
    """{local port: inode} of every established connection to `zk_port` on this machine."""
    ports: dict[int, int] = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                ports.update(parse_proc_net_tcp(f.read(), zk_port))
        except OSError:
            pass
    return ports


@dataclass(frozen=True)
class HeldSession:
    session_id: int
    pid: int
    client_port: int


def sessions_of(zk_host: str, zk_port: int, pids: Iterable[int]) -> list[HeldSession]:
    """The established ZooKeeper sessions that the processes `pids` hold now."""
    pids = list(pids)
    if not pids:
        return []
    conns = [c for c in parse_cons(four_letter_word(zk_host, zk_port, "cons")) if c.session_id is not None]
    if not conns:
        return []
    ports = zk_sockets(zk_port)
    by_inode = {ports[c.client_port]: c for c in conns if c.client_port in ports}
    owners = socket_owners(set(by_inode), pids)
    return [HeldSession(by_inode[inode].session_id, pid, by_inode[inode].client_port)
            for inode, pid in owners.items()]


def expire(zk_hosts: str, session_id: int, timeout: float = 10.0) -> bool:
    """End session `session_id` on the server: a twin client presents its id and password, then closes.
    False when the session was already gone (the twin could not attach to it)."""
    from kazoo.client import KazooClient

    twin = KazooClient(hosts=zk_hosts, client_id=(session_id, session_password(session_id)), timeout=timeout)
    try:
        twin.start(timeout=timeout)
    except Exception:
        return False
    try:
        attached = twin.client_id is not None and twin.client_id[0] == session_id
    finally:
        twin.stop()
        twin.close()
    return attached
