"""The verify job's speed, as a ratio to both sides scanned at the same time, measured in one run; its memory as
the table grows tenfold.

Cases: 0 ms and 5 ms injected latency per Thrift call on both clusters (a cross-datacenter link), a table with
one version per column (v1) and one whose family keeps three (v3), 30k and 100k rows, a clean copy and one with
20 differing rows spread over the table. For each case:
- verify rows/s: jobs/verify_table.py (level content, every version, no end time, Spark local[2], session already
  started), timed from the job's call to its summary, so its fixed cost (checks, Spark job, connections) counts;
- the limit on one machine: both sides scanned at the same time (two threads, one Thrift2 scan of every version
  each, 1000 rows a call, nothing compared), measured right before, and the ratio verify / both-sides.
Each pair is measured `--repeat` times; the ratio printed is the median (this machine is shared: a single pair
swings with the neighbours' load).
Memory: peak RSS and Python allocations of one verify worker (a process running verify_partition on a one-region
table) at `--memory-rows` and at ten times that many.

Figures are printed, never asserted; the last line is one JSON object mapping each case
(`<latency>ms_<v1|v3>_<rows>_<clean|20diffs>`) to its `vs_both_sides_scan` ratio.

    .venv/bin/python bench/bench_verify.py [--rows 30000,100000] [--latencies 0,5] [--repeat 3]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from bench.bench_copy import key, load, row_ts  # noqa: E402
from bench.harness import clusters_and_spark, set_latency, thrift2  # noqa: E402

DIFFS = 20


def both_sides_scan_rate(source, target, table: str) -> float:
    """Rows/s when both sides are scanned at once (every version, 1000 rows per call): the time of the slower."""
    counts = {}

    def scan(name, cluster):
        client = thrift2(cluster)
        try:
            counts[name] = sum(1 for _ in client.scan(table, batch=1000))
        finally:
            client.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=scan, args=(n, c)) for n, c in (("source", source), ("target", target))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max(counts.values()) / (time.perf_counter() - started)


def verify_rate(source, target, table: str, workdir: Path) -> tuple[float, dict]:
    from hbase_migration.jobs import verify_table

    out = workdir / f"verify-{table}-{time.monotonic_ns()}.json"
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the job's summary line: read from its file instead
        verify_table.main(["--source", source.connection_json, "--target", target.connection_json, "--table",
                           table, "--summary-file", str(out), "--log-level", "WARNING"])
    elapsed = time.perf_counter() - started
    result = json.loads(out.read_text())
    return max(result["source_rows"], result["target_rows"]) / elapsed, result


def measure(dc1, dc2, table: str, workdir: Path, latency: int, repeat: int, differing: int) -> dict:
    """Median verify rate and ratio over `repeat` back-to-back pairs (both-sides scan, then the verify job)."""
    set_latency(latency, dc1, dc2)
    try:
        pairs = []
        for _ in range(repeat):
            both = both_sides_scan_rate(dc1, dc2, table)
            rate, result = verify_rate(dc1, dc2, table, workdir)
            # a wrong verdict would make the figure meaningless
            assert result["content_different"] == differing and result["matching"] + differing == result[
                "source_rows"], result
            pairs.append((rate / both, rate, both, result["source_cells"]))
    finally:
        set_latency(0, dc1, dc2)
    ratio, rate, both, cells = sorted(pairs)[len(pairs) // 2]
    return {"vs_both_sides_scan": round(ratio, 2), "verify_rows_per_s": round(rate),
            "both_sides_scan_rows_per_s": round(both), "cells_compared_a_side": cells,
            "ratios": [round(p[0], 2) for p in pairs]}


WORKER = r"""
import json, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.data.partitions import Partition
from hbase_migration.data.verify import VerifyOptions, verify_partition
source, target = cluster_from_text("source", sys.argv[2]), cluster_from_text("target", sys.argv[3])
table = sys.argv[4]
tracemalloc.start()
started = time.perf_counter()
verdict = verify_partition(source, target, Partition(table, 0, b"", b"", "r", "p"), VerifyOptions(table))
elapsed = time.perf_counter() - started
assert verdict.counts["matching"] == verdict.source_rows, verdict
hwm_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rows": verdict.source_rows, "seconds": elapsed, "peak_rss_mib": hwm_kib / 1024,
                  "peak_python_mib": tracemalloc.get_traced_memory()[1] / 2**20}))
"""


def worker_memory(source, target, table: str) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, str(REPO), source.connection_json,
                          target.connection_json, table], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="30000,100000", help="table sizes, comma-separated")
    p.add_argument("--latencies", default="0,5", help="injected link latencies in ms, comma-separated")
    p.add_argument("--kinds", default="v1,v3", help="tables: v1 (one version), v3 (a family keeping three)")
    p.add_argument("--repeat", type=int, default=3, help="pairs measured per case (the median is reported)")
    p.add_argument("--memory-rows", type=int, default=10_000, help="the small table of the memory figure (x10)")
    p.add_argument("--backend", choices=("minihbase", "realhbase"), default="minihbase",
                   help="the clusters: minihbase (default), or real HBase (realhbase; 0 ms latency only)")
    args = p.parse_args(argv)
    sizes = [int(r) for r in args.rows.split(",")]
    latencies = [int(x) for x in args.latencies.split(",")]
    if args.backend == "realhbase":
        latencies = [x for x in latencies if x == 0]  # no latency injection on real HBase
    cases: dict = {}
    with clusters_and_spark("bench-verify", args.backend) as (workdir, dc1, dc2):
        for kind in args.kinds.split(","):
            for rows in sizes:
                table = f"v_{kind}_{rows}"
                load(dc1, table, rows, kind)
                load(dc2, table, rows, kind)  # the same cells and timestamps: a clean copy
                for latency in latencies:
                    cases[f"{latency}ms_{kind}_{rows}_clean"] = measure(dc1, dc2, table, workdir, latency,
                                                                        args.repeat, 0)
                client = thrift2(dc2)
                try:  # same cell, another value, in 20 rows spread over the table
                    client.put(table, [(key(i), {b"b:y": b"changed"}, row_ts(i))
                                       for i in range(0, rows, rows // DIFFS)][:DIFFS])
                finally:
                    client.close()
                for latency in latencies:
                    cases[f"{latency}ms_{kind}_{rows}_{DIFFS}diffs"] = measure(dc1, dc2, table, workdir, latency,
                                                                              args.repeat, DIFFS)
        memory = {}
        for n in (args.memory_rows, args.memory_rows * 10):
            t = f"mem_{n}"
            load(dc1, t, n, splits=[])
            load(dc2, t, n, splits=[])
            memory[n] = worker_memory(dc1, dc2, t)
    small, big = memory[args.memory_rows], memory[args.memory_rows * 10]
    memory_figures = {
        "rows": [args.memory_rows, args.memory_rows * 10],
        "peak_rss_mib": [round(small["peak_rss_mib"], 1), round(big["peak_rss_mib"], 1)],
        "peak_python_mib": [round(small["peak_python_mib"], 1), round(big["peak_python_mib"], 1)],
        "rss_ratio_10x_rows": round(big["peak_rss_mib"] / small["peak_rss_mib"], 2),
        "python_ratio_10x_rows": round(big["peak_python_mib"] / small["peak_python_mib"], 2),
    }
    for name, f in cases.items():
        print(f"{name:>24}: verify {f['verify_rows_per_s']} rows/s ({f['cells_compared_a_side']} cells a side) = "
              f"{f['vs_both_sides_scan']}x both sides scanned at once ({f['both_sides_scan_rows_per_s']} rows/s); "
              f"ratios {f['ratios']}")
    print(f"verify worker memory, {memory_figures['rows'][0]} -> {memory_figures['rows'][1]} rows: peak RSS "
          f"{memory_figures['peak_rss_mib'][0]} -> {memory_figures['peak_rss_mib'][1]} MiB "
          f"(x{memory_figures['rss_ratio_10x_rows']}), Python allocations {memory_figures['peak_python_mib'][0]} "
          f"-> {memory_figures['peak_python_mib'][1]} MiB (x{memory_figures['python_ratio_10x_rows']})")
    print(json.dumps({"cases": cases, "memory": memory_figures}, sort_keys=True))
    print(json.dumps({name: f["vs_both_sides_scan"] for name, f in cases.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
