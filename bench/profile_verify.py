"""Where verify's time goes: one partition verified in this process, split into phases, against both sides scanned
at once, on minihbase dc1/dc2 (no Spark: the job's fixed cost is measured by bench_verify.py).

Phases (seconds, each on its own, same table): both sides scanned at once (the limit); one side scanned through the
toolkit's data path (Thrift2 decoding into cells); the comparison alone over rows already in memory (the
merge-join of `rowdiff.compare_sides`); the whole `verify_partition`, clean and with differing rows. Run under
py-spy for the stacks:

    .venv/bin/py-spy record --format raw -o /tmp/verify.txt --threads -- .venv/bin/python bench/profile_verify.py
    .venv/bin/python bench/profile_verify.py [--rows 30000] [--kind v1|v3] [--latency-ms 0]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from bench.bench_copy import key, load, row_ts  # noqa: E402
from bench.harness import set_latency, thrift2  # noqa: E402


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def both_sides(dc1, dc2, table: str) -> int:
    counts = {}

    def scan(name, cluster):
        client = thrift2(cluster)
        try:
            counts[name] = sum(1 for _ in client.scan(table, batch=1000))
        finally:
            client.close()

    threads = [threading.Thread(target=scan, args=(n, c)) for n, c in (("s", dc1), ("t", dc2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max(counts.values())


def main(argv=None) -> int:
    from bedkit.zookeeper import ZooKeeperServer
    from hbase_migration.data.datapath import open_data_path
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.data.partitions import Partition
    from hbase_migration.data.rowdiff import compare_sides
    from hbase_migration.data.verify import VerifyOptions, verify_partition
    from minihbase.testing import MiniCluster

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=30_000)
    p.add_argument("--kind", default="v1", choices=("v1", "v3"))
    p.add_argument("--latency-ms", type=float, default=0)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="profile-verify-"))
    zk = ZooKeeperServer(workdir / "zk")
    zk.start()
    dc1 = MiniCluster.start(zk.hosts, workdir, name="dc1", znode_parent="/hbase-prof-dc1")
    dc2 = MiniCluster.start(zk.hosts, workdir, name="dc2", znode_parent="/hbase-prof-dc2")
    figures: dict = {}
    try:
        table = "prof"
        load(dc1, table, args.rows, args.kind, splits=[])
        load(dc2, table, args.rows, args.kind, splits=[])
        set_latency(args.latency_ms, dc1, dc2)
        source = cluster_from_text("source", dc1.connection_json)
        target = cluster_from_text("target", dc2.connection_json)
        options = VerifyOptions(table)
        part = Partition(table, 0, b"", b"", "r", "p")
        for _ in range(args.repeat):
            figures.setdefault("both_sides_scan_s", []).append(round(timed(lambda: both_sides(dc1, dc2, table))[0], 3))

            def path_scan():
                with open_data_path(source) as path:
                    return [b for b in path.scan(table, b"", b"", versions=None, batch_rows=options.scan_batch_rows)]
            seconds, batches = timed(path_scan)
            figures.setdefault("one_side_data_path_scan_s", []).append(round(seconds, 3))
            rows = [r for b in batches for r in b]
            twin = [(row, list(cells)) for row, cells in rows]
            figures.setdefault("compare_pass_in_memory_s", []).append(
                round(timed(lambda: list(compare_sides(rows, twin, matching=False)))[0], 3))
            seconds, verdict = timed(lambda: verify_partition(source, target, part, options))
            assert verdict.counts["matching"] == args.rows, verdict
            figures.setdefault("verify_partition_clean_s", []).append(round(seconds, 3))
        client = thrift2(dc2)
        try:
            client.put(table, [(key(i), {b"b:y": b"changed"}, row_ts(i)) for i in range(0, args.rows, args.rows // 20)])
        finally:
            client.close()
        for _ in range(args.repeat):
            seconds, verdict = timed(lambda: verify_partition(source, target, part, options))
            assert verdict.counts["content_different"] == 20, verdict
            figures.setdefault("verify_partition_20_diffs_s", []).append(round(seconds, 3))
    finally:
        dc1.stop()
        dc2.stop()
        zk.stop()
    figures.update(rows=args.rows, kind=args.kind, latency_ms=args.latency_ms)
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
