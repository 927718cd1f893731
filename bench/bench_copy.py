"""The copy job's speed and memory, as ratios measured in one run against baselines of the same run.

Figures (printed, never asserted):
1. copy rows/s (jobs/copy_table.py on Spark local[2], session already started) against
   a. a naive single-process happybase copy: scan, then one mutateRowTs per row (per row and timestamp);
   b. the source's raw scan rate: one happybase-style scan of the whole table, nothing written;
   at 0 ms and at 5 ms injected latency per Thrift call (both clusters: a cross-datacenter link).
2. peak memory of one copy worker (a process running copy_partition on a one-region table) when the table
   grows tenfold: peak RSS and the peak of Python allocations (tracemalloc). Flat means streaming.
3. (context) one partition's copy rows/s at 5 ms by number of writer connections.

Rows: half share a timestamp with ~500 others (a bulk load), half carry a timestamp of their own (the worst
case for Thrift1, whose mutateRowsTs takes one timestamp per call).

    .venv/bin/python bench/bench_copy.py [--rows 20000] [--rows-at-5ms 3000] [--memory-rows 20000]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from bench.harness import clusters_and_spark, set_latency  # noqa: E402

SPLITS = [b"%02x" % b for b in (0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0)]
FAMILIES = {"a": {"max_versions": 1}, "b": {"max_versions": 1}}
BASE = 1_600_000_000_000


def key(i: int) -> bytes:
    return b"%02x-%07d" % ((i * 2654435761) % 256, i)


def row_ts(i: int) -> int:
    """Even rows share a timestamp with ~500 others (a bulk load), odd rows have their own."""
    return BASE + i // 500 if i % 2 == 0 else BASE + 10_000_000 + i


def load(cluster, table: str, rows: int, splits=SPLITS, families=FAMILIES) -> None:
    """`rows` rows of ~150 bytes in 2 families; even rows share timestamps by 500, odd rows have their own."""
    import happybase  # noqa: F401
    from Hbase_thrift import BatchMutation, Mutation

    cluster.create_table(table, families, splits)
    by_ts: dict[int, list] = {}
    for i in range(rows):
        by_ts.setdefault(row_ts(i), []).append(BatchMutation(row=key(i), mutations=[
            Mutation(column=b"a:x", value=b"x%d" % i + b"." * 60), Mutation(column=b"b:y", value=b"y" * 64)]))
    with closing(cluster.connection(timeout=120000)) as c:
        for ts, batches in by_ts.items():
            for j in range(0, len(batches), 2000):
                c.client.mutateRowsTs(table.encode(), batches[j:j + 2000], ts, {})


def raw_scan_rate(cluster, table: str) -> float:
    """Rows/s of one scan of the whole table (1000 rows per scannerGetList), nothing written."""
    started = time.perf_counter()
    with closing(cluster.connection(timeout=120000)) as c:
        n = sum(1 for _ in c.table(table).scan(batch_size=1000, include_timestamp=True))
    return n / (time.perf_counter() - started)


def naive_copy_rate(source, target, table: str, target_table: str) -> float:
    """The baseline: scan, then one mutateRowTs per row (and per distinct timestamp within the row)."""
    import happybase  # noqa: F401
    from Hbase_thrift import Mutation

    started = time.perf_counter()
    n = 0
    with closing(source.connection(timeout=120000)) as s, closing(target.connection(timeout=120000)) as t:
        for row, data in s.table(table).scan(batch_size=1000, include_timestamp=True):
            by_ts: dict[int, list] = {}
            for column, (value, ts) in data.items():
                by_ts.setdefault(ts, []).append(Mutation(column=column, value=value))
            for ts, mutations in by_ts.items():
                t.client.mutateRowTs(target_table.encode(), row, mutations, ts, {})
            n += 1
    return n / (time.perf_counter() - started)


def job_copy_rate(source, target, table: str, target_table: str, workdir: Path) -> tuple[float, dict]:
    from jobs import copy_table

    out = workdir / f"copy-{table}.json"
    started = time.perf_counter()
    rc = copy_table.main(["--source", source.connection_json, "--target", target.connection_json, "--table", table,
                          "--target-table", target_table, "--summary-file", str(out), "--log-level", "WARNING"])
    elapsed = time.perf_counter() - started
    summary = json.loads(out.read_text())
    assert rc == 0, summary  # a failed copy would make every figure meaningless
    return summary["rows"] / elapsed, summary


WORKER = r"""
import json, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
from hbase_migration.copy import CopyOptions, copy_partition
from hbase_migration.jobargs import cluster_from_text
from hbase_migration.partitions import Partition
source, target = cluster_from_text("source", sys.argv[2]), cluster_from_text("target", sys.argv[3])
table = sys.argv[4]
tracemalloc.start()
started = time.perf_counter()
result = copy_partition(source, target, Partition(table, 0, b"", b"", "r", "p"), CopyOptions(table))
elapsed = time.perf_counter() - started
# VmHWM: this process's own peak RSS (ru_maxrss would include the parent's, inherited across fork+exec)
hwm_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rows": result.rows, "seconds": elapsed, "peak_rss_mib": hwm_kib / 1024,
                  "peak_python_mib": tracemalloc.get_traced_memory()[1] / 2**20}))
"""


def worker_memory(source, target, table: str) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, str(REPO), source.connection_json,
                          target.connection_json, table], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def writers_scan(source, target, table: str, target_table: str) -> list[tuple[int, float]]:
    from hbase_migration.copy import CopyOptions, copy_partition
    from hbase_migration.jobargs import cluster_from_text
    from hbase_migration.partitions import Partition

    src, dst = cluster_from_text("source", source.connection_json), cluster_from_text("target", target.connection_json)
    out = []
    for writers in (1, 4, 16, 32):
        r = copy_partition(src, dst, Partition(table, 0, b"", b"20", "r", f"w{writers}"),
                           CopyOptions(table, target_table=target_table, writers=writers))
        out.append((writers, r.rows / r.elapsed_s))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=50_000, help="table size at 0 ms")
    p.add_argument("--rows-at-5ms", type=int, default=3_000, help="table size at 5 ms (the naive copy is slow)")
    p.add_argument("--memory-rows", type=int, default=20_000, help="the small table of the memory figure (x10)")
    args = p.parse_args(argv)
    figures: dict = {}
    with clusters_and_spark("bench-copy") as (workdir, dc1, dc2):
        for latency, rows in ((0, args.rows), (5, args.rows_at_5ms)):
            src_t, naive_t, job_t = f"src_{latency}", f"naive_{latency}", f"job_{latency}"
            load(dc1, src_t, rows)
            for t in (naive_t, job_t):
                dc2.create_table(t, FAMILIES, SPLITS)
            set_latency(latency, dc1, dc2)
            scan = raw_scan_rate(dc1, src_t)
            naive = naive_copy_rate(dc1, dc2, src_t, naive_t)
            job, summary = job_copy_rate(dc1, dc2, src_t, job_t, workdir)
            figures[f"{latency}ms"] = {
                "rows": rows, "raw_scan_rows_per_s": round(scan), "naive_copy_rows_per_s": round(naive),
                "job_copy_rows_per_s": round(job), "job_vs_naive": round(job / naive, 2),
                "job_vs_raw_scan": round(job / scan, 2), "job_write_calls": summary["write_calls"],
            }
            if latency == 5:
                dc2.create_table("writers_5", FAMILIES, SPLITS)
                figures["5ms"]["one_partition_rows_per_s_by_writers"] = {
                    str(w): round(r) for w, r in writers_scan(dc1, dc2, src_t, "writers_5")}
            set_latency(0, dc1, dc2)
        memory = {}
        for n in (args.memory_rows, args.memory_rows * 10):
            t = f"mem_{n}"
            load(dc1, t, n, splits=[])
            dc2.create_table(t, FAMILIES)
            memory[n] = worker_memory(dc1, dc2, t)
        small, big = memory[args.memory_rows], memory[args.memory_rows * 10]
        figures["worker_memory"] = {
            "rows": [args.memory_rows, args.memory_rows * 10],
            "peak_rss_mib": [round(small["peak_rss_mib"], 1), round(big["peak_rss_mib"], 1)],
            "peak_python_mib": [round(small["peak_python_mib"], 1), round(big["peak_python_mib"], 1)],
            "rss_ratio_10x_rows": round(big["peak_rss_mib"] / small["peak_rss_mib"], 2),
            "python_ratio_10x_rows": round(big["peak_python_mib"] / small["peak_python_mib"], 2),
        }
    for name in ("0ms", "5ms"):
        f = figures[name]
        print(f"{name:>4} latency, {f['rows']} rows: copy job {f['job_copy_rows_per_s']} rows/s = "
              f"{f['job_vs_naive']}x the naive copy ({f['naive_copy_rows_per_s']} rows/s), "
              f"{f['job_vs_raw_scan']}x the raw scan ({f['raw_scan_rows_per_s']} rows/s)")
    print(f"   5 ms, one partition by writer connections: {figures['5ms']['one_partition_rows_per_s_by_writers']}")
    m = figures["worker_memory"]
    print(f"worker memory, {m['rows'][0]} -> {m['rows'][1]} rows: peak RSS {m['peak_rss_mib'][0]} -> "
          f"{m['peak_rss_mib'][1]} MiB (x{m['rss_ratio_10x_rows']}), Python allocations "
          f"{m['peak_python_mib'][0]} -> {m['peak_python_mib'][1]} MiB (x{m['python_ratio_10x_rows']})")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
