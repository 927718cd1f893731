"""Put and scan throughput through stock happybase against one minihbase cluster, at 0 ms and 5 ms injected
latency per RPC (a cross-datacenter link). Prints rows/s and the 5 ms / 0 ms ratio; asserts nothing.

    .venv/bin/python bench/bench_minihbase.py [--rows 20000]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bedkit.zookeeper import ZooKeeperServer  # noqa: E402
from minihbase.testing import MiniCluster  # noqa: E402

VALUE = b"v" * 100


def put_rows(table, prefix: bytes, rows: int, batch: int) -> float:
    started = time.perf_counter()
    if batch == 1:
        for i in range(rows):
            table.put(prefix + b"%08d" % i, {b"cf:a": VALUE, b"cf:b": b"%d" % i})
    else:
        with table.batch(batch_size=batch) as b:
            for i in range(rows):
                b.put(prefix + b"%08d" % i, {b"cf:a": VALUE, b"cf:b": b"%d" % i})
    return rows / (time.perf_counter() - started)


def scan_rows(table, prefix: bytes, expected: int, batch: int) -> float:
    started = time.perf_counter()
    n = sum(1 for _ in table.scan(row_prefix=prefix, batch_size=batch))
    elapsed = time.perf_counter() - started
    if n != expected:
        raise SystemExit(f"scan returned {n} rows, expected {expected}")
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20000, help="rows per batched workload")
    args = parser.parse_args()
    single = max(args.rows // 40, 100)
    workloads = [
        ("put, 1000 rows per mutateRows", lambda t, p: put_rows(t, p, args.rows, 1000), args.rows),
        ("put, 100 rows per mutateRows", lambda t, p: put_rows(t, p, args.rows, 100), args.rows),
        (f"put, 1 row per RPC ({single} rows)", lambda t, p: put_rows(t, p, single, 1), single),
    ]
    results: dict[str, dict[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-minihbase-") as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zookeeper").start()
        try:
            cluster = MiniCluster.start(zk.hosts, Path(tmp), "bench", region_servers=3)
            try:
                cluster.create_table("bench", {"cf": {"max_versions": 1}}, split_keys=[b"b", b"c"])
                conn = cluster.connection(timeout=120000)
                table = conn.table("bench")
                put_rows(table, b"warmup-", args.rows, 1000)  # first writes pay one-off costs: not measured
                scan_rows(table, b"warmup-", args.rows, 1000)
                for latency in (0.0, 5.0):
                    cluster.set_latency(latency)
                    for i, (name, run, rows) in enumerate(workloads):
                        prefix = b"abc"[i:i + 1] + b"-%d-" % int(latency)
                        results.setdefault(name, {})[latency] = run(table, prefix)
                        if i == 0:
                            for scan_batch in (1000, 100):
                                results.setdefault(f"scan, {scan_batch} rows per scannerGetList", {})[latency] = \
                                    scan_rows(table, prefix, rows, scan_batch)
                conn.close()
            finally:
                cluster.stop()
        finally:
            zk.stop()
    print(f"minihbase through happybase, 3 region servers, rows of 2 cells (~110 bytes); {args.rows} rows")
    print(f"{'workload':42} {'0 ms rows/s':>12} {'5 ms rows/s':>12} {'5ms/0ms':>8}")
    for name, by_latency in results.items():
        fast, slow = by_latency[0.0], by_latency[5.0]
        print(f"{name:42} {fast:12.0f} {slow:12.0f} {slow / fast:8.2f}")


if __name__ == "__main__":
    main()
