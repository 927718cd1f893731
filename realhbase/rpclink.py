"""The WAN for HBase's own RPC (the native data path), shaped by the kernel on the loopback. Benchmarks only.

HBase's client finds the region servers in `hbase:meta` and connects to the addresses they advertise, so the
byte-counting proxy of `realhbase/wan.py` (a port in front of a gateway) never sees the native path's bytes: the
region servers advertise one address to every client, near or far. What tells a far client here is where its
connections come from: a job in one datacenter reaches the other's cluster with a connection whose
`client_bind_address` is its datacenter's `client_address(...)` (127.41.0.x: an address of the loopback's
127.0.0.0/8 that no bed uses; the secured bed has 127.0.0.2 and .3), and HBase's client then leaves from it (jvm/
`BoundRpcClient`). `install(mbps)` puts an HTB qdisc on `lo` (handle 7e41:) whose two classes, one per direction,
each `mbps` megabits/s, take every packet from or to those addresses: a job's reads of its own cluster, and every
other process's loopback traffic, are not classified and go through HTB's direct queue unshaped. The classes'
counters are the link's bytes (`stats`: IP packets, TCP/IP headers included: about 0.1% at the loopback's 64 KB
segments). What the link does not carry: the client's ZooKeeper session (the meta region's location: a few kB).

Root (CAP_NET_ADMIN) only; a qdisc on `lo` slows every later test if left behind, so: `link(mbps)` removes it on
exit, and `install` starts a guard process that removes it when the installing process dies, whatever kills it.
Never used by `make test`. `python -m realhbase.rpclink remove` removes it by hand.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from typing import Any, Iterator

DEV = "lo"
HANDLE = "7e41"  # the qdisc's major (41: the issue): removing ours never removes another's root qdisc
NAMES = ("dc1", "dc2")
# Where each datacenter's jobs connect to the *other* datacenter's cluster from.
ADDRESSES = {"dc1": "127.41.0.1", "dc2": "127.41.0.2"}
BURST = "256k"  # a class may send this much at once: several of the loopback's 64 KB segments


class LinkError(RuntimeError):
    """The kernel's link cannot be set up (not root, no tc, a qdisc already on lo); the message says what to do."""


def client_address(datacenter: str) -> str:
    """The address `datacenter`'s jobs reach the other datacenter's cluster from (a connection's
    `client_bind_address`)."""
    try:
        return ADDRESSES[datacenter]
    except KeyError:
        raise ValueError(f"no datacenter {datacenter!r} on the link (known: {', '.join(NAMES)})") from None


def ways() -> dict[str, str]:
    """Each direction of the link and its HTB class: `dc1->dc2` is 7e41:1, `dc2->dc1` 7e41:2."""
    a, b = NAMES
    return {f"{a}->{b}": f"{HANDLE}:1", f"{b}->{a}": f"{HANDLE}:2"}


def _shaped(mbps: float) -> list[str]:
    """An HTB class's rate of `mbps` megabits/s (its ceiling too: it never borrows)."""
    if not mbps > 0:
        raise ValueError(f"the link's rate must be a positive number of megabits/s, got {mbps!r}")
    rate = f"{int(round(mbps * 1000))}kbit"
    return ["htb", "rate", rate, "ceil", rate, "burst", BURST, "cburst", BURST, "quantum", "65536"]


def commands(mbps: float, dev: str = DEV) -> list[list[str]]:
    """The `tc` commands that install the link: the HTB root (no default class: unclassified packets go
    unshaped), a class of `mbps` megabits/s each way with a FIFO deep enough that TCP never sees a drop, and the
    filters: a packet from dc2's client address, or to dc1's, crosses dc2->dc1; the reverse, dc1->dc2."""
    shaped = _shaped(mbps)
    a, b = NAMES
    cls = ways()
    out = [["tc", "qdisc", "add", "dev", dev, "root", "handle", f"{HANDLE}:", "htb", "direct_qlen", "100000"]]
    for classid in cls.values():
        out.append(["tc", "class", "add", "dev", dev, "parent", f"{HANDLE}:", "classid", classid, *shaped])
        out.append(["tc", "qdisc", "add", "dev", dev, "parent", classid, "bfifo", "limit", str(256 << 20)])
    for way, (src, dst) in ((f"{a}->{b}", (ADDRESSES[a], ADDRESSES[b])),
                            (f"{b}->{a}", (ADDRESSES[b], ADDRESSES[a]))):
        # a->b: what a's jobs send to b's cluster (from a's address) and what a's cluster answers b's jobs (to b's)
        for field, addr in (("src", src), ("dst", dst)):
            out.append(["tc", "filter", "add", "dev", dev, "parent", f"{HANDLE}:", "protocol", "ip", "prio", "1",
                        "u32", "match", "ip", field, f"{addr}/32", "flowid", cls[way]])
    return out


def rate_commands(mbps: float, dev: str = DEV) -> list[list[str]]:
    """The `tc` commands that change the installed link's rate to `mbps` each way (the counters keep counting)."""
    shaped = _shaped(mbps)
    return [["tc", "class", "change", "dev", dev, "parent", f"{HANDLE}:", "classid", classid, *shaped]
            for classid in ways().values()]


def removal(dev: str = DEV) -> list[str]:
    """The command that removes the link, and only ours (the kernel refuses a handle that is not the root's)."""
    return ["tc", "qdisc", "del", "dev", dev, "root", "handle", f"{HANDLE}:"]


def parse_stats(text: str) -> dict[str, int]:
    """`tc -s -j qdisc show dev lo` -> bytes sent each way: the counters of each class's FIFO ({} when the link is
    not there). (iproute2 6.1 prints HTB's classes in text only; the qdiscs' JSON carries the same counts.)"""
    by_parent = {q.get("parent"): q for q in json.loads(text or "[]") if q.get("kind") == "bfifo"}
    out = {}
    for way, classid in ways().items():
        found = by_parent.get(classid)
        if found is not None:
            out[way] = int(found["bytes"])
    return out


def root_qdisc(text: str) -> dict[str, Any] | None:
    """`tc -j qdisc show dev lo` -> the root qdisc ({"kind", "handle"}), None when there is none."""
    for q in json.loads(text or "[]"):
        if q.get("root"):
            return {"kind": q.get("kind"), "handle": q.get("handle")}
    return None


def _tc(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise LinkError("tc is not installed (apt-get install iproute2)") from None
    if check and done.returncode != 0:
        raise LinkError(f"{' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


def installed(dev: str = DEV) -> bool:
    root = root_qdisc(_tc(["tc", "-j", "qdisc", "show", "dev", dev]).stdout)
    return root is not None and root["kind"] == "htb" and root["handle"] == f"{HANDLE}:"


def install(mbps: float, dev: str = DEV, guard_pid: int | None = None) -> None:
    """Install the link (`commands`), and a guard that removes it when `guard_pid` (default: this process) is
    gone. Refuses, changing nothing, when `lo` has a root qdisc already (someone's: never replaced)."""
    if os.geteuid() != 0:
        raise LinkError("shaping the loopback needs root (CAP_NET_ADMIN): run the benchmark as root")
    root = root_qdisc(_tc(["tc", "-j", "qdisc", "show", "dev", dev]).stdout)
    if root is not None and root["kind"] != "noqueue":
        raise LinkError(f"{dev} has a root qdisc already ({root['kind']} {root['handle']}): not replacing it; "
                        f"if it is a link left behind, `python -m realhbase.rpclink remove`")
    try:
        for args in commands(mbps, dev):
            _tc(args)
    except LinkError:
        remove(dev)
        raise
    subprocess.Popen([sys.executable, "-m", "realhbase.rpclink", "guard", "--pid", str(guard_pid or os.getpid()),
                      "--dev", dev], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True,
                     env={**os.environ, "PYTHONPATH": os.pathsep.join(
                         filter(None, [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                       os.environ.get("PYTHONPATH")]))})


def remove(dev: str = DEV) -> None:
    """Remove the link if it is installed (nothing else)."""
    if installed(dev):
        _tc(removal(dev))


def set_rate(mbps: float, dev: str = DEV) -> None:
    """Change the installed link's rate."""
    if not installed(dev):
        raise LinkError(f"no link on {dev} to change (rpclink.install first)")
    for args in rate_commands(mbps, dev):
        _tc(args)


def stats(dev: str = DEV) -> dict[str, int]:
    """Bytes that crossed each way since `install`."""
    return parse_stats(_tc(["tc", "-s", "-j", "qdisc", "show", "dev", dev]).stdout)


@contextlib.contextmanager
def link(mbps: float, dev: str = DEV) -> Iterator[None]:
    """The link for the length of a `with` (removed however it ends)."""
    install(mbps, dev)
    try:
        yield
    finally:
        remove(dev)


def _guard(pid: int, dev: str) -> None:
    """Wait for `pid` to end, then remove the link (the installer's own exit path may never run)."""
    while os.path.exists(f"/proc/{pid}"):
        time.sleep(1.0)
    with contextlib.suppress(LinkError):
        remove(dev)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m realhbase.rpclink", description=__doc__.split("\n")[0])
    p.add_argument("command", choices=("guard", "remove", "stats"))
    p.add_argument("--pid", type=int)
    p.add_argument("--dev", default=DEV)
    args = p.parse_args(argv)
    if args.command == "guard":
        _guard(args.pid, args.dev)
    elif args.command == "remove":
        remove(args.dev)
    else:
        print(json.dumps(stats(args.dev)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
