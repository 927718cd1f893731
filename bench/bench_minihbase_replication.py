"""minihbase replication throughput: catch-up of a backlog queued behind a DISABLED peer, and live shipping
while a writer runs, at 0 ms and 5 ms injected latency per RPC on the peer cluster (the cross-datacenter link
every shipped batch crosses). Prints edits/s and seconds; asserts nothing (but checks that every edit arrived).

    .venv/bin/python bench/bench_minihbase_replication.py [--backlog 100000] [--live 20000]

Setup: dc1 and dc2, 3 region servers each, one ZooKeeper; a table pre-split in 3 regions (one per source
region server, so three sources ship in parallel), rows of one ~100 byte cell; peers and table-CFs through the
`hbase shell -n` lookalike, data through happybase, progress through each region server's `/jmx`.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bedkit.zookeeper import ZooKeeperServer  # noqa: E402
from minihbase.testing import MiniCluster  # noqa: E402

BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Replication"
VALUE = b"v" * 100


def shell(cluster: MiniCluster, *statements: str) -> None:
    proc = subprocess.run(cluster.endpoints["shell_command"], input="\n".join(statements) + "\n",
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"shell failed: {proc.stdout}{proc.stderr}")


def shipped(cluster: MiniCluster, peer: str) -> tuple[int, int]:
    """(shippedOps summed over region servers, largest sizeOfLogQueue) of a peer's normal queues."""
    ops = queue = 0
    for rs in cluster.region_servers:
        if rs["alive"]:
            bean = requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx", params={"qry": BEAN},
                                timeout=10).json()["beans"][0]
            ops += bean.get(f"source.{peer}.shippedOps", 0)
            queue = max(queue, bean.get(f"source.{peer}.sizeOfLogQueue", 0))
    return ops, queue


def wait_shipped(cluster: MiniCluster, peer: str, edits: int, timeout: float = 900.0) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        ops, queue = shipped(cluster, peer)
        if ops >= edits and queue <= 1:
            return time.perf_counter()
        time.sleep(0.02)
    raise SystemExit(f"peer {peer}: only {shipped(cluster, peer)[0]} of {edits} edits shipped in {timeout}s")


def write(table, prefix: bytes, rows: int) -> float:
    started = time.perf_counter()
    with table.batch(batch_size=1000, timestamp=1_000_000) as b:  # an old timestamp: kept on the peer
        for i in range(rows):
            b.put(prefix + b"%08d" % i, {b"cf:a": VALUE})
    return time.perf_counter() - started


def check(src, dst, prefix: bytes, rows: int) -> None:
    """Every edit arrived with its timestamp: compare a sample, and the count."""
    for i in range(0, rows, max(1, rows // 50)):
        key = prefix + b"%08d" % i
        if dst.row(key, include_timestamp=True) != src.row(key, include_timestamp=True):
            raise SystemExit(f"row {key!r} differs on the peer")
    n = sum(1 for _ in dst.scan(row_prefix=prefix, batch_size=5000, columns=[b"cf:a"]))
    if n != rows:
        raise SystemExit(f"{n} rows of {prefix!r} on the peer, expected {rows}")


def run(dc1: MiniCluster, dc2: MiniCluster, latency: float, backlog: int, live: int) -> dict:
    name = f"bench{int(latency)}"
    peer = str(10 + int(latency))
    for cluster in (dc1, dc2):
        cluster.create_table(name, {"cf": {"max_versions": 1, "replication_scope": 1}}, split_keys=[b"b", b"c"])
    dc2.set_latency(latency)
    src = dc1.connection(timeout=300000).table(name)
    dst = dc2.connection(timeout=300000).table(name)
    dc1.roll_wals()
    shell(dc1, f"add_peer '{peer}', CLUSTER_KEY => \"{dc2.cluster_key}\", TABLE_CFS => {{'{name}' => []}}, "
               "STATE => 'DISABLED'")
    # Backlog: every edit queued while the peer is disabled, then shipped once it is enabled.
    per_prefix = backlog // 3
    write_s = sum(write(src, p + b"-backlog-", per_prefix) for p in (b"a", b"b", b"c"))
    edits = per_prefix * 3
    queued = shipped(dc1, peer)[1]
    started = time.perf_counter()
    shell(dc1, f"enable_peer '{peer}'")
    catch_up = wait_shipped(dc1, peer, edits) - started
    for p in (b"a", b"b", b"c"):
        check(src, dst, p + b"-backlog-", per_prefix)
    # Live: a writer runs with the peer enabled; time until its last edit is shipped.
    per_prefix_live = live // 3
    started = time.perf_counter()
    live_write = sum(write(src, p + b"-live-", per_prefix_live) for p in (b"a", b"b", b"c"))
    done = wait_shipped(dc1, peer, edits + per_prefix_live * 3)
    live_total = done - started
    for p in (b"a", b"b", b"c"):
        check(src, dst, p + b"-live-", per_prefix_live)
    shell(dc1, f"remove_peer '{peer}'")
    return {"edits": edits, "write_s": write_s, "queued_wals": queued, "catch_up_s": catch_up,
            "live_edits": per_prefix_live * 3, "live_write_s": live_write, "live_total_s": live_total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backlog", type=int, default=100_000, help="edits queued behind a disabled peer")
    parser.add_argument("--live", type=int, default=20_000, help="edits written while the peer is enabled")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-replication-") as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zookeeper").start()
        try:
            dc1 = MiniCluster.start(zk.hosts, Path(tmp), "dc1", region_servers=3)
            dc2 = MiniCluster.start(zk.hosts, Path(tmp), "dc2", region_servers=3)
            try:
                for latency in (0.0, 5.0):
                    results[latency] = run(dc1, dc2, latency, args.backlog, args.live)
            finally:
                dc2.stop()
                dc1.stop()
        finally:
            zk.stop()
    print("minihbase replication dc1 -> dc2, 3 region servers each, rows of one ~100 byte cell, "
          "batches <= 5000 entries / 4 MiB")
    print(f"{'figure':52} {'0 ms':>10} {'5 ms':>10} {'5ms/0ms':>8}")

    def line(label: str, fast: float, slow: float, fmt: str = "{:10.0f}") -> None:
        print(f"{label:52} {fmt.format(fast)} {fmt.format(slow)} {slow / fast if fast else 0:8.2f}")

    fast, slow = results[0.0], results[5.0]
    line(f"backlog written (edits/s, {fast['edits']} edits)", fast["edits"] / fast["write_s"],
         slow["edits"] / slow["write_s"])
    line("WALs queued per source at enable (max)", fast["queued_wals"], slow["queued_wals"])
    line("backlog catch-up time (s)", fast["catch_up_s"], slow["catch_up_s"], "{:10.2f}")
    line("backlog shipped (edits/s)", fast["edits"] / fast["catch_up_s"], slow["edits"] / slow["catch_up_s"])
    line(f"live: written and shipped (edits/s, {fast['live_edits']} edits)",
         fast["live_edits"] / fast["live_total_s"], slow["live_edits"] / slow["live_total_s"])
    line("live: last edit shipped after the writer ended (s)", fast["live_total_s"] - fast["live_write_s"],
         slow["live_total_s"] - slow["live_write_s"], "{:10.2f}")


if __name__ == "__main__":
    main()
