"""ZooKeeper sessions: which process holds a connection, and a session's expiry on the server side.

Expiry is what tests/conftest.py's `expire_session` does: a second client presents the session's id and
password and closes, which ends the session on the server (its ephemeral nodes go; its owner's connection is
closed and, reconnecting, it learns the session expired). The id and password come from the ConnectResponse the
chaos proxy saw (`chaos/zkproxy.py`).
"""
from __future__ import annotations

import os
from typing import Iterable


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


def client_pid(server_port: int, client_port: int, pids: Iterable[int]) -> int | None:
    """The process among `pids` whose connection to local `server_port` comes from `client_port`."""
    ports: dict[int, int] = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                ports.update(parse_proc_net_tcp(f.read(), server_port))
        except OSError:
            pass
    inode = ports.get(client_port)
    if inode is None:
        return None
    return socket_owners({inode}, pids).get(inode)


def expire(zk_hosts: str, session_id: int, password: bytes, timeout: float = 10.0) -> bool:
    """End session `session_id` on the server: a twin client presents its id and password, then closes.
    False when the session was already gone (the twin could not attach to it)."""
    from kazoo.client import KazooClient

    twin = KazooClient(hosts=zk_hosts, client_id=(session_id, password), timeout=timeout)
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
