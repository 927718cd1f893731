"""The copy's load-aware throttle: what it costs the copy and what it saves the source's clients.

Figures (printed, never asserted). The source has one region server with 4 RPC handlers, each call holding its
handler 5 ms (`/control/latency handler_ms`, slow storage), so 16 client threads (`minihbase/loadgen.py`, single
puts through stock happybase) keep its general call queue full. Each scenario runs for the same window:
1. copy alone, no load: the copy's rows/s (the reference);
2. load alone, no copy: the clients' put latency (the reference for them);
3. load + copy without the throttle: the copy's rows/s and the clients' latency;
4. load + copy with the throttle (`max_load numCallsInGeneralQueue=4,write_p99_ms=100`, a sample a second): the
   same figures, and the throttle's lowest factor.
The copy's rate is measured on the target (its region server's `writeRequestCount`, which only the copy moves);
4 partitions run at once on threads of this process (`LocalExecutor`, the CLI's copy), each capped at `--rows-per-s`
(the copy's own throttle, so it outlasts the window); the load throttle is the same code as under Spark (driver
governor, HTTP decision, gate in each task).

    .venv/bin/python bench/bench_throttle.py [--rows 240000] [--window-s 15] [--rows-per-s 2500] [--scan-batch-rows 100]
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

import requests  # noqa: E402

from bedkit.zookeeper import ZooKeeperServer  # noqa: E402
from minihbase.loadgen import LoadGenerator  # noqa: E402
from minihbase.testing import MiniCluster  # noqa: E402

SERVER = "Hadoop:service=HBase,name=RegionServer,sub=Server"
MAX_LOAD = "numCallsInGeneralQueue=4,write_p99_ms=100"
SPLITS = [b"r3", b"r5", b"r7"]  # 4 regions: 4 copy tasks at once


def written(cluster: MiniCluster) -> int:
    return sum(requests.get(f"http://{rs['host']}:{rs['info_port']}/jmx", params={"qry": SERVER}, timeout=10)
               .json()["beans"][0]["writeRequestCount"] for rs in cluster.region_servers)


def scenario(dc1: MiniCluster, dc2: MiniCluster, target_table: str | None, load: bool, throttle: bool,
             args: argparse.Namespace) -> dict:
    from hbase_migration.data.copy import CopyOptions
    from hbase_migration.data.executors import LocalExecutor
    from hbase_migration.data.jobargs import cluster_from_text
    from hbase_migration.data.runner import run_copy
    from hbase_migration.data.throttle import LoadLimits

    out: dict = {}
    thread = None
    if target_table:
        dc2.create_table(target_table, {"d": {"max_versions": 1}}, split_keys=SPLITS)
        options = CopyOptions(table="src", target_table=target_table, scan_batch_rows=args.scan_batch_rows,
                              write_batch_cells=200, rows_per_s=args.rows_per_s)
        limits = LoadLimits(MAX_LOAD, "", sample_s=1.0) if throttle else None
        source, target = cluster_from_text("s", dc1.connection_json), cluster_from_text("t", dc2.connection_json)
        thread = threading.Thread(target=lambda: out.update(summary=run_copy(
            source, target, options, LocalExecutor(len(SPLITS) + 1), load_limits=limits)), daemon=True)
        thread.start()
        time.sleep(3)  # the copy at full speed before the window
    gen = None
    if load:
        dc1.set_handler_latency(5)
        gen = LoadGenerator(dc1.thrift_host, dc1.thrift_port, "load", threads=16, single_puts=True).start()
    before, started = written(dc2), time.monotonic()
    time.sleep(args.window_s / 2)
    middle, halfway = written(dc2), time.monotonic()
    time.sleep(args.window_s / 2)
    rows = written(dc2) - before
    elapsed = time.monotonic() - started
    late = (written(dc2) - middle) / (time.monotonic() - halfway)
    report = gen.stop() if gen is not None else None
    dc1.set_handler_latency(None)
    if thread is not None:
        thread.join(600)
    result = {"copy_rows_per_s": round(rows / elapsed) if target_table else None,
              # the second half of the window: the throttle has settled (it halves its factor once a second)
              "copy_rows_per_s_second_half": round(late) if target_table else None}
    if report is not None:
        result["client_put_latency_ms"] = report.latency_ms
        result["client_ops_per_s"] = report.ops_per_s
    if out.get("summary", {}).get("load_control"):
        lc = out["summary"]["load_control"]
        result["throttle"] = {k: lc[k] for k in ("samples", "slow_samples", "min_factor", "final_state")}
    return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=240_000)
    p.add_argument("--window-s", type=float, default=15.0)
    p.add_argument("--rows-per-s", type=float, default=2500.0, help="the copy's own cap per task (rows_per_s)")
    p.add_argument("--scan-batch-rows", type=int, default=100, help="rows per scanner call")
    args = p.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-throttle-"))
    zk = ZooKeeperServer(workdir / "zk")
    zk.start()
    dc1 = MiniCluster.start(zk.hosts, workdir, name="dc1", znode_parent="/hbase-thr-dc1", region_servers=1,
                            handler_count=4, metrics_period_s=1.0)
    dc2 = MiniCluster.start(zk.hosts, workdir, name="dc2", znode_parent="/hbase-thr-dc2", region_servers=1)
    try:
        dc1.create_table("src", {"d": {"max_versions": 1}}, split_keys=SPLITS)
        dc1.create_table("load", {"cf": {"max_versions": 1}})
        conn = dc1.connection()
        with conn.table("src").batch(batch_size=2000) as b:
            for i in range(args.rows):
                b.put(b"r%d%06d" % (i % 10, i), {b"d:v": b"x" * 50})
        conn.close()
        figures = {
            "setup": {"rows": args.rows, "window_s": args.window_s, "source_handlers": 4, "handler_ms": 5,
                      "load_threads": 16, "max_load": MAX_LOAD, "rows_per_s_per_task": args.rows_per_s,
                      "copy_tasks": len(SPLITS) + 1, "scan_batch_rows": args.scan_batch_rows},
            "copy_alone": scenario(dc1, dc2, "t1", False, False, args),
            "load_alone": scenario(dc1, dc2, None, True, False, args),
            "load_and_copy_unthrottled": scenario(dc1, dc2, "t2", True, False, args),
            "load_and_copy_throttled": scenario(dc1, dc2, "t3", True, True, args),
        }
        alone = figures["copy_alone"]["copy_rows_per_s"] or 1
        base = figures["load_alone"]["client_put_latency_ms"]
        for name in ("load_and_copy_unthrottled", "load_and_copy_throttled"):
            f = figures[name]
            f["copy_rate_vs_alone"] = round(f["copy_rows_per_s"] / alone, 3)
            f["client_p99_vs_load_alone"] = round(f["client_put_latency_ms"]["p99"] / base["p99"], 2)
            f["client_p50_vs_load_alone"] = round(f["client_put_latency_ms"]["p50"] / base["p50"], 2)
        print(json.dumps(figures, indent=1, sort_keys=True))
    finally:
        dc2.stop()
        dc1.stop()
        zk.stop()


if __name__ == "__main__":
    main()
