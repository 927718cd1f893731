"""The verify job's speed, as a ratio to both sides scanned at the same time, measured in one run.

Figures (printed, never asserted), at 0 ms and 5 ms injected latency per Thrift call on both clusters, on a table
with one version per column and on one whose family keeps three:
- verify rows/s (jobs/verify_table.py, level content, every version, Spark local[2], session already started) on
  a clean copy and on one with 20 differing rows spread over the table (hash ranges, bisection, row diffs);
- the limit on one machine: both sides scanned at the same time (two threads, one Thrift2 scan of every version
  each, nothing hashed), and the ratio of the verify rate to it.

    .venv/bin/python bench/bench_verify.py [--rows 30000] [--rows-at-5ms 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from bench.bench_copy import TABLES, key, load, row_ts  # noqa: E402
from bench.harness import clusters_and_spark, set_latency, thrift2  # noqa: E402


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
    from jobs import verify_table

    out = workdir / f"verify-{table}-{time.monotonic_ns()}.json"
    started = time.perf_counter()
    verify_table.main(["--source", source.connection_json, "--target", target.connection_json, "--table", table,
                       "--summary-file", str(out), "--log-level", "WARNING"])
    elapsed = time.perf_counter() - started
    result = json.loads(out.read_text())
    return max(result["source_rows"], result["target_rows"]) / elapsed, result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=30_000, help="table size at 0 ms")
    p.add_argument("--rows-at-5ms", type=int, default=10_000, help="table size at 5 ms")
    args = p.parse_args(argv)
    figures: dict = {}
    with clusters_and_spark("bench-verify") as (workdir, dc1, dc2):
        for latency, rows in ((0, args.rows), (5, args.rows_at_5ms)):
            for kind in TABLES:
                table = f"v_{kind}_{latency}"
                load(dc1, table, rows, kind)
                load(dc2, table, rows, kind)  # the same cells and timestamps: a clean copy
                set_latency(latency, dc1, dc2)
                both = both_sides_scan_rate(dc1, dc2, table)
                clean, clean_result = verify_rate(dc1, dc2, table, workdir)
                assert clean_result["identical"], clean_result  # a wrong verdict would make the figure meaningless
                client = thrift2(dc2)
                try:  # same cell, another value
                    client.put(table, [(key(i), {b"b:y": b"changed"}, row_ts(i)) for i in range(0, rows, rows // 20)])
                finally:
                    client.close()
                dirty, dirty_result = verify_rate(dc1, dc2, table, workdir)
                assert dirty_result["content_different"] == 20, dirty_result
                set_latency(0, dc1, dc2)
                figures[f"{latency}ms_{kind}"] = {
                    "rows": rows, "cells_compared": clean_result["source_cells"],
                    "both_sides_scan_rows_per_s": round(both), "verify_clean_rows_per_s": round(clean),
                    "verify_20_diffs_rows_per_s": round(dirty), "clean_vs_both_scans": round(clean / both, 2),
                    "diffs_vs_both_scans": round(dirty / both, 2),
                }
    for name, f in figures.items():
        print(f"{name:>8}: {f['rows']} rows ({f['cells_compared']} cells a side): verify "
              f"{f['verify_clean_rows_per_s']} rows/s clean = {f['clean_vs_both_scans']}x both sides scanned at once "
              f"({f['both_sides_scan_rows_per_s']}), {f['verify_20_diffs_rows_per_s']} rows/s with 20 differing rows "
              f"({f['diffs_vs_both_scans']}x)")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
