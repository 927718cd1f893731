"""The copy's speed and memory, as ratios measured in one run against baselines of the same run.

Figures (printed, never asserted), at 0 ms and 5 ms injected latency per Thrift call (both clusters: a
cross-datacenter link), on a table with one version per column and on one whose family keeps three:
1. the copy job's rows/s (jobs/copy_table.py on Spark local[2], session already started, the Thrift2 data path)
   against
   a. the pipe baseline: one plain process that scans the source through Thrift2 (every version) and writes the
      same cells with putMultiple, 1000 rows per call, nothing else (no Spark, no bookkeeping, no overlap);
   b. the source's raw scan: the same Thrift2 scan, nothing written;
   c. (one-version table) the naive copy: a happybase scan, then one Thrift1 mutateRowTs per row;
   d. (context) the same job through the Thrift1 fallback.
2. peak memory of one copy worker (a process running copy_partition on a one-region table) when the table grows
   tenfold: peak RSS and the peak of Python allocations (tracemalloc). Flat means streaming.

Rows: ~150 bytes in 2 families; half share a timestamp with ~500 others (a bulk load), half carry their own.

`--data-path native` (real HBase): the native copy (HBase's own client in Spark's JVMs, raw) against, on the same
table of the same bed in the same run, in turns, medians of `--repeat` rounds: HBase's own CopyTable (local job
runner, --all.cells, every version; `vs_hbase_copytable` over its job's run, `vs_hbase_copytable_wall` over its
whole process) and the Thrift2 copy job (`vs_thrift2`); and the peak RSS of the JVM a native copy task runs in
on one row of `--wide-cells` cells against as many cells in rows of 10 (`rss_wide_vs_narrow`).

    .venv/bin/python bench/bench_copy.py [--rows 30000] [--rows-at-5ms 10000] [--naive-rows 2000] [--memory-rows 20000]
                                         [--backend realhbase]  (real HBase: the 0 ms figures only)
    .venv/bin/python bench/bench_copy.py --data-path native [--rows 30000] [--repeat 3] [--wide-cells 1000000]
                                         [--testbed .state/realhbase]  (a running bed, left running)
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

from bench.harness import clusters_and_spark, set_latency, thrift2  # noqa: E402

SPLITS = [b"%02x" % b for b in (0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0)]
TABLES = {  # name -> (families, versions written per cell of family a)
    "v1": ({"a": {"max_versions": 1}, "b": {"max_versions": 1}}, 1),
    "v3": ({"a": {"max_versions": 3}, "b": {"max_versions": 1}}, 3),
}
BASE = 1_600_000_000_000


def key(i: int) -> bytes:
    return b"%02x-%07d" % ((i * 2654435761) % 256, i)


def row_ts(i: int) -> int:
    """Even rows share a timestamp with ~500 others (a bulk load), odd rows have their own."""
    return BASE + i // 500 if i % 2 == 0 else BASE + 10_000_000 + i


def load(cluster, table: str, rows: int, kind: str = "v1", splits=SPLITS) -> None:
    """`rows` rows of ~150 bytes in families a and b; family a gets `versions` versions per cell."""
    families, versions = TABLES[kind]
    cluster.create_table(table, families, splits)
    client = thrift2(cluster)
    try:
        batch = []
        for i in range(rows):
            ts = row_ts(i)
            batch.append((key(i), {b"b:y": b"y" * 64}, ts))
            for v in range(versions):
                batch.append((key(i), {b"a:x": b"x%d-v%d" % (i, v) + b"." * 60}, ts - 1000 * v))
            if len(batch) >= 3000:
                client.put(table, batch)
                batch = []
        if batch:
            client.put(table, batch)
    finally:
        client.close()


def raw_scan_rate(cluster, table: str) -> float:
    """Rows/s of one Thrift2 scan of the whole table, every version, 1000 rows per call, nothing written."""
    client = thrift2(cluster)
    try:
        started = time.perf_counter()
        n = sum(1 for _ in client.scan(table, batch=1000))
        return n / (time.perf_counter() - started)
    finally:
        client.close()


def pipe_copy_rate(source, target, table: str, target_table: str) -> float:
    """The pipe baseline: scan every version through Thrift2, putMultiple the same cells, 1000 rows a call."""
    from demo.workload import ALL_VERSIONS, idl

    T = idl()
    src, dst = thrift2(source), thrift2(target)
    try:
        started = time.perf_counter()
        n = 0
        sid = src.client.openScanner(table.encode(), T.TScan(caching=1000, maxVersions=ALL_VERSIONS))
        while True:
            results = src.client.getScannerRows(sid, 1000)
            if not results:
                break
            dst.client.putMultiple(target_table.encode(), [T.TPut(row=r.row, columnValues=r.columnValues)
                                                           for r in results])
            n += len(results)
        src.client.closeScanner(sid)
        return n / (time.perf_counter() - started)
    finally:
        src.close()
        dst.close()


def naive_copy_rate(source, target, table: str, target_table: str) -> float:
    """The naive copy: a happybase scan, then one mutateRowTs per row (and per distinct timestamp in it)."""
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


def connection(cluster, data_path: str) -> str:
    conn = json.loads(cluster.connection_json)
    if data_path == "thrift1":
        conn["extra"].pop("thrift2_servers", None)
    if data_path in ("native", "thrift2"):  # thrift2 named: `auto` would pick native on real HBase
        conn["extra"]["data_path"] = data_path
    return json.dumps(conn)


def job_copy_rate(source, target, table: str, target_table: str, workdir: Path,
                  data_path: str = "thrift2") -> tuple[float, dict]:
    from hbase_migration.jobs import copy_table

    out = workdir / f"copy-{target_table}.json"
    started = time.perf_counter()
    rc = copy_table.main(["--source", connection(source, data_path), "--target", connection(target, data_path),
                          "--table", table, "--target-table", target_table, "--summary-file", str(out),
                          "--log-level", "WARNING"])
    elapsed = time.perf_counter() - started
    summary = json.loads(out.read_text())
    assert rc == 0, summary  # a failed copy would make every figure meaningless
    return summary["rows"] / elapsed, summary


WORKER = r"""
import json, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
from hbase_migration.data.copy import CopyOptions, copy_partition
from hbase_migration.data.jobargs import cluster_from_text
from hbase_migration.data.partitions import Partition
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


def measure(dc1, dc2, workdir: Path, latency: int, kind: str, rows: int, naive_rows: int) -> dict:
    src = f"src_{kind}_{latency}"
    load(dc1, src, rows, kind)
    families = TABLES[kind][0]
    targets = {name: f"{name}_{kind}_{latency}" for name in ("pipe", "job", "job1", "naive")}
    for t in targets.values():
        dc2.create_table(t, families, SPLITS)
    set_latency(latency, dc1, dc2)
    try:
        scan = raw_scan_rate(dc1, src)
        pipe = pipe_copy_rate(dc1, dc2, src, targets["pipe"])
        job, summary = job_copy_rate(dc1, dc2, src, targets["job"], workdir)
        figures = {"rows": rows, "cells": summary["cells"], "raw_scan_rows_per_s": round(scan),
                   "pipe_rows_per_s": round(pipe), "job_rows_per_s": round(job),
                   "job_vs_pipe": round(job / pipe, 2), "job_vs_raw_scan": round(job / scan, 2),
                   "job_write_calls": summary["write_calls"]}
        if latency == 0:
            job1, _ = job_copy_rate(dc1, dc2, src, targets["job1"], workdir, data_path="thrift1")
            figures.update(thrift1_job_rows_per_s=round(job1), job_vs_thrift1_job=round(job / job1, 2))
        if kind == "v1":
            naive_src = f"naive_src_{latency}"
            set_latency(0, dc1, dc2)
            load(dc1, naive_src, naive_rows, kind)
            set_latency(latency, dc1, dc2)
            naive = naive_copy_rate(dc1, dc2, naive_src, targets["naive"])
            figures.update(naive_rows=naive_rows, naive_rows_per_s=round(naive), job_vs_naive=round(job / naive, 1))
        return figures
    finally:
        set_latency(0, dc1, dc2)


# --------------------------------------------------------------------------------------------------
# --data-path native: the native copy beside HBase's own CopyTable and the Thrift2 copy, on one real bed


def copytable_rate(source, target, table: str, target_table: str, rows: int, workdir: Path) -> dict:
    """HBase's own org.apache.hadoop.hbase.mapreduce.CopyTable (Hadoop's local job runner, one JVM), raw (its
    --all.cells) and every version, as the native copy: rows/s over its job's own run (from "Running job" to
    "completed successfully" in its log: its JVM's start and the job's submission left out) and over the whole
    process. The bed's class path plus hbase-mapreduce and the local job runner (realhbase/jars.py)."""
    import re
    from datetime import datetime

    from realhbase import jars
    from realhbase.config import JDK17_FLAGS

    resolved = jars.resolve(progress=False)
    classpath = os.pathsep.join([source.endpoints["conf_dir"], *resolved.classpath, *jars.mapreduce_jars(False)])
    cmd = [resolved.java, "-Xmx1g", *JDK17_FLAGS, "-cp", classpath, "org.apache.hadoop.hbase.mapreduce.CopyTable",
           "-Dmapreduce.framework.name=local", "-Dfs.defaultFS=file:///",
           f"-Dhadoop.tmp.dir={workdir / 'copytable-tmp'}", "-Dhbase.client.scanner.caching=500",
           f"--peer.adr={target.endpoints['cluster_key']}", f"--new.name={target_table}",
           f"--versions={2**31 - 1}", "--all.cells", table]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    log = proc.stdout + proc.stderr
    if proc.returncode != 0 or "completed successfully" not in log:
        raise RuntimeError(f"CopyTable failed (exit {proc.returncode}): {log[-2000:]}")

    def at(pattern: str) -> float:
        line = next(line for line in log.splitlines() if re.search(pattern, line))
        return datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S,%f").timestamp()

    job_s = at(r"Job job_\S+ completed successfully") - at(r"Running job: job_")
    written = re.search(r"Map output records=(\d+)", log)
    return {"rows_per_s": rows / job_s, "wall_rows_per_s": rows / wall, "job_s": round(job_s, 2),
            "wall_s": round(wall, 2), "mutations": int(written.group(1)) if written else None}


NATIVE_WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from hbase_migration.data import executors
spark, _ = executors.spark_session("rss", "local[1]")
from hbase_migration.jobs import copy_table
started = time.perf_counter()
rc = copy_table.main(["--source", sys.argv[2], "--target", sys.argv[3], "--table", sys.argv[4], "--summary-file",
                      sys.argv[5], "--log-level", "WARNING"])
seconds = time.perf_counter() - started
pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # the JVM the copy task ran in (local[1])
hwm_kib = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmHWM:"))
print(json.dumps({"rc": rc, "seconds": round(seconds, 2), "jvm_peak_rss_mib": round(hwm_kib / 1024, 1)}))
"""


def native_task_memory(source, target, table: str, workdir: Path) -> dict:
    """Peak RSS of the JVM a native copy task runs in (Spark local[1]: the driver's, in a process of its own)."""
    out = workdir / f"rss-{table}.json"
    proc = subprocess.run([sys.executable, "-c", NATIVE_WORKER, str(REPO), connection(source, "native"),
                           connection(target, "native"), table, str(out)], capture_output=True, text=True)
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["rc"] == 0, proc.stderr[-2000:]
    summary = json.loads(out.read_text())
    figures.update(rows=summary["rows"], cells=summary["cells"])
    return figures


def native(args) -> int:
    """The native copy (jobs/copy_table.py with data_path native) against HBase's CopyTable and the Thrift2 copy on
    the same table of the same bed, in turns (`--repeat` rounds, medians); then a native task's memory on one row
    of `--wide-cells` cells against as many cells in rows of 10."""
    import statistics

    from bench import bench_wide_rows

    figures: dict = {}
    with clusters_and_spark("bench-copy-native", "realhbase", args.testbed) as (workdir, dc1, dc2):
        tag = time.strftime("%H%M%S")
        src = f"nat_src_{tag}"
        load(dc1, src, args.rows, "v3")
        families = TABLES["v3"][0]
        rates: dict[str, list[float]] = {"native": [], "copytable": [], "copytable_wall": [], "thrift2": []}
        cells = None
        for n in range(args.repeat):
            for kind in ("copytable", "native", "thrift2")[n % 3:] + ("copytable", "native", "thrift2")[:n % 3]:
                target = f"nat_{kind}_{tag}_{n}"
                dc2.create_table(target, families, SPLITS)
                if kind == "copytable":
                    ct = copytable_rate(dc1, dc2, src, target, args.rows, workdir)
                    rates["copytable"].append(ct["rows_per_s"])
                    rates["copytable_wall"].append(ct["wall_rows_per_s"])
                else:
                    rate, summary = job_copy_rate(dc1, dc2, src, target, workdir, data_path=kind)
                    rates[kind].append(rate)
                    if kind == "native":
                        cells = summary["cells"]
        med = {k: statistics.median(v) for k, v in rates.items()}
        figures["copy"] = {
            "rows": args.rows, "cells": cells, "repeat": args.repeat,
            "rows_per_s": {k: round(v) for k, v in med.items()},
            "vs_hbase_copytable": round(med["native"] / med["copytable"], 2),
            "vs_hbase_copytable_wall": round(med["native"] / med["copytable_wall"], 2),
            "vs_thrift2": round(med["native"] / med["thrift2"], 2),
            "runs": {k: [round(x) for x in v] for k, v in rates.items()},
        }
        if args.wide_cells:
            memory = {}
            for name, per_row in (("narrow", bench_wide_rows.NARROW_CELLS), ("wide", args.wide_cells)):
                table = f"nat_{name}_{tag}"
                bench_wide_rows.load(dc1, table, args.wide_cells, per_row)
                dc2.create_table(table, {"f": {"max_versions": 1}})
                memory[name] = native_task_memory(dc1, dc2, table, workdir)
            figures["task_memory"] = {
                **memory, "cells": args.wide_cells,
                "rss_wide_vs_narrow": round(memory["wide"]["jvm_peak_rss_mib"] / memory["narrow"]["jvm_peak_rss_mib"],
                                            2)}
    c = figures["copy"]
    print(f"native copy: {c['rows']} rows ({c['cells']} cells, 3 versions), median of {c['repeat']}: "
          f"{c['rows_per_s']['native']} rows/s = {c['vs_hbase_copytable']}x HBase's CopyTable "
          f"({c['rows_per_s']['copytable']} over its job; {c['vs_hbase_copytable_wall']}x its whole process), "
          f"{c['vs_thrift2']}x the Thrift2 copy job ({c['rows_per_s']['thrift2']})")
    m = figures.get("task_memory")
    if m:
        print(f"native copy task's JVM: one row of {m['cells']} cells: peak RSS {m['wide']['jvm_peak_rss_mib']} MiB "
              f"({m['wide']['seconds']} s); {m['narrow']['rows']} rows of 10: {m['narrow']['jvm_peak_rss_mib']} MiB "
              f"= x{m['rss_wide_vs_narrow']}")
    print(json.dumps(figures, sort_keys=True))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=30_000, help="table size at 0 ms")
    p.add_argument("--rows-at-5ms", type=int, default=10_000, help="table size at 5 ms")
    p.add_argument("--naive-rows", type=int, default=2_000, help="rows the naive copy copies (it is slow)")
    p.add_argument("--memory-rows", type=int, default=20_000, help="the small table of the memory figure (x10)")
    p.add_argument("--only", help="measure only these, e.g. 0ms_v1,5ms_v3 (and skip the memory figure)")
    p.add_argument("--backend", choices=("minihbase", "realhbase"), default="minihbase",
                   help="the clusters: minihbase (default), or real HBase (realhbase; 0 ms latency only)")
    p.add_argument("--data-path", choices=("thrift2", "native"), default="thrift2",
                   help="native: the native copy against HBase's own CopyTable and the Thrift2 copy on real HBase "
                        "(JSON keys vs_hbase_copytable, vs_thrift2) and a native task's memory on a wide row")
    p.add_argument("--repeat", type=int, default=3, help="native: rounds of the three copies (medians)")
    p.add_argument("--wide-cells", type=int, default=1_000_000, help="native: the wide row's cells (0: skip)")
    p.add_argument("--testbed", help="a realhbase bed already running in this workdir (left running)")
    args = p.parse_args(argv)
    if args.data_path == "native":
        return native(args)
    figures: dict = {}
    only = set(args.only.split(",")) if args.only else None
    with clusters_and_spark("bench-copy", args.backend, args.testbed) as (workdir, dc1, dc2):
        for latency, rows in ((0, args.rows), (5, args.rows_at_5ms))[:1 if args.backend == "realhbase" else 2]:
            for kind in TABLES:
                if only is None or f"{latency}ms_{kind}" in only:
                    figures[f"{latency}ms_{kind}"] = measure(dc1, dc2, workdir, latency, kind, rows,
                                                             args.naive_rows)
        if only is not None:
            return report(figures)
        memory = {}
        for n in (args.memory_rows, args.memory_rows * 10):
            t = f"mem_{n}"
            load(dc1, t, n, splits=[])
            dc2.create_table(t, TABLES["v1"][0])
            memory[n] = worker_memory(dc1, dc2, t)
        small, big = memory[args.memory_rows], memory[args.memory_rows * 10]
        figures["worker_memory"] = {
            "rows": [args.memory_rows, args.memory_rows * 10],
            "peak_rss_mib": [round(small["peak_rss_mib"], 1), round(big["peak_rss_mib"], 1)],
            "peak_python_mib": [round(small["peak_python_mib"], 1), round(big["peak_python_mib"], 1)],
            "rss_ratio_10x_rows": round(big["peak_rss_mib"] / small["peak_rss_mib"], 2),
            "python_ratio_10x_rows": round(big["peak_python_mib"] / small["peak_python_mib"], 2),
        }
    return report(figures)


def report(figures: dict) -> int:
    for name, f in figures.items():
        if name == "worker_memory":
            continue
        line = (f"{name:>8}: {f['rows']} rows ({f['cells']} cells): copy job {f['job_rows_per_s']} rows/s = "
                f"{f['job_vs_pipe']}x the pipe ({f['pipe_rows_per_s']}), {f['job_vs_raw_scan']}x the raw scan "
                f"({f['raw_scan_rows_per_s']})")
        if "naive_rows_per_s" in f:
            line += f", {f['job_vs_naive']}x the naive copy ({f['naive_rows_per_s']})"
        if "thrift1_job_rows_per_s" in f:
            line += f", {f['job_vs_thrift1_job']}x the Thrift1 job ({f['thrift1_job_rows_per_s']})"
        print(line)
    m = figures.get("worker_memory")
    if m:
        print(f"worker memory, {m['rows'][0]} -> {m['rows'][1]} rows: peak RSS {m['peak_rss_mib'][0]} -> "
              f"{m['peak_rss_mib'][1]} MiB (x{m['rss_ratio_10x_rows']}), Python allocations "
              f"{m['peak_python_mib'][0]} -> {m['peak_python_mib'][1]} MiB (x{m['python_ratio_10x_rows']})")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
