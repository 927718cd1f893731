"""The verify job's speed, as a ratio to the raw scan rate of the slower side, measured in one run.

Figures (printed, never asserted), at 0 ms and 5 ms injected latency per Thrift call on both clusters:
- verify rows/s (jobs/verify_table.py, level content, Spark local[2], session already started) on a clean
  copy and on one with 20 differing rows spread over the table (hash ranges, bisection, row diffs);
- the raw scan rate of each side (one scan of the whole table, 1000 rows per call) and the ratio of the
  verify rate to the slower one.

    .venv/bin/python bench/bench_verify.py [--rows 50000] [--rows-at-5ms 20000]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from bench.bench_copy import key, load, raw_scan_rate, row_ts  # noqa: E402
from bench.harness import clusters_and_spark, set_latency  # noqa: E402


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
    p.add_argument("--rows", type=int, default=50_000, help="table size at 0 ms")
    p.add_argument("--rows-at-5ms", type=int, default=20_000, help="table size at 5 ms")
    args = p.parse_args(argv)
    figures: dict = {}
    with clusters_and_spark("bench-verify") as (workdir, dc1, dc2):
        for latency, rows in ((0, args.rows), (5, args.rows_at_5ms)):
            table = f"v_{latency}"
            load(dc1, table, rows)
            load(dc2, table, rows)  # the same cells and timestamps: a clean copy
            set_latency(latency, dc1, dc2)
            scans = (raw_scan_rate(dc1, table), raw_scan_rate(dc2, table))
            clean, clean_result = verify_rate(dc1, dc2, table, workdir)
            assert clean_result["identical"], clean_result  # a wrong verdict would make the figure meaningless
            with closing(dc2.connection(timeout=120000)) as c2:
                for i in range(0, rows, rows // 20):
                    c2.table(table).put(key(i), {b"a:x": b"changed"}, timestamp=row_ts(i))  # same cell, new value
            dirty, dirty_result = verify_rate(dc1, dc2, table, workdir)
            assert dirty_result["content_different"] == 20, dirty_result
            set_latency(0, dc1, dc2)
            slower = min(scans)
            figures[f"{latency}ms"] = {
                "rows": rows, "raw_scan_rows_per_s": [round(s) for s in scans],
                "verify_clean_rows_per_s": round(clean), "verify_20_diffs_rows_per_s": round(dirty),
                "clean_vs_slower_scan": round(clean / slower, 2), "diffs_vs_slower_scan": round(dirty / slower, 2),
            }
    for name, f in figures.items():
        print(f"{name:>4} latency, {f['rows']} rows: verify {f['verify_clean_rows_per_s']} rows/s clean "
              f"({f['clean_vs_slower_scan']}x the slower side's raw scan of {min(f['raw_scan_rows_per_s'])} rows/s), "
              f"{f['verify_20_diffs_rows_per_s']} rows/s with 20 differing rows ({f['diffs_vs_slower_scan']}x)")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
