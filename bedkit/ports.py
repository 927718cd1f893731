"""Loopback ports for the test beds' servers."""
from __future__ import annotations

import random
import socket
from pathlib import Path

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A TCP port that nothing listens on right now (bound to 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_free(port: int, host: str = HOST) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def ephemeral_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    """The ports the kernel gives outgoing connections (Linux's default 32768-60999)."""
    try:
        low, high = (int(x) for x in Path(path).read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def listening_port(taken, rng: random.Random = random.SystemRandom(), host: str = HOST) -> int:
    """A free port below the kernel's ephemeral range, for a server that binds it later (a JVM, seconds on).
    A port from bind(0) is in that range: between planning it and the JVM's bind, any outgoing connection on the
    machine (a Thrift client, Spark, another bed's) may take it as its own local port, and the JVM then dies with
    "Address already in use" (seen with two beds and a demo starting at once)."""
    low = ephemeral_range()[0]
    floor = 10000 if low > 12000 else 1024
    for _ in range(200):
        port = rng.randrange(floor, low)
        if port not in taken and port_free(port, host):
            return port
    port = free_port(host)  # an odd ephemeral range: the kernel's choice then
    while port in taken:
        port = free_port(host)
    return port
